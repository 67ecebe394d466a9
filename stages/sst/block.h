/*
 * block.h: one data block, built and read in memory.
 *
 * Layout of a block of block_size bytes (see FORMAT.md):
 *
 *   entries   per record: varint shared, varint unshared, varint value_len,
 *             the key's unshared suffix, the value. Records 0, 16, 32, ...
 *             (every SST_RESTART_INTERVAL) are restart points and store
 *             shared = 0; others store the longest shared prefix.
 *   zeros     up to the trailer
 *   trailer   u32 restart[n_restarts] (entry offsets of the restart
 *             points), u32 entries_len, u32 n_records, u32 n_restarts
 *             (= ceil(n_records / 16)), u64 XXH3-64 of bytes
 *             [0, block_size - 8); the trailer ends the block
 *
 * A lookup binary-searches the restart points, then scans at most
 * SST_RESTART_INTERVAL entries.
 */
#ifndef SSTPIPE_SST_BLOCK_H
#define SSTPIPE_SST_BLOCK_H

#include "stages/common/error.h"
#include "stages/common/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- builder ---- */
typedef struct block_builder block_builder;

block_builder *block_builder_init(uint32_t block_size);
/* Appends a record if it fits in the current block; false, and nothing
 * added, when it does not. The caller checked that key > last key. */
bool block_builder_add(block_builder *b, const uint8_t *key, size_t klen, const uint8_t *val,
                       size_t vlen);
bool block_builder_empty(const block_builder *b);
/* Writes the trailer and checksum; returns the finished block_size bytes,
 * valid until the next reset. */
const uint8_t *block_builder_finish(block_builder *b);
void block_builder_reset(block_builder *b);
void block_builder_destroy(block_builder *b);

/* ---- reader ---- */
typedef struct block_view {
    const uint8_t *data;
    uint32_t block_size;
    uint32_t entries_len;
    uint32_t n_records;
    uint32_t n_restarts;
    const uint8_t *restarts; /* n_restarts little-endian u32 */
} block_view;

/* The block's stored checksum (its last 8 bytes) against its bytes: a
 * mismatch is an error, never data. Every version's blocks end so. */
int block_checksum(const uint8_t *data, uint32_t block_size, const char *what, sp_error *err);

/* Checks the checksum and trailer; fills v. what names the block in errors
 * (e.g. "enwiki.sst: block 12 at byte 98304"). */
int block_open(block_view *v, const uint8_t *data, uint32_t block_size, const char *what,
               sp_error *err);

/* Reopens a block that passed block_open before, for a reader that reads
 * it in place from a mapped file (where only an outside write to the file
 * could have changed it since): the trailer's counts are checked against
 * the block's bounds again, the checksum and the restart array's order are
 * not. Every read of the block stays inside it (block_find and
 * block_iter_next check each offset and length they decode), so changed
 * bytes can give wrong data or an error, never a read outside the block. */
int block_reopen(block_view *v, const uint8_t *data, uint32_t block_size, const char *what,
                 sp_error *err);

/* Sequential walk over a block's records. */
typedef struct block_iter {
    const block_view *v;
    uint32_t pos;                  /* offset of the next entry */
    uint32_t index;                /* records returned so far */
    uint8_t key[SP_MAX_KEY_BYTES]; /* current key */
    uint32_t key_len;
    const uint8_t *value;
    uint32_t value_len;
} block_iter;

void block_iter_init(block_iter *it, const block_view *v);
/* 1: a record in it->key/value; 0: end of block; -1: corrupt entry. */
int block_iter_next(block_iter *it, const char *what, sp_error *err);
/* Starts a walk of v at its first record whose key is >= key (LevelDB's
 * Block::Iter::Seek): a binary search of the restart points, then a walk of
 * at most one restart run, with every check of block_iter_next. 1: that
 * record is in it->key/value, and block_iter_next continues after it; 0:
 * every key of the block is smaller; -1: corrupt entry. */
int block_iter_seek(block_iter *it, const block_view *v, const uint8_t *key, size_t klen,
                    const char *what, sp_error *err);

/* Point lookup in an opened block: 1 found (value points into the block), 0 not, -1 corrupt. */
int block_find(const block_view *v, const uint8_t *key, size_t klen, const void **value,
               size_t *vlen, const char *what, sp_error *err);

#endif
