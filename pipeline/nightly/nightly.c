/*
 * nightly.c: one nightly run, from dump to published SSTable.
 *
 *   1. take the lock on [output] dir; remove what runs that died left there
 *   2. create a staging directory .staging-<UTC>-<pid>, with nightly.log
 *   3. pick the input (INPUT, or the newest match of [input] path)
 *   4. checksum the input (XXH3-64, a separate sequential pass before the
 *      build, so the checksum is of the file as it was when the run began);
 *      when current was published from this same input (name, size and
 *      checksum) the run ends there ("up to date", exit 0, nothing built
 *      or recorded) unless forced; then check free space against an
 *      estimate from the input size
 *   5. build the SSTable in the staging directory (build_run, in process;
 *      with a [cluster] section, a cluster build of one shard: its tasks
 *      run by the [cluster] runner, the same table)
 *   6. verify it; 7. profile it ([profile] lookups > 0)
 *   8. write manifest.json; when verify passed, rename the staging directory
 *      to builds/<UTC>-<input name> and swap `current` to it atomically,
 *      then delete builds beyond [output] keep (never current's)
 *   On any failure the staging directory becomes failed/<UTC>-<input name>
 *   with its log and a manifest saying what failed; current and the earlier
 *   builds are not touched.
 *   9. either way, write the build's report.html and [output] dir/index.html
 *      (pipeline/nightly); a page that cannot be written is only a warning.
 *
 * With [input] incremental set, steps 3-5 are nightly_incr.c's: the base
 * (newest full dump by the date in its name) and the increments dated after
 * it are checksummed; when current was published from exactly those inputs
 * the run ends there as a full run's does;
 * otherwise each table not yet in cache/ is built and cached, and they are
 * merged into the staged SSTable, which goes on through steps 6-8. With
 * [cluster] shards > 1 the base is a cached table set and the staged
 * output a set of its shards, each merged with the increments' keys in
 * its range (nightly_incr_set.c).
 */
#include "pipeline/nightly/nightly.h"

#include "pipeline/build/build.h"
#include "pipeline/nightly/nightly_build.h"
#include "pipeline/nightly/nightly_dirs.h"
#include "pipeline/nightly/nightly_incr.h"
#include "pipeline/nightly/nightly_log.h"
#include "pipeline/nightly/nightly_manifest.h"
#include "pipeline/nightly/report.h"
#include "stages/common/cli.h"
#include "stages/common/clock.h"
#include "stages/common/compression.h"
#include "stages/common/fileio.h"
#include "stages/common/freespace.h"
#include "stages/common/scratch.h"
#include "stages/common/size.h"
#include "stages/sst/format.h"
#include "stages/sst/table_set.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Room for the manifest, reports and log, and for the file system's own
 * needs, on top of the estimate. */
#define SPACE_MARGIN (64ull << 20)

static void note_removed(void *ctx, const char *name) {
    nightly_logf(ctx, "removed %s, left by a run that died", name);
}

static void note_retired(void *ctx, const char *name) {
    nightly_logf(ctx, "retention: deleted %s", name);
}

static void estimate_space(const nightly_run_state *r, uint64_t *table, uint64_t *spill) {
    uint64_t largest;
    if (r->plan) {
        /* Tables still to build plus the merged one; the largest build may spill. */
        nightly_incr_space(r, table, &largest);
    } else {
        largest = *table =
            nightly_table_estimate(r->o->build.max_bytes, r->input_size, r->compressed);
    }
    *spill = largest > r->o->build.sort.memory ? 2 * largest : 0;
}

