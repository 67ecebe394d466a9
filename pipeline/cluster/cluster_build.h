/*
 * cluster_build.h: `sstpipe build` with a [cluster] section: plan
 * (cluster_plan.h), the map stage, the reduce stage, then the finishing
 * step (cluster_task.h): in this process, or on Slurm as a finishing job
 * (`sstpipe task finish`, --dependency=afterok on the reduce array) that
 * this process waits for, whose failure is reported as a task's.
 */
#ifndef SSTPIPE_PIPELINE_CLUSTER_BUILD_H
#define SSTPIPE_PIPELINE_CLUSTER_BUILD_H

#include "pipeline/cluster/cluster_plan.h"
#include "pipeline/cluster/cluster_runner.h"
#include "stages/common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a cluster build is told: its [cluster] section, and the build
 * options its tasks apply (the command line fills it from a config:
 * config_apply_cluster, pipeline/command/config_apply.h). */
typedef struct cluster_build_options {
    /* The shared directory (made absolute here), tasks and shards, and the
     * build options every task applies (owned: cluster_build_options_destroy
     * frees them). */
    cluster_plan_options plan;
    /* The runner, its jobs and retries, and Slurm's and GNU parallel's
     * settings; cluster_build sets the rest (the log directory, ...). */
    cluster_runner_options run;
    /* [build] threads and [sort] memory of the build: 0 threads lets a
     * local map task parse on its share of the cores, and the local map
     * tasks share the memory. */
    unsigned build_threads;
    uint64_t sort_memory;
} cluster_build_options;

/* One task and shard, no shared directory (it must be set), the runner's
 * defaults (cluster_runner_options_init), every core, the sorter's
 * default memory, and no build options (each task's are the defaults). */
void cluster_build_options_init(cluster_build_options *o);
/* Frees o->plan.options. */
void cluster_build_options_destroy(cluster_build_options *o);

typedef struct cluster_build_stats {
    char plan[4096];  /* the plan's path */
    size_t maps;      /* map tasks */
    unsigned shards;  /* reduce tasks */
    bool resumed;     /* an earlier run's plan was found */
    size_t maps_done; /* map tasks already committed when this run started */
    /* Summed over the tasks of this run, from each one's `-v` line in its
     * log (a task skipped as already done counts what it did then: 0). */
    double map_cpu_seconds, reduce_cpu_seconds;
    uint64_t input_bytes;  /* compressed bytes the map tasks read */
    uint64_t xml_bytes;    /* XML they parsed */
    uint64_t shared_bytes; /* written into shared_dir: the map runs and the shards */
    /* Where the wall time went, for the benchmark's breakdown: the plan
     * and the finish (verify, publish) in this process, the runner's two
     * stages as it returned them, and the longest task of each stage (its
     * own figure: the rest of a stage is starting and waiting). */
    double plan_seconds, plan_cpu_seconds;
    size_t plan_probes; /* points of the inputs the plan decoded (cluster_plan.h) */
    double run_seconds;
    /* run_seconds cut where the runner saw the map stage's last task end:
     * the map stage's share, and the rest (the reduce stage's, on Slurm
     * with the finishing job's). */
    double map_stage_seconds, reduce_stage_seconds;
    double map_seconds, reduce_seconds;
    unsigned map_threads; /* the most threads a map task parsed on */
    /* Memory: the sort budget a map task ran with (the local runner's
     * share of [sort] memory), the map tasks the local runner runs at once
     * (0: another runner, a task a node slot), and the largest peak
     * resident memory of a map and of a reduce task (each task's VmHWM). */
    uint64_t map_memory;
    size_t map_at_once;
    uint64_t map_peak_rss_kib, reduce_peak_rss_kib;
    double finish_seconds, finish_cpu_seconds;
    /* The signal (SIGINT, SIGTERM, SIGHUP) that stopped the tasks, 0: none.
     * Then every task is stopped, nothing is published, err says so, and the
     * caller, having reported it, raises it again (sstpipe's handler then
     * exits 128+signal). */
    int signal;
} cluster_build_stats;

/*
 * Builds inputs[0..n) into output as o says. On a task's failure err is
 * one line: the task, its input or key range, its error and its log.
 */
int cluster_build(const char *const *inputs, size_t n, const char *output,
                  const cluster_build_options *o, cluster_build_stats *st, sp_error *err);

/* The -v line: "cluster: plan=... maps=N shards=N resumed=0 maps_done=N
 * map_cpu_seconds=... reduce_cpu_seconds=... input_bytes=... xml_bytes=...
 * shared_bytes=... plan_seconds=... plan_cpu_seconds=... plan_probes=N
 * run_seconds=... map_seconds=... reduce_seconds=... finish_seconds=...
 * finish_cpu_seconds=... map_threads=N". */
void cluster_build_stats_print(FILE *out, const cluster_build_stats *st);

#endif
