/*
 * iotest.c: running iotest's patterns; see iotest.h.
 *
 * Each thread owns an io_uring of queue_depth entries and keeps that many
 * IOs in flight until its time is up: when one completes, its latency goes
 * into the thread's histogram and the next IO reuses its slot. An IO's
 * latency runs from when it was queued to when its completion was reaped,
 * so it includes waiting behind the others in flight, as diskspd counts
 * latency under outstanding IOs. The threads start together and merge
 * their histograms afterwards.
 */
#include "pipeline/tune/iotest.h"

#include "pipeline/tune/latency_hist.h"
#include "stages/common/cleanup.h"
#include "stages/common/clock.h"
#include "stages/common/freespace.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#define FILL_CHUNK (1u << 20)

void iotest_options_init(iotest_options *opts) {
    memset(opts, 0, sizeof *opts);
    opts->file_size = 1ull << 30;
    opts->duration = 10;
    opts->threads = 8;
    opts->queue_depth = 8;
}

void iotest_result_init(iotest_result *res) {
    memset(res, 0, sizeof *res);
}

void iotest_result_destroy(iotest_result *res) {
    free(res->dir);
    free(res->file);
    free(res->results);
    memset(res, 0, sizeof *res);
}

/* xorshift64*: offsets and fill bytes need speed and spread, not secrecy. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void fill_random(uint8_t *buf, size_t n, uint64_t *s) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = next_rand(s);
        memcpy(buf + i, &v, 8);
    }
}

static int check_options(const iotest_options *o, sp_error *err) {
    if (o->file_size < IOTEST_MIN_IO_SIZE || o->file_size % IOTEST_MIN_IO_SIZE)
        return sp_errorf(err, "iotest: the test file size must be a multiple of 4K, at least 4K");
    if (!(o->duration > 0 && o->duration <= 86400))
        return sp_errorf(err, "iotest: the duration must be more than 0 and at most 86400 seconds");
    if (o->threads < 1 || o->threads > 1024)
        return sp_errorf(err, "iotest: threads must be from 1 to 1024");
    if (o->queue_depth < 1 || o->queue_depth > 4096)
        return sp_errorf(err, "iotest: the queue depth must be from 1 to 4096");
    if (o->n_patterns > IOTEST_MAX_PATTERNS)
        return sp_errorf(err, "iotest: at most %d patterns", IOTEST_MAX_PATTERNS);
    for (size_t i = 0; i < o->n_patterns; i++) {
        const iotest_pattern *p = &o->patterns[i];
        if (p->io_size < IOTEST_MIN_IO_SIZE || p->io_size > IOTEST_MAX_IO_SIZE ||
            p->io_size % IOTEST_MIN_IO_SIZE)
            return sp_errorf(err, "iotest: IO sizes must be multiples of 4K from 4K to 16M");
        /* Each sequential thread walks its own slice, which must hold an IO. */
        if (o->file_size / o->threads < p->io_size) {
            char name[32];
            return sp_errorf(err,
                             "iotest: a %llu-byte test file is too small for %u threads of "
                             "%s IOs (at least %llu bytes)",
                             (unsigned long long)o->file_size, o->threads,
                             iotest_pattern_name(p, name, sizeof name),
                             (unsigned long long)p->io_size * o->threads);
        }
    }
    return 0;
}

/* Holds a pattern's threads until all of them exist, so they start
 * together, or tells them to quit when one could not be started. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* 0 wait, 1 go, -1 quit */
} gate;

static int gate_wait(gate *g) {
    pthread_mutex_lock(&g->mu);
    while (g->state == 0)
        pthread_cond_wait(&g->cv, &g->mu);
    int s = g->state;
    pthread_mutex_unlock(&g->mu);
    return s;
}