static int check_space(nightly_run_state *r) {
    uint64_t table, spill;
    estimate_space(r, &table, &spill);
    const char *tmp = r->o->build.sort.tmp_dir ? r->o->build.sort.tmp_dir : r->staging;
    struct stat a, b;
    bool same_fs = !stat(r->staging, &a) && !stat(tmp, &b) && a.st_dev == b.st_dev;
    r->need_bytes = table + SPACE_MARGIN + (same_fs ? spill : 0);
    if (sp_free_bytes(r->staging, &r->avail_bytes, &r->err))
        return -1;
    char need[32], have[32], in[32];
    sp_format_size(r->input_size, in, sizeof in);
    if (r->avail_bytes < r->need_bytes)
        return sp_errorf(&r->err,
                         "%s: not enough free space: need %s (estimated from the %s input), "
                         "%s available",
                         r->dir, sp_format_size(r->need_bytes, need, sizeof need), in,
                         sp_format_size(r->avail_bytes, have, sizeof have));
    nightly_logf(&r->log, "free space: need about %s for a %s input, %s available",
                 sp_format_size(r->need_bytes, need, sizeof need), in,
                 sp_format_size(r->avail_bytes, have, sizeof have));
    if (!same_fs && spill) {
        uint64_t tmp_avail;
        if (sp_free_bytes(tmp, &tmp_avail, &r->err))
            return -1;
        if (tmp_avail < spill + SPACE_MARGIN)
            return sp_errorf(&r->err,
                             "%s: not enough free space for sort spill files: need %s, "
                             "%s available",
                             tmp, sp_format_size(spill + SPACE_MARGIN, need, sizeof need),
                             sp_format_size(tmp_avail, have, sizeof have));
    }
    return 0;
}

static int pick_input(nightly_run_state *r, const char *arg) {
    if (arg) {
        r->input = strdup(arg);
        if (!r->input)
            return sp_errorf(&r->err, "out of memory");
    } else {
        if (!r->o->input_glob)
            return sp_errorf(&r->err, "no INPUT given and [input] path is not set");
        if (nightly_newest_match(r->o->input_glob, &r->input, &r->err)) {
            sp_error e = r->err;
            sp_error_clear(&r->err);
            return sp_errorf(&r->err, "[input] path (%s): %s", r->o->input_glob_origin, e.msg);
        }
    }
    struct stat st;
    if (stat(r->input, &st))
        return sp_errorf_errno(&r->err, "%s: cannot read input", r->input);
    if (!S_ISREG(st.st_mode))
        return sp_errorf(&r->err, "%s: input is not a regular file", r->input);
    r->input_size = (uint64_t)st.st_size;
    r->input_mtime = st.st_mtim.tv_sec;
    r->compressed = sp_compression_of_file(r->input) != SP_COMPRESSION_NONE;
    nightly_logf(&r->log, "input %s (%llu bytes)", r->input, (unsigned long long)r->input_size);
    return 0;
}

static int stage_checksum(nightly_run_state *r) {
    nightly_stage_begin(&r->log, "checksum", r->input_size);
    double w = sp_clock_seconds(), c = sp_process_cpu_seconds();
    uint64_t size;
    int rc = nightly_hash_file(r->input, &size, &r->input_xxh3, &r->log.progress.in_bytes, &r->err);
    nightly_stage_end(&r->log);
    if (rc)
        return -1;
    r->have_checksum = true;
    nightly_manifest_stage(r, "checksum", sp_clock_seconds() - w, sp_process_cpu_seconds() - c,
                           size, 0, -1, -1);
    nightly_logf(&r->log, "input xxh3_64 %016llx", (unsigned long long)r->input_xxh3);
    return 0;
}

static int stage_build(nightly_run_state *r) {
    r->built = true;
    if (nightly_build_into(r, r->input, r->input_size, r->table_path, false, &r->build))
        return -1;
    r->build_ok = true;
    return 0;
}

/* Adds one shard's report into the set's sum in r->verify: its counts, and
 * its problems while there is room (all are counted). */
static int add_shard_report(verify_report *sum, const verify_report *shard, sp_error *err) {
    sum->records += shard->records;
    sum->blocks += shard->blocks;
    sum->bytes += shard->bytes;
    sum->seconds += shard->seconds;
    sum->problem_count += shard->problem_count;
    size_t room = sum->opts.max_problems - sum->n_problems;
    size_t n = shard->n_problems < room ? shard->n_problems : room;
    if (n) {
        verify_problem *p = realloc(sum->problems, (sum->n_problems + n) * sizeof *p);
        if (!p)
            return sp_errorf(err, "out of memory");
        for (size_t i = 0; i < n; i++) {
            /* Named by its shard: the offsets are the shard file's. */
            verify_problem *q = &p[sum->n_problems + i];
            *q = shard->problems[i];
            snprintf(q->what, sizeof q->what, "%.40s: %.200s", shard->opts.shard->file,
                     shard->problems[i].what);
        }
        sum->problems = p;
        sum->n_problems += n;
    }
    sum->mb_per_s = sum->seconds > 0 ? (double)sum->bytes / 1e6 / sum->seconds : 0;
    return 0;
}

