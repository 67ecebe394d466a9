/*
 * table_source.h: an SSTable read block after block as a merge source
 * (stages/sort/merge.h), with what the table merge needs to copy a block
 * whole instead of its records.
 *
 * Blocks are read in chunks of consecutive blocks into one reused buffer,
 * each checked in full (checksum, trailer,
 * restart points, its first key against the index) and walked once before
 * any of its records is used, which also gives its last key and its record
 * and byte counts: a block is either passed on record by record or copied
 * whole, from the checked bytes, with those counts, never half of each.
 */
#ifndef SSTPIPE_MERGE_TABLE_SOURCE_H
#define SSTPIPE_MERGE_TABLE_SOURCE_H

#include "stages/common/error.h"
#include "stages/sort/merge.h"
#include "stages/sst/block.h"
#include "stages/sst/table_reader.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct table_source table_source;

/* Opens path (footer and index checked); read_bytes bounds a chunk (at
 * least one block is read at a time). A table set at path: its manifest
 * read and checked, its shards opened one at a time as they are reached. */
table_source *table_source_open(const char *path, size_t read_bytes, sp_error *err);
/* Changes the chunk bound from the next chunk on. */
void table_source_set_read_bytes(table_source *t, size_t read_bytes);
void table_source_destroy(table_source *t);
/* Whether an error so far came from reading or checking this table (a
 * damaged input, rather than the output or memory). */
bool table_source_failed(const table_source *t);

/* Confines the records to [lo, hi) (a NULL bound: unbounded; both kept
 * as pointers, so they must outlive t), before the first record is read:
 * the records below lo are passed over (a block wholly below lo without
 * a record decoded after its check), the source ends at the first key at
 * or above hi, and a block is offered whole (table_source_at_block_start)
 * only when it lies wholly in the range. A table set: each shard. */
void table_source_set_range(table_source *t, const uint8_t *lo, uint32_t lo_len, const uint8_t *hi,
                            uint32_t hi_len);

merge_source *table_source_merge_source(table_source *t);
/* A table's footer; a set's is its manifest's (records, bytes, options),
 * with data_blocks reckoned from the shard sizes (see table_source.c). */
const sst_footer *table_source_footer(const table_source *t);

/* What the current block is, while its first record is the current one
 * (no record of it has been passed on): true with *b filled, else false. */
typedef struct table_source_block {
    uint64_t index;  /* block number in the table */
    uint64_t offset; /* byte offset in the table */
    const uint8_t *first, *last;
    uint32_t first_len, last_len;
    uint64_t records, key_bytes, value_bytes;
    int fd;                 /* the table's */
    const uint8_t *data;    /* its checked bytes, until the release hook is called */
    const block_view *view; /* its records (a version 2 block's unpacked), while current */
} table_source_block;

/* A version 2 table's dictionary (*len bytes, 0: none): 1 with it, 0 for
 * a version 1 table or a table set (whose shards have one each). */
int table_source_dictionary(const table_source *t, const uint8_t **dict, size_t *len);

bool table_source_at_block_start(const table_source *t, table_source_block *b);
/* fn(ctx) is called before the source releases or reuses the memory of
 * blocks it offered (a chunk left behind, a set's shard closed), for a
 * caller that holds on to their bytes after the call that took them (the
 * writer's pending copies): it cannot fail. A table set: each shard. */
void table_source_on_release(table_source *t, void (*fn)(void *ctx), void *ctx);
/* Skips the rest of the current block (copied whole by the caller) and
 * moves to the first record of the next one: 1, 0 past the end, -1. */
int table_source_skip_block(table_source *t, sp_error *err);

#endif
