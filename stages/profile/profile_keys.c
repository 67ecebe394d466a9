/*
 * profile_keys.c: drawing the key sequence; see profile_keys.h.
 *
 * Keys come from the blocks themselves, so sampling costs one block read
 * per key and memory for the keys only. Blocks are chosen uniformly and then
 * a record within the block, so every block (every aligned read a lookup
 * makes) is equally likely; records in blocks holding fewer records are
 * drawn more often than records in fuller blocks, which is the right
 * weighting for timing reads and is documented in stages/profile/README.md.
 */
#include "stages/profile/profile_keys.h"

#include "stages/common/key.h"
#include "stages/common/record.h"
#include "stages/sst/coding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Draws that may be rejected (a key of the maximal length cannot grow, a
 * successor may be the next key) before giving up on the file. */
#define MAX_REJECTS 10000

/* splitmix64: small, fast, and the same sequence everywhere for a seed. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rand_below(uint64_t *s, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = next_rand(s);
    while (x >= limit);
    return x % n;
}

static int grow(profile_keys *k, uint64_t *cap, uint64_t used, size_t need, sp_error *err) {
    if (used + need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap * 2 : 1 << 16;
    while (c < used + need)
        c *= 2;
    uint8_t *p = realloc(k->bytes, c);
    if (!p)
        return sp_errorf(err, "out of memory for %llu bytes of profile keys",
                         (unsigned long long)c);
    k->bytes = p;
    *cap = c;
    return 0;
}

/* One record drawn uniformly from a uniformly drawn block: its key into
 * key/klen; with want_absent, the key with 0x00 appended, 0 returned when
 * that is not guaranteed absent (the caller draws again). */
static int draw_one(sst_reader *r, uint8_t *buf, uint64_t *rng, bool want_absent, uint8_t *key,
                    uint32_t *klen, sp_error *err) {
    const sst_footer *f = sst_reader_footer(r);
    uint64_t b = rand_below(rng, f->data_blocks);
    block_view v;
    if (sst_reader_read_block(r, b, buf, &v, err))
        return -1;
    uint32_t j = (uint32_t)rand_below(rng, v.n_records);
    block_iter it;
    block_iter_init(&it, &v);
    for (uint32_t i = 0; i <= j; i++)
        if (block_iter_next(&it, sst_reader_path(r), err) != 1)
            return sp_errorf(err, "%s: block %llu: cannot walk to record %u", sst_reader_path(r),
                             (unsigned long long)b, j);
    memcpy(key, it.key, it.key_len);
    *klen = it.key_len;
    if (!want_absent)
        return 1;
    if (it.key_len == SP_MAX_KEY_BYTES)
        return 0;
    key[(*klen)++] = 0;
    /* The next key: later in this block, or the next block's first. */
    const uint8_t *next = NULL;
    uint32_t nlen = 0;
    int more = block_iter_next(&it, sst_reader_path(r), err);
    if (more < 0)
        return -1;
    if (more == 1) {
        next = it.key;
        nlen = it.key_len;
    } else if (b + 1 < f->data_blocks) {
        next = sst_reader_block_first_key(r, b + 1, &nlen);
    }
    return next && sp_key_cmp(next, nlen, key, *klen) == 0 ? 0 : 1;
}

int profile_keys_draw(sst_reader *r, uint64_t n, double misses_pct, uint64_t seed,
                      profile_keys *keys, sp_error *err) {
    memset(keys, 0, sizeof *keys);
    const sst_footer *f = sst_reader_footer(r);
    if (f->data_blocks == 0)
        return sp_errorf(err, "%s: the table has no records to look up", sst_reader_path(r));
    keys->n = n;
    keys->start = malloc((n + 1) * sizeof *keys->start);
    keys->absent = calloc(n ? n : 1, sizeof *keys->absent);
    uint8_t *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, f->block_size) != 0)
        buf = NULL;
    XXH3_state_t *h = XXH3_createState();
    if (!keys->start || !keys->absent || !buf || !h) {
        free(buf);
        XXH3_freeState(h);
        return sp_errorf(err, "out of memory for %llu profile keys", (unsigned long long)n);
    }
    XXH3_64bits_reset(h);
    uint64_t rng = seed, cap = 0, used = 0;
    uint64_t absent_left = (uint64_t)llround((double)n * misses_pct / 100.0);
    keys->n_absent = absent_left;
    unsigned rejects = 0;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0;) {
        /* Selection sampling: exactly n_absent of the n positions, each
         * set of positions equally likely. */
        bool absent = rand_below(&rng, n - i) < absent_left;
        uint8_t key[SP_MAX_KEY_BYTES + 1];
        uint32_t klen = 0;
        int got;
        do {
            got = draw_one(r, buf, &rng, absent, key, &klen, err);
        } while (got == 0 && ++rejects < MAX_REJECTS);
        if (got <= 0) {
            rc = got < 0
                     ? -1
                     : sp_errorf(err, "%s: cannot find keys guaranteed absent", sst_reader_path(r));
            break;
        }
        if (grow(keys, &cap, used, klen, err)) {
            rc = -1;
            break;
        }
        memcpy(keys->bytes + used, key, klen);
        keys->start[i] = used;
        keys->absent[i] = absent;
        absent_left -= absent;
        uint8_t len_le[4];
        sst_put_u32(len_le, klen);
        XXH3_64bits_update(h, len_le, 4);
        XXH3_64bits_update(h, key, klen);
        used += klen;
        i++;
    }
    keys->start[n] = used;
    keys->hash = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    free(buf);
    return rc;
}

void profile_keys_destroy(profile_keys *keys) {
    free(keys->bytes);
    free(keys->start);
    free(keys->absent);
    memset(keys, 0, sizeof *keys);
}