/* A table set's shards, each checked against its manifest entry as
 * `sstpipe verify SET` checks them; r->verify holds their sum and
 * verify.json one report per shard. */
static int verify_set(nightly_run_state *r, const verify_options *vo, const char *json) {
    table_set *set = table_set_read_manifest(r->table_path, &r->err);
    if (!set)
        return -1;
    size_t n = table_set_count(set);
    verify_report *reps = calloc(n, sizeof *reps);
    int rc = reps ? 0 : sp_errorf(&r->err, "out of memory");
    r->verify.path = strdup(r->table_path);
    size_t done = 0;
    for (; rc == 0 && done < n; done++) {
        verify_options so = *vo;
        verify_options_shard(&so, set, done);
        verify_report_init(&reps[done], &so);
        if (verify_file(table_set_shard_path(set, done), &reps[done], &r->err) ||
            add_shard_report(&r->verify, &reps[done], &r->err))
            rc = -1;
    }
    if (rc == 0)
        rc = verify_write_json(reps, n, json, &r->err);
    for (size_t i = 0; i < done; i++)
        verify_report_destroy(&reps[i]);
    free(reps);
    table_set_free(set);
    return rc;
}

static int stage_verify(nightly_run_state *r) {
    verify_options vo = r->o->verify;
    vo.progress = &r->log.progress;
    verify_report_init(&r->verify, &vo);
    r->verify_inited = true;
    char json[PATH_MAX];
    snprintf(json, sizeof json, "%s/verify.json", r->staging);
    nightly_stage_begin(&r->log, "verify", r->build.table.file_size);
    double w = sp_clock_seconds(), c = sp_process_cpu_seconds();
    bool set = table_set_is_set_path(r->table_path);
    int rc = set ? verify_set(r, &vo, json) : verify_file(r->table_path, &r->verify, &r->err);
    nightly_stage_end(&r->log);
    if (rc)
        return -1;
    r->verified = true;
    nightly_manifest_stage(r, "verify", sp_clock_seconds() - w, sp_process_cpu_seconds() - c,
                           r->verify.bytes, 0, (int64_t)r->verify.records,
                           (int64_t)r->verify.records);
    if (!set && verify_write_json(&r->verify, 1, json, &r->err))
        return -1;
    if (r->verify.problem_count) {
        const verify_problem *p = r->verify.n_problems ? &r->verify.problems[0] : NULL;
        return sp_errorf(&r->err, "verify found %llu problem(s) in %s%s%s%s",
                         (unsigned long long)r->verify.problem_count, r->table_path,
                         p ? " (first: " : "", p ? p->what : "", p ? ")" : "");
    }
    nightly_logf(&r->log, "verify: OK, %llu records in %llu blocks, %.1f MB/s",
                 (unsigned long long)r->verify.records, (unsigned long long)r->verify.blocks,
                 r->verify.mb_per_s);
    return 0;
}

/* Profiling informs; a failure is logged and recorded but does not stop
 * a verified build from being published. */
