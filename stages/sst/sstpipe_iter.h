/*
 * sstpipe_iter.h: libsstpipe's scans of one plain table, the layer above
 * sstpipe_table.h: the iterator's state, made by sstpipe_table_iter_new and
 * walked by sstpipe_table_iter_next; a table set's scan (sstpipe_set.h) is
 * the same iterator walking its shards' scans one after the other. Private
 * to the library; the public contract is sstpipe.h.
 */
#ifndef SSTPIPE_SST_SSTPIPE_ITER_H
#define SSTPIPE_SST_SSTPIPE_ITER_H

#include "stages/common/error.h"
#include "stages/sst/sstpipe_table.h"
#include "stages/sst/table_walk.h"

#include <stddef.h>
#include <stdint.h>

typedef enum sstpipe_iter_state { IT_START, IT_WALK, IT_END, IT_ERROR } sstpipe_iter_state;

struct sstpipe_iter {
    const sst_reader *r;
    uint32_t block_size;
    uint64_t blocks;
    sstpipe_iter_state state;
    sp_error err;   /* the error the iterator stays at */
    uint8_t *start; /* the first key wanted: max(from, prefix); NULL: the first key */
    size_t start_len;
    uint8_t *prefix;
    size_t prefix_len;
    sst_block_seq seq; /* the blocks read ahead of the walk */
    uint64_t block;    /* the block being walked */
    sst_walk walk;
    /* A table set's: the set, the shard walked and its scan. */
    const struct sstpipe_set *set;
    size_t shard;
    sstpipe_iter *inner;
};

/* An iterator over nothing yet, from the first key >= from with prefix
 * (either NULL: no bound), both copied; NULL when out of memory. */
sstpipe_iter *sstpipe_iter_alloc(const void *from, size_t flen, const void *prefix, size_t plen);

/* sstpipe_iter_new and sstpipe_iter_next (sstpipe.h) on a plain table. */
sstpipe_iter *sstpipe_table_iter_new(const sstpipe_table *t, const void *from, size_t flen,
                                     const void *prefix, size_t plen);
int sstpipe_table_iter_next(sstpipe_iter *it, const void **key, size_t *klen, const void **value,
                            size_t *vlen, char **errmsg);

#endif
