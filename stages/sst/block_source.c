/*
 * block_source.c: reading a table's data blocks and checking them; see
 * block_source.h.
 *
 * Every read here is of whole blocks at multiples of block_size, so a
 * lookup's read is aligned and O_DIRECT takes it as it is. The checks
 * trust nothing read: block.c checks every length against the block's
 * bounds even after the checksum matched.
 */
#include "stages/sst/block_source.h"

#include "stages/common/fileio.h"
#include "stages/common/key.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* O_DIRECT wants buffers aligned to the device's logical block; a page
 * covers every device. */
#define DIRECT_ALIGN 4096
/* The most reads one batch's ring holds in flight; a batch needing more
 * submits the rest as earlier ones complete. */
#define BATCH_RING_DEPTH 256u

void sst_blocks_init(sst_blocks *b, const char *path, int fd, uint32_t block_size, uint64_t count) {
    *b = (sst_blocks){
        .path = path, .fd = fd, .lookup_fd = -1, .block_size = block_size, .count = count};
}

void sst_blocks_release(sst_blocks *b) {
    if (b->map)
        munmap((void *)b->map, b->map_len);
    if (b->lookup_fd >= 0)
        close(b->lookup_fd);
    b->map = NULL;
    b->lookup_fd = -1;
}

int sst_blocks_map(sst_blocks *b, sp_error *err) {
    if (b->map || b->count == 0)
        return 0;
    size_t len = (size_t)(b->count * b->block_size);
    void *data = mmap(NULL, len, PROT_READ, MAP_SHARED, b->fd, 0);
    if (data == MAP_FAILED)
        return sp_errorf_errno(err, "%s: cannot map the data region (%zu bytes)", b->path, len);
    /* Lookups touch one block each: reading ahead around it would only
     * evict pages that other lookups need. */
    madvise(data, len, MADV_RANDOM);
    b->map = data;
    b->map_len = len;
    return 0;
}

