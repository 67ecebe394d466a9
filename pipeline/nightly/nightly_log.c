/* nightly_log.c: log lines and the progress ticker of nightly; see nightly_log.h. */
#include "pipeline/nightly/nightly_log.h"

#include "stages/common/clock.h"
#include "stages/common/progress.h"
#include "stages/common/size.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TTY_PERIOD_MS 500
#define LOG_PERIOD_S 60

void nightly_utc(time_t t, bool compact, char *out, size_t cap) {
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void nightly_log_init(nightly_log *lg) {
    memset(lg, 0, sizeof *lg);
    lg->tty = isatty(STDERR_FILENO);
    pthread_mutex_init(&lg->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lg->wake, &ca);
    pthread_condattr_destroy(&ca);
}

void nightly_log_attach(nightly_log *lg, FILE *f) {
    pthread_mutex_lock(&lg->mu);
    lg->file = f;
    pthread_mutex_unlock(&lg->mu);
}

/* With lg->mu held. */
static void clear_live(nightly_log *lg) {
    if (lg->live_shown) {
        fputs("\r\033[K", stderr);
        lg->live_shown = false;
    }
}

static void emit(nightly_log *lg, const char *msg) {
    char ts[32];
    nightly_utc(time(NULL), false, ts, sizeof ts);
    clear_live(lg);
    fprintf(stderr, "%s nightly: %s\n", ts, msg);
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

/* The read position of the descriptor this process has open on path, or -1. */
static int64_t read_position(const char *path) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char link[300], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, path))
            continue;
        char info[300];
        snprintf(info, sizeof info, "/proc/self/fdinfo/%s", e->d_name);
        FILE *f = fopen(info, "r");
        if (!f)
            continue;
        long long pos;
        if (fscanf(f, "pos: %lld", &pos) == 1 && pos > best)
            best = pos;
        fclose(f);
    }
    closedir(d);
    return best;
}

/* With lg->mu held: the progress line of the current stage. */
static void progress_text(nightly_log *lg, char *out, size_t cap) {
    double elapsed = sp_clock_seconds() - lg->stage_start;
    char el[32];
    sp_progress_duration(elapsed, el, sizeof el);
    uint64_t written = atomic_load(&lg->records), total = atomic_load(&lg->records_total);
    if (total) {
        double rate = elapsed > 0 ? (double)written / elapsed : 0;
        snprintf(out, cap,
                 "%s: input read; writing record %llu of at most %llu (%.1f%%), %.0f records/s, "
                 "elapsed %s",
                 lg->stage, (unsigned long long)written, (unsigned long long)total,
                 100.0 * (double)written / (double)total, rate, el);
        return;
    }
    int64_t done = lg->watch_path[0] ? read_position(lg->watch_path) : (int64_t)lg->done;
    if (done >= 0)
        lg->watch_seen = true;
    if (!lg->total || done < 0) {
        /* The stage closed its input: what remains is its output side (for
         * the build, the final merge and the table write). */
        snprintf(out, cap, "%s: %s, elapsed %s", lg->stage,
                 lg->watch_seen ? "input read, finishing" : "running", el);
        return;
    }
    char d[32], t[32], eta[32] = "-";
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    if (rate > 0 && (uint64_t)done < lg->total)
        sp_progress_duration((double)(lg->total - (uint64_t)done) / rate, eta, sizeof eta);
    if ((uint64_t)done >= lg->total)
        snprintf(eta, sizeof eta, "input read, finishing");
    char pages[48] = "";
    if (atomic_load(&lg->records))
        snprintf(pages, sizeof pages, ", %llu pages",
                 (unsigned long long)atomic_load(&lg->records));
    snprintf(out, cap, "%s: %s of %s (%.1f%%)%s, %.1f MB/s, elapsed %s, ETA %s", lg->stage,
             sp_format_size((uint64_t)done, d, sizeof d), sp_format_size(lg->total, t, sizeof t),
             100.0 * (double)done / (double)lg->total, pages, rate / 1e6, el, eta);
}

static void *tick(void *arg) {
    nightly_log *lg = arg;
    pthread_mutex_lock(&lg->mu);
    double last_log = sp_clock_seconds();
    while (!lg->stop) {
        struct timespec until = sp_clock_deadline(TTY_PERIOD_MS * 1000000u);
        pthread_cond_timedwait(&lg->wake, &lg->mu, &until);
        if (lg->stop)
            break;
        char line[512];
        if (lg->tty) {
            progress_text(lg, line, sizeof line);
            fprintf(stderr, "\r\033[K%s", line);
            lg->live_shown = true;
        } else if (sp_clock_seconds() - last_log >= LOG_PERIOD_S) {
            progress_text(lg, line, sizeof line);
            emit(lg, line);
            last_log = sp_clock_seconds();
        }
    }
    clear_live(lg);
    pthread_mutex_unlock(&lg->mu);
    return NULL;
}

void nightly_stage_begin(nightly_log *lg, const char *stage, const char *watch_path,
                         uint64_t total) {
    nightly_stage_end(lg);
    pthread_mutex_lock(&lg->mu);
    snprintf(lg->stage, sizeof lg->stage, "%s", stage);
    lg->watch_path[0] = '\0';
    if (watch_path && !realpath(watch_path, lg->watch_path))
        lg->watch_path[0] = '\0';
    lg->total = total;
    lg->watch_seen = false;
    atomic_store(&lg->done, 0);
    atomic_store(&lg->records, 0);
    atomic_store(&lg->records_total, 0);
    lg->stage_start = sp_clock_seconds();
    lg->stop = false;
    lg->ticking = pthread_create(&lg->ticker, NULL, tick, lg) == 0;
    pthread_mutex_unlock(&lg->mu);
}

void nightly_stage_end(nightly_log *lg) {
    pthread_mutex_lock(&lg->mu);
    bool was = lg->ticking;
    lg->stop = true;
    lg->ticking = false;
    pthread_cond_signal(&lg->wake);
    pthread_mutex_unlock(&lg->mu);
    if (was)
        pthread_join(lg->ticker, NULL);
}

void nightly_log_destroy(nightly_log *lg) {
    nightly_stage_end(lg);
    pthread_mutex_destroy(&lg->mu);
    pthread_cond_destroy(&lg->wake);
}
