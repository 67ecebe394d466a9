/*
 * cluster_build.c: the driver of a cluster build; see cluster_build.h.
 *
 * Every task runs as its own `sstpipe task ...` process, whatever runs
 * it, so a task on this machine fails, is killed and is retried exactly as
 * one on a cluster node would be.
 */
#include "pipeline/cluster/cluster_build.h"

#include "pipeline/cluster/cluster_plan.h"
#include "pipeline/cluster/cluster_runner.h"
#include "pipeline/cluster/cluster_shared.h"
#include "pipeline/cluster/cluster_task.h"
#include "stages/common/clock.h"
#include "stages/sort/sorter.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* "map task 3 (enwiki.xml.bz2 bytes A-B)", "reduce task 1 (keys ...)",
 * "finish task 0 (every key, 3 shards, into OUT)": a failed task as the
 * runner's one line names it. */
typedef struct build_ctx {
    const cluster_plan *plan;
    const char *output; /* absolute */
} build_ctx;

static void describe_task(void *ctx, const char *stage, int index, char *buf, size_t cap) {
    const build_ctx *b = ctx;
    if (!strcmp(stage, "map"))
        cluster_plan_describe_map(b->plan, (size_t)index, buf, cap);
    else if (!strcmp(stage, "reduce"))
        cluster_plan_describe_reduce(b->plan, (unsigned)index, buf, cap);
    else
        snprintf(buf, cap, "finish task %d (every key, %u shard%s, into %s)", index,
                 b->plan->shards, b->plan->shards == 1 ? "" : "s", b->output);
}

/* path made absolute against the working directory (as it is, if that
 * cannot be read, or empty). */
static void absolute_path(const char *path, char *buf, size_t cap) {
    char cwd[PATH_MAX];
    if (!path[0] || path[0] == '/' || !getcwd(cwd, sizeof cwd))
        snprintf(buf, cap, "%s", path);
    else
        snprintf(buf, cap, "%s/%s", cwd, path);
}

/* The map tasks the local runner runs at once: [cluster] jobs, or the
 * cores this process may run on, at most the tasks there are (at least 1);
 * 0 for the other runners, whose tasks each have a node slot of their own. */
static size_t local_at_once(const cluster_build_options *o, size_t n_maps) {
    cpu_set_t set;
    if (o->run.kind != SP_RUNNER_LOCAL)
        return 0;
    size_t at_once = o->run.jobs > 0 ? (size_t)o->run.jobs : 0;
    if (!at_once)
        at_once = sched_getaffinity(0, sizeof set, &set) || CPU_COUNT(&set) <= 0
                      ? 1
                      : (size_t)CPU_COUNT(&set);
    if (at_once > n_maps)
        at_once = n_maps;
    return at_once ? at_once : 1;
}

/* A local map task's parsing threads: the cores this process may run on
 * over the tasks the runner runs at once (at least 1); 0 (the plan's [build]
 * threads) for the other runners, or when [build] threads is set. */
static unsigned map_threads(const cluster_build_options *o, size_t n_maps) {
    cpu_set_t set;
    size_t at_once = local_at_once(o, n_maps);
    if (!at_once || o->build_threads || sched_getaffinity(0, sizeof set, &set) ||
        CPU_COUNT(&set) <= 0)
        return 0;
    size_t cores = (size_t)CPU_COUNT(&set);
    return cores / at_once > 1 ? (unsigned)(cores / at_once) : 1;
}

/* A local map task's sort budget: [sort] memory over the tasks run at once,
 * so that together they hold what one build would (at least the sorter's
 * minimum); 0 (the plan's whole budget) for the other runners, where the
 * budget is per task, in its own node slot (Slurm: ask for it with
 * --mem in slurm_args). */
static uint64_t map_memory(const cluster_build_options *o, size_t n_maps) {
    size_t at_once = local_at_once(o, n_maps);
    if (!at_once)
        return 0;
    uint64_t share = o->sort_memory / at_once;
    return share < SORT_MIN_MEMORY ? SORT_MIN_MEMORY : share;
}

/* Adds the `task:` line of the last attempt's log of each task of stage
 * (a log that cannot be read adds nothing: the figures are for -v). */
