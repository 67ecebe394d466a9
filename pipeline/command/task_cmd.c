/*
 * task_cmd.c: `sstpipe task map|reduce|finish --plan PLAN --task I`, one
 * task of a cluster build (pipeline/cluster/cluster_task.h), as a runner starts it
 * on whatever node it picks. Hidden from --help, the man page and the
 * completion: users run `sstpipe build` with a [cluster] section, which
 * plans and starts these. Exit 0 when the task's output is committed
 * (also at once when it already was); otherwise one line on stderr naming
 * the task and its input or key range, exit 1.
 */
#include "pipeline/cluster/cluster_plan.h"
#include "pipeline/cluster/cluster_shared.h"
#include "pipeline/cluster/cluster_task.h"
#include "pipeline/command/commands.h"
#include "pipeline/command/config_apply.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_PLAN,
    F_TASK,
    F_VERBOSE,
    F_INPUT_SIZE,
    F_OUTPUT,
    F_KEEP_PLAN,
    F_THREADS,
    F_MEMORY,
    F_SHARED_CHECK
};

static const sp_flag flags[] = {
    [F_PLAN] = SP_ARG("plan", "FILE", "the build's plan.json (required)", SP_COMPLETE_FILE),
    [F_TASK] = SP_ARG("task", "I", "the task's index (required)", SP_COMPLETE_NONE),
    [F_VERBOSE] = {"verbose", 'v', NULL, 0, NULL, "print the task's statistics line on stderr",
                   SP_COMPLETE_NONE, NULL},
    [F_INPUT_SIZE] =
        SP_ARG("input-size", "SIZE", "plan: the map tasks a tasks = 0 plan makes of SIZE of input",
               SP_COMPLETE_NONE),
    [F_OUTPUT] = {"output", 'o', "OUT", 0, NULL,
                  "finish: publish OUT (default: the output of the build that made the plan)",
                  SP_COMPLETE_FILE, NULL},
    [F_KEEP_PLAN] = {"keep-plan", 0, NULL, 0, NULL,
                     "finish: leave the plan's directory (the build that started the task "
                     "removes it)",
                     SP_COMPLETE_NONE, NULL},
    [F_THREADS] =
        SP_ARG("threads", "N",
               "map: parsing threads when the plan's [build] threads is 0 (the local runner "
               "shares the cores among the tasks it runs at once)",
               SP_COMPLETE_NONE),
    [F_MEMORY] =
        SP_ARG("memory", "SIZE",
               "map: the sort budget in place of the plan's [sort] memory (the local runner "
               "divides the budget among the tasks it runs at once)",
               SP_COMPLETE_NONE),
    [F_SHARED_CHECK] =
        SP_ARG("shared-check", "TOKEN",
               "first check that the plan's directory holds the planner's mark TOKEN "
               "(this host sees the build's shared_dir)",
               SP_COMPLETE_NONE),
};

static const sp_operand operands[] = {{"STAGE", SP_COMPLETE_WORDS, "map reduce finish plan"}};

/* `task plan --input-size SIZE`: what the planner makes of a dump of that
 * size, without one (the benchmark's model of an enwiki-sized build). */
static int run_plan(sp_cmdline *cl) {
    sp_error err = {0};
    uint64_t size;
    if (!cl->value[F_INPUT_SIZE])
        return sp_cli_usage_error("task", "plan needs --input-size SIZE");
    if (sp_parse_size(cl->value[F_INPUT_SIZE], "--input-size", &size, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    uint64_t tasks = cluster_plan_default_tasks(size);
    printf("tasks=%llu task_bytes=%llu\n", (unsigned long long)tasks,
           (unsigned long long)(size / tasks));
    return SP_EXIT_OK;
}

/* A map task, with the build options its plan records. */
static int run_map(const cluster_plan *p, size_t index, unsigned threads, uint64_t memory,
                   cluster_task_stats *st, sp_error *err) {
    sp_config cfg;
    build_options opts;
    build_options_init(&opts);
    int rc = config_apply_plan(p, &cfg, &opts, err)
                 ? -1
                 : cluster_map(p, index, &opts, threads, memory, st, err);
    config_destroy(&cfg);
    return rc;
}

/* A reduce task, its table in the format the plan's build options say. */
static int run_reduce(const cluster_plan *p, unsigned index, cluster_task_stats *st,
                      sp_error *err) {
    sp_config cfg;
    build_options opts;
    build_options_init(&opts);
    int rc = config_apply_plan(p, &cfg, &opts, err)
                 ? -1
                 : cluster_reduce(p, index, &opts.table, st, err);
    config_destroy(&cfg);
    return rc;
}

static int run(sp_cmdline *cl) {
    const char *stage = cl->operands[0];
    if (!strcmp(stage, "plan"))
        return run_plan(cl);
    if (strcmp(stage, "map") && strcmp(stage, "reduce") && strcmp(stage, "finish"))
        return sp_cli_usage_error("task", "'%s' is not a stage (map, reduce, finish or plan)",
                                  stage);
    if (!cl->value[F_PLAN] || !cl->value[F_TASK])
        return sp_cli_usage_error("task", "--plan FILE and --task I are required");
    sp_error err = {0};
    uint64_t index;
    if (sp_parse_count(cl->value[F_TASK], "--task", 0, UINT32_MAX, &index, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    uint64_t threads = 0;
    if (cl->value[F_THREADS] &&
        sp_parse_count(cl->value[F_THREADS], "--threads", 0, 4096, &threads, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    uint64_t memory = 0;
    if (cl->value[F_MEMORY] && sp_parse_size(cl->value[F_MEMORY], "--memory", &memory, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    /* Before the plan is read: a host that does not see shared_dir gets
     * one line saying so rather than a missing plan's. */
    if (cl->value[F_SHARED_CHECK] &&
        cluster_shared_check(cl->value[F_PLAN], cl->value[F_SHARED_CHECK], stage,
                             (unsigned long)index, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    cluster_plan *p;
    if (cluster_plan_load(&p, cl->value[F_PLAN], &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    cluster_task_stats st = {0};
    const char *output = cl->value[F_OUTPUT];
    int rc;
    if (!strcmp(stage, "map"))
        rc = run_map(p, (size_t)index, (unsigned)threads, memory, &st, &err);
    else if (!strcmp(stage, "reduce"))
        rc = run_reduce(p, (unsigned)index, &st, &err);
    else if (index)
        rc = sp_errorf(&err, "%s: there is one finish task, 0", p->path);
    else if (sp_cmdline_has(cl, F_KEEP_PLAN))
        rc = cluster_publish(p, output ? output : p->output, &err);
    else
        rc = cluster_finish(p, output ? output : p->output, &err);
    cluster_plan_destroy(p);
    if (rc == 0 && sp_cmdline_has(cl, F_VERBOSE))
        cluster_task_stats_print(stderr, stage, (size_t)index, &st);
    return sp_front_exit(rc, &err);
}

/* finish -o OUT: the plan says whether OUT is a table set's directory,
 * replaced whole, so any directory may be. */
static bool output_dir_ok(const sp_config *cfg) {
    (void)cfg;
    return true;
}

const sp_command task_command =
    SP_COMMAND(task, run, .hidden = true, SP_FLAGS(flags),
               SP_OPERANDS(operands, 1, 1, "expected one STAGE (map, reduce or finish)"),
               .output_dir_ok = output_dir_ok);
