/*
 * cursor.h: the one ordered cursor over a table or a table set, in the
 * shape of mtbl's mtbl_source: one interface (seek to the first key >= a
 * key, next, the current key and value, the end, the error) that a single
 * table and a table set each expose, so that a scan is written once
 * whatever it reads. libsstpipe's iterators (sstpipe_iter.c, which dump,
 * serve's prefix lookups and the Python module use), a set's checks at
 * open and the merge's input chain of a set's shards
 * (stages/merge/table_source.c) read through it.
 *
 * A table's cursor reads its blocks with the block source's sequential
 * reader (block_source.h), each block checked in full before any of its
 * bytes are returned, and walks them with table_walk.h, which checks that
 * each block's first key sorts after the previous block's last. A set's
 * cursor concatenates its shards' cursors: shards hold disjoint,
 * increasing key ranges (TABLESET.md, checked when the manifest is read),
 * so one shard after the other is the set's key order, and a seek starts
 * in the one shard whose range holds the key. Shards are opened as they
 * are reached and each is closed before the next opens.
 *
 * A cursor may be given an end: the records stop before the first key at
 * or above it, and a set opens no shard whose range starts there or later.
 * An error is sticky: every later call returns it.
 */
#ifndef SSTPIPE_SST_CURSOR_H
#define SSTPIPE_SST_CURSOR_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sst/table_reader.h"
#include "stages/sst/table_set.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sst_cursor sst_cursor;

/* What each kind of cursor does; the calls below wrap them with the end
 * and the sticky error. */
typedef struct sst_cursor_ops {
    /* The first record >= key (NULL: the first record): 1, 0 none, -1. */
    int (*seek)(sst_cursor *c, const uint8_t *key, size_t klen, sp_error *err);
    /* The record after the current one: 1, 0 none, -1. */
    int (*next)(sst_cursor *c, sp_error *err);
    void (*destroy)(sst_cursor *c);
} sst_cursor_ops;

typedef enum sst_cursor_state {
    SST_CURSOR_UNSET, /* not sought yet */
    SST_CURSOR_AT,    /* key and value are the current record's */
    SST_CURSOR_END,
    SST_CURSOR_ERROR,
} sst_cursor_state;

struct sst_cursor {
    const sst_cursor_ops *ops;
    sst_cursor_state state;
    /* The current record, valid until the next call on the cursor. */
    const uint8_t *key, *value;
    size_t key_len, value_len;
    bool has_end;
    size_t end_len;
    uint8_t end[SP_MAX_KEY_BYTES];
    sp_error err;
};

/* A cursor over the plain table r, which must keep its index in memory
 * (sst_reader_open) and outlive the cursor; NULL with err when out of
 * memory. */
sst_cursor *sst_cursor_table(const sst_reader *r, sp_error *err);

/* A cursor over r for a short scan (a suggestion's few blocks): on a
 * table read in place (sst_reader_in_place) its blocks are read through
 * the lookups' mapping, each checked once for every reader, with no read
 * call, copy or buffer of its own; on any other, sst_cursor_table's. */
sst_cursor *sst_cursor_table_short(const sst_reader *r, sp_error *err);

/* Shard i of a set, opened as a cursor, or NULL with err set. */
typedef sst_cursor *(*sst_cursor_open_fn)(void *ctx, size_t i, sp_error *err);

/* A cursor over the set whose manifest is m (which must outlive it), each
 * shard's cursor made by open(ctx, i) when it is reached; NULL with err
 * when out of memory. */
sst_cursor *sst_cursor_set(const table_set *m, sst_cursor_open_fn open, void *ctx, sp_error *err);

/* Ends the records before the first key >= end (klen bytes, at most
 * SP_MAX_KEY_BYTES), before the first seek. */
void sst_cursor_set_end(sst_cursor *c, const uint8_t *end, size_t klen);
/* Ends the records after the last key that starts with prefix. */
void sst_cursor_set_prefix_end(sst_cursor *c, const uint8_t *prefix, size_t plen);

/* Moves to the first record >= key (NULL: the first record): 1 there, 0
 * no such record before the end, -1 with sst_cursor_error set. */
int sst_cursor_seek(sst_cursor *c, const uint8_t *key, size_t klen);
/* Moves to the next record (the first when not sought yet): 1, 0, -1. */
int sst_cursor_next(sst_cursor *c);
/* Records rc (1, 0, -1 with c's error set) as where c now is, after a move
 * made by a call of its own kind rather than through the two above (the
 * merge's skip of a whole block). Returns rc, or 0 past the end. */
int sst_cursor_moved(sst_cursor *c, int rc);
/* A set's cursor: the shard's cursor it is at, or NULL (none open); NULL
 * for any other cursor. */
sst_cursor *sst_cursor_set_shard(const sst_cursor *c);
/* The error the cursor stays at after a -1. */
const sp_error *sst_cursor_error(const sst_cursor *c);
/* NULL is a no-op. */
void sst_cursor_free(sst_cursor *c);

#endif