static void add_task_stats(const char *log_dir, const char *stage, int ntasks,
                           cluster_build_stats *st) {
    for (int i = 0; i < ntasks; i++) {
        char log[PATH_MAX + 64], line[1024] = "";
        for (int attempt = 0;; attempt++) {
            snprintf(log, sizeof log, "%s/%s-%d.%d.log", log_dir, stage, i, attempt);
            if (access(log, F_OK))
                break;
            FILE *f = fopen(log, "r");
            while (f && fgets(line, sizeof line, f))
                if (!strncmp(line, "task: ", 6))
                    break;
            if (f)
                fclose(f);
        }
        double cpu = 0, wall = 0;
        unsigned long long in = 0, xml = 0, out = 0;
        const char *p;
        if ((p = strstr(line, "cpu_seconds=")))
            cpu = strtod(p + 12, NULL);
        if ((p = strstr(line, "input_bytes=")))
            in = strtoull(p + 12, NULL, 10);
        if ((p = strstr(line, "xml_bytes=")))
            xml = strtoull(p + 10, NULL, 10);
        if ((p = strstr(line, "output_bytes=")))
            out = strtoull(p + 13, NULL, 10);
        if ((p = strstr(line, "wall_seconds=")))
            wall = strtod(p + 13, NULL);
        if ((p = strstr(line, " threads=")) && strtoul(p + 9, NULL, 10) > st->map_threads)
            st->map_threads = (unsigned)strtoul(p + 9, NULL, 10);
        bool map = !strcmp(stage, "map");
        unsigned long long rss =
            (p = strstr(line, "peak_rss_kib=")) ? strtoull(p + 13, NULL, 10) : 0;
        uint64_t *peak = map ? &st->map_peak_rss_kib : &st->reduce_peak_rss_kib;
        if (rss > *peak)
            *peak = rss;
        if (map && (p = strstr(line, " memory=")))
            st->map_memory = strtoull(p + 8, NULL, 10);
        *(map ? &st->map_cpu_seconds : &st->reduce_cpu_seconds) += cpu;
        double *longest = map ? &st->map_seconds : &st->reduce_seconds;
        if (wall > *longest)
            *longest = wall;
        if (map) {
            st->input_bytes += in;
            st->xml_bytes += xml;
        }
        st->shared_bytes += out;
    }
}

void cluster_build_options_init(cluster_build_options *o) {
    memset(o, 0, sizeof *o);
    o->plan.shards = 1;
    cluster_runner_options_init(&o->run);
    o->sort_memory = SORT_DEFAULT_MEMORY;
}

void cluster_build_options_destroy(cluster_build_options *o) {
    for (size_t i = 0; i < o->plan.n_options; i++) {
        free(o->plan.options[i].key);
        free(o->plan.options[i].value);
    }
    free(o->plan.options);
    o->plan.options = NULL;
    o->plan.n_options = 0;
}

