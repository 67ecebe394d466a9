/*
 * cluster_runner_local.c: the local runner, tasks as processes on this
 * machine, at most `jobs` at once; see cluster_runner.h.
 *
 * One loop per stage polls the running tasks' pidfds (child.h) and the held
 * signals together, so a task's end and a SIGTERM are seen at once and nothing
 * sleeps on a guess. A failed task goes to the back of the queue (its
 * retry waits behind the tasks not yet tried, which may be what it lacked);
 * a task out of attempts stops the others (SIGTERM, which lets an sstpipe
 * task remove its temporary files) and fails the run.
 */
#include "pipeline/cluster/cluster_runner_internal.h"
#include "stages/common/cores.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long a stopped task may take to exit after SIGTERM before SIGKILL. */
#define STOP_GRACE_MS 10000

typedef struct running {
    int index;
    sp_child child;
    char *log;
} running;

typedef struct local_stage {
    const cluster_runner_options *o;
    const cluster_stage *st;
    int *attempts; /* per index, started so far */
    int *queue;    /* indexes waiting, a ring of ntasks */
    int head, count;
    running *run;
    int nrun, jobs;
} local_stage;

static int start(local_stage *ls, int index, sp_error *err) {
    const cluster_stage *st = ls->st;
    running *r = &ls->run[ls->nrun];
    int attempt = ls->attempts[index]++;
    if (!(r->log = runner_log_path(ls->o->log_dir, st->name, index, attempt)))
        return sp_errorf(err, "out of memory");
    int fd = open(r->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        sp_errorf_errno(err, "%s task %d: cannot create its log %s", st->name, index, r->log);
        free(r->log);
        return -1;
    }
    char num[16];
    char **argv = runner_task_argv(st->argv, index, num);
    int rc = argv ? runner_spawn(argv, fd, &r->child, err) : sp_errorf(err, "out of memory");
    free(argv);
    close(fd);
    if (rc) {
        free(r->log);
        return -1;
    }
    r->index = index;
    ls->nrun++;
    return 0;
}

static void stop_all(local_stage *ls) {
    /* SIGTERM to every group first, so they stop together, not in turn. */
    for (int i = 0; i < ls->nrun; i++)
        sp_child_signal(&ls->run[i].child, SIGTERM);
    for (int i = 0; i < ls->nrun; i++) {
        sp_child_stop(&ls->run[i].child, SIGTERM, STOP_GRACE_MS);
        free(ls->run[i].log);
    }
    ls->nrun = 0;
}

/* Takes the task in slot i (reaped) out: 0 done or requeued, -1 out of
 * attempts (err filled). */
static int reaped(local_stage *ls, int i, sp_error *err) {
    running r = ls->run[i];
    ls->run[i] = ls->run[--ls->nrun];
    int status = r.child.status;
    int rc = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (ls->attempts[r.index] <= ls->o->retries) {
            ls->queue[(ls->head + ls->count++) % ls->st->ntasks] = r.index;
        } else {
            char why[64];
            sp_child_describe(status, false, why, sizeof why);
            rc = runner_task_failed(ls->o, ls->st, r.index, ls->attempts[r.index], why, r.log, err);
        }
    }
    free(r.log);
    return rc;
}

static int run_stage(local_stage *ls, runner_signals *sig, sp_error *err) {
    struct pollfd *p = malloc((size_t)(ls->jobs + 1) * sizeof *p);
    if (!p)
        return sp_errorf(err, "out of memory");
    int rc = 0;
    while (rc == 0) {
        while (ls->nrun < ls->jobs && ls->count > 0 && rc == 0) {
            int index = ls->queue[ls->head];
            ls->head = (ls->head + 1) % ls->st->ntasks;
            ls->count--;
            rc = start(ls, index, err);
        }
        if (rc || ls->nrun == 0)
            break;
        p[0] = (struct pollfd){.fd = sig->fd, .events = POLLIN};
        int ms = -1;
        for (int i = 0; i < ls->nrun; i++) {
            p[i + 1] = (struct pollfd){.fd = ls->run[i].child.pidfd, .events = POLLIN};
            if (ms < 0)
                ms = sp_child_poll_ms(&ls->run[i].child);
        }
        if (poll(p, (nfds_t)ls->nrun + 1, ms) < 0 && errno != EINTR) {
            rc = sp_errorf_errno(err, "cluster runner: poll");
            break;
        }
        if (runner_signals_check(sig)) {
            char what[96];
            snprintf(what, sizeof what, "stopped %d running %s task%s", ls->nrun, ls->st->name,
                     ls->nrun == 1 ? "" : "s");
            stop_all(ls);
            rc = runner_interrupted(sig, what, err);
            break;
        }
        /* From the end, since taking a task out moves the last slot into i. */
        for (int i = ls->nrun - 1; i >= 0 && rc == 0; i--) {
            if (sp_child_wait(&ls->run[i].child, 0))
                rc = reaped(ls, i, err);
        }
    }
    stop_all(ls);
    free(p);
    return rc;
}

int cluster_run_local(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                      runner_signals *sig, sp_error *err) {
    int rc = 0;
    for (size_t s = 0; s < n && rc == 0; s++) {
        const cluster_stage *st = &stages[s];
        local_stage ls = {.o = o, .st = st, .count = st->ntasks};
        ls.jobs = o->jobs > 0 ? o->jobs : (int)sp_usable_cores();
        if (ls.jobs > st->ntasks)
            ls.jobs = st->ntasks;
        ls.attempts = calloc((size_t)st->ntasks, sizeof *ls.attempts);
        ls.queue = malloc((size_t)st->ntasks * sizeof *ls.queue);
        ls.run = malloc((size_t)ls.jobs * sizeof *ls.run);
        if (ls.attempts && ls.queue && ls.run) {
            for (int i = 0; i < st->ntasks; i++)
                ls.queue[i] = i;
            rc = run_stage(&ls, sig, err);
            if (rc == 0)
                runner_stage_ended(o, s);
        } else {
            rc = sp_errorf(err, "out of memory");
        }
        free(ls.attempts);
        free(ls.queue);
        free(ls.run);
    }
    return rc;
}
