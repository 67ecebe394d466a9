/* progress.c: progress counters and the live line; see progress.h. */
#include "stages/common/progress.h"

#include "stages/common/clock.h"
#include "stages/common/size.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Four refreshes a second: live enough, and a negligible cost. */
#define METER_PERIOD_NS 250000000L

struct sp_meter {
    const char *what;
    sp_progress *p;
    FILE *out;
    sp_meter_sink sink; /* the log rendering's; NULL: the live line on out */
    void *sink_ctx;
    long period_ns;
    double start;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stop;
    bool held; /* an error line was printed: the live line is erased and stays so */
};

/* The meter on screen, for sp_meter_hold; one at a time. */
static _Atomic(sp_meter *) active;

static const char *const phase_names[] = {"reading", "merging", "writing", "checking", "profiling"};

void sp_progress_init(sp_progress *p, const char *input) {
    memset(p, 0, sizeof *p);
    if (!input)
        return;
    struct stat st;
    int rc = strcmp(input, "-") ? stat(input, &st) : fstat(STDIN_FILENO, &st);
    if (rc == 0 && S_ISREG(st.st_mode))
        sp_progress_store(&p->total_bytes, (uint64_t)st.st_size);
}

void sp_progress_duration(double seconds, char *out, size_t cap) {
    long t = (long)(seconds + 0.5);
    snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* The counters as one reading, taken once per line. */
typedef struct counts {
    int phase;
    uint64_t in, xml, pages, records, records_total, total, step;
} counts;

static counts load(const sp_progress *p) {
    return (counts){
        .phase = atomic_load_explicit(&p->phase, memory_order_relaxed),
        .in = atomic_load_explicit(&p->in_bytes, memory_order_relaxed),
        .xml = atomic_load_explicit(&p->xml_bytes, memory_order_relaxed),
        .pages = atomic_load_explicit(&p->pages, memory_order_relaxed),
        .records = atomic_load_explicit(&p->records, memory_order_relaxed),
        .records_total = atomic_load_explicit(&p->records_total, memory_order_relaxed),
        .total = atomic_load_explicit(&p->total_bytes, memory_order_relaxed),
        .step = atomic_load_explicit(&p->step, memory_order_relaxed),
    };
}

void sp_progress_text(const sp_progress *p, const char *what, double elapsed, char *out,
                      size_t cap) {
    counts c = load(p);
    int phase = c.phase;
    uint64_t in = c.in, xml = c.xml, pages = c.pages, records = c.records, total = c.total,
             step = c.step;
    char a[32], b[32], el[32];
    size_t n = (size_t)snprintf(out, cap, "%s: ", what);
    if (p->steps && step && n < cap)
        n += (size_t)snprintf(out + n, cap - n, "%s %llu of %llu, ", p->step_name,
                              (unsigned long long)step, (unsigned long long)p->steps);
    if (n < cap)
        n += (size_t)snprintf(out + n, cap - n, "%s %s",
                              phase >= 0 && phase <= SP_PHASE_PROFILING ? phase_names[phase] : "",
                              sp_format_size(in, a, sizeof a));
    if (total && n < cap)
        n += (size_t)snprintf(out + n, cap - n, " of %s (%.1f%%)",
                              sp_format_size(total, b, sizeof b),
                              100.0 * (double)(in < total ? in : total) / (double)total);
    if (xml && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", xml %s", sp_format_size(xml, a, sizeof a));
    if (pages && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", %llu pages", (unsigned long long)pages);
    if (n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", %llu %s", (unsigned long long)records,
                              p->records_name ? p->records_name : "records");
    double rate = elapsed > 0 ? (double)in / elapsed : 0;
    sp_progress_duration(elapsed, el, sizeof el);
    if (n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", %.1f MB/s, elapsed %s", rate / 1e6, el);
    if (total && in < total && rate > 0 && n < cap) {
        sp_progress_duration((double)(total - in) / rate, el, sizeof el);
        snprintf(out + n, cap - n, ", ETA %s", el);
    }
}

void sp_progress_log_text(const sp_progress *p, const char *what, double elapsed, char *out,
                          size_t cap) {
    counts c = load(p);
    uint64_t done = c.in, total = c.total, pages = c.pages, written = c.records,
             most = c.records_total;
    char el[32];
    sp_progress_duration(elapsed, el, sizeof el);
    if (c.phase == SP_PHASE_WRITING && most) {
        double rate = elapsed > 0 ? (double)written / elapsed : 0;
        snprintf(out, cap,
                 "%s: input read; writing record %llu of at most %llu (%.1f%%), %.0f records/s, "
                 "elapsed %s",
                 what, (unsigned long long)written, (unsigned long long)most,
                 100.0 * (double)written / (double)most, rate, el);
        return;
    }
    if (!total) {
        snprintf(out, cap, "%s: running, elapsed %s", what, el);
        return;
    }
    char d[32], t[32], eta[32] = "-";
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    if (rate > 0 && done < total)
        sp_progress_duration((double)(total - done) / rate, eta, sizeof eta);
    if (done >= total)
        snprintf(eta, sizeof eta, "input read, finishing");
    char pg[48] = "";
    if (pages)
        snprintf(pg, sizeof pg, ", %llu pages", (unsigned long long)pages);
    snprintf(out, cap, "%s: %s of %s (%.1f%%)%s, %.1f MB/s, elapsed %s, ETA %s", what,
             sp_format_size(done, d, sizeof d), sp_format_size(total, t, sizeof t),
             100.0 * (double)done / (double)total, pg, rate / 1e6, el, eta);
}

/* With m->mu held: waits one period, or less when stopped. */
static void wait_period(sp_meter *m) {
    struct timespec until = sp_clock_deadline((uint64_t)m->period_ns);
    while (!m->stop && pthread_cond_timedwait(&m->wake, &m->mu, &until) == 0)
        ;
}

static void *tick(void *arg) {
    sp_meter *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        if (m->held)
            break;
        char line[512];
        if (m->sink) {
            /* A log line says where the work is after a period, not at its start. */
            wait_period(m);
            if (m->stop)
                break;
            sp_progress_log_text(m->p, m->what, sp_clock_seconds() - m->start, line, sizeof line);
            m->sink(m->sink_ctx, line);
            continue;
        }
        sp_progress_text(m->p, m->what, sp_clock_seconds() - m->start, line, sizeof line);
        /* \r and erase-to-end: the line is rewritten in place. */
        fprintf(m->out, "\r\033[K%s", line);
        fflush(m->out);
        wait_period(m);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

static sp_meter *meter_start(sp_meter init) {
    sp_meter *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    *m = init;
    m->start = sp_clock_seconds();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (!m->sink)
        atomic_store(&active, m);
    if (pthread_create(&m->thread, NULL, tick, m) != 0) {
        if (!m->sink)
            atomic_store(&active, NULL);
        pthread_mutex_destroy(&m->mu);
        pthread_cond_destroy(&m->wake);
        free(m);
        return NULL;
    }
    return m;
}

sp_meter *sp_meter_start(const char *what, sp_progress *p, FILE *out) {
    return meter_start((sp_meter){.what = what, .p = p, .out = out, .period_ns = METER_PERIOD_NS});
}

sp_meter *sp_meter_start_log(const char *what, sp_progress *p, double period, sp_meter_sink sink,
                             void *ctx) {
    return meter_start((sp_meter){
        .what = what, .p = p, .sink = sink, .sink_ctx = ctx, .period_ns = (long)(period * 1e9)});
}

void sp_meter_stop(sp_meter *m, bool finished) {
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    if (!m->sink) {
        atomic_store(&active, NULL);
        char line[512];
        sp_progress_text(m->p, m->what, sp_clock_seconds() - m->start, line, sizeof line);
        const char *end = finished ? ", done" : ", stopped";
        if (m->held)
            fprintf(m->out, "%s%s\n", line, end);
        else
            fprintf(m->out, "\r\033[K%s%s\n", line, end);
        fflush(m->out);
    }
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->wake);
    free(m);
}

void sp_meter_hold(void) {
    sp_meter *m = atomic_load(&active);
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (!m->held) {
        m->held = true;
        fprintf(m->out, "\r\033[K");
        fflush(m->out);
    }
    pthread_mutex_unlock(&m->mu);
}
