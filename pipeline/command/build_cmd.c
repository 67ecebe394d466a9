/*
 * build_cmd.c: the `sstpipe build` command line; the pipeline itself is
 * build.c. Every option is a config key (-c FILE, --set), which the flags
 * override; config_apply_build turns the result into build options.
 */
#include "pipeline/build/build.h"
#include "pipeline/cluster/cluster_build.h"

#include "pipeline/command/config_apply.h"
#include "pipeline/command/commands.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/clock.h"
#include "stages/common/progress.h"
#include "stages/common/runner_kind.h"
#include "stages/common/size.h"
#include "stages/sst/format.h"

#include <signal.h>
#include <stdio.h>

enum { F_QUIET = SP_F_VERBOSE + 1 };

static const sp_flag flags[] = {
    SP_STAGE_FLAGS(SP_FLAG_OUTPUT_TABLE),
    [F_QUIET] = SP_FLAG_QUIET,
    SP_FLAG_MAX_BYTES,
    SP_SORT_FLAGS,
    SP_TABLE_FLAGS,
    SP_EXTRACT_FLAGS,
    SP_PROGRESS_FLAGS,
    /* A cluster build without a config file: `--shards 4 --shared-dir D`. */
    {"runner", 0, "NAME", SP_KEY(CONFIG_CLUSTER_RUNNER), NULL, NULL, SP_COMPLETE_WORDS,
     SP_RUNNER_WORDS},
    {"tasks", 0, "N", SP_KEY(CONFIG_CLUSTER_TASKS), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"shards", 0, "N", SP_KEY(CONFIG_CLUSTER_SHARDS), NULL, NULL, SP_COMPLETE_NONE, NULL},
    {"shared-dir", 0, "DIR", SP_KEY(CONFIG_CLUSTER_SHARED_DIR), NULL, NULL, SP_COMPLETE_DIR, NULL},
};

/* A [cluster] section: plan, tasks, finish (pipeline/cluster/cluster_build.h). */
static int run_cluster(sp_cmdline *cl, const char *output) {
    sp_error err = {0};
    cluster_build_options o;
    cluster_build_options_init(&o);
    if (config_apply_cluster(&cl->cfg, &o, &err)) {
        cluster_build_options_destroy(&o);
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    if (!*o.plan.shared_dir) {
        cluster_build_options_destroy(&o);
        return sp_cli_usage_error("build", "[cluster] shared_dir is required for a cluster build");
    }
    cluster_build_stats st;
    int rc = cluster_build((const char *const *)cl->operands, (size_t)cl->n_operands, output, &o,
                           &st, &err);
    cluster_build_options_destroy(&o);
    if (sp_cmdline_has(cl, SP_F_VERBOSE) && st.plan[0])
        cluster_build_stats_print(stderr, &st);
    if (rc && st.signal) {
        /* Said what was stopped; now exit as the signal makes sstpipe. */
        sp_cli_report(&err, SP_EXIT_FAIL);
        raise(st.signal);
        return 128 + st.signal;
    }
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : SP_EXIT_OK;
}

/* The line a successful build ends with, unless -q: what was written, its
 * records and bytes, and the wall time. */
static int summary(const sp_cmdline *cl, const char *output, uint64_t records, uint64_t bytes,
                   double t0) {
    double seconds = sp_clock_seconds() - t0;
    if (sp_cmdline_has(cl, F_QUIET))
        return SP_EXIT_OK;
    char size[32], time[32];
    printf("wrote %s: %llu records, %llu bytes (%s) in %s\n", output, (unsigned long long)records,
           (unsigned long long)bytes, sp_format_size(bytes, size, sizeof size),
           sp_format_seconds(seconds, time, sizeof time));
    return fflush(stdout) ? sp_cli_report_msg("stdout: write failed", SP_EXIT_FAIL) : SP_EXIT_OK;
}

/* A cluster build's summary: its output (a table, or a table set's sums)
 * read back, as the tasks that wrote it counted in other processes. */
static int cluster_summary(const sp_cmdline *cl, const char *output, double t0) {
    if (sp_cmdline_has(cl, F_QUIET))
        return SP_EXIT_OK;
    int code = SP_EXIT_OK;
    sstpipe_table *t = sp_front_open_table(output, &code);
    if (!t)
        return code;
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    sstpipe_close(t);
    return summary(cl, output, info.records, info.file_size, t0);
}

static int run(sp_cmdline *cl) {
    double t0 = sp_clock_seconds();
    const char *output = cl->value[SP_F_OUTPUT];
    if (!output)
        return sp_cli_usage_error("build", "-o FILE is required");
    sp_error err = {0};
    build_options opts;
    build_options_init(&opts);
    config_apply_build(&cl->cfg, &opts);
    if (sst_check_fit(opts.table.block_size, (uint32_t)opts.max_bytes, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    if (config_cluster_set(&cl->cfg)) {
        int code = run_cluster(cl, output);
        return code ? code : cluster_summary(cl, output, t0);
    }
    if (cl->n_operands != 1)
        return sp_cli_usage_error("build", "expected one INPUT (several make a cluster build: "
                                           "a [cluster] section)");

    sp_front_meter m;
    sp_progress *prog = sp_front_progress(&m, cl, cl->operands[0]);
    opts.progress = prog;
    sp_front_meter_start(&m, "build");
    build_stats stats;
    int rc = build_run(cl->operands[0], output, &opts, &stats, &err);
    if (prog && rc == 0)
        sp_progress_store(&prog->records, stats.table.records);
    sp_front_meter_stop(&m, rc);
    if (sp_cmdline_has(cl, SP_F_VERBOSE))
        build_print_stats(stderr, &stats);
    return rc ? sp_front_exit(rc, &err)
              : summary(cl, output, stats.table.records, stats.table.file_size, t0);
}

const sp_command build_command = SP_COMMAND(
    build, run, SP_FLAGS(flags), SP_OPERANDS(sp_input_operand, 1, -1, "expected one INPUT"),
    .output_dir_ok = config_cluster_set);
