/*
 * source_queue.c: the decompression thread and its buffer ring; see
 * source_queue.h.
 *
 * The producer owns a buffer from the moment it takes it until it
 * publishes it full (or with the end or an error); the consumer owns it
 * from then until it has copied it all out. Only the ring counters and the
 * stop flag are shared, under one mutex.
 */
#include "stages/extract/source_queue.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct qbuf {
    uint8_t *data;
    size_t len;
    uint64_t offset; /* compressed bytes behind data[0..len) and all before */
    bool end;        /* the data ends after these bytes */
    bool failed;     /* ... with this error */
    sp_error err;
} qbuf;

struct source_queue {
    source_fill_fn fill;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t filled_cv; /* a buffer was published */
    pthread_cond_t free_cv;   /* a buffer was drained, or stop */
    qbuf bufs[SOURCE_QUEUE_BUFS];
    uint64_t published; /* buffers the producer has published */
    uint64_t drained;   /* buffers the consumer has finished */
    bool stop;
    pthread_t thread;
    bool started;

    /* Consumer only. */
    qbuf *cur; /* being drained, NULL between buffers */
    size_t pos;
    uint64_t offset;
    bool done;
    sp_error error; /* sticky */
};

/* Fills b until it is full, the data ends or fails. */
static void fill_buf(source_queue *q, qbuf *b) {
    b->len = 0;
    b->end = b->failed = false;
    sp_error_clear(&b->err);
    while (b->len < SOURCE_QUEUE_BUF) {
        ssize_t r =
            q->fill(q->ctx, b->data + b->len, SOURCE_QUEUE_BUF - b->len, &b->offset, &b->err);
        if (r < 0) {
            b->failed = b->end = true;
            return;
        }
        if (r == 0) {
            b->end = true;
            return;
        }
        b->len += (size_t)r;
    }
}

static void *producer_main(void *arg) {
    source_queue *q = arg;
    for (uint64_t seq = 0;; seq++) {
        pthread_mutex_lock(&q->mu);
        while (!q->stop && seq - q->drained >= SOURCE_QUEUE_BUFS)
            pthread_cond_wait(&q->free_cv, &q->mu);
        bool stop = q->stop;
        pthread_mutex_unlock(&q->mu);
        if (stop)
            return NULL;
        qbuf *b = &q->bufs[seq % SOURCE_QUEUE_BUFS];
        fill_buf(q, b);
        pthread_mutex_lock(&q->mu);
        q->published = seq + 1;
        pthread_cond_signal(&q->filled_cv);
        pthread_mutex_unlock(&q->mu);
        if (b->end)
            return NULL;
    }
}

source_queue *source_queue_start(source_fill_fn fill, void *ctx, const char *name, sp_error *err) {
    source_queue *q = calloc(1, sizeof *q);
    if (!q) {
        sp_errorf(err, "%s: out of memory", name);
        return NULL;
    }
    q->fill = fill;
    q->ctx = ctx;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->filled_cv, NULL);
    pthread_cond_init(&q->free_cv, NULL);
    for (int i = 0; i < SOURCE_QUEUE_BUFS; i++)
        if (!(q->bufs[i].data = malloc(SOURCE_QUEUE_BUF))) {
            sp_errorf(err, "%s: out of memory", name);
            source_queue_stop(q);
            return NULL;
        }
    q->started = pthread_create(&q->thread, NULL, producer_main, q) == 0;
    if (!q->started) {
        sp_errorf(err, "%s: cannot start the decompression thread", name);
        source_queue_stop(q);
        return NULL;
    }
    return q;
}

/* Waits for the next buffer in order and makes it current. */
static void take_next(source_queue *q) {
    pthread_mutex_lock(&q->mu);
    while (q->published == q->drained)
        pthread_cond_wait(&q->filled_cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
    q->cur = &q->bufs[q->drained % SOURCE_QUEUE_BUFS];
    q->pos = 0;
    q->offset = q->cur->offset;
}

/* Hands the current buffer back to the producer. */
static void give_back(source_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->drained++;
    pthread_cond_signal(&q->free_cv);
    pthread_mutex_unlock(&q->mu);
    q->cur = NULL;
}

ssize_t source_queue_read(source_queue *q, void *buf, size_t n, sp_error *err) {
    uint8_t *dst = buf;
    size_t got = 0;
    while (got < n && !q->done && !q->error.set) {
        if (!q->cur)
            take_next(q);
        qbuf *b = q->cur;
        size_t k = b->len - q->pos < n - got ? b->len - q->pos : n - got;
        memcpy(dst + got, b->data + q->pos, k);
        q->pos += k;
        got += k;
        if (q->pos < b->len)
            break;
        /* Drained: its end or error takes effect now; the producer has
         * stopped after it, so the buffer stays ours. */
        if (b->failed)
            sp_errorf(&q->error, "%s", b->err.msg);
        else if (b->end)
            q->done = true;
        else
            give_back(q);
    }
    /* The bytes before an error go out first, so that a parser sees all
     * the data there was; the next call fails. */
    if (q->error.set && got == 0)
        return sp_errorf(err, "%s", q->error.msg);
    return (ssize_t)got;
}

uint64_t source_queue_offset(const source_queue *q) {
    return q->offset;
}

void source_queue_stop(source_queue *q) {
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->free_cv);
    pthread_mutex_unlock(&q->mu);
    if (q->started)
        pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->free_cv);
    pthread_cond_destroy(&q->filled_cv);
    pthread_mutex_destroy(&q->mu);
    for (int i = 0; i < SOURCE_QUEUE_BUFS; i++)
        free(q->bufs[i].data);
    free(q);
}