int sst_blocks_open_direct(sst_blocks *b, sp_error *err) {
    b->lookup_fd = open(b->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (b->lookup_fd < 0) {
        if (errno == EINVAL)
            return sp_errorf(err,
                             "%s: direct I/O (O_DIRECT) is not supported on this file system; "
                             "open it without direct I/O",
                             b->path);
        return sp_errorf_errno(err, "%s: cannot open for direct I/O", b->path);
    }
    if (b->count == 0)
        return 0;
    /* Its own buffer: a caller's may hold a value still in use. */
    void *buf;
    if (posix_memalign(&buf, DIRECT_ALIGN, b->block_size) != 0)
        return sp_errorf(err, "%s: out of memory for a block of %u bytes", b->path, b->block_size);
    ssize_t n = pread(b->lookup_fd, buf, b->block_size, 0);
    int e = errno;
    free(buf);
    errno = e;
    if (n < 0 && errno == EINVAL)
        return sp_errorf(err,
                         "%s: direct I/O of %u-byte blocks is refused (the device's logical "
                         "block is larger?); open it without direct I/O",
                         b->path, b->block_size);
    if (n != (ssize_t)b->block_size)
        return sp_errorf_errno(err, "%s: direct I/O read of block 0 failed", b->path);
    return 0;
}

/* ---------------------------------------------------------------- checks */

int sst_blocks_decode(const sst_blocks *b, const uint8_t *data, block_plain *plain, block_view *v,
                      sp_error *what) {
    if (b->packed)
        return packed_open(v, data, b->block_size, b->packed, plain, "", what);
    return block_open(v, data, b->block_size, "", what);
}

int sst_blocks_error(const sst_blocks *b, uint64_t i, const sp_error *block_err, sp_error *err) {
    return sp_errorf(err, "%s: block %llu at byte %llu%s", b->path, (unsigned long long)i,
                     (unsigned long long)(i * b->block_size), block_err->msg);
}

int sst_blocks_check(const sst_blocks *b, uint64_t i, const uint8_t *data, const uint8_t *first,
                     uint32_t flen, block_plain *plain, block_view *v, sp_error *err) {
    sp_error e; /* cleared, not zeroed: every block of a walk comes here */
    sp_error_clear(&e);
    if (sst_blocks_decode(b, data, plain, v, &e))
        return sst_blocks_error(b, i, &e, err);
    block_iter it;
    block_iter_init(&it, v);
    if (block_iter_next(&it, "", &e) < 0)
        return sst_blocks_error(b, i, &e, err);
    if (sp_key_cmp(first, flen, it.key, it.key_len) != 0)
        return sp_errorf(err, "%s: block %llu at byte %llu: first key differs from the index",
                         b->path, (unsigned long long)i, (unsigned long long)(i * b->block_size));
    return 0;
}

int sst_blocks_find(const sst_blocks *b, uint64_t i, const uint8_t *data, const uint8_t *first,
                    uint32_t flen, block_plain *plain, const uint8_t *key, size_t klen,
                    const void **value, size_t *vlen, sp_error *err) {
    sp_error e;
    sp_error_clear(&e);
    int rc;
    if (b->packed) {
        rc = packed_find(data, b->block_size, b->packed, first, flen, plain, key, klen, value, vlen,
                         "", &e);
    } else {
        block_view v;
        if (sst_blocks_check(b, i, data, first, flen, plain, &v, err))
            return -1;
        rc = block_find(&v, key, klen, value, vlen, "", &e);
    }
    return rc < 0 ? sst_blocks_error(b, i, &e, err) : rc;
}

int sst_blocks_find_group(const sst_blocks *b, uint64_t i, const uint8_t *data,
                          const uint8_t *first, uint32_t flen, block_plain *plain,
                          const uint8_t *key, size_t klen, packed_group_view *g, sp_error *err) {
    sp_error e;
    sp_error_clear(&e);
    int rc =
        packed_find_group(data, b->block_size, b->packed, first, flen, plain, key, klen, g, "", &e);
    return rc < 0 ? sst_blocks_error(b, i, &e, err) : rc;
}

/* ---------------------------------------------------------------- reads */

static int lookup_fd(const sst_blocks *b) {
    return b->lookup_fd >= 0 ? b->lookup_fd : b->fd;
}

int sst_blocks_read(const sst_blocks *b, uint64_t i, uint8_t *buf, uint32_t *calls, sp_error *err) {
    if (i >= b->count)
        return sp_errorf(err, "%s: block %llu does not exist (%llu blocks)", b->path,
                         (unsigned long long)i, (unsigned long long)b->count);
    int fd = lookup_fd(b);
    uint64_t off = i * b->block_size;
    for (size_t got = 0; got < b->block_size;) {
        ssize_t k = pread(fd, buf + got, b->block_size - got, (off_t)(off + got));
        if (calls)
            ++*calls;
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return sp_errorf_errno(err, "%s: read at byte %llu failed", b->path,
                                   (unsigned long long)(off + got));
        if (k == 0)
            return sp_errorf(err, "%s: unexpected end of file at byte %llu", b->path,
                             (unsigned long long)(off + got));
        got += (size_t)k;
    }
    return 0;
}

int sst_blocks_read_result(const sst_blocks *b, uint64_t i, int res, sp_error *err) {
    if (res == (int)b->block_size)
        return 0;
    unsigned long long off = (unsigned long long)(i * b->block_size);
    if (res < 0)
        return sp_errorf(err, "%s: read of block %llu at offset %llu: %s", b->path,
                         (unsigned long long)i, off, strerror(-res));
    return sp_errorf(err, "%s: short read of block %llu at offset %llu (%d of %u bytes)", b->path,
                     (unsigned long long)i, off, res, b->block_size);
}

int sst_blocks_read_run(const sst_blocks *b, uint64_t first, uint64_t n, uint8_t *buf,
                        sp_error *err) {
    if (first > b->count || n > b->count - first)
        return sp_errorf(err, "%s: blocks %llu to %llu do not exist (%llu blocks)", b->path,
                         (unsigned long long)first, (unsigned long long)(first + n),
                         (unsigned long long)b->count);
    return sp_pread_exact(b->fd, buf, (size_t)(n * b->block_size), first * b->block_size, b->path,
                          err);
}

/* ---------------------------------------------------------------- rings */

/* The ring and how many reads it holds, queued or in flight. */
struct sst_block_ring {
    struct io_uring ring;
    unsigned depth;
    unsigned inflight;
};

sst_block_ring *sst_block_ring_new(unsigned depth, sp_error *err) {
    sst_block_ring *q = calloc(1, sizeof *q);
    if (!q) {
        sp_errorf(err, "out of memory for an io_uring of depth %u", depth);
        return NULL;
    }
    int ret = io_uring_queue_init(depth, &q->ring, 0);
    if (ret < 0) {
        free(q);
        sp_errorf(err, "cannot set up io_uring with queue depth %u: %s", depth, strerror(-ret));
        return NULL;
    }
    q->depth = depth;
    return q;
}

void sst_block_ring_free(sst_block_ring *q) {
    if (!q)
        return;
    /* Reads queued but never submitted are submitted with the wait. */
    while (q->inflight) {
        struct io_uring_cqe *cqe;
        int ret = io_uring_submit_and_wait(&q->ring, 1);
        if (ret < 0 && ret != -EINTR)
            break;
        while (q->inflight && io_uring_peek_cqe(&q->ring, &cqe) == 0) {
            io_uring_cqe_seen(&q->ring, cqe);
            q->inflight--;
        }
    }
    io_uring_queue_exit(&q->ring);
    free(q);
}

bool sst_block_ring_add(sst_block_ring *q, const sst_blocks *b, uint64_t i, uint8_t *buf,
                        uint64_t tag) {
    if (q->inflight == q->depth)
        return false;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
    if (!sqe)
        return false;
    io_uring_prep_read(sqe, lookup_fd(b), buf, b->block_size, i * b->block_size);
    io_uring_sqe_set_data64(sqe, tag);
    q->inflight++;
    return true;
}

int sst_block_ring_next(sst_block_ring *q, uint64_t *tag, int *res, sp_error *err) {
    if (!q->inflight)
        return 0;
    /* A read that has completed is taken before anything is submitted:
     * the reads added meanwhile go to the kernel together, at the wait. */
    struct io_uring_cqe *cqe;
    if (io_uring_peek_cqe(&q->ring, &cqe) != 0) {
        int ret;
        /* A signal (serve's SIGHUP) can interrupt the wait; the reads the
         * kernel took stay taken (the ring's head says which), so asking
         * again submits only the rest and waits. */
        while ((ret = io_uring_submit_and_wait(&q->ring, 1)) == -EINTR)
            ;
        if (ret < 0)
            return sp_errorf(err, "io_uring submit: %s", strerror(-ret));
        if ((ret = io_uring_peek_cqe(&q->ring, &cqe)) != 0)
            return sp_errorf(err, "io_uring completion: %s", strerror(-ret));
    }
    *tag = io_uring_cqe_get_data64(cqe);
    *res = cqe->res;
    io_uring_cqe_seen(&q->ring, cqe);
    q->inflight--;
    return 1;
}

/* The batch through one ring: 1 when the kernel refuses io_uring (nothing
 * was read). */
static int read_ring(const sst_block_req *req, size_t n, sp_error *err) {
    sp_error refused = {0};
    sst_block_ring *q =
        sst_block_ring_new(n < BATCH_RING_DEPTH ? (unsigned)n : BATCH_RING_DEPTH, &refused);
    if (!q)
        return 1;
    size_t next = 0;
    int rc = 0;
    for (;;) {
        while (next < n && sst_block_ring_add(q, req[next].b, req[next].i, req[next].buf, next))
            next++;
        uint64_t tag;
        int res;
        int got = sst_block_ring_next(q, &tag, &res, err);
        if (got < 0) {
            sp_error e = *err;
            rc = sp_errorf(err, "%s: %s", req[0].b->path, e.msg);
        }
        if (got <= 0)
            break;
        if (sst_blocks_read_result(req[tag].b, req[tag].i, res, err)) {
            rc = -1;
            break;
        }
    }
    sst_block_ring_free(q);
    return rc;
}

int sst_blocks_read_batch(const sst_block_req *req, size_t n, sp_error *err) {
    int rc = n > 1 ? read_ring(req, n, err) : 1;
    for (size_t j = 0; rc == 1 && j < n; j++)
        if (sst_blocks_read(req[j].b, req[j].i, req[j].buf, NULL, err))
            return -1;
    return rc == 1 ? 0 : rc;
}

void sst_blocks_will_need(const sst_block_req *req, size_t n) {
    for (size_t j = 0; n > 1 && j < n; j++) {
        uint32_t bs = req[j].b->block_size;
        (void)posix_fadvise(req[j].b->fd, (off_t)(req[j].i * bs), bs, POSIX_FADV_WILLNEED);
    }
}

/* ---------------------------------------------------------------- sequential */

void sst_block_seq_init(sst_block_seq *s, const sst_blocks *b, uint64_t first_read,
                        uint64_t max_read) {
    *s = (sst_block_seq){.b = b};
    sst_block_seq_set_reads(s, first_read, max_read);
}

void sst_block_seq_set_reads(sst_block_seq *s, uint64_t first_read, uint64_t max_read) {
    s->max_read = max_read ? max_read : 1;
    s->next_read = first_read ? first_read : 1;
    if (s->next_read > s->max_read)
        s->next_read = s->max_read;
}

bool sst_block_seq_holds(const sst_block_seq *s, uint64_t i) {
    return i >= s->first && i - s->first < s->n;
}

const uint8_t *sst_block_seq_at(sst_block_seq *s, uint64_t i, sp_error *err) {
    const sst_blocks *b = s->b;
    if (!sst_block_seq_holds(s, i)) {
        uint64_t n = s->next_read;
        if (i < b->count && n > b->count - i)
            n = b->count - i;
        s->n = 0;
        if (n > s->cap) {
            /* Page-aligned: the kernel's copy out of the page cache is
             * several times slower into a destination that is not
             * (sp_io_alloc in fileio.h). */
            size_t len = (size_t)(n * b->block_size);
            free(s->buf);
            s->cap = 0;
            void *p;
            if (posix_memalign(&p, DIRECT_ALIGN, len) != 0) {
                sp_errorf(err, "%s: out of memory for a %zu-byte read buffer", b->path, len);
                return NULL;
            }
            s->buf = p;
            s->cap = n;
        }
        if (sst_blocks_read_run(b, i, n, s->buf, err))
            return NULL;
        s->first = i;
        s->n = n;
        if (s->next_read * 2 <= s->max_read)
            s->next_read *= 2;
    }
    return s->buf + (i - s->first) * b->block_size;
}

void sst_block_seq_free(sst_block_seq *s) {
    free(s->buf);
    s->buf = NULL;
    s->cap = s->n = 0;
}
