/*
 * chunk.h: the in-memory part of the sort, one chunk of records packed into
 * the sorter's arena.
 *
 * Record bytes grow from the front of the arena (in run-file layout, see
 * run_file.h: header with the record's seq, key, value); fixed-size entries
 * grow from the back. When they would meet, the chunk is full. An entry
 * caches the key's first 8 bytes big-endian, so most comparisons never
 * touch the record, and the record's offset, which is also its insertion
 * order. A sorted chunk is read back as a merge source (chunk_source), for
 * a spill, the output, or a merge of several threads' chunks in memory.
 */
#ifndef SSTPIPE_SORT_CHUNK_H
#define SSTPIPE_SORT_CHUNK_H

#include "stages/common/key.h"
#include "stages/common/record.h"
#include "stages/sort/merge.h"
#include "stages/sort/run_file.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct chunk_entry {
    uint64_t prefix; /* key bytes 0..7, big-endian, zero-padded */
    uint64_t ref;    /* arena offset << 16 | key length */
} chunk_entry;

/* Bytes a record costs in a chunk: header, key, value and its entry. */
#define CHUNK_RECORD_OVERHEAD (RUN_RECORD_HEADER + sizeof(chunk_entry))

typedef struct chunk {
    uint8_t *arena;
    size_t cap;  /* usable bytes, a multiple of sizeof(chunk_entry) */
    size_t used; /* record bytes at the front */
    size_t n;    /* entries at the back */
} chunk;

void chunk_init(chunk *c, uint8_t *arena, size_t cap);
/* True when a record with these lengths fits beside what the chunk holds. */
int chunk_fits(const chunk *c, uint32_t key_len, uint64_t value_len);
/* Appends the record header (with seq) and key and returns where value_len
 * value bytes go. */
uint8_t *chunk_append(chunk *c, const uint8_t *key, uint32_t key_len, uint64_t value_len,
                      uint64_t seq);
void chunk_reset(chunk *c);

/* Sorts the entries by key, then by insertion order. */
void chunk_sort(chunk *c);
/* A sorted chunk as a merge source (merge.h): its records in key order, of
 * each run of equal keys only the one added last (the others counted in
 * *dups as they are passed), each with its seq. */
typedef struct chunk_source {
    merge_source src;
    const chunk *c;
    size_t next; /* the entry after the current record */
    const uint8_t *value;
    uint64_t *dups;
} chunk_source;

void chunk_source_init(chunk_source *cs, const chunk *c, uint64_t *dups);

#endif
