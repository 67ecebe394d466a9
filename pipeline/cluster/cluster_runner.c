/*
 * cluster_runner.c: the runners' options and what the three runners share
 * (cluster_runner_internal.h); cluster_run, which picks one, is in
 * cluster_run.c, above them.
 *
 * Why the signals are held rather than handled: cancelling a run means
 * killing processes and running scancel, which a signal handler cannot do
 * (sstpipe's handler, cleanup.h, exits at once). Held, a SIGTERM waits in a
 * signalfd that every runner's wait loop polls beside its children; once the
 * runner has stopped everything, the mask is restored and the signal raised
 * again, so it ends the process exactly as it would have, only later.
 *
 * Processes are children of stages/common/child.h, each in a process group
 * of its own: a task's shell and everything it started are stopped
 * together, and a Ctrl-C at the terminal reaches sstpipe alone, which then
 * stops the tasks in order rather than having them die under it.
 */
#include "pipeline/cluster/cluster_runner_internal.h"

#include "stages/common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

void cluster_runner_options_init(cluster_runner_options *o) {
    memset(o, 0, sizeof *o);
    o->kind = SP_RUNNER_LOCAL;
    o->retries = 2;
}

int runner_signals_hold(runner_signals *s, sp_error *err) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    s->caught = 0;
    int rc = pthread_sigmask(SIG_BLOCK, &set, &s->old_mask);
    if (rc) {
        errno = rc;
        return sp_errorf_errno(err, "cluster runner: cannot hold signals");
    }
    s->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->fd < 0) {
        sp_errorf_errno(err, "cluster runner: cannot create a signalfd");
        pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
        return -1;
    }
    return 0;
}

int runner_signals_check(runner_signals *s) {
    struct signalfd_siginfo si;
    while (read(s->fd, &si, sizeof si) == (ssize_t)sizeof si)
        if (!s->caught)
            s->caught = (int)si.ssi_signo;
    return s->caught;
}

int runner_signals_sleep(runner_signals *s, int ms) {
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (!runner_signals_check(s))
        while (poll(&p, 1, ms) < 0 && errno == EINTR)
            ;
    return runner_signals_check(s);
}

void runner_signals_release(runner_signals *s, int *out) {
    runner_signals_check(s);
    close(s->fd);
    pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
    if (out)
        *out = s->caught;
    else if (s->caught)
        raise(s->caught);
}

int runner_interrupted(const runner_signals *s, const char *what, sp_error *err) {
    const char *abbrev = sigabbrev_np(s->caught);
    return sp_errorf(err, "interrupted by SIG%s: %s", abbrev ? abbrev : "?", what);
}

void runner_stage_ended(const cluster_runner_options *o, size_t k) {
    if (o->stage_end)
        o->stage_end[k] = sp_clock_seconds();
}

char *runner_log_path(const char *dir, const char *stage, int index, int attempt) {
    char *p;
    return asprintf(&p, "%s/%s-%d.%d.log", dir, stage, index, attempt) < 0 ? NULL : p;
}

int runner_make_log_dir(const char *dir, sp_error *err) {
    /* Only a missing one is made: a caller's mkdir counts stay its own
     * (the fault tests count them). */
    struct stat st;
    if (stat(dir, &st) && (errno != ENOENT || (mkdir(dir, 0777) && errno != EEXIST)))
        return sp_errorf_errno(err, "cannot create log directory %s", dir);
    if (stat(dir, &st))
        return sp_errorf_errno(err, "cannot use log directory %s", dir);
    if (!S_ISDIR(st.st_mode))
        return sp_errorf(err, "log directory %s is not a directory", dir);
    return 0;
}

void runner_log_last_line(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int n = fd < 0 ? -1 : sp_child_line(fd, true, buf, size);
    if (fd >= 0)
        close(fd);
    if (n < 0)
        snprintf(buf, size, "(its log cannot be read)");
    else if (n == 0)
        snprintf(buf, size, "(its log is empty)");
}

