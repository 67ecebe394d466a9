/*
 * sstpipe_table.c: libsstpipe's plain tables: options, open and close, the
 * footer's counts, the library's version, and point lookups (sstpipe.h is
 * the contract; sstpipe_table.h the layer's).
 *
 * A lookup is one binary search of the in-memory index and one search of
 * one block. Mapped (the default), the block is read in place and checked
 * in full on its first lookup in the process (table_reader.c keeps that
 * state, atomically, per block), so warm lookups cost no system call.
 * With direct I/O every lookup is exactly one aligned pread of one block
 * with O_DIRECT, checked in full each time, into a buffer that belongs to
 * the calling thread: nothing in the table is written by a lookup, so any
 * number of threads share one table with no lock. A table set's shards
 * are plain tables, opened and read here.
 *
 * A key the table's filter rules out (filter.h, version 2) is answered
 * absent before the index is searched, with no block read.
 *
 * A batch of lookups (sstpipe_get_many) finds each key's block in the
 * index, reads every distinct block once with all the reads in flight
 * together (a networked disk answers a queue of reads in about the time
 * of one), then searches each key in its block as a single lookup would.
 * It works over the keys of several tables at once, so that a set's batch
 * reads its shards' blocks in one go: the set layer names each key's shard.
 *
 * Every block is read and checked by the reader's block source
 * (block_source.h): this file decides which blocks and into which buffer.
 */
#include "stages/sst/sstpipe_table.h"

#include "stages/sst/block_cache.h"
#include "stages/sst/thread_slot.h"

#include <stdlib.h>
#include <string.h>

#ifndef SSTPIPE_VERSION_STRING
#error "SSTPIPE_VERSION_STRING is defined by the build (CMakeLists.txt)"
#endif

/* O_DIRECT wants buffers aligned to the device's logical block; a page
 * covers every device. */
#define DIRECT_ALIGN 4096

const char *sstpipe_version(void) {
    return SSTPIPE_VERSION_STRING;
}

void sstpipe_free(void *p) {
    free(p);
}

void sstpipe_report_error(char **errmsg, const sp_error *err) {
    if (errmsg)
        *errmsg = strdup(err->set ? err->msg : "unknown error");
}

sstpipe_options *sstpipe_options_new(void) {
    sstpipe_options *opt = calloc(1, sizeof *opt);
    if (opt)
        opt->block_cache = SST_BLOCK_CACHE_DEFAULT;
    return opt;
}

void sstpipe_options_free(sstpipe_options *opt) {
    free(opt);
}

/* The names before the naming rule (sstpipe.h), kept for the programs
 * linked against them (symbol version SSTPIPE_1). */
sstpipe_options *sstpipe_options_init(void) {
    return sstpipe_options_new();
}

void sstpipe_options_destroy(sstpipe_options *opt) {
    sstpipe_options_free(opt);
}

void sstpipe_options_set_direct_io(sstpipe_options *opt, bool direct_io) {
    opt->direct_io = direct_io;
}

void sstpipe_options_set_block_cache(sstpipe_options *opt, size_t bytes) {
    opt->block_cache = bytes;
}

/* ---------------------------------------------- per-thread direct-I/O buffer */

/* Each thread's buffer for direct-I/O lookups, grown to the largest block
 * size it has read and freed when the thread exits (the key's destructor). */
typedef struct thread_buf {
    uint8_t *data;
    size_t cap;
} thread_buf;

static void *thread_buf_make(void) {
    return calloc(1, sizeof(thread_buf));
}

static void thread_buf_free(void *p) {
    thread_buf *b = p;
    free(b->data);
    free(b);
}

static sst_thread_slot buf_slot = SST_THREAD_SLOT(thread_buf_make, thread_buf_free);

static uint8_t *thread_buffer(size_t need) {
    thread_buf *b = sst_thread_slot_get(&buf_slot, true);
    if (!b)
        return NULL;
    if (b->cap < need) {
        void *p;
        if (posix_memalign(&p, DIRECT_ALIGN, need) != 0)
            return NULL;
        free(b->data);
        b->data = p;
        b->cap = need;
    }
    return b->data;
}

/* ------------------------------------------------------------- open, close */

sstpipe_table *sstpipe_table_open(const char *path, const sstpipe_options *opt, sp_error *err) {
    sstpipe_table *t = calloc(1, sizeof *t);
    if (!t) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    t->direct_io = opt && opt->direct_io;
    if ((t->r = sst_reader_open(path, err)))
        sst_reader_set_cache(t->r, opt ? opt->block_cache : SST_BLOCK_CACHE_DEFAULT);
    if (!t->r || (t->direct_io ? sst_blocks_open_direct(sst_reader_blocks_mut(t->r), err)
                               : sst_reader_map(t->r, SST_READER_DIR_BUDGET, err))) {
        sstpipe_table_close(t);
        return NULL;
    }
    return t;
}

