/*
 * cluster_task.h: the tasks of a cluster build (cluster_plan.h), each run
 * by `sstpipe task map|reduce|finish --plan PLAN --task I` wherever the
 * runner puts it.
 *
 * - map I reads its byte range of its input exactly as build reads a
 *   whole dump (the same extract, truncate and sort: build_sorted), the
 *   range framed by the dump's header and <siteinfo> and a closing tag so
 *   namespaces and encoding are the dump's, and writes its records as one
 *   SSTable per shard into PLAN_DIR/map/IIIII/ (records of the shard's key
 *   range only, sorted, a later page of the range winning a title).
 * - reduce R merges shard R's tables of every map task, in task order, the
 *   later task winning a key (sstpipe merge's engine, canonical), into
 *   PLAN_DIR/reduce/shard-RRRR.sst. Tasks in order are the input in order,
 *   so this is the record a single build keeps: the last page of a title.
 * - finish verifies every shard and publishes OUT: the table itself when
 *   there is one shard (then the same bytes as `sstpipe build`), a table
 *   set directory otherwise; then removes PLAN_DIR. Run as a Slurm
 *   finishing job (`task finish --keep-plan`), it leaves PLAN_DIR, where the
 *   job's own log and status are still to be written, to the build that
 *   submitted it; run again, it publishes the same OUT again.
 *
 * Every output is committed by one rename (map: a temporary directory
 * renamed whole), so a killed task leaves nothing that looks finished, and
 * a task whose output exists returns at once: running a build again
 * resumes it. A map task removes the temporary directories that dead
 * attempts of it left on this host. Errors are one line naming the task
 * and its input range or key range.
 */
#ifndef SSTPIPE_PIPELINE_CLUSTER_TASK_H
#define SSTPIPE_PIPELINE_CLUSTER_TASK_H

#include "pipeline/build/build.h"
#include "pipeline/cluster/cluster_plan.h"
#include "stages/common/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cluster_task_stats {
    bool skipped;          /* the output was already committed */
    uint64_t input_bytes;  /* compressed bytes read (map), table bytes read (reduce) */
    uint64_t xml_bytes;    /* map */
    uint64_t records;      /* written */
    uint64_t output_bytes; /* written into the shared directory */
    double cpu_seconds;    /* of the task's process, user + system */
    double wall_seconds;   /* from reading the plan to the commit */
    unsigned threads;      /* map: the threads it parsed on */
    uint64_t memory;       /* map: the sort budget it ran with */
    uint64_t peak_rss_kib; /* the process's peak resident memory (VmHWM) */
} cluster_task_stats;

/* opts: the build options the plan records (`sstpipe task` applies them:
 * config_apply_plan, pipeline/command/config_apply.h). threads: the task's parsing threads when
 * their [build] threads is 0 (every core); 0 keeps that. memory: the sort budget in place of their
 * [sort] memory (the local runner's share of it), 0 keeps that. Neither changes an output byte. */
int cluster_map(const cluster_plan *p, size_t task, const build_options *opts, unsigned threads,
                uint64_t memory, cluster_task_stats *st, sp_error *err);
/* topts: the table options of the same build options, whose format
 * (compression, level, dictionary size) the shard's table is written in,
 * as build would write it. */
int cluster_reduce(const cluster_plan *p, unsigned shard, const table_options *topts,
                   cluster_task_stats *st, sp_error *err);
/* Verifies every shard and publishes output atomically; the plan's
 * directory stays as it was. */
int cluster_publish(const cluster_plan *p, const char *output, sp_error *err);
/* Removes the plan's directory: the tasks' outputs and logs. */
void cluster_plan_remove_dir(const cluster_plan *p);
/* cluster_publish, then cluster_plan_remove_dir. */
int cluster_finish(const cluster_plan *p, const char *output, sp_error *err);

/* Whether map task i's output is committed (a resumed build says how many are). */
bool cluster_map_done(const cluster_plan *p, size_t task);

/* The `-v` line: "task: stage=map index=3 skipped=0 cpu_seconds=... ...". */
void cluster_task_stats_print(FILE *out, const char *stage, size_t index,
                              const cluster_task_stats *st);

#endif