void runner_log_error_line(const char *path, const char *prog, char *buf, size_t size) {
    runner_log_last_line(path, buf, size);
    /* A log that others write to as well (GNU parallel's own, which ends
     * with its "This job failed" lines): the last line the program wrote. */
    const char *base = strrchr(prog, '/');
    char want[128];
    snprintf(want, sizeof want, "%s: ", base ? base + 1 : prog);
    if (!strncmp(buf, want, strlen(want)))
        return;
    FILE *f = fopen(path, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, want, strlen(want))) {
            line[strcspn(line, "\r\n")] = '\0';
            snprintf(buf, size, "%s", line);
        }
    if (f)
        fclose(f);
}

/* s without a leading prefix (and the ": " after it), when it has it. */
static const char *skip_prefix(const char *s, const char *prefix) {
    size_t n = strlen(prefix);
    return n && !strncmp(s, prefix, n) && !strncmp(s + n, ": ", 2) ? s + n + 2 : s;
}

int runner_task_failed(const cluster_runner_options *o, const cluster_stage *st, int index,
                       int attempts, const char *why, const char *log, sp_error *err) {
    char name[256], line[512], tries[48] = "";
    if (o->describe)
        o->describe(o->describe_ctx, st->name, index, name, sizeof name);
    else
        snprintf(name, sizeof name, "%s task %d (of %d)", st->name, index, st->ntasks);
    if (attempts > 1)
        snprintf(tries, sizeof tries, ", attempt %d of %d", attempts, attempts);
    /* Its own error line says "sstpipe: map task 3 (...): why": the
     * program's name and the task's are already in the line we write. */
    runner_log_error_line(log, st->argv[0], line, sizeof line);
    const char *prog = strrchr(st->argv[0], '/');
    const char *rest = skip_prefix(line, prog ? prog + 1 : st->argv[0]);
    rest = skip_prefix(rest, name);
    if (line[0] == '(') /* the log is empty or unreadable: nothing to quote */
        rest = "";
    return sp_errorf(err, "%s: %s%s%s%s (log: %s)", name, why, tries, *rest ? ": " : "", rest, log);
}

char **runner_task_argv(char *const *argv, int index, char num[16]) {
    size_t n = 0;
    while (argv[n])
        n++;
    char **a = malloc((n + 3) * sizeof *a);
    if (!a)
        return NULL;
    memcpy(a, argv, n * sizeof *a);
    snprintf(num, 16, "%d", index);
    a[n] = "--task";
    a[n + 1] = num;
    a[n + 2] = NULL;
    return a;
}

int runner_spawn(char *const *argv, int log_fd, sp_child *c, sp_error *err) {
    sp_child_io io = {.in = SP_CHILD_NULL, .out = log_fd, .err = log_fd};
    if (sp_child_spawn(c, argv[0], argv, &io))
        return sp_errorf_errno(err, "cannot run %s", argv[0]);
    return 0;
}

void runner_words_free(char **words) {
    if (!words)
        return;
    for (char **w = words; *w; w++)
        free(*w);
    free(words);
}

int runner_split_words(const char *s, const char *what, char ***words, size_t *n, sp_error *err) {
    size_t len = strlen(s), count = 0;
    /* At most one word per two characters, and a word no longer than s. */
    char **w = calloc(len / 2 + 2, sizeof *w);
    char *word = malloc(len + 1);
    if (!w || !word) {
        free(w);
        free(word);
        return sp_errorf(err, "out of memory");
    }
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        size_t k = 0;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\'') {
                const char *q = strchr(p + 1, '\'');
                if (!q)
                    goto unterminated;
                memcpy(word + k, p + 1, (size_t)(q - p - 1));
                k += (size_t)(q - p - 1);
                p = q + 1;
            } else if (*p == '"') {
                for (p++; *p != '"'; p++) {
                    if (!*p)
                        goto unterminated;
                    if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                        p++;
                    word[k++] = *p;
                }
                p++;
            } else if (*p == '\\') {
                /* A trailing backslash stands for itself. */
                word[k++] = p[1] ? p[1] : '\\';
                p += p[1] ? 2 : 1;
            } else {
                word[k++] = *p++;
            }
        }
        if (!(w[count] = strndup(word, k))) {
            free(word);
            runner_words_free(w);
            return sp_errorf(err, "out of memory");
        }
        count++;
    }
    free(word);
    *words = w;
    *n = count;
    return 0;
unterminated:
    free(word);
    runner_words_free(w);
    return sp_errorf(err, "%s: unterminated quote at offset %zu in '%s'", what, (size_t)(p - s), s);
}
