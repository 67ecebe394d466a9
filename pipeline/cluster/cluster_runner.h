/*
 * cluster_runner.h: runs stages of indexed tasks on the engine the user
 * already has: processes on this machine (local), GNU parallel, or Slurm.
 *
 * A runner knows nothing of maps and reduces (docs: /work/cluster-contract.md
 * section 3, the README's "Cluster runners"). A stage is N tasks, each the
 * stage's argv with "--task" and the task's index appended; stages run in
 * order, a stage starting only once every task of the one before it has
 * exited 0. A task that fails (non-zero exit, killed by a signal, cancelled
 * by scancel, lost with its node) runs again, up to `retries` more times;
 * a task that still fails fails the run with one line: the task (stage and
 * index, or what `describe` calls it), how its last attempt ended, the last
 * line of its log (its own one-line error, the program's "name: " prefix and
 * the task's name taken off) and the log's path:
 * "map task 2 (of 5): exit 1, attempt 3 of 3: bad byte (log: LOG_DIR/map-2.2.log)". Tasks must be
 * idempotent and commit atomically: a runner may kill and rerun any of them.
 *
 * Each attempt of a task writes its stdout and stderr to its own log,
 * LOG_DIR/<stage>-<index>.<attempt>.log (attempts count from 0 in each
 * cluster_run, as the cluster build reads them; a later run in the same
 * log_dir replaces its logs).
 *
 * Signals: while cluster_run runs it holds SIGINT, SIGTERM and SIGHUP in the
 * calling thread (the caller must have no other thread that takes them). On
 * one it stops every task it started (SIGTERM, then SIGKILL, to each local
 * task's process group; SIGTERM to GNU parallel, which stops its jobs;
 * scancel of every Slurm job it submitted), waits until none is left
 * running or queued, then restores the signal mask and raises the signal
 * again, so the process's own disposition (sstpipe's: remove temporary
 * files, exit 128+signal) takes effect as if nothing had held it. Where
 * that disposition returns, cluster_run returns -1 with "interrupted". With
 * `signal_out` set, the signal is stored there instead of raised again: the
 * caller reports the error, then raises it (sstpipe build says what it
 * stopped before it exits 128+signal).
 */
#ifndef SSTPIPE_PIPELINE_CLUSTER_RUNNER_H
#define SSTPIPE_PIPELINE_CLUSTER_RUNNER_H

#include "stages/common/error.h"
#include "stages/common/runner_kind.h"

#include <stddef.h>

typedef struct cluster_stage {
    const char *name;  /* "map", "reduce", "finish": names the stage's logs */
    char *const *argv; /* NULL-terminated; argv[0] the executable (a path, or found in PATH) */
    int ntasks;        /* at least 1 */
} cluster_stage;

typedef struct cluster_runner_options {
    sp_runner_kind kind;
    int jobs;                    /* tasks at once (0: local and parallel, this machine's cores;
                                    slurm, as many as the cluster schedules) */
    int retries;                 /* extra attempts of a failed task */
    const char *log_dir;         /* created if missing; every node must see it (parallel, slurm) */
    const char *slurm_partition; /* sbatch --partition; NULL or "": the cluster's default */
    const char *slurm_args;      /* more sbatch arguments, split as sh splits words (quotes,
                                    backslashes; no expansion); NULL or "": none */
    const char *parallel_sshlogin; /* GNU parallel --sshloginfile (":" in it is this
                                      machine); NULL or "": this machine only */
    /* Names task index of stage in failure lines, e.g. "map task 3
     * (enwiki.xml.bz2 bytes 0-67108864)"; NULL: "map task 3 (of 8)".
     * (An addition to the contract, backward compatible.) */
    void (*describe)(void *ctx, const char *stage, int index, char *buf, size_t cap);
    void *describe_ctx;
    /* Non-NULL: a signal that stopped the run is stored here (0: none),
     * not raised again (an addition to the contract, backward compatible). */
    int *signal_out;
    /* Non-NULL: n entries; stage k's is set to the time (sp_clock_seconds) at which the runner saw
     * its last task end, so the caller can tell how the run's wall time went to the stages (an
     * addition to the contract, backward compatible). */
    double *stage_end;
} cluster_runner_options;

/* Local runner, jobs 0, retries 2, log_dir NULL (must be set), no Slurm or
 * parallel settings. */
void cluster_runner_options_init(cluster_runner_options *o);

/* Runs the n stages in order; 0 when every task of every stage exited 0. */
int cluster_run(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                sp_error *err);

#endif