void sstpipe_table_close(sstpipe_table *t) {
    if (!t)
        return;
    sst_reader_close(t->r);
    free(t);
}

void sstpipe_table_info(const sstpipe_table *t, sstpipe_info *info) {
    const sst_footer *f = sst_reader_footer(t->r);
    *info = (sstpipe_info){
        .records = f->records,
        .data_blocks = f->data_blocks,
        .key_bytes = f->key_bytes,
        .value_bytes = f->value_bytes,
        .file_size = f->file_size,
        .block_size = f->block_size,
        .cluster_size = f->cluster_size,
        .max_value_bytes = f->max_value_bytes,
        .format_version = f->format_version,
        .restart_interval = f->restart_interval,
        .index_bytes = f->index_length,
        .index_region_bytes = f->index_region_length,
    };
}

void sstpipe_table_compression(const sstpipe_table *t, sstpipe_compression *c) {
    const sst_footer *f = sst_reader_footer(t->r);
    const sst_meta *m = sst_reader_meta(t->r);
    if (!m) {
        *c = (sstpipe_compression){.method = "none", .plain_bytes = f->data_blocks * f->block_size};
        return;
    }
    *c = (sstpipe_compression){.method = "zstd",
                               .plain_bytes = m->plain_bytes,
                               .dictionary_bytes = m->dictionary_length,
                               .filter_bytes = m->filter_length};
}

const char *sstpipe_table_path(const sstpipe_table *t) {
    return sst_reader_path(t->r);
}

const void *sstpipe_table_first_key(const sstpipe_table *t, uint64_t i, size_t *klen) {
    if (i >= sst_reader_footer(t->r)->data_blocks)
        return NULL;
    uint32_t n = 0;
    const uint8_t *k = sst_reader_block_first_key(t->r, i, &n);
    *klen = n;
    return k;
}

/* ------------------------------------------------------------------ lookups */

/* A lookup in a table opened with direct I/O: the index search, one pread
 * of the block into the thread's buffer and the block's full check. Out of
 * line, so that a mapped lookup does not save the registers it uses. */
static __attribute__((noinline)) int get_direct(const sstpipe_table *t, const uint8_t *key,
                                                size_t klen, const void **value, size_t *vlen,
                                                sp_error *err) {
    if (!sstpipe_key_may_exist(klen) ||
        !sst_filter_may_hold_key(sst_reader_filter(t->r), key, klen))
        return 0;
    int64_t i = sst_reader_find_block(t->r, key, klen);
    if (i < 0)
        return 0;
    /* A compressed block's value is copied into the thread's values: the
     * last lookup's end here. */
    sst_values_reset();
    const sst_footer *f = sst_reader_footer(t->r);
    const char *path = sst_reader_path(t->r);
    uint8_t *buf = thread_buffer(f->block_size);
    if (!buf)
        return sp_errorf(err, "%s: out of memory for a block of %u bytes", path, f->block_size);
    if (sst_blocks_read(sst_reader_blocks(t->r), (uint64_t)i, buf, NULL, err))
        return -1;
    return sst_reader_search_block(t->r, (uint64_t)i, buf, key, klen, value, vlen, err);
}

int sstpipe_table_get(const sstpipe_table *t, const void *key, size_t klen, const void **value,
                      size_t *vlen, char **errmsg) {
    /* Not "= {0}": zeroing the 1 KiB message on every lookup is a cost a
     * warm lookup shows (the bench's get against profile); an error fills
     * it. */
    sp_error err;
    sp_error_clear(&err);
    /* Mapped (at open; an empty table has nothing to map and finds
     * nothing), the reader's own lookup: thread-safe there, with this
     * call's types, and it answers empty and overlong keys itself. */
    int rc = t->direct_io ? get_direct(t, key, klen, value, vlen, &err)
                          : sst_reader_get(t->r, key, klen, value, vlen, &err);
    if (rc < 0) {
        sstpipe_report_error(errmsg, &err);
        return -1;
    }
    return rc;
}

/* ---------------------------------------------------------- batched lookups */

/* One key of a batch: its table and block, its place in the caller's
 * arrays, and its block's place among the batch's distinct blocks. */
typedef struct batch_key {
    const sstpipe_table *t;
    size_t i;
    int64_t block;
    size_t slot;
} batch_key;

static int batch_cmp(const void *a, const void *b) {
    const batch_key *x = a, *y = b;
    uintptr_t tx = (uintptr_t)x->t, ty = (uintptr_t)y->t;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    return (x->block > y->block) - (x->block < y->block);
}

/* Puts the keys that may be stored in b, sorted by table and block,
 * numbers their distinct blocks (*nd of them), and returns how many keys
 * there are. */