static void gate_open(gate *g, int state) {
    pthread_mutex_lock(&g->mu);
    g->state = state;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* One thread of one pattern. */
typedef struct worker {
    int fd;
    const char *path;
    iotest_pattern p;
    unsigned queue_depth;
    uint64_t region_start, region_len; /* where its IOs go */
    double duration;
    sp_progress *progress; /* or NULL */
    struct gate *gate;
    uint64_t rng;
    /* out */
    uint64_t start_ns, end_ns, ios;
    latency_hist hist;
    int rc;
    sp_error err;
} worker;

static uint64_t next_offset(worker *w, uint64_t *cursor) {
    if (w->p.random)
        return w->region_start + next_rand(&w->rng) % (w->region_len / w->p.io_size) * w->p.io_size;
    uint64_t off = w->region_start + *cursor;
    *cursor += w->p.io_size;
    if (*cursor + w->p.io_size > w->region_len)
        *cursor = 0;
    return off;
}

typedef struct slot {
    uint64_t t0, offset;
    uint8_t *buf;
} slot;

static void queue_io(worker *w, struct io_uring *ring, slot *s, uint64_t *cursor) {
    s->offset = next_offset(w, cursor);
    s->t0 = sp_clock_ns();
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (w->p.write)
        io_uring_prep_write(sqe, w->fd, s->buf, w->p.io_size, s->offset);
    else
        io_uring_prep_read(sqe, w->fd, s->buf, w->p.io_size, s->offset);
    io_uring_sqe_set_data(sqe, s);
}

/* The IOs a worker completes between two additions to the shared progress
 * counters: their cache line is touched a few thousand times a second at
 * most, not once per IO. */
#define PROGRESS_EVERY_IOS 256

static void add_progress(worker *w, uint64_t ios) {
    if (!w->progress || !ios)
        return;
    atomic_fetch_add_explicit(&w->progress->records, ios, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->progress->in_bytes, ios * w->p.io_size, memory_order_relaxed);
}

static int run_ios(worker *w, struct io_uring *ring, slot *slots) {
    unsigned q = w->queue_depth, inflight = 0;
    uint64_t cursor = 0, reported = 0;
    w->start_ns = sp_clock_ns();
    uint64_t deadline = w->start_ns + (uint64_t)(w->duration * 1e9);
    for (unsigned i = 0; i < q; i++, inflight++)
        queue_io(w, ring, &slots[i], &cursor);
    int rc = 0;
    while (inflight) {
        int ret = io_uring_submit_and_wait(ring, 1);
        if (ret < 0 && ret != -EINTR) {
            rc = sp_errorf(&w->err, "%s: io_uring submit: %s", w->path, strerror(-ret));
            break;
        }
        uint64_t now = sp_clock_ns();
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(ring, head, cqe) {
            slot *s = io_uring_cqe_get_data(cqe);
            seen++;
            inflight--;
            if (rc == 0 && cqe->res != (int)w->p.io_size) {
                char name[32];
                iotest_pattern_name(&w->p, name, sizeof name);
                rc = cqe->res < 0
                         ? sp_errorf(&w->err, "%s: %s at byte %llu: %s", w->path, name,
                                     (unsigned long long)s->offset, strerror(-cqe->res))
                         : sp_errorf(&w->err, "%s: %s at byte %llu: %d of %u bytes", w->path, name,
                                     (unsigned long long)s->offset, cqe->res, w->p.io_size);
            }
            if (rc)
                continue;
            latency_hist_add(&w->hist, now - s->t0);
            w->ios++;
            if (now < deadline) {
                queue_io(w, ring, s, &cursor);
                inflight++;
            }
        }
        io_uring_cq_advance(ring, seen);
        w->end_ns = now;
        if (w->ios - reported >= PROGRESS_EVERY_IOS) {
            add_progress(w, w->ios - reported);
            reported = w->ios;
        }
        if (rc && inflight) {
            /* Reads in flight must land before their buffers are freed. */
            io_uring_submit(ring);
            while (inflight && io_uring_wait_cqe(ring, &cqe) == 0) {
                io_uring_cqe_seen(ring, cqe);
                inflight--;
            }
            break;
        }
    }
    add_progress(w, w->ios - reported);
    return rc;
}

static void *worker_run(void *arg) {
    worker *w = arg;
    struct io_uring ring;
    slot *slots = calloc(w->queue_depth, sizeof *slots);
    uint8_t *bufs = NULL;
    if (posix_memalign((void **)&bufs, IOTEST_MIN_IO_SIZE, (size_t)w->queue_depth * w->p.io_size))
        bufs = NULL;
    int ret = io_uring_queue_init(w->queue_depth, &ring, 0);
    if (ret < 0)
        w->rc = sp_errorf(&w->err, "cannot set up io_uring with queue depth %u: %s", w->queue_depth,
                          strerror(-ret));
    else if (!slots || !bufs)
        w->rc = sp_errorf(&w->err, "out of memory for %u buffers of %u bytes", w->queue_depth,
                          w->p.io_size);
    if (w->rc == 0) {
        for (unsigned i = 0; i < w->queue_depth; i++)
            slots[i].buf = bufs + (size_t)i * w->p.io_size;
        if (w->p.write)
            fill_random(bufs, (size_t)w->queue_depth * w->p.io_size, &w->rng);
    }
    if (gate_wait(w->gate) > 0 && w->rc == 0)
        w->rc = run_ios(w, &ring, slots);
    if (ret >= 0)
        io_uring_queue_exit(&ring);
    free(slots);
    free(bufs);
    return NULL;
}

static int run_pattern(int fd, const char *path, const iotest_options *o, const iotest_pattern *p,
                       iotest_pattern_result *out, sp_error *err) {
    unsigned t = o->threads;
    worker *ws = calloc(t, sizeof *ws);
    pthread_t *tids = calloc(t, sizeof *tids);
    latency_hist *all = malloc(sizeof *all);
    gate start = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    if (!ws || !tids || !all) {
        free(ws);
        free(tids);
        free(all);
        return sp_errorf(err, "out of memory for %u iotest threads", t);
    }
    uint64_t slice = o->file_size / t / p->io_size * p->io_size;
    for (unsigned i = 0; i < t; i++) {
        ws[i] = (worker){.fd = fd,
                         .path = path,
                         .p = *p,
                         .queue_depth = o->queue_depth,
                         .region_start = p->random ? 0 : i * slice,
                         .region_len = p->random ? o->file_size : slice,
                         .duration = o->duration,
                         .progress = o->progress,
                         .gate = &start,
                         .rng = 0x9E3779B97F4A7C15ull * (i + 1)};
        latency_hist_init(&ws[i].hist);
    }
    unsigned started = 0;
    for (; started < t; started++)
        if (pthread_create(&tids[started], NULL, worker_run, &ws[started]))
            break;
    gate_open(&start, started == t ? 1 : -1);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    int rc = started < t ? sp_errorf(err, "cannot start %u iotest threads", t) : 0;
    latency_hist_init(all);
    uint64_t first = UINT64_MAX, last = 0;
    for (unsigned i = 0; i < t && rc == 0; i++) {
        if (ws[i].rc) {
            rc = sp_errorf(err, "%s", ws[i].err.msg);
            break;
        }
        latency_hist_merge(all, &ws[i].hist);
        out->ios += ws[i].ios;
        if (ws[i].start_ns < first)
            first = ws[i].start_ns;
        if (ws[i].end_ns > last)
            last = ws[i].end_ns;
    }
    if (rc == 0) {
        out->pattern = *p;
        out->bytes = out->ios * p->io_size;
        out->seconds = (double)(last - first) / 1e9;
        out->iops = out->seconds > 0 ? (double)out->ios / out->seconds : 0;
        out->mb_per_s = out->iops * p->io_size / 1e6;
        out->min_ns = all->min;
        out->max_ns = all->max;
        out->avg_ns = all->count ? (double)all->sum / (double)all->count : 0;
        out->p50_ns = latency_hist_percentile(all, 50);
        out->p99_ns = latency_hist_percentile(all, 99);
    }
    free(ws);
    free(tids);
    free(all);
    return rc;
}

/* Opens the new test file for direct IO, or buffered where the file system
 * refuses O_DIRECT; notes why the figures may not be disk speed. */
static int create_test_file(iotest_result *res, sp_error *err) {
    int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
    int fd = open(res->file, flags | O_DIRECT, 0600);
    res->direct = fd >= 0;
    if (fd < 0 && errno == EINVAL) {
        fd = open(res->file, flags, 0600);
        snprintf(res->note, sizeof res->note,
                 "the file system of %s does not support O_DIRECT: measured through the page "
                 "cache, so these figures are memory speed, not disk speed",
                 res->dir);
    }
    if (fd < 0)
        return sp_errorf_errno(err, "%s: cannot create the test file", res->file);
    struct statfs fs;
    if (res->direct && fstatfs(fd, &fs) == 0 &&
        (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC))
        snprintf(res->note, sizeof res->note,
                 "%s is in memory (tmpfs): these figures are memory speed, not disk speed",
                 res->dir);
    return fd;
}

static int fill_test_file(int fd, const iotest_result *res, uint64_t size, sp_progress *progress,
                          sp_error *err) {
    uint8_t *buf;
    if (posix_memalign((void **)&buf, IOTEST_MIN_IO_SIZE, FILL_CHUNK))
        return sp_errorf(err, "out of memory for the fill buffer");
    uint64_t rng = 0x2545F4914F6CDD1Dull;
    int rc = 0;
    for (uint64_t off = 0; off < size && rc == 0;) {
        size_t n = size - off < FILL_CHUNK ? (size_t)(size - off) : FILL_CHUNK;
        /* Fresh random bytes per chunk: a compressing or deduplicating
         * device must not get away with storing less. */
        fill_random(buf, n, &rng);
        ssize_t k = pwrite(fd, buf, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            rc = k < 0 ? sp_errorf_errno(err, "%s: filling the test file at byte %llu", res->file,
                                         (unsigned long long)off)
                       : sp_errorf(err, "%s: filling the test file: no progress at byte %llu",
                                   res->file, (unsigned long long)off);
        else
            off += (uint64_t)k;
        if (progress)
            sp_progress_store(&progress->in_bytes, off);
    }
    free(buf);
    if (rc == 0 && fsync(fd))
        rc = sp_errorf_errno(err, "%s: fsync of the test file", res->file);
    return rc;
}

static int check_room(const char *dir, uint64_t size, sp_error *err) {
    uint64_t free_bytes;
    if (sp_free_bytes(dir, &free_bytes, err))
        return -1;
    if (free_bytes < size)
        return sp_errorf(err,
                         "%s: no room for a %llu-byte test file (%llu bytes free); use a "
                         "smaller --size",
                         dir, (unsigned long long)size, (unsigned long long)free_bytes);
    return 0;
}

int iotest_run(const char *dir, const iotest_options *opts, iotest_result *res, sp_error *err) {
    iotest_options o = *opts;
    if (!o.patterns || o.n_patterns == 0) {
        o.patterns = iotest_default_patterns;
        o.n_patterns = IOTEST_DEFAULT_PATTERN_COUNT;
    }
    if (check_options(&o, err))
        return -1;
    struct io_uring probe;
    int ret = io_uring_queue_init(o.queue_depth, &probe, 0);
    if (ret < 0)
        return sp_errorf(err, "cannot set up io_uring with queue depth %u: %s", o.queue_depth,
                         strerror(-ret));
    io_uring_queue_exit(&probe);
    struct stat st;
    if (stat(dir, &st))
        return sp_errorf_errno(err, "%s: cannot use as the test directory", dir);
    if (!S_ISDIR(st.st_mode))
        return sp_errorf(err, "%s: not a directory (iotest creates its test file in PATH)", dir);
    if (check_room(dir, o.file_size, err))
        return -1;

    res->dir = strdup(dir);
    res->results = calloc(o.n_patterns, sizeof *res->results);
    if (res->dir && asprintf(&res->file, "%s/sstpipe-iotest.%ld.dat", dir, (long)getpid()) < 0)
        res->file = NULL;
    if (!res->dir || !res->file || !res->results)
        return sp_errorf(err, "out of memory");
    int fd = create_test_file(res, err);
    if (fd < 0)
        return -1;
    int slot = sp_cleanup_add(res->file);
    uint64_t t0 = sp_clock_ns();
    if (o.progress) {
        sp_progress_phase(o.progress, SP_PHASE_WRITING);
        sp_progress_store(&o.progress->total_bytes, o.file_size);
    }
    int rc = fill_test_file(fd, res, o.file_size, o.progress, err);
    res->fill_seconds = (double)(sp_clock_ns() - t0) / 1e9;
    if (o.progress) {
        /* The patterns run for a time, not a size: no percent from here on. */
        sp_progress_store(&o.progress->total_bytes, 0);
        sp_progress_steps(o.progress, "pattern", o.n_patterns);
    }
    for (size_t i = 0; i < o.n_patterns && rc == 0; i++) {
        if (o.progress) {
            sp_progress_store(&o.progress->step, i + 1);
            sp_progress_phase(o.progress,
                              o.patterns[i].write ? SP_PHASE_WRITING : SP_PHASE_READING);
        }
        /* Nothing of the file in the page cache: each pattern starts cold. */
        if (!res->direct)
            fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        rc = run_pattern(fd, res->file, &o, &o.patterns[i], &res->results[i], err);
        if (rc == 0)
            res->n_results++;
    }
    close(fd);
    if (unlink(res->file) && rc == 0)
        rc = sp_errorf_errno(err, "%s: cannot remove the test file", res->file);
    sp_cleanup_remove(slot);
    o.patterns = NULL; /* results[i].pattern holds each */
    res->opts = o;
    res->opts.n_patterns = res->n_results;
    return rc;
}