static void stage_profile(nightly_run_state *r) {
    if (!r->o->profile.n) {
        nightly_logf(&r->log, "profile: skipped ([profile] lookups = 0)");
        return;
    }
    profile_options po = r->o->profile;
    profile_result_init(&r->profile);
    r->profile_inited = true;
    nightly_stage_begin(&r->log, "profile", 0);
    po.progress = &r->log.progress;
    double w = sp_clock_seconds(), c = sp_process_cpu_seconds();
    sp_error err = {0};
    int rc = profile_run(r->table_path, &po, &r->profile, &err);
    nightly_stage_end(&r->log);
    char json[PATH_MAX];
    snprintf(json, sizeof json, "%s/profile.json", r->staging);
    if (!rc)
        rc = profile_write_json(&r->profile, json, &err);
    if (rc) {
        snprintf(r->profile_error, sizeof r->profile_error, "%s", err.msg);
        nightly_logf(&r->log, "warning: profile failed: %s", err.msg);
        return;
    }
    r->profiled = true;
    nightly_manifest_stage(r, "profile", sp_clock_seconds() - w, sp_process_cpu_seconds() - c,
                           r->profile.bytes_read, 0, (int64_t)r->profile.lookups,
                           (int64_t)r->profile.hits);
    nightly_logf(&r->log, "profile: %llu lookups, avg %.1f us, p99 %.1f us, max %.1f us",
                 (unsigned long long)r->profile.lookups, r->profile.avg_ns / 1e3,
                 (double)r->profile.p99_ns / 1e3, (double)r->profile.max_ns / 1e3);
}

/*
 * The pages, once the build is where it stays (builds/ or failed/) and
 * retention is done: its report.html, then the output directory's
 * index.html. Each is written atomically; one that cannot be written is a
 * warning in the log and nothing more: a page never fails a run, and never
 * un-publishes a build that verified.
 */
static void write_pages(nightly_run_state *r) {
    char build[2 * PATH_MAX]; /* [output] dir is at most 2048 bytes */
    snprintf(build, sizeof build, "%s/%s", r->dir, r->final_rel);
    sp_error err = {0};
    /* We hold the lock: a page's temporary file is a killed writer's. */
    if (report_remove_stale(r->dir, &err) < 0)
        nightly_logf(&r->log, "warning: %s", err.msg);
    sp_error_clear(&err);
    if (report_write_build(build, &err))
        nightly_logf(&r->log, "warning: report not written: %s", err.msg);
    sp_error_clear(&err);
    if (report_write_index(r->dir, NULL, &err))
        nightly_logf(&r->log, "warning: report not written: %s", err.msg);
    sp_error_clear(&err);
}

/* Moves the staging directory to failed/ with a manifest saying why. */
static nightly_outcome fail(nightly_run_state *r, const char *stage, nightly_outcome o) {
    r->failed_stage = stage;
    r->exit_code = nightly_exit_code(o);
    nightly_logf(&r->log, "FAILED in %s: %s", stage, r->err.msg);
    if (!r->staging[0])
        return o;
    sp_error err = {0};
    char name[NAME_MAX + 1];
    if (nightly_unique_name(r->dir, "failed", r->stamp, r->input_base, name, sizeof name, &err) ==
        0) {
        snprintf(r->final_rel, sizeof r->final_rel, "failed/%s", name);
        if (nightly_manifest_write(r, &err) == 0 &&
            nightly_move(r->dir, r->staging, "failed", name, NULL, &err) == 0) {
            nightly_logf(&r->log, "kept the log and manifest in %s/%s; current unchanged", r->dir,
                         r->final_rel);
            nightly_retain(r->dir, "failed", r->o->keep, NULL, note_retired, &r->log, &err);
            write_pages(r);
        }
    }
    if (err.set)
        nightly_logf(&r->log, "could not record the failure: %s", err.msg);
    return o;
}