static size_t batch_sort(batch_key *b, sstpipe_route_fn route, const void *ctx, size_t n,
                         const void *const *keys, const size_t *klens, const void **values,
                         size_t *vlens, size_t *nd) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        values[i] = NULL;
        vlens[i] = 0;
        const sstpipe_table *t =
            sstpipe_key_may_exist(klens[i]) ? route(ctx, keys[i], klens[i]) : NULL;
        int64_t block = t && sst_filter_may_hold_key(sst_reader_filter(t->r), keys[i], klens[i])
                            ? sst_reader_find_block(t->r, keys[i], klens[i])
                            : -1;
        if (block >= 0)
            b[m++] = (batch_key){.t = t, .i = i, .block = block};
    }
    qsort(b, m, sizeof *b, batch_cmp);
    *nd = 0;
    for (size_t j = 0; j < m; j++) {
        if (j > 0 && batch_cmp(&b[j - 1], &b[j]) != 0)
            ++*nd;
        b[j].slot = *nd;
    }
    if (m)
        ++*nd;
    return m;
}

/* Reads the m keys' blocks (nd distinct ones, placed in d) and searches
 * each key in its block. */
static int batch_search(const batch_key *b, size_t m, sst_block_req *d, size_t nd,
                        const void *const *keys, const size_t *klens, const void **values,
                        size_t *vlens, sp_error *err) {
    size_t bytes = 0;
    for (size_t j = 0; j < m; j++)
        if (j == 0 || b[j].slot != b[j - 1].slot)
            bytes += sst_reader_footer(b[j].t->r)->block_size;
    bool direct = b[0].t->direct_io;
    /* Compressed blocks' values are copied into the thread's values, which
     * hold the batch's together: the last lookup's end here. */
    sst_values_reset();
    uint8_t *buf = direct ? thread_buffer(bytes) : NULL;
    if (direct && !buf)
        return sp_errorf(err, "%s: out of memory for %zu blocks (%zu bytes)",
                         sst_reader_path(b[0].t->r), nd, bytes);
    size_t off = 0;
    for (size_t j = 0; j < m; j++) {
        if (j > 0 && b[j].slot == b[j - 1].slot)
            continue;
        d[b[j].slot] = (sst_block_req){.b = sst_reader_blocks(b[j].t->r),
                                       .i = (uint64_t)b[j].block,
                                       .buf = buf ? buf + off : NULL};
        off += sst_reader_footer(b[j].t->r)->block_size;
    }
    /* With direct I/O the reads land in the thread's buffer, together;
     * mapped, the kernel is asked for the blocks at once and the searches
     * read them in place. */
    if (!direct)
        sst_blocks_will_need(d, nd);
    else if (sst_blocks_read_batch(d, nd, err))
        return -1;
    for (size_t j = 0; j < m; j++) {
        const batch_key *k = &b[j];
        const sst_block_req *blk = &d[k->slot];
        int found = direct ? sst_reader_search_block(k->t->r, blk->i, blk->buf, keys[k->i],
                                                     klens[k->i], &values[k->i], &vlens[k->i], err)
                           : sst_reader_get_in_block(k->t->r, blk->i, keys[k->i], klens[k->i],
                                                     &values[k->i], &vlens[k->i], err);
        if (found < 0)
            return -1;
        if (found == 0) {
            values[k->i] = NULL;
            vlens[k->i] = 0;
        }
    }
    return 0;
}

int sstpipe_batch_get(sstpipe_route_fn route, const void *ctx, const char *path, size_t n,
                      const void *const *keys, const size_t *klens, const void **values,
                      size_t *vlens, char **errmsg) {
    if (n == 0)
        return 0;
    sp_error err = {0};
    batch_key *b = malloc(n * sizeof *b);
    sst_block_req *d = malloc(n * sizeof *d);
    int rc = 0;
    if (!b || !d) {
        rc = sp_errorf(&err, "%s: out of memory for a batch of %zu keys", path, n);
    } else {
        size_t nd;
        size_t m = batch_sort(b, route, ctx, n, keys, klens, values, vlens, &nd);
        if (m)
            rc = batch_search(b, m, d, nd, keys, klens, values, vlens, &err);
    }
    free(b);
    free(d);
    if (rc) {
        sstpipe_report_error(errmsg, &err);
        return -1;
    }
    return 0;
}

static const sstpipe_table *route_table(const void *ctx, const void *key, size_t klen) {
    (void)key;
    (void)klen;
    return ctx;
}

int sstpipe_table_get_many(const sstpipe_table *t, size_t n, const void *const *keys,
                           const size_t *klens, const void **values, size_t *vlens, char **errmsg) {
    return sstpipe_batch_get(route_table, t, sst_reader_path(t->r), n, keys, klens, values, vlens,
                             errmsg);
}
