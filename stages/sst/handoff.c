/*
 * handoff.c: the table writer's worker thread; see handoff.h.
 *
 * One mutex and one condition serve both directions: the thread waits on
 * it for a job or the stop, the owner for the job's end. A job runs with
 * the mutex released, so the owner fills its next buffer meanwhile.
 */
#include "stages/sst/handoff.h"

#include "stages/common/clock.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct sst_handoff {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sst_handoff_job job_fn;
    void *ctx;
    const uint8_t *job; /* the buffer being worked on, job_len bytes; NULL: idle */
    size_t job_len;
    bool stop, failed;
    sp_error err; /* the first failed job's */
    double cpu;   /* the thread's CPU seconds, once it has left */
};

static void *handoff_main(void *arg) {
    sst_handoff *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->job && !h->stop)
            pthread_cond_wait(&h->cv, &h->mu);
        if (!h->job)
            break;
        const uint8_t *buf = h->job;
        size_t n = h->job_len;
        pthread_mutex_unlock(&h->mu);
        sp_error e = {0};
        int rc = h->job_fn(h->ctx, buf, n, &e);
        pthread_mutex_lock(&h->mu);
        if (rc && !h->failed) {
            h->failed = true;
            h->err = e;
        }
        h->job = NULL;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    h->cpu = sp_thread_cpu_seconds();
    return NULL;
}

sst_handoff *sst_handoff_start(sst_handoff_job job, void *ctx) {
    sst_handoff *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->job_fn = job;
    h->ctx = ctx;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pthread_create(&h->thread, NULL, handoff_main, h) != 0) {
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return NULL;
    }
    return h;
}

/* Waits until idle, with the mutex held; whether a job failed (its error
 * into err). */
static bool idle_locked(sst_handoff *h, sp_error *err) {
    while (h->job)
        pthread_cond_wait(&h->cv, &h->mu);
    if (h->failed)
        *err = h->err;
    return h->failed;
}

int sst_handoff_give(sst_handoff *h, const uint8_t *buf, size_t len, sp_error *err) {
    pthread_mutex_lock(&h->mu);
    bool failed = idle_locked(h, err);
    if (!failed) {
        h->job = buf;
        h->job_len = len;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    return failed ? -1 : 0;
}

int sst_handoff_wait(sst_handoff *h, sp_error *err) {
    pthread_mutex_lock(&h->mu);
    bool failed = idle_locked(h, err);
    pthread_mutex_unlock(&h->mu);
    return failed ? -1 : 0;
}

double sst_handoff_stop(sst_handoff *h) {
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    double cpu = h->cpu;
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
    return cpu;
}
