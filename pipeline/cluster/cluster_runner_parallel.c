/*
 * cluster_runner_parallel.c: the GNU parallel runner; see cluster_runner.h.
 *
 * One `parallel` per stage runs the stage's indexes, `jobs` at once on each
 * host of the login file (or on this machine), retrying a failed task itself
 * (--retries counts every try, so it is given retries + 1; 0 would mean for
 * ever) and stopping the stage at the first task out of tries (--halt
 * now,fail=1: a task that cannot succeed dooms the build, and the others
 * are idempotent, so there is no point finishing them). Its --joblog holds
 * the last try's exit status and signal of every task it started, which is
 * what the run's result and failure line are read from, not parallel's own
 * exit status (a count of failures).
 *
 * Each try writes its own log: the command parallel runs is a small sh
 * script that takes the first free attempt number for its task's log (one
 * try of a task runs at a time, so nothing races for it) and execs the task
 * into it; on a remote host that needs log_dir shared, as the tasks' own
 * outputs are. The logs of earlier runs are removed first, so attempts
 * count from 0 as in the other runners.
 *
 * On a signal, parallel gets SIGTERM, on which it stops its running jobs
 * (--termseq, TERM then KILL) and exits; it is waited for.
 */
#include "pipeline/cluster/cluster_runner_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long parallel may take to stop its jobs after SIGTERM. */
#define STOP_GRACE_MS 20000

/* $1 log dir, $2 stage, $3 index, then the task's argv. The task gets
 * SIGTERM when its parent, parallel (or on a remote host the session that
 * parallel's ssh opened), is gone (setpriv --pdeathsig, util-linux): a
 * SIGTERM reaching parallel while it starts a job may come before that job
 * is among those it stops, and the job would outlive the run. */
static const char task_script[] =
    "d=$1 s=$2 i=$3; shift 3; a=0; "
    "if command -v setpriv >/dev/null 2>&1; then set -- setpriv --pdeathsig TERM \"$@\"; fi; "
    /* A host that does not see log_dir (nor, then, shared_dir): the task's
     * own check says so, on the output parallel collects. */
    "[ -d \"$d\" ] || exec \"$@\" --task \"$i\"; "
    "while [ -e \"$d/$s-$i.$a.log\" ]; do a=$((a+1)); done; "
    "exec \"$@\" --task \"$i\" >\"$d/$s-$i.$a.log\" 2>&1";

/* The last try's log of task i: the highest attempt whose log exists. */
static char *last_log(const cluster_runner_options *o, const cluster_stage *st, int i,
                      int *attempts) {
    char *best = NULL;
    *attempts = 0;
    for (int a = 0; a <= o->retries; a++) {
        char *p = runner_log_path(o->log_dir, st->name, i, a);
        if (p && access(p, F_OK) == 0) {
            free(best);
            best = p;
            *attempts = a + 1;
        } else {
            free(p);
        }
    }
    return best;
}

/* Seq, Exitval and Signal of a joblog line (fields 1, 7 and 8 of its
 * tab-separated ones); -1 when it is not a job's line (the header). */
static int joblog_fields(const char *line, int *seq, int *exitval, int *signo) {
    const char *field[8];
    int n = 0;
    for (const char *p = line; n < 8; p++) {
        field[n++] = p;
        if (!(p = strchr(p, '\t')))
            break;
    }
    if (n < 8)
        return -1;
    char *end;
    long v[3];
    const int which[3] = {0, 6, 7};
    for (int k = 0; k < 3; k++) {
        v[k] = strtol(field[which[k]], &end, 10);
        if (end == field[which[k]] || (*end != '\t' && *end != '\n' && *end != '\0'))
            return -1;
    }
    *seq = (int)v[0];
    *exitval = (int)v[1];
    *signo = (int)v[2];
    return 0;
}

/* Reads the joblog: 0 every task exited 0; -1 with the failure line. */
static int read_joblog(const cluster_runner_options *o, const cluster_stage *st, const char *joblog,
                       const char *parallel_log, int parallel_status, sp_error *err) {
    FILE *f = fopen(joblog, "r");
    if (!f)
        return sp_errorf_errno(err, "%s stage: GNU parallel left no joblog %s", st->name, joblog);
    char *ok = calloc((size_t)st->ntasks, 1);
    char line[8192];
    if (!ok) {
        fclose(f);
        return sp_errorf(err, "out of memory");
    }
    /* The failure to report: the task that used the most tries (with
     * --halt, the ones parallel killed for it used fewer). */
    int bad = -1, bad_tries = 0, bad_exit = 0, bad_signal = 0;
    /* Seq Host Starttime JobRuntime Send Receive Exitval Signal Command,
     * tab-separated: a Host may hold blanks (a login "ssh -p 2222 host"). */
    while (fgets(line, sizeof line, f)) {
        int seq, exitval, signo;
        if (joblog_fields(line, &seq, &exitval, &signo))
            continue;    /* the header */
        int i = seq - 1; /* the inputs are 0..N-1 in order */
        if (i < 0 || i >= st->ntasks)
            continue;
        if (exitval == 0 && signo == 0) {
            ok[i] = 1;
            continue;
        }
        int tries;
        free(last_log(o, st, i, &tries));
        if (bad < 0 || tries > bad_tries) {
            bad = i;
            bad_tries = tries;
            bad_exit = exitval;
            bad_signal = signo;
        }
    }
    int rc = 0;
    if (bad >= 0) {
        char *log = last_log(o, st, bad, &bad_tries);
        char why[64];
        if (bad_signal)
            snprintf(why, sizeof why, "killed by signal %d", bad_signal);
        else
            snprintf(why, sizeof why, "exit %d", bad_exit);
        /* No log: the task ran where log_dir is not (its line, if it
         * wrote one, is in parallel's own log). */
        rc = runner_task_failed(o, st, bad, bad_tries, why, log ? log : parallel_log, err);
        free(log);
    }
    fclose(f);
    for (int i = 0; rc == 0 && i < st->ntasks; i++)
        if (!ok[i]) {
            char status[64], last[512];
            sp_child_describe(parallel_status, false, status, sizeof status);
            runner_log_last_line(parallel_log, last, sizeof last);
            rc = sp_errorf(err, "%s stage: GNU parallel (%s) did not run task %d: %s (log: %s)",
                           st->name, status, i, last, parallel_log);
        }
    free(ok);
    return rc;
}

