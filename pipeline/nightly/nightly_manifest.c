/*
 * nightly_manifest.c: manifest.json, the record of one nightly run: what
 * was built from what, with which configuration, how each stage went, and
 * whether it was published. Field by field in config/MANIFEST.md.
 */
#include "pipeline/nightly/nightly_manifest.h"

#include "pipeline/nightly/nightly_incr.h"
#include "stages/common/clock.h"
#include "stages/common/fileio.h"
#include "stages/common/json_file.h"
#include "stages/common/usage.h"
#include "stages/common/version.h"
#include "stages/read/info_json.h"
#include "stages/sst/table_set.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static json_t *hex64(uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
    return json_string(buf);
}

static int add_output(nightly_run_state *r, json_t *list, const char *name, bool required,
                      sp_error *err) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", r->staging, name);
    if (!required && access(path, F_OK))
        return 0;
    uint64_t size, hash;
    if (nightly_hash_file(path, &size, &hash, NULL, err))
        return -1;
    json_array_append_new(list, json_pack("{s:s, s:I, s:o}", "file", name, "bytes",
                                          (json_int_t)size, "xxh3_64", hex64(hash)));
    return 0;
}

/* A table set's manifest and shards, each an output "NAME/FILE". */
static int add_set_outputs(nightly_run_state *r, json_t *list, sp_error *err) {
    char path[PATH_MAX], name[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", r->staging, r->o->table_name);
    table_set *set = table_set_read_manifest(path, err);
    if (!set)
        return -1;
    snprintf(name, sizeof name, "%s/%s", r->o->table_name, TABLE_SET_MANIFEST);
    int rc = add_output(r, list, name, true, err);
    for (size_t i = 0; rc == 0 && i < table_set_count(set); i++) {
        snprintf(name, sizeof name, "%s/%s", r->o->table_name, table_set_shard_at(set, i)->file);
        rc = add_output(r, list, name, true, err);
    }
    table_set_free(set);
    return rc;
}

int nightly_manifest_outputs(nightly_run_state *r, sp_error *err) {
    json_t *list = json_array();
    char table[PATH_MAX];
    snprintf(table, sizeof table, "%s/%s", r->staging, r->o->table_name);
    bool set = table_set_is_set_path(table);
    if ((set ? add_set_outputs(r, list, err) : add_output(r, list, r->o->table_name, true, err)) ||
        add_output(r, list, "verify.json", false, err) ||
        add_output(r, list, "profile.json", false, err)) {
        json_decref(list);
        return -1;
    }
    json_decref(r->outputs);
    r->outputs = list;
    return 0;
}

static json_t *input_json(const nightly_run_state *r) {
    if (!r->input)
        return json_null();
    char mtime[32];
    nightly_utc(r->input_mtime, false, mtime, sizeof mtime);
    char *abs = realpath(r->input, NULL);
    /* options_xxh3_64: the settings that shape the table, so that a dump
     * built again with other ones is not taken as already published. */
    json_t *j = json_pack("{s:s, s:I, s:s, s:o, s:b, s:o}", "path", abs ? abs : r->input, "size",
                          (json_int_t)r->input_size, "mtime", mtime, "xxh3_64",
                          r->have_checksum ? hex64(r->input_xxh3) : json_null(), "compressed",
                          r->compressed, "options_xxh3_64", hex64(r->o->table_key));
    free(abs);
    return j;
}

static json_t *sort_json(const nightly_run_state *r) {
    if (!r->built)
        return json_null();
    const sort_stats *s = &r->build.sort;
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "records_in", (json_int_t)s->records_in,
                     "records_out", (json_int_t)s->records_out, "runs", (json_int_t)s->runs,
                     "merge_passes", (json_int_t)s->merge_passes, "spilled_bytes",
                     (json_int_t)s->spilled_bytes);
}

