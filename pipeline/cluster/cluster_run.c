/*
 * cluster_run.c: cluster_run (cluster_runner.h), the one entry to the
 * runners: it checks the stages, makes the log directory, holds the
 * signals for the run's length and hands the stages to the runner the
 * options name (cluster_runner_local.c, _parallel.c, _slurm.c). It sits
 * above the runners, which share only cluster_runner.c, so that no runner
 * calls back up into the dispatch.
 */
#include "pipeline/cluster/cluster_runner_internal.h"

int cluster_run(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                sp_error *err) {
    if (!o->log_dir || !*o->log_dir)
        return sp_errorf(err, "cluster runner: no log directory given");
    for (size_t i = 0; i < n; i++)
        if (!stages[i].name || !*stages[i].name || !stages[i].argv || !stages[i].argv[0] ||
            stages[i].ntasks < 1)
            return sp_errorf(err,
                             "cluster runner: stage %zu ('%s') has no name, no command or "
                             "no task",
                             i, stages[i].name ? stages[i].name : "");
    if (o->retries < 0 || o->jobs < 0)
        return sp_errorf(err, "cluster runner: retries and jobs must not be negative");
    if (runner_make_log_dir(o->log_dir, err))
        return -1;
    runner_signals sig;
    if (runner_signals_hold(&sig, err))
        return -1;
    int rc;
    switch (o->kind) {
    case SP_RUNNER_LOCAL:
        rc = cluster_run_local(o, stages, n, &sig, err);
        break;
    case SP_RUNNER_PARALLEL:
        rc = cluster_run_parallel(o, stages, n, &sig, err);
        break;
    case SP_RUNNER_SLURM:
        rc = cluster_run_slurm(o, stages, n, &sig, err);
        break;
    default:
        rc = sp_errorf(err, "cluster runner: unknown kind %d", o->kind);
    }
    runner_signals_release(&sig, o->signal_out);
    return rc;
}
