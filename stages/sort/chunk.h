/*
 * chunk.h: the in-memory part of the sort, one chunk of records packed into
 * the sorter's arena.
 *
 * Record bytes grow from the front of the arena (in run-file layout, see
 * run_file.h, so a record spills as it lies); fixed-size entries grow from
 * the back. When they would meet, the chunk is full. An entry caches the
 * key's first 8 bytes big-endian, so most comparisons never touch the
 * record, and the record's offset, which is also its insertion order.
 */
#ifndef SSTPIPE_SORT_CHUNK_H
#define SSTPIPE_SORT_CHUNK_H

#include "stages/common/key.h"
#include "stages/common/record.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct chunk_entry {
    uint64_t prefix; /* key bytes 0..7, big-endian, zero-padded */
    uint64_t ref;    /* arena offset << 16 | key length */
} chunk_entry;

/* Bytes a record costs in a chunk: header, key, value and its entry. */
#define CHUNK_RECORD_OVERHEAD (8 + sizeof(chunk_entry))

typedef struct chunk {
    uint8_t *arena;
    size_t cap;  /* usable bytes, a multiple of sizeof(chunk_entry) */
    size_t used; /* record bytes at the front */
    size_t n;    /* entries at the back */
} chunk;

void chunk_init(chunk *c, uint8_t *arena, size_t cap);
/* True when a record with these lengths fits beside what the chunk holds. */
int chunk_fits(const chunk *c, uint32_t key_len, uint64_t value_len);
/* Appends the record header and key and returns where value_len value bytes go. */
uint8_t *chunk_append(chunk *c, const uint8_t *key, uint32_t key_len, uint64_t value_len);
void chunk_reset(chunk *c);

/* Sorts the entries by key, then by insertion order. */
void chunk_sort(chunk *c);
/*
 * Emits the sorted chunk into out: of each run of equal keys only the record
 * added last, the others counted in *dups. *emitted counts what out received.
 */
int chunk_emit(const chunk *c, const sp_sink *out, uint64_t *dups, uint64_t *emitted,
               sp_error *err);

#endif
