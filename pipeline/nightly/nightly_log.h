/*
 * nightly_log.h: what `sstpipe nightly` tells its user while it runs.
 *
 * Every event is a timestamped line ("2026-01-31T02:00:00Z nightly: ...") in
 * the run's nightly.log and on the stream the caller echoes it to (the
 * command's stderr). While a stage runs, a meter (stages/common/progress.h,
 * its log rendering) reports the stage's sp_progress: as one live line
 * rewritten in place on the echo stream (a terminal), or else as a log line
 * every period, so a cron log shows a long build moving without being
 * flooded. The stages store into lg->progress themselves: the build and
 * verify through their options, the checksum through its byte count.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_LOG_H
#define SSTPIPE_PIPELINE_NIGHTLY_LOG_H

#include "stages/common/progress.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef struct nightly_log {
    FILE *file;     /* the run's nightly.log, once there is one */
    int file_errno; /* why the first line could not be written to it; 0 */
    FILE *echo;     /* every line also here; NULL: none */
    bool live;      /* progress as a live line on echo */
    bool live_shown;
    double period; /* seconds between progress lines when not live */
    pthread_mutex_t mu;
    /* the stage being watched */
    char stage[32];
    sp_progress progress;
    sp_meter *meter;
} nightly_log;

/* Lines to echo as well as the file (NULL: the file only); progress as a
 * live line on echo, or a log line every period seconds. */
void nightly_log_init(nightly_log *lg, FILE *echo, bool live, double period);
/* Also write every line to f from now on (f stays owned by the caller). */
void nightly_log_attach(nightly_log *lg, FILE *f);
void nightly_logf(nightly_log *lg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0, or the errno of the first line that could not be written to the file
 * (from then on no line is written to it: the file stays a prefix of the
 * log, not a log with holes). */
int nightly_log_file_error(nightly_log *lg);
/* Starts reporting the progress of stage: what the work stores in
 * lg->progress (reset here), out of total bytes (0: elapsed time only). */
void nightly_stage_begin(nightly_log *lg, const char *stage, uint64_t total);
void nightly_stage_end(nightly_log *lg);
void nightly_log_destroy(nightly_log *lg);

/* "2026-01-31T02:00:00Z" (iso) or "20260131T020000Z" (compact) for t. */
void nightly_utc(time_t t, bool compact, char *out, size_t cap);

#endif
