/*
 * nightly_log.h: what `sstpipe nightly` tells its user while it runs.
 *
 * Every event is a timestamped line ("2026-01-31T02:00:00Z nightly: ...") on
 * stderr and in the run's nightly.log. While a stage runs, a ticker thread
 * reports progress: on a terminal as one live line rewritten twice a second
 * (stage, bytes done of total, rate, ETA), otherwise as a log line a minute,
 * so a cron log shows a long build moving without being flooded.
 *
 * The build reports its progress through build_options' hook (bytes of the
 * input read and pages parsed, then records written); verify, which has no
 * hook, is measured from outside: the file position of the descriptor it has
 * open on the table (/proc/self/fdinfo), which is how far it has read.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_LOG_H
#define SSTPIPE_PIPELINE_NIGHTLY_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef struct nightly_log {
    FILE *file;     /* the run's nightly.log, once there is one */
    int file_errno; /* why the first line could not be written to it; 0 */
    bool tty;       /* stderr is a terminal */
    bool live_shown;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t ticker;
    bool ticking, stop;
    /* the stage being watched */
    char stage[32];
    double stage_start;
    char watch_path[4096]; /* file whose read position is the progress; "" if none */
    uint64_t total;        /* its size */
    bool watch_seen;       /* the stage has had watch_path open */
    _Atomic uint64_t done; /* progress the caller reports itself (when no watch_path) */
    /* Records the caller reports: pages parsed while reading, then, once
     * records_total is set, records written of records_total. */
    _Atomic uint64_t records;
    _Atomic uint64_t records_total;
} nightly_log;

void nightly_log_init(nightly_log *lg);
/* Also write every line to f from now on (f stays owned by the caller). */
void nightly_log_attach(nightly_log *lg, FILE *f);
void nightly_logf(nightly_log *lg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0, or the errno of the first line that could not be written to the file
 * (from then on no line is written to it: the file stays a prefix of the
 * log, not a log with holes). */
int nightly_log_file_error(nightly_log *lg);
/*
 * Starts reporting progress of stage: how far a reader of watch_path has
 * got (watch_path non-NULL), or what the caller stores in lg->done, out of
 * total bytes (0: elapsed time only).
 */
void nightly_stage_begin(nightly_log *lg, const char *stage, const char *watch_path,
                         uint64_t total);
void nightly_stage_end(nightly_log *lg);
void nightly_log_destroy(nightly_log *lg);

/* "2026-01-31T02:00:00Z" (iso) or "20260131T020000Z" (compact) for t. */
void nightly_utc(time_t t, bool compact, char *out, size_t cap);

#endif
