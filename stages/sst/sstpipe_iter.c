/*
 * sstpipe_iter.c: libsstpipe's ordered scans (sstpipe_iter_new/next/free),
 * a two-level iterator in LevelDB's shape: the in-memory index picks the
 * block where the scan starts, a block seek (block_iter_seek) finds the
 * first record >= the start key in it, and the walk then goes block by
 * block in file order until a key leaves the prefix or the table ends.
 *
 * Blocks come from the block source's sequential reader (block_source.h),
 * with pread into the iterator's own buffer, never through the lookups'
 * mapping or per-thread buffer, so a scan leaves lookups alone and the
 * kernel's sequential read-ahead applies to it. A scan reads one block at
 * first (a prefix scan is often one block) and doubles its reads up to
 * 1 MiB as it goes on. Each block gets the source's full check before any
 * of its bytes are returned, and the walk (table_walk.c, the one verify uses
 * too) checks that each block's first key sorts after the previous block's
 * last, which no per-block check can see.
 *
 * This is the scan of one plain table; a table set's (sstpipe_set.c) walks
 * its shards' scans one after the other.
 */
#include "stages/sst/sstpipe_iter.h"

#include "stages/common/key.h"

#include <stdlib.h>
#include <string.h>

#define MAX_READ_BYTES (1u << 20)

static uint8_t *copy_bytes(const void *p, size_t n) {
    uint8_t *c = malloc(n ? n : 1);
    if (c)
        memcpy(c, p, n);
    return c;
}

sstpipe_iter *sstpipe_iter_alloc(const void *from, size_t flen, const void *prefix, size_t plen) {
    sstpipe_iter *it = calloc(1, sizeof *it);
    if (!it)
        return NULL;
    sst_walk_init(&it->walk);
    if (!prefix)
        plen = 0;
    if (!from)
        flen = 0;
    /* Keys with the prefix form one run from the prefix itself on: start
     * there unless from is further. */
    const void *start = from;
    size_t slen = flen;
    if (plen && (!flen || sp_key_cmp(from, flen, prefix, plen) < 0)) {
        start = prefix;
        slen = plen;
    }
    if ((plen && !(it->prefix = copy_bytes(prefix, plen))) ||
        (slen && !(it->start = copy_bytes(start, slen)))) {
        sstpipe_iter_free(it);
        return NULL;
    }
    it->prefix_len = plen;
    it->start_len = slen;
    return it;
}

sstpipe_iter *sstpipe_table_iter_new(const sstpipe_table *t, const void *from, size_t flen,
                                     const void *prefix, size_t plen) {
    sstpipe_iter *it = sstpipe_iter_alloc(from, flen, prefix, plen);
    if (!it)
        return NULL;
    const sst_footer *f = sst_reader_footer(t->r);
    it->r = t->r;
    it->block_size = f->block_size;
    it->blocks = f->data_blocks;
    sst_block_seq_init(&it->seq, sst_reader_blocks(t->r), 1, MAX_READ_BYTES / f->block_size);
    return it;
}

void sstpipe_iter_free(sstpipe_iter *it) {
    if (!it)
        return;
    sstpipe_iter_free(it->inner);
    free(it->start);
    free(it->prefix);
    sst_block_seq_free(&it->seq);
    sst_walk_free(&it->walk);
    free(it);
}

/* Makes block i the one walked, before its first record: read (with the
 * blocks after it) unless already held, and checked. */
static int load_block(sstpipe_iter *it, uint64_t i, sp_error *err) {
    const uint8_t *data = sst_block_seq_at(&it->seq, i, err);
    if (!data || sst_reader_check_block(it->r, i, data, &it->walk.plain, &it->walk.view, err))
        return -1;
    it->block = i;
    sst_walk_start(&it->walk);
    return 0;
}

/* The walk ran off the end of its block: the next block's first record,
 * which must sort after the last one returned. */
static int next_block(sstpipe_iter *it, sp_error *err) {
    uint64_t i = it->block + 1;
    if (i >= it->blocks)
        return 0;
    if (load_block(it, i, err))
        return -1;
    sp_error e = {0};
    int rc = sst_walk_next(&it->walk, &e);
    if (rc < 0)
        return sst_blocks_error(sst_reader_blocks(it->r), i, &e, err);
    if (rc == 1 && !sst_walk_first_in_order(&it->walk))
        return sp_errorf(err,
                         "%s: block %llu at byte %llu: first key does not sort after the "
                         "previous block's last",
                         sst_reader_path(it->r), (unsigned long long)i,
                         (unsigned long long)(i * it->block_size));
    return rc;
}

static int advance(sstpipe_iter *it, sp_error *err) {
    sp_error e = {0};
    int rc = sst_walk_next(&it->walk, &e);
    if (rc < 0)
        return sst_blocks_error(sst_reader_blocks(it->r), it->block, &e, err);
    return rc ? rc : next_block(it, err);
}

/* The first record >= start: in the last block whose first key is <= start
 * (block 0 when start sorts before every key), or else the next block's
 * first. */
static int seek(sstpipe_iter *it, sp_error *err) {
    if (it->blocks == 0)
        return 0;
    int64_t i = it->start ? sst_reader_find_block(it->r, it->start, it->start_len) : 0;
    if (i < 0)
        i = 0;
    if (load_block(it, (uint64_t)i, err))
        return -1;
    if (!it->start)
        return advance(it, err);
    sp_error e = {0};
    int rc = sst_walk_seek(&it->walk, it->start, it->start_len, &e);
    if (rc < 0)
        return sst_blocks_error(sst_reader_blocks(it->r), (uint64_t)i, &e, err);
    return rc ? rc : next_block(it, err);
}

int sstpipe_table_iter_next(sstpipe_iter *it, const void **key, size_t *klen, const void **value,
                            size_t *vlen, char **errmsg) {
    int rc;
    switch (it->state) {
    case IT_END:
        return 0;
    case IT_ERROR:
        sstpipe_report_error(errmsg, &it->err);
        return -1;
    case IT_START:
        rc = seek(it, &it->err);
        break;
    default:
        rc = advance(it, &it->err);
        break;
    }
    if (rc < 0) {
        it->state = IT_ERROR;
        sstpipe_report_error(errmsg, &it->err);
        return -1;
    }
    const block_iter *w = &it->walk.it;
    if (rc == 0 || (it->prefix_len && (w->key_len < it->prefix_len ||
                                       memcmp(w->key, it->prefix, it->prefix_len) != 0))) {
        it->state = IT_END;
        return 0;
    }
    it->state = IT_WALK;
    *key = w->key;
    *klen = w->key_len;
    *value = w->value;
    *vlen = w->value_len;
    return 1;
}
