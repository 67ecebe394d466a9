/*
 * sstpipe_set.h: libsstpipe's table sets (TABLESET.md), the layer above a
 * plain table (sstpipe_table.h): a set is
 * an sstpipe_table whose sstpipe_set holds the checked manifest and one
 * plain table per shard. The calls here are the public ones (sstpipe.h)
 * on a set; sstpipe.c routes a set's calls to them. Private to the
 * library.
 */
#ifndef SSTPIPE_SST_SSTPIPE_SET_H
#define SSTPIPE_SST_SSTPIPE_SET_H

#include "stages/common/error.h"
#include "stages/sst/cursor.h"
#include "stages/sst/sstpipe_table.h"
#include "stages/sst/table_set.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sstpipe_set {
    table_set *manifest;
    char *path; /* as opened */
    size_t n;
    sstpipe_table **shards;
    /* Shard i holds the set's data blocks [first_block[i], first_block[i + 1]). */
    uint64_t *first_block;
    sstpipe_info info; /* the sums and the common options */
} sstpipe_set;

/* Opens the table set at path (its manifest checked, every shard opened
 * with opt and checked against it) as a table, or NULL with err set. */
sstpipe_table *sstpipe_set_open(const char *path, const sstpipe_options *opt, sp_error *err);
/* Closes a set opened by sstpipe_set_open, its shards with it. */
void sstpipe_set_close(sstpipe_table *t);

const void *sstpipe_set_first_key(const sstpipe_set *s, uint64_t i, size_t *klen);
/* The shard whose range holds key. */
const sstpipe_table *sstpipe_set_shard_for(const sstpipe_set *s, const void *key, size_t klen);
int sstpipe_set_get(const sstpipe_set *s, const void *key, size_t klen, const void **value,
                    size_t *vlen, char **errmsg);
int sstpipe_set_get_many(const sstpipe_set *s, size_t n, const void *const *keys,
                         const size_t *klens, const void **values, size_t *vlens, char **errmsg);
/* Shard i's bounds (i < s->n), as sstpipe_shard_range gives them. */
void sstpipe_set_shard_range(const sstpipe_set *s, size_t i, const void **lo, size_t *lo_len,
                             const void **hi, size_t *hi_len);

/* A cursor over the set's records, its shards' in turn (the set must
 * outlive it), or NULL with err when out of memory. */
sst_cursor *sstpipe_set_cursor(const sstpipe_set *s, sp_error *err);

#endif
