/*
 * cluster_runner_slurm.c: the Slurm runner, a job array per stage; see
 * cluster_runner.h.
 *
 * The whole chain is submitted at once, as a Slurm user would: stage 0's
 * array (`sbatch --parsable --array=0-(N-1)`), then each later stage's
 * array with --dependency=afterok on the one before, so the scheduler
 * starts a stage the moment the previous one is done. The runner follows
 * one stage at a time, polling squeue (every 100 ms at first, backing off
 * to 2 s) until that stage's array has left the queue.
 *
 * Whether a task succeeded is read from a status file its batch script
 * writes after the task exits (LOG_DIR/<stage>-<i>.<attempt>.status, the
 * exit code): it needs no accounting database (sacct) and outlives the
 * controller forgetting finished jobs (MinJobAge). A task cancelled
 * (scancel), killed, or lost with its node writes none, which is a failure.
 *
 * An afterok dependency on an array with a failed task never fires, so on
 * a failure the runner cancels the later stages' arrays (still pending),
 * resubmits only the failed indexes of the stage as a new array (their next
 * attempt), and submits the later stages again, chained to it. The arrays
 * also carry --kill-on-invalid-dep=yes: if sstpipe itself dies (kill -9)
 * after a failure, Slurm cancels the dependants rather than keep them
 * pending for ever. On a signal, every array still queued is scancelled and
 * the runner waits until squeue shows none of them.
 *
 * sbatch, squeue and scancel run to their end through sp_child_output
 * (stages/common/child.h): a signal held meanwhile does not stop them; they
 * are short, and scancel must be able to run after one.
 *
 * Slurm caps an array's indexes (MaxArraySize, 1001 by default: indexes up
 * to 1000); sbatch's own error says so for a stage with more tasks.
 */
#include "pipeline/cluster/cluster_runner_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define POLL_FIRST_MS 100
#define POLL_MAX_MS 2000
/* squeue failing this many times in a row (the controller away for more
 * than about two minutes) fails the run. */
#define POLL_ERRORS_MAX 60
/* How long cancelled jobs may take to leave the queue. */
#define CANCEL_WAIT_MS 120000

/* $1 log dir, $2 stage, $3 attempt, then the task's argv; the index is the
 * array's. The status needs no temporary name: it is a few bytes written at
 * once, the runner reads it only after the array has left the queue (so
 * after the script ended), and one without its newline (a node lost while
 * writing it) counts as absent (task_status). */
static const char batch_script[] =
    "#!/bin/sh\n"
    "# An sstpipe cluster task (pipeline/cluster/cluster_runner_slurm.c).\n"
    "d=$1 s=$2 a=$3; shift 3; i=$SLURM_ARRAY_TASK_ID\n"
    "\"$@\" --task \"$i\"\n"
    "rc=$?\n"
    "echo \"$rc\" >\"$d/$s-$i.$a.status\"\n"
    "exit \"$rc\"\n";

typedef struct slurm_stage {
    long job;      /* the array now queued for it (0: none) */
    int attempt;   /* of the indexes in that array, from 0 */
    char *pending; /* per index: 1 until it has succeeded */
} slurm_stage;

typedef struct slurm_run {
    const cluster_runner_options *o;
    const cluster_stage *stages;
    size_t n;
    slurm_stage *s;
    char *script;
    char **extra; /* slurm_args, split */
    runner_signals *sig;
} slurm_run;

static char *status_path(const slurm_run *r, size_t k, int index, int attempt) {
    char *p;
    return asprintf(&p, "%s/%s-%d.%d.status", r->o->log_dir, r->stages[k].name, index, attempt) < 0
               ? NULL
               : p;
}

/* "0-7" for all of stage k, or "3,5" for its pending indexes, then "%jobs". */
static char *array_spec(const slurm_run *r, size_t k, bool all) {
    const cluster_stage *st = &r->stages[k];
    size_t cap = (size_t)st->ntasks * 12 + 32, len = 0;
    char *spec = malloc(cap);
    if (!spec)
        return NULL;
    if (all) {
        len = (size_t)snprintf(spec, cap, "0-%d", st->ntasks - 1);
    } else {
        for (int i = 0; i < st->ntasks; i++)
            if (r->s[k].pending[i])
                len += (size_t)snprintf(spec + len, cap - len, "%s%d", len ? "," : "", i);
    }
    if (r->o->jobs > 0)
        snprintf(spec + len, cap - len, "%%%d", r->o->jobs);
    return spec;
}

/* Submits stage k's pending indexes (all of them when all), after dep (0:
 * none); sets r->s[k].job. */
