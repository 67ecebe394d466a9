/*
 * serve_cmd.c: `sstpipe serve TABLE|NIGHTLY_DIR [--listen HOST:PORT]
 * [--threads N] [--cold]`, the command line of the lookup server.
 *
 * Signals. The CLI's cleanup handlers exit at once, which would cut off
 * responses being sent; a server must instead stop accepting and let those
 * finish. So before any thread starts, SIGINT, SIGTERM and SIGHUP are
 * blocked (every thread inherits that) and SIGPIPE ignored (a client that
 * hangs up must not kill us), and this thread waits for them with sigwait:
 * SIGINT or SIGTERM drains (serve_http_drain, at most [serve] timeout
 * seconds) and exits 0; SIGHUP checks the table at once, as a publish
 * event would, and says what it found. serve registers no temporary
 * files, so nothing is lost by taking the signals over.
 *
 * Once listening it prints "listening on HOST:PORT" on stdout (the port the
 * kernel chose for port 0 included) and flushes, so a script or test can
 * wait for that line; every table it starts serving is one line on stderr,
 * and so is each distinct table error a request meets (a corrupt block
 * read by every request is logged once, not once a request). With
 * [serve] access_log, every request is a line of that file.
 */
#include "pipeline/command/config_apply.h"
#include "pipeline/command/commands.h"
#include "stages/common/cli.h"
#include "stages/serve/serve_http.h"
#include "stages/serve/serve_listen.h"
#include "stages/sst/table_set.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void on_change(void *ctx, const served_table *now, const sp_error *err) {
    (void)ctx;
    if (err) {
        fprintf(stderr, "sstpipe serve: not swapping, still serving %s: %s\n", now->path, err->msg);
        return;
    }
    sstpipe_info info;
    sstpipe_info_get(now->table, &info);
    char when[32];
    time_t t = (time_t)now->build_time;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    fprintf(stderr, "sstpipe serve: serving %s (%llu records, written %s)\n", now->path,
            (unsigned long long)info.records, when);
}

/* The errors already logged, by a hash of their text: each is logged
 * once. Past ERRORS_LOGGED distinct ones, one line says that the rest go
 * unlogged (a disk failing everywhere would otherwise fill the log; the
 * 500s are still counted in /metrics). */
#define ERRORS_LOGGED 256

typedef struct error_log {
    pthread_mutex_t mu;
    uint64_t seen[ERRORS_LOGGED];
    size_t n;
} error_log;

static void on_error(void *ctx, const char *msg) {
    error_log *log = ctx;
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (const char *p = msg; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    pthread_mutex_lock(&log->mu);
    bool seen = false;
    for (size_t i = 0; i < log->n && i < ERRORS_LOGGED; i++)
        seen = seen || log->seen[i] == h;
    if (!seen && log->n < ERRORS_LOGGED) {
        log->seen[log->n++] = h;
        fprintf(stderr, "sstpipe serve: %s\n", msg);
    } else if (!seen && log->n++ == ERRORS_LOGGED) {
        fprintf(stderr, "sstpipe serve: more than %d distinct errors; no more are logged\n",
                ERRORS_LOGGED);
    }
    pthread_mutex_unlock(&log->mu);
}

/* What a SIGHUP's check found, one line. */
static void report_sighup(serve_holder *holder, int rc, const sp_error *err) {
    served_table *now = serve_holder_acquire(holder);
    if (rc > 0)
        fprintf(stderr, "sstpipe serve: SIGHUP: swapped to %s\n", now->path);
    else if (rc == 0)
        fprintf(stderr, "sstpipe serve: SIGHUP: unchanged, still serving %s\n", now->path);
    else
        fprintf(stderr, "sstpipe serve: SIGHUP: not swapped, still serving %s: %s\n", now->path,
                err->msg);
    served_table_release(now);
}

/* Blocks the signals serve waits for, in this thread and every thread
 * started after; returns the set. */
static sigset_t take_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    return set;
}

/* The options of one server, from the config (config_apply_serve). */
typedef struct serve_setup {
    const char *listen;
    const char *access_log; /* or NULL */
    serve_holder_options holder;
    serve_http_options http;
    serve_handler handler;
} serve_setup;

