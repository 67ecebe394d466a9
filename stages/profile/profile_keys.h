/*
 * profile_keys.h: the key sequence a profile looks up (private to
 * stages/profile). Drawn before any lookup is timed, from a seeded
 * generator, through libsstpipe (its block first keys and iterator),
 * reading the block of each key drawn and the start of the next, once per
 * block while the keys kept for later draws stay under a fixed bound,
 * never the whole file.
 */
#ifndef SSTPIPE_PROFILE_PROFILE_KEYS_H
#define SSTPIPE_PROFILE_PROFILE_KEYS_H

#include "stages/common/error.h"
#include "stages/sst/sstpipe.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct profile_keys {
    uint64_t n;
    uint8_t *bytes;  /* all keys, back to back */
    uint64_t *start; /* key i is bytes[start[i] .. start[i + 1]) */
    bool *absent;    /* key i is guaranteed not in the file */
    uint64_t n_absent;
    uint64_t hash; /* XXH3-64 over (length, bytes) of every key in order */
} profile_keys;

/*
 * Draws n keys, round(n * misses_pct / 100) of them absent, at positions
 * chosen at random. A present key: a block chosen uniformly (index), then a
 * record of it chosen uniformly. An absent key: a present key drawn that
 * way with a 0x00 byte appended -- the smallest string after it, so it is
 * absent unless it is exactly the next key, which is checked.
 */
int profile_keys_draw(sstpipe_table *t, uint64_t n, double misses_pct, uint64_t seed,
                      profile_keys *keys, sp_error *err);
void profile_keys_destroy(profile_keys *keys);

#endif