static json_t *sstable_json(const nightly_run_state *r) {
    if (!r->build_ok)
        return json_null();
    const table_stats *t = &r->build.table;
    uint32_t block = r->o->build.table.block_size;
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}", "file",
                     r->o->table_name, "records", (json_int_t)t->records, "data_blocks",
                     (json_int_t)t->data_blocks, "key_bytes", (json_int_t)t->key_bytes,
                     "value_bytes", (json_int_t)t->value_bytes, "file_size",
                     (json_int_t)t->file_size, "block_size", (json_int_t)block, "cluster_size",
                     (json_int_t)r->o->build.table.cluster_size, "max_value_bytes",
                     (json_int_t)r->o->build.max_bytes, "bytes_per_record",
                     info_bytes_per_record(t->file_size, t->records), "compression_ratio",
                     info_compression_ratio(t->value_bytes, t->data_blocks, block));
}

static json_t *profile_json(const nightly_run_state *r) {
    if (r->profiled)
        return profile_result_to_json(&r->profile);
    if (r->profile_error[0])
        return json_pack("{s:s}", "error", r->profile_error);
    return json_null();
}

static json_t *build_manifest(nightly_run_state *r) {
    char finished[32], host[256] = "";
    nightly_utc(time(NULL), false, finished, sizeof finished);
    gethostname(host, sizeof host - 1);
    sp_usage self;
    uint64_t peak = r->build.peak_rss_bytes > r->task_peak_rss_bytes ? r->build.peak_rss_bytes
                                                                     : r->task_peak_rss_bytes;
    if (sp_usage_get(SP_USAGE_SELF, &self) == 0 && self.peak_rss_bytes > peak)
        peak = self.peak_rss_bytes;
    bool ok = r->failed_stage == NULL;
    json_t *m = json_object();
    json_object_set_new(m, "manifest_version", json_integer(NIGHTLY_MANIFEST_VERSION));
    json_object_set_new(m, "sstpipe_version", json_string(sp_version()));
    json_object_set_new(m, "status", json_string(ok ? "published" : "failed"));
    json_object_set_new(m, "exit_code", json_integer(r->exit_code));
    json_object_set_new(m, "failed_stage", ok ? json_null() : json_string(r->failed_stage));
    json_object_set_new(m, "error", ok ? json_null() : json_string(r->err.msg));
    json_object_set_new(m, "build_dir", json_string(r->final_rel));
    json_object_set_new(m, "host", json_string(host));
    json_object_set_new(m, "pid", json_integer(getpid()));
    json_object_set_new(m, "started_at", json_string(r->started_at));
    json_object_set_new(m, "finished_at", json_string(finished));
    json_object_set_new(m, "wall_seconds", json_real(sp_clock_seconds() - r->t0));
    json_object_set_new(m, "peak_rss_bytes", json_integer((json_int_t)peak));
    json_object_set_new(m, "input", input_json(r));
    json_object_set_new(m, "free_space",
                        r->need_bytes
                            ? json_pack("{s:I, s:I}", "needed_bytes", (json_int_t)r->need_bytes,
                                        "available_bytes", (json_int_t)r->avail_bytes)
                            : json_null());
    json_object_set_new(m, "incremental", nightly_incr_json(r));
    json_object_set_new(m, "config", r->o->config ? json_incref(r->o->config) : json_null());
    json_object_set(m, "stages", r->stages);
    json_object_set_new(m, "counts", r->built ? nightly_counts_json(&r->build) : json_null());
    json_object_set_new(m, "sort", sort_json(r));
    json_object_set_new(m, "sstable", sstable_json(r));
    /* _set takes a reference, _set_new steals one: the fresh empty array
     * of a run that failed before any output must be stolen, or it leaks. */
    if (r->outputs)
        json_object_set(m, "outputs", r->outputs);
    else
        json_object_set_new(m, "outputs", json_array());
    json_object_set_new(m, "verify", r->verified ? verify_report_to_json(&r->verify) : json_null());
    json_object_set_new(m, "profile", profile_json(r));
    return m;
}

int nightly_manifest_write(nightly_run_state *r, sp_error *err) {
    /* A failed run records whatever files it got to (the table that failed
     * verify, its report); a missing one is not a second error. */
    if (!r->outputs && r->failed_stage) {
        sp_error ignored = {0};
        if (nightly_manifest_outputs(r, &ignored))
            r->outputs = NULL;
    }
    json_t *m = build_manifest(r);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/manifest.json", r->staging);
    int rc = sp_json_file_write(m, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER, err);
    json_decref(m);
    return rc;
}