static int submit(slurm_run *r, size_t k, bool all, long dep, sp_error *err) {
    const cluster_stage *st = &r->stages[k];
    slurm_stage *s = &r->s[k];
    for (int i = 0; i < st->ntasks; i++)
        if (s->pending[i]) {
            char *p = status_path(r, k, i, s->attempt);
            if (p)
                unlink(p);
            free(p);
        }
    char *spec = array_spec(r, k, all), *array = NULL, *name = NULL, *output = NULL;
    char *partition = NULL, *depend = NULL, attempt[16];
    snprintf(attempt, sizeof attempt, "%d", s->attempt);
    size_t nextra = 0, nargv = 0;
    while (r->extra[nextra])
        nextra++;
    while (st->argv[nargv])
        nargv++;
    char **argv = calloc(16 + nextra + nargv, sizeof *argv);
    int rc = -1;
    if (!spec || !argv || asprintf(&array, "--array=%s", spec) < 0 ||
        asprintf(&name, "--job-name=sstpipe-%s", st->name) < 0 ||
        asprintf(&output, "--output=%s/%s-%%a.%d.log", r->o->log_dir, st->name, s->attempt) < 0 ||
        (r->o->slurm_partition && *r->o->slurm_partition &&
         asprintf(&partition, "--partition=%s", r->o->slurm_partition) < 0) ||
        (dep && asprintf(&depend, "--dependency=afterok:%ld", dep) < 0)) {
        sp_errorf(err, "out of memory");
        goto done;
    }
    size_t a = 0;
    argv[a++] = "sbatch";
    argv[a++] = "--parsable";
    argv[a++] = "--kill-on-invalid-dep=yes";
    argv[a++] = array;
    argv[a++] = name;
    argv[a++] = output;
    if (partition)
        argv[a++] = partition;
    if (depend)
        argv[a++] = depend;
    for (size_t j = 0; j < nextra; j++)
        argv[a++] = r->extra[j];
    argv[a++] = r->script;
    argv[a++] = (char *)r->o->log_dir;
    argv[a++] = (char *)st->name;
    argv[a++] = attempt;
    for (size_t j = 0; j < nargv; j++)
        argv[a++] = st->argv[j];
    char *out = NULL, errline[512];
    int status;
    if (sp_child_output(argv, &out, &status, errline, sizeof errline, err))
        goto done;
    char *end;
    long job = strtol(out, &end, 10);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || job <= 0 ||
        (*end && *end != ';' && *end != '\n')) {
        char why[64];
        sp_child_describe(status, false, why, sizeof why);
        sp_errorf(err, "%s stage: sbatch --array=%s failed (%s): %s", st->name, spec, why,
                  *errline ? errline : "(nothing on its stderr)");
    } else {
        s->job = job;
        rc = 0;
    }
    free(out);
done:
    free(argv);
    free(spec);
    free(array);
    free(name);
    free(output);
    free(partition);
    free(depend);
    return rc;
}

/* 1 while job is queued or running, 0 once squeue no longer shows it, -1
 * when squeue itself fails (errline filled). */
static int queued(long job, char *errline, size_t size) {
    char id[32];
    snprintf(id, sizeof id, "%ld", job);
    char *argv[] = {"squeue", "--noheader", "--jobs", id, "--format=%i", NULL};
    char *out = NULL;
    int status;
    sp_error e = {0};
    if (sp_child_output(argv, &out, &status, errline, size, &e)) {
        snprintf(errline, size, "%.*s", (int)size - 1, e.msg);
        return -1;
    }
    int rc;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        rc = out[strspn(out, " \t\r\n")] != '\0';
    else /* A job the controller has forgotten is gone, not an error. */
        rc = strstr(errline, "Invalid job id") ? 0 : -1;
    free(out);
    return rc;
}

static void cancel(long job) {
    char id[32];
    snprintf(id, sizeof id, "%ld", job);
    char *argv[] = {"scancel", id, NULL};
    char *out = NULL, errline[256];
    int status;
    sp_error e = {0};
    if (sp_child_output(argv, &out, &status, errline, sizeof errline, &e) == 0)
        free(out);
}

/* Cancels the arrays of stages from..n-1 and waits (bounded) until they are
 * out of the queue. */
static void cancel_from(slurm_run *r, size_t from) {
    for (size_t k = from; k < r->n; k++)
        if (r->s[k].job)
            cancel(r->s[k].job);
    int waited = 0, ms = POLL_FIRST_MS;
    for (size_t k = from; k < r->n; k++) {
        char errline[256];
        while (r->s[k].job && queued(r->s[k].job, errline, sizeof errline) == 1 &&
               waited < CANCEL_WAIT_MS) {
            usleep((useconds_t)ms * 1000);
            waited += ms;
            ms = ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : ms * 2;
        }
        r->s[k].job = 0;
    }
}

