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
 * A batch of lookups (sstpipe_get_many) finds each key's block in the
 * index, reads every distinct block once with all the reads in flight
 * together (a networked disk answers a queue of reads in about the time
 * of one), then searches each key in its block as a single lookup would.
 * It works over the keys of several tables at once, so that a set's batch
 * reads its shards' blocks in one go: the set layer names each key's shard.
 */
#include "stages/sst/sstpipe_table.h"

#include "stages/common/fileio.h"
#include "stages/common/uring_drain.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    return calloc(1, sizeof(sstpipe_options));
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

/* ---------------------------------------------- per-thread direct-I/O buffer */

/* Each thread's buffer for direct-I/O lookups, grown to the largest block
 * size it has read and freed when the thread exits (the key's destructor). */
typedef struct thread_buf {
    uint8_t *data;
    size_t cap;
} thread_buf;

static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;
static int buf_key_rc;

static void thread_buf_free(void *p) {
    thread_buf *b = p;
    free(b->data);
    free(b);
}

static void buf_key_create(void) {
    buf_key_rc = pthread_key_create(&buf_key, thread_buf_free);
}

static uint8_t *thread_buffer(size_t need) {
    if (pthread_once(&buf_once, buf_key_create) != 0 || buf_key_rc != 0)
        return NULL;
    thread_buf *b = pthread_getspecific(buf_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b)))
            return NULL;
        if (pthread_setspecific(buf_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
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

/* Opens the O_DIRECT descriptor and proves that it reads: a file system
 * without O_DIRECT (tmpfs) refuses the open, and a device whose logical
 * block is larger than the table's blocks refuses the aligned read, both
 * with EINVAL. Either is an error at open, not at the first lookup. */
static int open_direct(sstpipe_table *t, sp_error *err) {
    const char *path = sst_reader_path(t->r);
    const sst_footer *f = sst_reader_footer(t->r);
    t->direct_fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (t->direct_fd < 0) {
        if (errno == EINVAL)
            return sp_errorf(err,
                             "%s: direct I/O (O_DIRECT) is not supported on this file system; "
                             "open it without direct I/O",
                             path);
        return sp_errorf_errno(err, "%s: cannot open for direct I/O", path);
    }
    if (f->data_blocks == 0)
        return 0;
    /* Its own buffer: the thread's may hold a value a caller still uses. */
    void *buf;
    if (posix_memalign(&buf, DIRECT_ALIGN, f->block_size) != 0)
        return sp_errorf(err, "%s: out of memory for a block of %u bytes", path, f->block_size);
    ssize_t n = pread(t->direct_fd, buf, f->block_size, 0);
    int e = errno;
    free(buf);
    errno = e;
    if (n < 0 && errno == EINVAL)
        return sp_errorf(err,
                         "%s: direct I/O of %u-byte blocks is refused (the device's logical "
                         "block is larger?); open it without direct I/O",
                         path, f->block_size);
    if (n != (ssize_t)f->block_size)
        return sp_errorf_errno(err, "%s: direct I/O read of block 0 failed", path);
    return 0;
}

sstpipe_table *sstpipe_table_open(const char *path, const sstpipe_options *opt, sp_error *err) {
    sstpipe_table *t = calloc(1, sizeof *t);
    if (!t) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    t->direct_fd = -1;
    t->direct_io = opt && opt->direct_io;
    if (!(t->r = sst_reader_open(path, err)) ||
        (t->direct_io ? open_direct(t, err) : sst_reader_map(t->r, SST_READER_DIR_BUDGET, err))) {
        sstpipe_table_close(t);
        return NULL;
    }
    return t;
}

void sstpipe_table_close(sstpipe_table *t) {
    if (!t)
        return;
    if (t->direct_fd >= 0)
        close(t->direct_fd);
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
    if (!sstpipe_key_may_exist(klen))
        return 0;
    int64_t i = sst_reader_find_block(t->r, key, klen);
    if (i < 0)
        return 0;
    const sst_footer *f = sst_reader_footer(t->r);
    const char *path = sst_reader_path(t->r);
    uint8_t *buf = thread_buffer(f->block_size);
    if (!buf)
        return sp_errorf(err, "%s: out of memory for a block of %u bytes", path, f->block_size);
    if (sp_pread_exact(t->direct_fd, buf, f->block_size, (uint64_t)i * f->block_size, path, err))
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

/* A distinct block of a batch: where it goes in the thread's buffer. */
typedef struct batch_block {
    const sstpipe_table *t;
    uint64_t block;
    size_t off;
} batch_block;

static int batch_cmp(const void *a, const void *b) {
    const batch_key *x = a, *y = b;
    uintptr_t tx = (uintptr_t)x->t, ty = (uintptr_t)y->t;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    return (x->block > y->block) - (x->block < y->block);
}

/* The most reads one ring holds in flight; a batch needing more submits
 * the rest as earlier ones complete. */
#define BATCH_RING_DEPTH 256u

static int read_error(const batch_block *d, int res, sp_error *err) {
    const char *path = sst_reader_path(d->t->r);
    uint32_t bs = sst_reader_footer(d->t->r)->block_size;
    if (res < 0)
        return sp_errorf(err, "%s: read of block %llu at offset %llu: %s", path,
                         (unsigned long long)d->block, (unsigned long long)(d->block * bs),
                         strerror(-res));
    return sp_errorf(err, "%s: short read of block %llu at offset %llu (%d of %u bytes)", path,
                     (unsigned long long)d->block, (unsigned long long)(d->block * bs), res, bs);
}

/* Reads the nd direct-I/O blocks d into buf, one io_uring read each, as
 * many in flight at once as the ring holds. 1 when the kernel refuses
 * io_uring (a seccomp filter, io_uring_disabled): nothing was read. */
static int read_uring(const batch_block *d, size_t nd, uint8_t *buf, sp_error *err) {
    struct io_uring ring;
    unsigned depth = nd < BATCH_RING_DEPTH ? (unsigned)nd : BATCH_RING_DEPTH;
    if (io_uring_queue_init(depth, &ring, 0) < 0)
        return 1;
    size_t next = 0, inflight = 0;
    int rc = 0;
    while (rc == 0 && (next < nd || inflight)) {
        struct io_uring_sqe *sqe;
        while (next < nd && (sqe = io_uring_get_sqe(&ring))) {
            uint32_t bs = sst_reader_footer(d[next].t->r)->block_size;
            io_uring_prep_read(sqe, d[next].t->direct_fd, buf + d[next].off, bs,
                               d[next].block * bs);
            io_uring_sqe_set_data64(sqe, next);
            next++;
            inflight++;
        }
        int ret;
        /* A signal (serve's SIGHUP) can interrupt the wait; the reads the
         * kernel took stay taken (the ring's head says which), so asking
         * again submits only the rest and waits. */
        while ((ret = io_uring_submit_and_wait(&ring, 1)) == -EINTR)
            ;
        if (ret < 0) {
            rc = sp_errorf(err, "%s: io_uring submit: %s", sst_reader_path(d[0].t->r),
                           strerror(-ret));
            break;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            const batch_block *b = &d[io_uring_cqe_get_data64(cqe)];
            seen++;
            inflight--;
            if (rc == 0 && cqe->res != (int)sst_reader_footer(b->t->r)->block_size)
                rc = read_error(b, cqe->res, err);
        }
        io_uring_cq_advance(&ring, seen);
    }
    sp_uring_drain(&ring, inflight);
    io_uring_queue_exit(&ring);
    return rc;
}

/* Reads the batch's distinct blocks d: with direct I/O into buf, together
 * (one alone with a pread, as sstpipe_get does); mapped, by asking the
 * kernel for all of them at once, so that the searches' page faults find
 * them read or on their way. */
static int read_blocks(const batch_block *d, size_t nd, uint8_t *buf, sp_error *err) {
    if (!d[0].t->direct_io) {
        for (size_t j = 0; nd > 1 && j < nd; j++) {
            uint32_t bs = sst_reader_footer(d[j].t->r)->block_size;
            /* Advice: a failure only loses the reads' overlap. */
            (void)posix_fadvise(sst_reader_fd(d[j].t->r), (off_t)(d[j].block * bs), bs,
                                POSIX_FADV_WILLNEED);
        }
        return 0;
    }
    int rc = nd > 1 ? read_uring(d, nd, buf, err) : 1;
    for (size_t j = 0; rc == 1 && j < nd; j++) {
        const sst_footer *f = sst_reader_footer(d[j].t->r);
        if (sp_pread_exact(d[j].t->direct_fd, buf + d[j].off, f->block_size,
                           d[j].block * f->block_size, sst_reader_path(d[j].t->r), err))
            return -1;
    }
    return rc == 1 ? 0 : rc;
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
        int64_t block = t ? sst_reader_find_block(t->r, keys[i], klens[i]) : -1;
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
static int batch_search(const batch_key *b, size_t m, batch_block *d, size_t nd,
                        const void *const *keys, const size_t *klens, const void **values,
                        size_t *vlens, sp_error *err) {
    size_t bytes = 0;
    for (size_t j = 0; j < m; j++) {
        if (j > 0 && b[j].slot == b[j - 1].slot)
            continue;
        d[b[j].slot] = (batch_block){.t = b[j].t, .block = (uint64_t)b[j].block, .off = bytes};
        bytes += sst_reader_footer(b[j].t->r)->block_size;
    }
    bool direct = b[0].t->direct_io;
    uint8_t *buf = direct ? thread_buffer(bytes) : NULL;
    if (direct && !buf)
        return sp_errorf(err, "%s: out of memory for %zu blocks (%zu bytes)",
                         sst_reader_path(b[0].t->r), nd, bytes);
    if (read_blocks(d, nd, buf, err))
        return -1;
    for (size_t j = 0; j < m; j++) {
        const batch_key *k = &b[j];
        const batch_block *blk = &d[k->slot];
        int found = direct
                        ? sst_reader_search_block(k->t->r, blk->block, buf + blk->off, keys[k->i],
                                                  klens[k->i], &values[k->i], &vlens[k->i], err)
                        : sst_reader_get_in_block(k->t->r, blk->block, keys[k->i], klens[k->i],
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
    batch_block *d = malloc(n * sizeof *d);
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
