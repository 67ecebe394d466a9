/*
 * cluster_plan.h: the plan of a cluster build, what every task of it reads.
 *
 * A cluster build (`sstpipe build` with a [cluster] section) is a plan plus
 * tasks: map task i parses one byte range of one input into sorted runs,
 * one SSTable per key range (shard); reduce task r merges the runs of shard
 * r, the later task winning a key, into the shard's table; the finishing
 * step verifies the shards and publishes OUT (pipeline/cluster/cluster_task.h).
 *
 * The plan cuts the inputs into map tasks: whole files when there are at
 * least as many files as tasks, and inside a multistream bzip2 dump at
 * stream starts that begin with a <page> (taken from the dump's
 * -multistream-index.txt.bz2 when it lies beside it, else found in the
 * compressed bytes, bz2_streams.h), so every page lies wholly in one task
 * and the tasks in order read the input in order: the later task's record
 * is the later page. Shard split points are quantiles of a sample of the
 * titles (the index's, or those in streams read at evenly spaced points).
 *
 * It is written once, as SHARED_DIR/<id>/plan.json, where id is a hash of
 * the inputs (path, size, modification time), the options, tasks and
 * shards: running the same build again (to any OUT) finds the same plan
 * and the tasks already committed beside it, which is how a build resumes.
 * One build of the same inputs and options at a time per shared directory
 * (its finish removes the directory).
 */
#ifndef SSTPIPE_PIPELINE_CLUSTER_PLAN_H
#define SSTPIPE_PIPELINE_CLUSTER_PLAN_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>

#define CLUSTER_PLAN_FILE "plan.json"

/* Tasks of a tasks = 0 plan: each about this many compressed bytes, and a
 * few even for a small input, so the path is always the cluster's. */
#define CLUSTER_TASK_MIN_BYTES (64ull << 20)
#define CLUSTER_TASK_MAX_BYTES (256ull << 20)
#define CLUSTER_SMALL_INPUT_TASKS 4

typedef struct cluster_input {
    char *path; /* absolute */
    uint64_t size;
    int64_t mtime_ns;
    /* Where the dump's first stream (its header and <siteinfo>) ends, for
     * the tasks that start later; 0 when the file is read whole. */
    uint64_t head_end;
} cluster_input;

typedef struct cluster_map_task {
    size_t input;
    uint64_t start, end; /* compressed bytes [start, end) of the input */
} cluster_map_task;

typedef struct cluster_key {
    uint8_t *bytes;
    uint32_t len;
} cluster_key;

typedef struct cluster_option {
    char *key;   /* "sst.block_size" */
    char *value; /* its text, as config show prints it */
} cluster_option;

typedef struct cluster_plan {
    char *id;     /* 16 hex digits */
    char *dir;    /* SHARED_DIR/<id> */
    char *path;   /* dir/plan.json */
    char *output; /* OUT, absolute, of the build that made the plan (`task finish`'s) */
    cluster_input *inputs;
    size_t n_inputs;
    cluster_map_task *maps; /* in input order */
    size_t n_maps;
    cluster_key
        *splits; /* shards - 1 split points, increasing: shard r is [splits[r-1], splits[r]) */
    unsigned shards;
    cluster_option *options; /* the build options every task applies */
    size_t n_options;
    /* Points of the inputs the planner decoded (to check a cut, or to
     * sample titles) while making this plan; 0 for a loaded one. For -v. */
    size_t probes;
} cluster_plan;

typedef struct cluster_plan_options {
    const char *shared_dir;
    uint64_t tasks; /* map tasks wanted; 0: from the input size */
    unsigned shards;
    /* The build options every task applies (the command line makes them
     * of the config, and each task applies them over its defaults:
     * pipeline/command/config_apply.h). */
    cluster_option *options;
    size_t n_options;
} cluster_plan_options;

/*
 * The plan of building inputs[0..n) into output with o's build options:
 * the one in SHARED_DIR/<id>/ when an earlier run wrote it, else made and
 * written there. *resumed says which.
 */
int cluster_plan_make(cluster_plan **out, const char *const *inputs, size_t n, const char *output,
                      const cluster_plan_options *o, bool *resumed, sp_error *err);
/* Reads a plan.json (a task's --plan). */
int cluster_plan_load(cluster_plan **out, const char *path, sp_error *err);
void cluster_plan_destroy(cluster_plan *p);

/* The shard a key belongs to. */
unsigned cluster_plan_shard_of(const cluster_plan *p, const uint8_t *key, uint32_t len);

/* How many map tasks a tasks = 0 plan makes of total compressed bytes:
 * CLUSTER_SMALL_INPUT_TASKS below 4 x CLUSTER_TASK_MIN_BYTES, else tasks
 * of total / 128 bytes held between the two bounds. */
uint64_t cluster_plan_default_tasks(uint64_t total);

/* "map task 3 (enwiki.xml.bz2 bytes 1024-2048)", "reduce task 1 (keys
 * [4d6f, 5a) )": how errors and logs name a task. */
void cluster_plan_describe_map(const cluster_plan *p, size_t i, char *buf, size_t cap);
void cluster_plan_describe_reduce(const cluster_plan *p, unsigned r, char *buf, size_t cap);

#endif