static int publish(nightly_run_state *r) {
    char name[NAME_MAX + 1];
    if (nightly_unique_name(r->dir, "builds", r->stamp, r->input_base, name, sizeof name, &r->err))
        return -1;
    snprintf(r->final_rel, sizeof r->final_rel, "builds/%s", name);
    r->exit_code = nightly_exit_code(NIGHTLY_PUBLISHED);
    sp_published moved;
    if (nightly_manifest_write(r, &r->err) ||
        nightly_move(r->dir, r->staging, "builds", name, &moved, &r->err))
        return -1;
    if (nightly_swap_current(r->dir, r->final_rel, &r->err)) {
        /* Not published after all: back to staging, so that the failure
         * is recorded under failed/ like any other. */
        if (sp_publish_undo(&moved, NULL))
            r->staging[0] = '\0';
        return -1;
    }
    r->staging[0] = '\0'; /* it is builds/name now */
    nightly_logf(&r->log, "published %s/%s; current -> %s", r->dir, r->final_rel, r->final_rel);
    /* Protect whatever current names now (the new build, unless someone
     * re-pointed it meanwhile), read back rather than assumed. */
    sp_error err = {0};
    char target[PATH_MAX];
    const char *protect = name;
    if (nightly_current_target(r->dir, target, sizeof target, &err) == 0 &&
        !strncmp(target, "builds/", 7))
        protect = target + 7;
    if (nightly_retain(r->dir, "builds", r->o->keep, protect, note_retired, &r->log, &err) < 0)
        nightly_logf(&r->log, "warning: retention: %s", err.msg);
    if (r->plan)
        nightly_incr_retain(r);
    write_pages(r);
    return 0;
}

/* A build is published with its whole log: one whose nightly.log could not
 * be written (a full disk, EIO) fails like any other write. */
static int check_log(nightly_run_state *r) {
    int e = nightly_log_file_error(&r->log);
    if (!e)
        return 0;
    errno = e;
    return sp_errorf_errno(&r->err, "%s/nightly.log: write failed", r->staging);
}

/* Build directories are named after the input (the newest one applied). */
static void name_after(nightly_run_state *r, const char *path) {
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(r->input_base, sizeof r->input_base, "%.200s", basename(copy));
}

static nightly_outcome space_failure(const nightly_run_state *r) {
    return r->avail_bytes && r->avail_bytes < r->need_bytes ? NIGHTLY_NO_SPACE : NIGHTLY_FAILED;
}

/* Current already holds these inputs (what: which): nothing is built,
 * nothing recorded. */
static nightly_outcome up_to_date(nightly_run_state *r, const char *current, const char *what) {
    nightly_logf(&r->log, "up to date: current (%s) was published from %s; nothing to build",
                 current, what);
    sp_error err = {0};
    if (sp_remove_tree(r->staging, &err))
        nightly_logf(&r->log, "warning: %s", err.msg);
    r->staging[0] = '\0';
    /* A run killed after its publish may have left current's report, the
     * index or a page's temporary file behind: the pages are made from the
     * manifests alone, so writing them again mends that and otherwise
     * gives the same bytes. */
    snprintf(r->final_rel, sizeof r->final_rel, "%s", current);
    write_pages(r);
    return NIGHTLY_UP_TO_DATE;
}

static nightly_outcome incr_up_to_date(nightly_run_state *r) {
    const nightly_plan *p = r->plan;
    char what[128];
    snprintf(what, sizeof what, "the same base and %zu increment(s)%s", p->n_incr,
             p->n_incr ? "" : " (none after the base)");
    return up_to_date(r, p->up_to_date_with, what);
}

/* A full run: whether current was published from this very input, by its
 * file name, size and checksum as current's manifest records them, with
 * the same settings that shape the table (a dump is published once,
 * however many nights it stays the newest). */
static bool full_up_to_date(nightly_run_state *r, char *current, size_t cap) {
    json_t *m = nightly_current_manifest(r->dir, current, cap);
    if (!m)
        return false;
    json_t *in = json_object_get(m, "input");
    const char *path = json_string_value(json_object_get(in, "path"));
    const char *sum = json_string_value(json_object_get(in, "xxh3_64"));
    const char *opts = json_string_value(json_object_get(in, "options_xxh3_64"));
    char want[24], want_opts[24], copy[PATH_MAX];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)r->input_xxh3);
    snprintf(want_opts, sizeof want_opts, "%016llx", (unsigned long long)r->o->table_key);
    snprintf(copy, sizeof copy, "%s", path ? path : "");
    bool same = json_is_null(json_object_get(m, "incremental")) && path && sum && opts &&
                !strcmp(sum, want) && !strcmp(opts, want_opts) &&
                json_integer_value(json_object_get(in, "size")) == (json_int_t)r->input_size &&
                !strcmp(basename(copy), r->input_base);
    json_decref(m);
    return same;
}