static int serve(serve_setup *s, const char *target) {
    sp_error err = {0};
    int code = SP_EXIT_FAIL;
    sigset_t sigs = take_signals();
    serve_metrics *metrics = calloc(1, sizeof *metrics);
    if (!metrics) {
        sp_errorf(&err, "serve: out of memory");
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    serve_metrics_init(metrics);
    error_log errors = {.n = 0};
    pthread_mutex_init(&errors.mu, NULL);
    s->http.on_error = on_error;
    s->http.ctx = &errors;
    s->http.access_log_fd = -1;
    s->holder.target = target;
    s->holder.on_change = on_change;
    s->handler.metrics = metrics;
    serve_holder *holder = serve_holder_init(&s->holder, &err);
    serve_http *http = NULL;
    char bound[128];
    int fd;
    if (!holder || serve_listen_open(s->listen, 1024, &fd, bound, sizeof bound, &err))
        goto out;
    if (s->access_log) {
        s->http.access_log_fd =
            open(s->access_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (s->http.access_log_fd < 0) {
            sp_errorf_errno(&err, "[serve] access_log %s: cannot open", s->access_log);
            code = SP_EXIT_USAGE; /* an output that cannot be written: refused */
            close(fd);
            goto out;
        }
    }
    served_table *first = serve_holder_acquire(holder);
    on_change(NULL, first, NULL);
    served_table_release(first);
    s->http.listen_fd = fd;
    /* A nightly directory's pages are served beside the lookups (a table
     * set's directory is a table, with no pages). */
    struct stat st;
    char manifest[PATH_MAX];
    snprintf(manifest, sizeof manifest, "%s/%s", target, TABLE_SET_MANIFEST);
    bool nightly_dir = stat(target, &st) == 0 && S_ISDIR(st.st_mode) && access(manifest, F_OK) != 0;
    s->handler.pages_dir = nightly_dir ? target : NULL;
    http = serve_http_start(&s->http, holder, &s->handler, &err);
    if (!http)
        goto out;
    printf("listening on %s\n", bound);
    fflush(stdout);
    int sig = 0;
    for (;;) {
        if (sigwait(&sigs, &sig))
            continue;
        if (sig != SIGHUP)
            break;
        sp_error check_err = {0};
        report_sighup(holder, serve_holder_check(holder, &check_err), &check_err);
    }
    fprintf(stderr, "sstpipe serve: %s: finishing the requests in flight\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    long left = serve_http_drain(http, s->http.timeout_s);
    if (left)
        fprintf(stderr, "sstpipe serve: %ld requests were still unfinished after %llu s\n", left,
                (unsigned long long)s->http.timeout_s);
out:
    serve_http_destroy(http);
    serve_holder_destroy(holder);
    if (s->http.access_log_fd >= 0)
        close(s->http.access_log_fd);
    pthread_mutex_destroy(&errors.mu);
    free(metrics);
    return err.set ? sp_cli_report(&err, code) : SP_EXIT_OK;
}

static const sp_flag flags[] = {
    {"listen", 0, "HOST:PORT", SP_KEY(CONFIG_SERVE_LISTEN), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"threads", 0, "N", SP_KEY(CONFIG_SERVE_THREADS), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"cold", 0, NULL, SP_KEY(CONFIG_SERVE_COLD), "true",
     "read with O_DIRECT, one aligned read per lookup", SP_COMPLETE_NONE, NULL},
};

static const sp_operand operands[] = {{"TABLE|NIGHTLY_DIR", SP_COMPLETE_FILE, NULL}};

static int run(sp_cmdline *cl) {
    sp_error err = {0};
    char what[128];
    snprintf(what, sizeof what, "[serve] listen (%s)",
             config_origin_text(&cl->cfg, CONFIG_SERVE_LISTEN));
    serve_setup s = {0};
    config_apply_serve(&cl->cfg, &s.listen, &s.access_log, &s.holder, &s.http, &s.handler);
    if (serve_listen_check(s.listen, what, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    return serve(&s, cl->operands[0]);
}

const sp_command serve_command = SP_COMMAND(
    serve, run, SP_FLAGS(flags), SP_OPERANDS(operands, 1, 1, "expected one TABLE or NIGHTLY_DIR"));
