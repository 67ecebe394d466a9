/* nightly_build.c: one build of a nightly run into a directory; see nightly_build.h. */
#include "pipeline/nightly/nightly_build.h"

#include "pipeline/cluster/cluster_build.h"
#include "stages/common/clock.h"
#include "stages/common/runner_kind.h"
#include "stages/sst/table_set.h"

#include <signal.h>
#include <string.h>
#include <sys/stat.h>

/* The bytes of a table set's shards, as its manifest lists them. */
static int set_bytes(const char *path, uint64_t *bytes, sp_error *err) {
    table_set *set = table_set_read_manifest(path, err);
    if (!set)
        return -1;
    *bytes = 0;
    for (size_t i = 0; i < table_set_count(set); i++)
        *bytes += table_set_shard_at(set, i)->bytes;
    table_set_free(set);
    return 0;
}

/* The build as a cluster build ([cluster] set): with one shard the table
 * the rest of the nightly verifies and publishes is build's, byte for
 * byte; with more, a table set (a directory at the table's name), which
 * the rest verifies shard by shard, profiles and publishes as one (the
 * staging directory is renamed whole, then `current` swapped). The
 * figures the manifest takes from a build come from the tasks: CPU
 * seconds, bytes; pages and duplicates are not counted per task. */
static int cluster_build_into(nightly_run_state *r, const char *input, const char *out,
                              bool one_table, build_stats *b) {
    memset(b, 0, sizeof *b);
    /* A shallow copy, not destroyed: only the shard count may differ. */
    cluster_build_options co = r->o->cluster_build;
    if (one_table)
        co.plan.shards = 1;
    nightly_logf(&r->log, "build (cluster, %s runner): %s -> %s", sp_runner_kind_name(co.run.kind),
                 input, out);
    cluster_build_stats cs;
    double t0 = sp_clock_seconds();
    int rc = cluster_build(&input, 1, out, &co, &cs, &r->err);
    if (cs.signal) /* the tasks are stopped: end as the signal ends a nightly */
        raise(cs.signal);
    /* The build's wall time cut where the map stage ended: reading is the
     * plan and the map tasks, writing the reduce tasks and the finish. */
    double wall = sp_clock_seconds() - t0;
    b->write_phase.wall_seconds = cs.reduce_stage_seconds + cs.finish_seconds;
    b->read_phase.wall_seconds = wall - b->write_phase.wall_seconds;
    b->read_phase.cpu_seconds = cs.map_cpu_seconds;
    b->write_phase.cpu_seconds = cs.reduce_cpu_seconds;
    b->extract.input_bytes = cs.input_bytes;
    b->extract.xml_bytes = cs.xml_bytes;
    /* The manifest's peak is the run's largest process's, a task's
     * included: each reports its own (VmHWM), on whichever node it ran. */
    uint64_t task_peak =
        1024 * (cs.map_peak_rss_kib > cs.reduce_peak_rss_kib ? cs.map_peak_rss_kib
                                                             : cs.reduce_peak_rss_kib);
    if (task_peak > r->task_peak_rss_bytes)
        r->task_peak_rss_bytes = task_peak;
    struct stat st;
    if (rc == 0 && cs.shards > 1)
        rc = set_bytes(out, &b->table.file_size, &r->err);
    else if (rc == 0 && stat(out, &st) == 0)
        b->table.file_size = (uint64_t)st.st_size;
    nightly_logf(&r->log, "cluster: %zu map tasks (%zu already done), %u shard%s, plan %s", cs.maps,
                 cs.maps_done, cs.shards, cs.shards == 1 ? "" : "s (a table set)", cs.plan);
    return rc;
}

int nightly_build_into(nightly_run_state *r, const char *input, uint64_t size, const char *out,
                       bool one_table, build_stats *b) {
    if (r->o->cluster) {
        nightly_stage_begin(&r->log, "build", size);
        int rc = cluster_build_into(r, input, out, one_table, b);
        nightly_stage_end(&r->log);
        json_object_set_new(nightly_manifest_stage(r, "read", b->read_phase.wall_seconds,
                                                   b->read_phase.cpu_seconds,
                                                   b->extract.input_bytes, 0, -1, -1),
                            "input", json_string(input));
        json_object_set_new(nightly_manifest_stage(r, "write", b->write_phase.wall_seconds,
                                                   b->write_phase.cpu_seconds, 0,
                                                   b->table.file_size, -1, -1),
                            "input", json_string(input));
        return rc;
    }
    build_options opts = r->o->build;
    /* Spill files go into the staging directory unless [sort] tmp_dir says
     * otherwise: the free-space check then covers them, and they are
     * anonymous, so even a killed run leaves none behind. */
    if (!opts.sort.tmp_dir)
        opts.sort.tmp_dir = opts.extract.tmp_dir = r->staging;
    nightly_logf(&r->log, "build: %s -> %s", input, out);
    nightly_stage_begin(&r->log, "build", size);
    opts.progress = &r->log.progress;
    int rc = build_run(input, out, &opts, b, &r->err);
    nightly_stage_end(&r->log);
    /* Each build's stages name their input: an incremental run has several. */
    json_object_set_new(nightly_manifest_stage(r, "read", b->read_phase.wall_seconds,
                                               b->read_phase.cpu_seconds, b->extract.input_bytes,
                                               b->sort.spilled_bytes, (int64_t)b->extract.pages,
                                               (int64_t)b->sort.records_in),
                        "input", json_string(input));
    json_object_set_new(nightly_manifest_stage(r, "write", b->write_phase.wall_seconds,
                                               b->write_phase.cpu_seconds, b->sort.spilled_bytes,
                                               b->table.file_size, (int64_t)b->sort.records_in,
                                               (int64_t)b->table.records),
                        "input", json_string(input));
    if (rc)
        return -1;
    nightly_logf(&r->log,
                 "build done: %llu pages, %llu records, %llu truncated, %llu duplicates "
                 "replaced, %llu bytes, %.1f s",
                 (unsigned long long)b->extract.pages, (unsigned long long)b->table.records,
                 (unsigned long long)b->truncated, (unsigned long long)b->sort.duplicates_replaced,
                 (unsigned long long)b->table.file_size,
                 b->read_phase.wall_seconds + b->write_phase.wall_seconds);
    return 0;
}