static int run_stage(const cluster_runner_options *o, const cluster_stage *st, runner_signals *sig,
                     sp_error *err) {
    char *joblog = NULL, *plog = NULL, jobs[32], tries[32];
    char **argv = NULL;
    int rc = -1, fd = -1;
    if (asprintf(&joblog, "%s/%s.joblog", o->log_dir, st->name) < 0 ||
        asprintf(&plog, "%s/%s.parallel.log", o->log_dir, st->name) < 0) {
        joblog = plog = NULL;
        sp_errorf(err, "out of memory");
        goto done;
    }
    /* Attempts count from 1 in each run (see the header comment). */
    for (int i = 0; i < st->ntasks; i++)
        for (int a = 0; a <= o->retries; a++) {
            char *p = runner_log_path(o->log_dir, st->name, i, a);
            if (p)
                unlink(p);
            free(p);
        }
    unlink(joblog);
    if (o->jobs > 0)
        snprintf(jobs, sizeof jobs, "%d", o->jobs);
    else
        snprintf(jobs, sizeof jobs, "100%%");
    snprintf(tries, sizeof tries, "%d", o->retries + 1);
    size_t nargv = 0;
    while (st->argv[nargv])
        nargv++;
    argv = calloc(32 + nargv + (size_t)st->ntasks, sizeof *argv);
    char **nums = calloc((size_t)st->ntasks, sizeof *nums);
    if (!argv || !nums) {
        free(nums);
        sp_errorf(err, "out of memory");
        goto done;
    }
    size_t k = 0;
    char *fixed[] = {"parallel", "--will-cite", "-q", "--joblog", joblog,      "--retries",
                     tries,      "--jobs",      jobs, "--halt",   "now,fail=1"};
    for (size_t j = 0; j < sizeof fixed / sizeof *fixed; j++)
        argv[k++] = fixed[j];
    if (o->parallel_sshlogin && *o->parallel_sshlogin) {
        argv[k++] = "--sshloginfile";
        argv[k++] = (char *)o->parallel_sshlogin;
    }
    argv[k++] = "sh";
    argv[k++] = "-c";
    argv[k++] = (char *)task_script;
    argv[k++] = "sh";
    argv[k++] = (char *)o->log_dir;
    argv[k++] = (char *)st->name;
    argv[k++] = "{}";
    for (size_t j = 0; j < nargv; j++)
        argv[k++] = st->argv[j];
    argv[k++] = ":::";
    for (int i = 0; i < st->ntasks; i++) {
        if (asprintf(&nums[i], "%d", i) < 0) {
            nums[i] = NULL;
            sp_errorf(err, "out of memory");
            break;
        }
        argv[k++] = nums[i];
    }
    fd = err->set ? -1 : open(plog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        sp_errorf_errno(err, "%s stage: cannot create %s", st->name, plog);
    sp_child child;
    if (!err->set && runner_spawn(argv, fd, &child, err) == 0) {
        struct pollfd p[2] = {{.fd = sig->fd, .events = POLLIN},
                              {.fd = child.pidfd, .events = POLLIN}};
        for (;;) {
            if (poll(p, 2, sp_child_poll_ms(&child)) < 0 && errno != EINTR) {
                sp_errorf_errno(err, "cluster runner: poll");
                break;
            }
            if (runner_signals_check(sig) || sp_child_wait(&child, 0))
                break;
        }
        if (sig->caught || err->set) {
            sp_child_stop(&child, SIGTERM, STOP_GRACE_MS);
            if (sig->caught)
                runner_interrupted(sig, "stopped GNU parallel and its tasks", err);
        } else {
            rc = read_joblog(o, st, joblog, plog, child.status, err);
        }
    }
    for (int i = 0; i < st->ntasks; i++)
        free(nums[i]);
    free(nums);
done:
    if (fd >= 0)
        close(fd);
    free(argv);
    free(joblog);
    free(plog);
    return rc;
}

int cluster_run_parallel(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                         runner_signals *sig, sp_error *err) {
    for (size_t s = 0; s < n; s++) {
        if (run_stage(o, &stages[s], sig, err))
            return -1;
        runner_stage_ended(o, s);
    }
    return 0;
}