int cluster_build(const char *const *inputs, size_t n, const char *output,
                  const cluster_build_options *o, cluster_build_stats *st, sp_error *err) {
    cluster_build_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    /* Absolute: a task on a remote host (GNU parallel over ssh) starts in
     * its login's home directory, not here. */
    char shared[2 * PATH_MAX + 2];
    absolute_path(o->plan.shared_dir ? o->plan.shared_dir : "", shared, sizeof shared);
    cluster_plan_options po = o->plan;
    po.shared_dir = shared;
    cluster_plan *p;
    double wall0 = sp_clock_seconds(), cpu0 = sp_process_cpu_seconds();
    if (cluster_plan_make(&p, inputs, n, output, &po, &st->resumed, err))
        return -1;
    st->plan_seconds = sp_clock_seconds() - wall0;
    st->plan_cpu_seconds = sp_process_cpu_seconds() - cpu0;
    st->plan_probes = p->probes;
    snprintf(st->plan, sizeof st->plan, "%s", p->path);
    st->maps = p->n_maps;
    st->shards = p->shards;
    st->map_at_once = local_at_once(o, p->n_maps);
    for (size_t i = 0; i < p->n_maps; i++)
        st->maps_done += cluster_map_done(p, i);

    char exe[PATH_MAX], log_dir[PATH_MAX - 64], out[2 * PATH_MAX + 2];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int rc = -1;
    if (len < 0) {
        sp_errorf_errno(err, "cannot find the sstpipe executable (/proc/self/exe)");
        goto out;
    }
    exe[len] = '\0';
    /* This run's mark, which every task checks first (cluster_shared.h). */
    char mark[CLUSTER_SHARED_TOKEN_MAX];
    if (cluster_shared_mark(p->dir, mark, err))
        goto out;
    snprintf(log_dir, sizeof log_dir, "%s/logs", p->dir);
    if (mkdir(log_dir, 0777) && errno != EEXIST) {
        sp_errorf_errno(err, "%s: cannot create the directory", log_dir);
        goto out;
    }
    /* The finishing job may start in another directory, on another node;
     * and a resumed plan names the OUT of the run that made it. */
    absolute_path(output, out, sizeof out);
    /* -v: each log ends with the task's figures, summed into st. The
     * local runner's tasks share this machine's cores: a map task parses
     * on its share of them rather than on all (more threads than cores
     * cost more CPU than build's, in switches and contended caches).
     * Nodes of the other runners are the tasks' own. */
    char threads[32], memory[32];
    snprintf(threads, sizeof threads, "%u", map_threads(o, p->n_maps));
    snprintf(memory, sizeof memory, "%llu", (unsigned long long)map_memory(o, p->n_maps));
    char *map_argv[] = {exe,         "task",  "map",      "--plan", p->path,
                        "--threads", threads, "--memory", memory,   "--shared-check",
                        mark,        "-v",    NULL};
    char *reduce_argv[] = {exe,  "task", "reduce", "--plan", p->path, "--shared-check",
                           mark, "-v",   NULL};
    char *finish_argv[] = {exe, "task",        "finish",         "--plan", p->path, "-o",
                           out, "--keep-plan", "--shared-check", mark,     NULL};
    cluster_stage stages[] = {{"map", map_argv, (int)p->n_maps},
                              {"reduce", reduce_argv, (int)p->shards},
                              {"finish", finish_argv, 1}};
    cluster_runner_options ro = o->run;
    ro.log_dir = log_dir;
    build_ctx ctx = {p, out};
    ro.describe = describe_task;
    ro.describe_ctx = &ctx;
    /* On Slurm the finishing step is a job of its own, after the reduce
     * array (afterok), as the users run it; elsewhere it runs here. */
    bool slurm = ro.kind == SP_RUNNER_SLURM;
    double stage_end[3] = {0};
    ro.stage_end = stage_end;
    wall0 = sp_clock_seconds();
    ro.signal_out = &st->signal;
    if (cluster_run(&ro, stages, slurm ? 3 : 2, err)) {
        if (st->signal) {
            char what[sizeof err->msg];
            snprintf(what, sizeof what, "%s", err->msg);
            err->set = false; /* the same error, said more fully */
            sp_errorf(err, "%.*s; the same build run again resumes", (int)sizeof what - 48, what);
        }
        goto out;
    }
    st->run_seconds = sp_clock_seconds() - wall0;
    st->map_stage_seconds = stage_end[0] - wall0;
    st->reduce_stage_seconds = st->run_seconds - st->map_stage_seconds;
    add_task_stats(log_dir, "map", (int)p->n_maps, st);
    add_task_stats(log_dir, "reduce", (int)p->shards, st);
    wall0 = sp_clock_seconds();
    cpu0 = sp_process_cpu_seconds();
    if (slurm) {
        /* The finishing job's time is in run_seconds. */
        cluster_plan_remove_dir(p);
        rc = 0;
    } else {
        rc = cluster_finish(p, output, err);
    }
    st->finish_seconds = sp_clock_seconds() - wall0;
    st->finish_cpu_seconds = sp_process_cpu_seconds() - cpu0;
out:
    cluster_plan_destroy(p);
    return rc;
}

void cluster_build_stats_print(FILE *out, const cluster_build_stats *st) {
    fprintf(
        out,
        "cluster: plan=%s maps=%zu shards=%u resumed=%d maps_done=%zu map_cpu_seconds=%.3f "
        "reduce_cpu_seconds=%.3f input_bytes=%llu xml_bytes=%llu shared_bytes=%llu "
        "plan_seconds=%.3f plan_cpu_seconds=%.3f plan_probes=%zu run_seconds=%.3f map_seconds=%.3f "
        "reduce_seconds=%.3f finish_seconds=%.3f finish_cpu_seconds=%.3f map_threads=%u "
        "map_memory=%llu map_at_once=%zu map_peak_rss_kib=%llu reduce_peak_rss_kib=%llu\n",
        st->plan, st->maps, st->shards, st->resumed ? 1 : 0, st->maps_done, st->map_cpu_seconds,
        st->reduce_cpu_seconds, (unsigned long long)st->input_bytes,
        (unsigned long long)st->xml_bytes, (unsigned long long)st->shared_bytes, st->plan_seconds,
        st->plan_cpu_seconds, st->plan_probes, st->run_seconds, st->map_seconds, st->reduce_seconds,
        st->finish_seconds, st->finish_cpu_seconds, st->map_threads,
        (unsigned long long)st->map_memory, st->map_at_once,
        (unsigned long long)st->map_peak_rss_kib, (unsigned long long)st->reduce_peak_rss_kib);
}