/* Waits until stage k's array has left the queue. */
static int wait_stage(slurm_run *r, size_t k, sp_error *err) {
    int ms = POLL_FIRST_MS, errors = 0;
    char errline[512];
    for (;;) {
        int q = queued(r->s[k].job, errline, sizeof errline);
        if (q == 0)
            return 0;
        if (q < 0 && ++errors >= POLL_ERRORS_MAX)
            return sp_errorf(err, "%s stage: squeue failed %d times in a row: %s",
                             r->stages[k].name, errors, errline);
        if (q > 0)
            errors = 0;
        if (runner_signals_sleep(r->sig, ms))
            return -1;
        ms = ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : ms * 2;
    }
}

/* The exit code stage k's task i reported in its status file at the
 * current attempt, or -1 when there is no whole one (no file: cancelled,
 * killed or lost before it exited; no newline: lost while writing it). */
static int task_status(const slurm_run *r, size_t k, int i) {
    char *p = status_path(r, k, i, r->s[k].attempt), buf[32];
    int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
    free(p);
    if (fd < 0)
        return -1;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0 || buf[got - 1] != '\n')
        return -1;
    buf[got] = '\0';
    char *end;
    long code = strtol(buf, &end, 10);
    return end == buf || *end != '\n' || code < 0 || code > 255 ? -1 : (int)code;
}

/* Marks stage k's indexes that succeeded in the array just finished; returns
 * how many are still pending, the first of them in *first. */
static int collect(slurm_run *r, size_t k, int *first) {
    const cluster_stage *st = &r->stages[k];
    slurm_stage *s = &r->s[k];
    int left = 0;
    *first = -1;
    for (int i = 0; i < st->ntasks; i++) {
        if (!s->pending[i])
            continue;
        if (task_status(r, k, i) == 0) {
            s->pending[i] = 0;
        } else {
            if (*first < 0)
                *first = i;
            left++;
        }
    }
    return left;
}

/* The failure line of stage k's task i after its last attempt. */
static int report(slurm_run *r, size_t k, int i, sp_error *err) {
    const slurm_stage *s = &r->s[k];
    char why[96];
    int code = task_status(r, k, i);
    if (code >= 0)
        snprintf(why, sizeof why, "exit %d", code);
    else
        snprintf(why, sizeof why, "cancelled or killed before it exited");
    char *log = runner_log_path(r->o->log_dir, r->stages[k].name, i, s->attempt);
    int rc = runner_task_failed(r->o, &r->stages[k], i, s->attempt + 1, why, log ? log : "?", err);
    free(log);
    return rc;
}

static int run(slurm_run *r, sp_error *err) {
    for (size_t k = 0; k < r->n; k++)
        if (submit(r, k, true, k ? r->s[k - 1].job : 0, err))
            return -1;
    for (size_t k = 0; k < r->n;) {
        if (wait_stage(r, k, err))
            return -1;
        int first, left = collect(r, k, &first);
        if (left == 0) {
            runner_stage_ended(r->o, k++);
            continue;
        }
        /* The later stages wait on an afterok that will never fire. */
        cancel_from(r, k + 1);
        if (r->s[k].attempt >= r->o->retries)
            return report(r, k, first, err);
        r->s[k].attempt++;
        if (submit(r, k, false, 0, err))
            return -1;
        for (size_t j = k + 1; j < r->n; j++)
            if (submit(r, j, true, r->s[j - 1].job, err))
                return -1;
    }
    return 0;
}

int cluster_run_slurm(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                      runner_signals *sig, sp_error *err) {
    slurm_run r = {.o = o, .stages = stages, .n = n, .sig = sig};
    size_t nextra;
    if (runner_split_words(o->slurm_args ? o->slurm_args : "", "slurm_args", &r.extra, &nextra,
                           err))
        return -1;
    int rc = -1;
    r.s = calloc(n, sizeof *r.s);
    if (!r.s || asprintf(&r.script, "%s/task.sbatch", o->log_dir) < 0) {
        r.script = NULL;
        sp_errorf(err, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n; k++) {
        if (!(r.s[k].pending = malloc((size_t)stages[k].ntasks))) {
            sp_errorf(err, "out of memory");
            goto done;
        }
        memset(r.s[k].pending, 1, (size_t)stages[k].ntasks);
    }
    /* sbatch keeps a copy of the script: it only has to exist at submission. */
    int fd = open(r.script, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (fd < 0 || write(fd, batch_script, sizeof batch_script - 1) != sizeof batch_script - 1) {
        sp_errorf_errno(err, "cannot write %s", r.script);
        if (fd >= 0)
            close(fd);
        goto done;
    }
    close(fd);
    rc = run(&r, err);
    if (sig->caught) {
        cancel_from(&r, 0);
        runner_interrupted(sig, "cancelled every Slurm job of the run (scancel)", err);
        rc = -1;
    } else if (rc) {
        cancel_from(&r, 0);
    }
done:
    if (r.s)
        for (size_t k = 0; k < n; k++)
            free(r.s[k].pending);
    free(r.s);
    free(r.script);
    runner_words_free(r.extra);
    return rc;
}
