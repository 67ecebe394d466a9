/*
 * wg_bzpool.c: parallel compression of bz2 streams; see wg_bzpool.h.
 *
 * Streams wait in a ring of 2 x threads slots. The calling thread fills the
 * slot at tail, workers compress any queued slot, and the calling thread
 * writes slots in ring order as they complete, so the output order is the
 * submission order. Only the calling thread writes to the file.
 */
#include "data/wg_bzpool.h"

#include "stages/common/fileio.h"

#include <bzlib.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

typedef struct job {
    char *in;
    size_t len, cap;
    char *out;
    size_t out_cap;
    unsigned out_len;
    char *notes; /* its pages' "id:title\n" lines, for the index */
    size_t notes_len, notes_cap;
    int state;
    int rc; /* a libbz2 code, or BZ_MEM_ERROR when the output could not be allocated */
} job;

struct wg_bzpool {
    int fd;
    const char *name;
    pthread_t *threads;
    unsigned started;
    job *jobs;
    unsigned slots;
    uint64_t head, tail; /* [head, tail) are submitted and not yet written */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    bool stop;
    uint64_t bytes_out, streams;
    char *index; /* "offset:id:title\n" of every page written */
    size_t index_len, index_cap;
};

/* Appends n bytes to a growing buffer. */
static int append(char **buf, size_t *len, size_t *cap, const void *p, size_t n) {
    if (*len + n > *cap) {
        size_t c = *cap ? *cap : 1u << 16;
        while (c < *len + n)
            c *= 2;
        char *b = realloc(*buf, c);
        if (!b)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static void compress_job(job *j) {
    size_t bound = j->len + j->len / 100 + 600;
    if (bound > UINT_MAX) {
        j->rc = BZ_PARAM_ERROR;
        return;
    }
    if (bound > j->out_cap) {
        char *out = realloc(j->out, bound);
        if (!out) {
            j->rc = BZ_MEM_ERROR;
            return;
        }
        j->out = out;
        j->out_cap = bound;
    }
    j->out_len = (unsigned)bound;
    j->rc = BZ2_bzBuffToBuffCompress(j->out, &j->out_len, j->in, (unsigned)j->len, 9, 0, 0);
}

static void *worker(void *arg) {
    wg_bzpool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        job *j = NULL;
        for (uint64_t i = p->head; i < p->tail && !j; i++)
            if (p->jobs[i % p->slots].state == JOB_QUEUED)
                j = &p->jobs[i % p->slots];
        if (j) {
            j->state = JOB_RUNNING;
            pthread_mutex_unlock(&p->mu);
            compress_job(j);
            pthread_mutex_lock(&p->mu);
            j->state = JOB_DONE;
            pthread_cond_broadcast(&p->done);
            continue;
        }
        if (p->stop)
            break;
        pthread_cond_wait(&p->work, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int wg_bzpool_open(wg_bzpool **out, unsigned threads, int fd, const char *name, sp_error *err) {
    wg_bzpool *p = calloc(1, sizeof *p);
    if (!p)
        return sp_errorf(err, "wikigen: out of memory");
    p->fd = fd;
    p->name = name;
    p->slots = 2 * threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->jobs = calloc(p->slots, sizeof *p->jobs);
    p->threads = calloc(threads, sizeof *p->threads);
    if (!p->jobs || !p->threads) {
        wg_bzpool_destroy(p);
        return sp_errorf(err, "wikigen: out of memory");
    }
    for (; p->started < threads; p->started++) {
        if (pthread_create(&p->threads[p->started], NULL, worker, p)) {
            wg_bzpool_destroy(p);
            return sp_errorf(err, "wikigen: cannot start compression threads");
        }
    }
    *out = p;
    return 0;
}

int wg_bzpool_note(wg_bzpool *p, const void *line, size_t n, sp_error *err) {
    job *j = &p->jobs[p->tail % p->slots];
    if (append(&j->notes, &j->notes_len, &j->notes_cap, line, n))
        return sp_errorf(err, "wikigen: out of memory (index)");
    return 0;
}

/* The job's notes into the index, each line prefixed with offset. */
static int index_stream(wg_bzpool *p, job *j, uint64_t offset, sp_error *err) {
    char prefix[32];
    int plen = snprintf(prefix, sizeof prefix, "%llu:", (unsigned long long)offset);
    for (size_t at = 0; at < j->notes_len;) {
        const char *nl = memchr(j->notes + at, '\n', j->notes_len - at);
        size_t n = (size_t)(nl - (j->notes + at)) + 1;
        if (append(&p->index, &p->index_len, &p->index_cap, prefix, (size_t)plen) ||
            append(&p->index, &p->index_len, &p->index_cap, j->notes + at, n))
            return sp_errorf(err, "wikigen: out of memory (index)");
        at += n;
    }
    j->notes_len = 0;
    return 0;
}

const char *wg_bzpool_index(const wg_bzpool *p, size_t *len) {
    *len = p->index_len;
    return p->index;
}

int wg_bzpool_write(wg_bzpool *p, const void *buf, size_t n, sp_error *err) {
    job *j = &p->jobs[p->tail % p->slots];
    if (j->len + n > j->cap) {
        size_t cap = j->cap ? j->cap : 1u << 20;
        while (cap < j->len + n)
            cap *= 2;
        char *in = realloc(j->in, cap);
        if (!in)
            return sp_errorf(err, "wikigen: out of memory (stream of %zu bytes)", cap);
        j->in = in;
        j->cap = cap;
    }
    memcpy(j->in + j->len, buf, n);
    j->len += n;
    return 0;
}

/* Writes the oldest stream, waiting for it if wait is set; returns 1 when
 * nothing was ready. */
static int write_oldest(wg_bzpool *p, bool wait, sp_error *err) {
    job *j = &p->jobs[p->head % p->slots];
    pthread_mutex_lock(&p->mu);
    while (wait && j->state != JOB_DONE)
        pthread_cond_wait(&p->done, &p->mu);
    int state = j->state;
    pthread_mutex_unlock(&p->mu);
    if (state != JOB_DONE)
        return 1;
    if (j->rc != BZ_OK)
        return sp_errorf(err, "%s: bzip2 compression of stream %llu failed (libbz2 error %d)",
                         p->name, (unsigned long long)p->head + 1, j->rc);
    if (index_stream(p, j, p->bytes_out, err) ||
        sp_write_all(p->fd, j->out, j->out_len, p->name, err))
        return -1;
    p->bytes_out += j->out_len;
    j->len = 0;
    pthread_mutex_lock(&p->mu);
    j->state = JOB_FREE;
    p->head++;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int wg_bzpool_end_stream(wg_bzpool *p, sp_error *err) {
    job *j = &p->jobs[p->tail % p->slots];
    if (!j->len)
        return 0;
    pthread_mutex_lock(&p->mu);
    j->state = JOB_QUEUED;
    p->tail++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    p->streams++;
    /* Keep the output flowing, and the slot to fill next free. */
    int rc = 0;
    while (p->head < p->tail && (rc = write_oldest(p, p->tail - p->head == p->slots, err)) == 0)
        ;
    return rc < 0 ? -1 : 0;
}

int wg_bzpool_finish(wg_bzpool *p, sp_error *err) {
    if (wg_bzpool_end_stream(p, err))
        return -1;
    while (p->head < p->tail)
        if (write_oldest(p, true, err))
            return -1;
    return 0;
}

uint64_t wg_bzpool_bytes_out(const wg_bzpool *p) {
    return p->bytes_out;
}

uint64_t wg_bzpool_streams(const wg_bzpool *p) {
    return p->streams;
}

void wg_bzpool_destroy(wg_bzpool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
    for (unsigned i = 0; p->jobs && i < p->slots; i++) {
        free(p->jobs[i].in);
        free(p->jobs[i].out);
        free(p->jobs[i].notes);
    }
    free(p->jobs);
    free(p->index);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}