/* The incremental run up to the staged table (nightly_incr.h): -1 when
 * the table is there, else the outcome to end with. */
static int incremental_inputs(nightly_run_state *r, const char *base_arg) {
    nightly_plan *p = r->plan;
    if (nightly_incr_plan(r, base_arg))
        return fail(r, "input", NIGHTLY_FAILED);
    if (!(r->input = strdup(p->base.path))) {
        sp_errorf(&r->err, "out of memory");
        return fail(r, "input", NIGHTLY_FAILED);
    }
    r->input_size = p->base.size;
    r->input_mtime = p->base.mtime;
    r->compressed = p->base.compressed;
    name_after(r, p->n_incr ? p->incr[p->n_incr - 1].path : p->base.path);
    if (nightly_incr_checksum(r))
        return fail(r, "checksum", NIGHTLY_FAILED);
    if (!r->o->force && nightly_incr_up_to_date(r))
        return incr_up_to_date(r);
    if (check_space(r))
        return fail(r, "space", space_failure(r));
    if (nightly_incr_build(r))
        return fail(r, "build", NIGHTLY_FAILED);
    if (nightly_incr_merge(r))
        return fail(r, "merge", NIGHTLY_FAILED);
    return -1;
}

/* The steps after the lock; returns the outcome. */
static nightly_outcome run_locked(nightly_run_state *r, const char *input_arg) {
    int n = nightly_clean_stale(r->dir, note_removed, &r->log, &r->err);
    if (n < 0)
        return fail(r, "cleanup", NIGHTLY_FAILED);

    time_t now = time(NULL);
    nightly_utc(now, true, r->stamp, sizeof r->stamp);
    nightly_utc(now, false, r->started_at, sizeof r->started_at);
    snprintf(r->staging, sizeof r->staging, "%s/" NIGHTLY_STAGING_PREFIX "%s-%ld", r->dir, r->stamp,
             (long)getpid());
    if (mkdir(r->staging, 0755)) {
        sp_errorf_errno(&r->err, "%s: cannot create staging directory", r->staging);
        r->staging[0] = '\0';
        return fail(r, "staging", NIGHTLY_FAILED);
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nightly.log", r->staging);
    r->log_file = fopen(path, "w");
    if (!r->log_file) {
        sp_errorf_errno(&r->err, "%s: cannot create", path);
        return fail(r, "staging", NIGHTLY_FAILED);
    }
    nightly_log_attach(&r->log, r->log_file);
    nightly_logf(&r->log, "run %ld started in %s", (long)getpid(), r->staging);
    snprintf(r->table_path, sizeof r->table_path, "%s/%s", r->staging, r->o->table_name);
    snprintf(r->input_base, sizeof r->input_base, "no-input");

    if (r->plan) {
        int rc = incremental_inputs(r, input_arg);
        if (rc >= 0)
            return (nightly_outcome)rc;
    } else {
        if (pick_input(r, input_arg))
            return fail(r, "input", NIGHTLY_FAILED);
        name_after(r, r->input);
        if (stage_checksum(r))
            return fail(r, "checksum", NIGHTLY_FAILED);
        char current[PATH_MAX];
        if (!r->o->force && full_up_to_date(r, current, sizeof current))
            return up_to_date(r, current, "the same input");
        if (check_space(r))
            return fail(r, "space", space_failure(r));
        if (stage_build(r))
            return fail(r, "build", NIGHTLY_FAILED);
    }
    if (stage_verify(r))
        return fail(r, "verify",
                    r->verified && r->verify.problem_count ? NIGHTLY_VERIFY_FAILED
                                                           : NIGHTLY_FAILED);
    stage_profile(r);
    if (nightly_manifest_outputs(r, &r->err))
        return fail(r, "checksum outputs", NIGHTLY_FAILED);
    if (check_log(r))
        return fail(r, "log", NIGHTLY_FAILED);
    if (publish(r) == 0)
        return NIGHTLY_PUBLISHED;
    if (r->staging[0])
        return fail(r, "publish", NIGHTLY_FAILED);
    /* Renamed into builds/ but current not swapped: current still names
     * the previous build, and the next run's retention treats this one as
     * any other build. */
    nightly_logf(&r->log, "FAILED in publish: %s; current unchanged", r->err.msg);
    return NIGHTLY_FAILED;
}

int nightly_exit_code(nightly_outcome o) {
    switch (o) {
    case NIGHTLY_PUBLISHED:
    case NIGHTLY_UP_TO_DATE:
        return SP_EXIT_OK;
    case NIGHTLY_BAD_CONFIG:
        return SP_EXIT_USAGE;
    case NIGHTLY_VERIFY_FAILED:
        return NIGHTLY_EXIT_VERIFY;
    case NIGHTLY_LOCKED:
        return NIGHTLY_EXIT_LOCKED;
    case NIGHTLY_NO_SPACE:
        return NIGHTLY_EXIT_NO_SPACE;
    case NIGHTLY_NOT_STARTED:
    case NIGHTLY_FAILED:
        break;
    }
    return SP_EXIT_FAIL;
}

/* Creates builds/, failed/ (and cache/) and takes the lock: *lock_fd, or
 * the outcome that ends the run before it started. */
static int prepare_dir(nightly_run_state *r, int *lock_fd, nightly_outcome *end) {
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/builds", r->dir);
    *end = NIGHTLY_NOT_STARTED;
    if (nightly_mkdirs(sub, &r->err) ||
        (snprintf(sub, sizeof sub, "%s/failed", r->dir), nightly_mkdirs(sub, &r->err)) ||
        (r->plan && (snprintf(sub, sizeof sub, "%s/" NIGHTLY_CACHE_DIR, r->dir),
                     nightly_mkdirs(sub, &r->err))))
        return -1;
    pid_t holder;
    int lk = nightly_lock(r->dir, lock_fd, &holder, &r->err);
    if (lk < 0)
        return -1;
    if (lk > 0) {
        char who[32] = "pid unknown";
        if (holder > 0)
            snprintf(who, sizeof who, "pid %ld", (long)holder);
        *end = NIGHTLY_LOCKED;
        return sp_errorf(&r->err, "%s/.lock: another nightly run (%s) is in progress; not starting",
                         r->dir, who);
    }
    return 0;
}

int nightly_run(const nightly_options *o, nightly_result *res, sp_error *err) {
    memset(res, 0, sizeof *res);
    if (!o->dir || !*o->dir || strlen(o->dir) > 2048) {
        res->outcome = NIGHTLY_BAD_CONFIG;
        return sp_errorf(err, o->dir && *o->dir ? "[output] dir: path longer than 2048 bytes"
                                                : "[output] dir is not set");
    }
    nightly_run_state r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.dir = o->dir;
    r.t0 = sp_clock_seconds();
    r.stages = json_array();
    nightly_log_init(&r.log, o->echo, o->live, o->progress_period);

    nightly_plan plan = {0};
    if (o->incremental)
        r.plan = &plan;
    int lock_fd = -1;
    if (prepare_dir(&r, &lock_fd, &res->outcome) == 0) {
        res->outcome = run_locked(&r, o->input);
        close(lock_fd);
    }
    int log_error = r.log_file ? nightly_log_file_error(&r.log) : 0;
    nightly_log_destroy(&r.log);
    if (r.log_file && fclose(r.log_file) != 0 && !log_error)
        log_error = errno;
    bool ok = res->outcome == NIGHTLY_PUBLISHED || res->outcome == NIGHTLY_UP_TO_DATE;
    /* After the swap nothing can be undone: the build is published, and
     * only the last lines of its log (the publish, retention) are missing. */
    if (ok && log_error) {
        res->log_errno = log_error;
        snprintf(res->log_path, sizeof res->log_path, "%s/%s/nightly.log", r.dir, r.final_rel);
    }
    if (!ok)
        *err = r.err;
    if (r.verify_inited)
        verify_report_destroy(&r.verify);
    if (r.profile_inited)
        profile_result_destroy(&r.profile);
    json_decref(r.stages);
    json_decref(r.outputs);
    free(r.input);
    nightly_plan_destroy(&plan);
    return ok ? 0 : -1;
}
