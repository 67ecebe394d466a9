/* nightly_log.c: log lines and the progress of nightly's stages; see nightly_log.h. */
#include "pipeline/nightly/nightly_log.h"

#include "stages/common/clock.h"
#include "stages/common/progress.h"
#include "stages/common/size.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

/* The live line is redrawn twice a second: live enough for a stage that
 * runs for minutes. */
#define LIVE_PERIOD_S 0.5

void nightly_utc(time_t t, bool compact, char *out, size_t cap) {
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void nightly_log_init(nightly_log *lg, FILE *echo, bool live, double period) {
    memset(lg, 0, sizeof *lg);
    lg->echo = echo;
    lg->live = live && echo;
    lg->period = period;
    pthread_mutex_init(&lg->mu, NULL);
}

void nightly_log_attach(nightly_log *lg, FILE *f) {
    pthread_mutex_lock(&lg->mu);
    lg->file = f;
    pthread_mutex_unlock(&lg->mu);
}

/* With lg->mu held. */
static void clear_live(nightly_log *lg) {
    if (lg->live_shown) {
        fputs("\r\033[K", lg->echo);
        lg->live_shown = false;
    }
}

/* With lg->mu held. */
static void emit(nightly_log *lg, const char *msg) {
    char ts[32];
    nightly_utc(time(NULL), false, ts, sizeof ts);
    if (lg->echo) {
        clear_live(lg);
        fprintf(lg->echo, "%s nightly: %s\n", ts, msg);
    }
    if (lg->file && !lg->file_errno) {
        errno = 0;
        if (fprintf(lg->file, "%s nightly: %s\n", ts, msg) < 0 || fflush(lg->file) != 0)
            lg->file_errno = errno ? errno : EIO;
    }
}

int nightly_log_file_error(nightly_log *lg) {
    pthread_mutex_lock(&lg->mu);
    int e = lg->file_errno;
    pthread_mutex_unlock(&lg->mu);
    return e;
}

void nightly_logf(nightly_log *lg, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&lg->mu);
    emit(lg, msg);
    pthread_mutex_unlock(&lg->mu);
}

/* The meter's sinks: a progress line in the log, or the live line. */
static void log_progress(void *ctx, const char *line) {
    nightly_log *lg = ctx;
    pthread_mutex_lock(&lg->mu);
    emit(lg, line);
    pthread_mutex_unlock(&lg->mu);
}

static void draw_live(void *ctx, const char *line) {
    nightly_log *lg = ctx;
    pthread_mutex_lock(&lg->mu);
    fprintf(lg->echo, "\r\033[K%s", line);
    fflush(lg->echo);
    lg->live_shown = true;
    pthread_mutex_unlock(&lg->mu);
}

void nightly_stage_begin(nightly_log *lg, const char *stage, uint64_t total) {
    nightly_stage_end(lg);
    snprintf(lg->stage, sizeof lg->stage, "%s", stage);
    sp_progress_init(&lg->progress, NULL);
    sp_progress_store(&lg->progress.total_bytes, total);
    lg->meter = lg->live
                    ? sp_meter_start_log(lg->stage, &lg->progress, LIVE_PERIOD_S, draw_live, lg)
                    : sp_meter_start_log(lg->stage, &lg->progress, lg->period, log_progress, lg);
}

void nightly_stage_end(nightly_log *lg) {
    sp_meter_stop(lg->meter, true);
    lg->meter = NULL;
    pthread_mutex_lock(&lg->mu);
    if (lg->echo)
        clear_live(lg);
    pthread_mutex_unlock(&lg->mu);
}

void nightly_log_destroy(nightly_log *lg) {
    nightly_stage_end(lg);
    pthread_mutex_destroy(&lg->mu);
}
