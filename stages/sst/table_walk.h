/*
 * table_walk.h: the one walk over a table's data blocks in file order,
 * record by record, shared by the cursor over a table (cursor.c, under
 * libsstpipe's iterators, which dump, profile's key sampling and the Python
 * module use) and verify's check of the data blocks
 * (stages/verify/verify_blocks.c).
 *
 * A walk holds the block being walked (its view and a block_iter) and the
 * last key of the block walked before it, so that it can tell whether a
 * block's first record sorts after the previous block's last: the one
 * order check that no check of a single block can make. Blocks come from
 * the caller (a read buffer, a mapping), which decides how far a block
 * must be trusted: the cursor stops at the first problem, verify reports
 * it with the file offset and walks on. Errors are block.h's, prefixed
 * ": " for the caller to name the block and its offset.
 */
#ifndef SSTPIPE_SST_TABLE_WALK_H
#define SSTPIPE_SST_TABLE_WALK_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sst/block.h"
#include "stages/sst/block_packed.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sst_walk {
    block_view view;    /* the block being walked */
    block_plain plain;  /* a version 2 block's unpacked records, which view holds */
    block_iter it;      /* its current record: it.key, it.value, it.index (1 for the first) */
    uint32_t entry_pos; /* offset in the block of the current record's entry */
    bool have_last;     /* an earlier block yielded a record: last_key is the latest */
    uint32_t last_len;
    uint8_t last_key[SP_MAX_KEY_BYTES];
} sst_walk;

/* A walk before its first block. Its plain buffer is kept for the next
 * walk (the walk must be zeroed before its first init); sst_walk_free
 * releases it. */
void sst_walk_init(sst_walk *w);
void sst_walk_free(sst_walk *w);

/* Starts the walk before the first record of the block the caller opens
 * into w->view (the block source's check, block_source.h). The block
 * walked before it, if it yielded a record, becomes the previous block,
 * even when this one then fails to open. */
void sst_walk_start(sst_walk *w);

/* The block's next record into w->it: 1, 0 at the block's end, -1 corrupt
 * entry (the walk of this block cannot go on). */
int sst_walk_next(sst_walk *w, sp_error *err);

/* Restarts the walk of the current block at its first record whose key is
 * >= key (block_iter_seek): 1 there, 0 every key is smaller (w->it then
 * holds the block's last), -1 corrupt entry. */
int sst_walk_seek(sst_walk *w, const uint8_t *key, size_t klen, sp_error *err);

/* Whether the current record, a block's first, sorts after the previous
 * block's last key (true when there was no previous block). */
bool sst_walk_first_in_order(const sst_walk *w);

/* The last key the walk returned, NULL before any. */
const uint8_t *sst_walk_last_key(const sst_walk *w, uint32_t *klen);

#endif
