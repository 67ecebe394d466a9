/*
 * handoff.h: a thread of the table writer's own that takes one buffer at a
 * time from it.
 *
 * The writer keeps its second core busy in two places: its background
 * thread writes a full batch of blocks while the caller fills the next
 * one, and its packing thread compresses a batch of records into blocks
 * while the merge goes on. Both are the same hand-off: the owner fills a
 * buffer, waits until the thread is idle, hands the buffer over and fills
 * another; the thread runs a function on each buffer it is given. It is
 * declared once here; each user says only what the thread does with a
 * buffer and which buffers it swaps.
 *
 * Threads: the owner calls every function, one call at a time, from
 * whichever thread holds the work (the background write is given batches
 * by the packing thread while it runs, and by the caller after it has
 * stopped); the job function runs on the hand-off's own thread, one job
 * at a time, and the owner touches nothing a job uses until
 * sst_handoff_wait (or the next give) returns.
 * Errors: a job's failure is kept, and returned by the owner's next give
 * or wait and by every one after, so none is lost.
 */
#ifndef SSTPIPE_SST_HANDOFF_H
#define SSTPIPE_SST_HANDOFF_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>

/* What the thread does with a buffer handed to it: 0, or -1 with err. */
typedef int (*sst_handoff_job)(void *ctx, const uint8_t *buf, size_t len, sp_error *err);

typedef struct sst_handoff sst_handoff;

/* A started thread that runs job(ctx, ...) on each buffer given; NULL
 * when a thread cannot be had (the owner then does the work itself). */
sst_handoff *sst_handoff_start(sst_handoff_job job, void *ctx);

/* Waits until the thread is idle, then hands it buf (len bytes), which
 * the owner leaves alone until the next give or wait returns: 0, or -1
 * with the error of a job that failed (buf is then not handed over). */
int sst_handoff_give(sst_handoff *h, const uint8_t *buf, size_t len, sp_error *err);

/* Waits until the thread is idle: 0, or -1 with the error of a job that
 * failed. */
int sst_handoff_wait(sst_handoff *h, sp_error *err);

/* Lets the thread finish its job and leave, and frees h: the thread's CPU
 * seconds. */
double sst_handoff_stop(sst_handoff *h);

#endif
