/*
 * sstpipe_table.h: libsstpipe's bottom layer, one plain table: what the
 * library's files share about an open table, and its open, close, footer
 * figures and lookups; private to the library, the public contract is
 * sstpipe.h.
 *
 * An sstpipe_table is an sst_reader (footer and index checked at open, the
 * index in memory) plus how lookups read blocks from its block source
 * (block_source.h): through the read-only mapping (the default), or with
 * O_DIRECT into a buffer of the calling thread. Nothing in it changes after open except the
 * mapping's per-block check state, which is atomic (table_reader.c), so lookups need no lock.
 *
 * A table set (TABLESET.md) is an sstpipe_table too, with no reader of its
 * own: its sstpipe_set (sstpipe_set.h) holds the checked manifest and one
 * plain sstpipe_table per shard, and sstpipe.c routes every public call on
 * a set there. The layers: the cursor over a table or a set (cursor.h),
 * this file, table sets (sstpipe_set.h), iterators over a cursor
 * (sstpipe_iter.h), and sstpipe.c, which alone tells a set from a plain
 * table.
 */
#ifndef SSTPIPE_SST_SSTPIPE_TABLE_H
#define SSTPIPE_SST_SSTPIPE_TABLE_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_reader.h"

#include <stdbool.h>

struct sstpipe_options {
    bool direct_io;
    size_t block_cache; /* bytes of a compressed table's cache (block_cache.h) */
};

struct sstpipe_table {
    sst_reader *r;           /* a plain table's; NULL for a set */
    bool direct_io;          /* lookups read with O_DIRECT (the reader's block source) */
    struct sstpipe_set *set; /* a table set's shards (sstpipe_set.h), or NULL */
    /* Its title index (FILE.titles) when it has one, and the rules it
     * records (sstpipe_titles.h). */
    struct sstpipe_table *titles;
    struct sp_title_rules *rules;
};

/* Opens path as a plain table, never as a set (shards are opened this way,
 * whatever their names), or NULL with err set. */
sstpipe_table *sstpipe_table_open(const char *path, const sstpipe_options *opt, sp_error *err);
/* Closes a plain table; NULL is a no-op. */
void sstpipe_table_close(sstpipe_table *t);

/* A plain table's sstpipe_info_get, sstpipe_path, sstpipe_block_first_key
 * and sstpipe_get (sstpipe.h). */
void sstpipe_table_info(const sstpipe_table *t, sstpipe_info *info);
/* A plain table's sstpipe_compression_get. */
void sstpipe_table_compression(const sstpipe_table *t, sstpipe_compression *c);
const char *sstpipe_table_path(const sstpipe_table *t);
const void *sstpipe_table_first_key(const sstpipe_table *t, uint64_t i, size_t *klen);
int sstpipe_table_get(const sstpipe_table *t, const void *key, size_t klen, const void **value,
                      size_t *vlen, char **errmsg);

/* The plain table that may hold a key of a batched lookup (a set's shard
 * for its range), or NULL when none can; ctx is the caller's. */
typedef const sstpipe_table *(*sstpipe_route_fn)(const void *ctx, const void *key, size_t klen);

/* sstpipe_get_many over the n keys, each looked up in the table that route
 * gives it (path names the batch in an out-of-memory message): every
 * distinct block is read once, all together, then each key is searched in
 * its block. */
int sstpipe_batch_get(sstpipe_route_fn route, const void *ctx, const char *path, size_t n,
                      const void *const *keys, const size_t *klens, const void **values,
                      size_t *vlens, char **errmsg);
/* sstpipe_get_many on a plain table. */
int sstpipe_table_get_many(const sstpipe_table *t, size_t n, const void *const *keys,
                           const size_t *klens, const void **values, size_t *vlens, char **errmsg);

/* No stored key is empty or longer than the format allows: such a key is
 * absent, without a search. */
static inline bool sstpipe_key_may_exist(size_t klen) {
    return klen != 0 && klen <= SP_MAX_KEY_BYTES;
}

/* Sets *errmsg (when errmsg is not NULL) to a malloc'd copy of err's
 * message; *errmsg stays NULL if even that allocation fails. */
void sstpipe_report_error(char **errmsg, const sp_error *err);

#endif
