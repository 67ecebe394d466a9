/*
 * tune.c: the trials of `sstpipe tune`; see tune.h.
 *
 * Room: before anything is written, the scratch directory's file system
 * must have room for the sample plus one trial table and its sort spill
 * files, each at most the XML size (values are cut to max-bytes, so a table
 * is smaller than its XML even with block padding). Without --sample the
 * XML size is estimated from the input: its size when plain, five times it
 * when compressed (MediaWiki dumps compress 4-5x). Before each later trial
 * the check is repeated with twice the largest table built so far, since
 * larger blocks pad more.
 */
#include "pipeline/tune/tune.h"

#include "pipeline/tune/tune_sample.h"
#include "stages/common/cleanup.h"
#include "stages/common/clock.h"
#include "stages/common/freespace.h"
#include "stages/common/scratch.h"
#include "stages/common/size.h"
#include "stages/extract/source.h"
#include "stages/read/info_json.h"
#include "stages/sst/format.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#define COMPRESSED_XML_FACTOR 5

void tune_options_init(tune_options *opts) {
    static const uint32_t blocks[] = {4u << 10, 8u << 10, 16u << 10, 64u << 10};
    static const uint32_t clusters[] = {4u << 10, 64u << 10};
    static const int levels[] = {1, 3, 9};
    /* None, the build's default and a quarter of it: the default is
     * what tune's recommendation is most often weighed against. */
    static const uint32_t dictionaries[] = {0, SST_DEFAULT_DICTIONARY_SIZE / 4,
                                            SST_DEFAULT_DICTIONARY_SIZE};
    memset(opts, 0, sizeof *opts);
    build_options_init(&opts->build);
    verify_options_init(&opts->verify);
    profile_options_init(&opts->profile);
    opts->profile.n = 10000;
    opts->profile.seed = 1;
    memcpy(opts->block_sizes, blocks, sizeof blocks);
    opts->n_block_sizes = sizeof blocks / sizeof blocks[0];
    memcpy(opts->cluster_sizes, clusters, sizeof clusters);
    opts->n_cluster_sizes = sizeof clusters / sizeof clusters[0];
    memcpy(opts->levels, levels, sizeof levels);
    opts->n_levels = sizeof levels / sizeof levels[0];
    memcpy(opts->dictionary_sizes, dictionaries, sizeof dictionaries);
    opts->n_dictionary_sizes = sizeof dictionaries / sizeof dictionaries[0];
    opts->tolerance_pct = TUNE_DEFAULT_TOLERANCE_PCT;
}

/* A file in the scratch directory, registered for removal on a signal. */
typedef struct scratch_file {
    char *path;
    int slot;
} scratch_file;

static int scratch_file_name(scratch_file *f, const char *dir, const char *name, sp_error *err) {
    if (asprintf(&f->path, "%s/%s", dir, name) < 0) {
        f->path = NULL;
        return sp_errorf(err, "out of memory");
    }
    f->slot = sp_cleanup_add(f->path);
    return 0;
}

static void scratch_file_remove(scratch_file *f) {
    if (!f->path)
        return;
    unlink(f->path);
    sp_cleanup_remove(f->slot);
    free(f->path);
    f->path = NULL;
}

static int check_room(const char *dir, uint64_t need, const char *what, sp_error *err) {
    uint64_t free_bytes;
    if (sp_free_bytes(dir, &free_bytes, err))
        return -1;
    if (free_bytes >= need)
        return 0;
    char n[32], f[32];
    return sp_errorf(err,
                     "%s: no room for the tune trials: about %s needed (%s), %s free; use "
                     "--sample SIZE, or a directory with more room (--tmp DIR)",
                     dir, sp_format_size(need, n, sizeof n), what,
                     sp_format_size(free_bytes, f, sizeof f));
}

/* The room needed before the first trial; see the comment at the top. */
static int first_need(const char *input, uint64_t sample, uint64_t *need, sp_error *err) {
    if (sample) {
        *need = 3 * sample;
        return 0;
    }
    struct stat st;
    if (stat(input, &st))
        return sp_errorf_errno(err, "%s: cannot open", input);
    source *src = source_open(input, err);
    if (!src)
        return -1;
    bool plain = !strcmp(source_format(src), "none");
    source_close(src);
    *need = 2 * (uint64_t)st.st_size * (plain ? 1 : COMPRESSED_XML_FACTOR);
    return 0;
}

/* Whether the file system of dir takes O_DIRECT (cold profiles need it). */
static bool direct_io_ok(const char *dir) {
    scratch_file probe = {0};
    sp_error ignored = {0};
    if (scratch_file_name(&probe, dir, "direct-io-probe", &ignored))
        return false;
    int fd = open(probe.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0600);
    if (fd >= 0)
        close(fd);
    scratch_file_remove(&probe);
    return fd >= 0;
}

static void fill_latency(tune_latency *l, const profile_result *p) {
    l->p50_ns = p->p50_ns;
    l->p99_ns = p->p99_ns;
    l->avg_ns = p->avg_ns;
    l->reads_per_lookup = p->reads_per_lookup;
    l->bytes_per_lookup = p->bytes_per_lookup;
}

static int profile_trial(const char *path, const profile_options *base, bool cold,
                         tune_latency *out, sp_error *err) {
    profile_options po = *base;
    po.cold = cold;
    profile_result pr;
    profile_result_init(&pr);
    int rc = profile_run(path, &po, &pr, err);
    if (rc == 0)
        fill_latency(out, &pr);
    profile_result_destroy(&pr);
    return rc;
}

static int verify_trial(const char *path, const tune_options *o, tune_trial *t, sp_error *err) {
    verify_report vr;
    verify_report_init(&vr, &o->verify);
    int rc = verify_file(path, &vr, err);
    t->verify_seconds = vr.seconds;
    t->verify_problems = vr.problem_count;
    if (rc == 0 && vr.problem_count) {
        char name[96];
        rc = sp_errorf(err,
                       "%s: the %s trial fails verify with %llu problems, the first: %s at byte "
                       "%llu",
                       path, tune_trial_name(t, name, sizeof name),
                       (unsigned long long)vr.problem_count,
                       vr.n_problems ? vr.problems[0].what : "?",
                       (unsigned long long)(vr.n_problems ? vr.problems[0].offset : 0));
    }
    verify_report_destroy(&vr);
    return rc;
}

/* One combination: build, verify, profile warm then cold, remove. live_base:
 * the input bytes of the trials before this one, for o->progress. */
static int run_trial(const char *source_path, const char *dir, const tune_options *o, bool cold,
                     uint64_t live_base, tune_trial *t, sp_error *err) {
    char b[32], c[32], d[32], name[96];
    snprintf(name, sizeof name, "trial-b%s-c%s-z%d-d%s.sst",
             sp_format_size(t->block_size, b, sizeof b),
             sp_format_size(t->cluster_size, c, sizeof c), t->level,
             sp_format_size(t->dictionary_size, d, sizeof d));
    scratch_file f = {0};
    if (scratch_file_name(&f, dir, name, err))
        return -1;
    build_options bo = o->build;
    bo.table.block_size = t->block_size;
    bo.table.cluster_size = t->cluster_size;
    bo.table.compress = t->level > 0;
    bo.table.compression_level = t->level;
    bo.table.dictionary_size = t->dictionary_size;
    /* The line's percent and ETA are of every trial: this build's input
     * counts after the trials' before it. */
    if (o->progress)
        o->progress->in_base = live_base;
    bo.progress = o->progress;
    build_stats st;
    double t0 = sp_clock_seconds();
    int rc = build_run(source_path, f.path, &bo, &st, err);
    t->build_seconds = sp_clock_seconds() - t0;
    if (rc == 0 && o->progress) /* the build counts written records in steps of 64Ki */
        sp_progress_store(&o->progress->records, st.table.records);
    if (rc == 0) {
        t->file_size = st.table.file_size;
        t->records = st.table.records;
        t->data_blocks = st.table.data_blocks;
        t->key_bytes = st.table.key_bytes;
        t->value_bytes = st.table.value_bytes;
        t->compactness =
            t->file_size ? (double)(t->key_bytes + t->value_bytes) / (double)t->file_size : 0;
        t->bytes_per_record = info_bytes_per_record(t->file_size, t->records);
        t->compression_ratio =
            info_compression_ratio(t->value_bytes, t->data_blocks, t->block_size);
        if (t->records == 0)
            rc = sp_errorf(err,
                           "%s: no records to look up (every page filtered out, or the "
                           "sample too small?)",
                           source_path);
    }
    /* verify reads the whole file, which also leaves it warm for the warm profile. */
    if (o->progress)
        sp_progress_phase(o->progress, SP_PHASE_CHECKING);
    if (rc == 0)
        rc = verify_trial(f.path, o, t, err);
    if (o->progress)
        sp_progress_phase(o->progress, SP_PHASE_PROFILING);
    if (rc == 0)
        rc = profile_trial(f.path, &o->profile, false, &t->warm, err);
    t->have_cold = cold;
    if (rc == 0 && cold)
        rc = profile_trial(f.path, &o->profile, true, &t->cold, err);
    scratch_file_remove(&f);
    return rc;
}

static int check_sizes(const tune_options *o, sp_error *err) {
    if (!o->n_block_sizes || !o->n_cluster_sizes)
        return sp_errorf(err, "tune: at least one block size and one cluster size");
    for (size_t i = 0; i < o->n_block_sizes; i++)
        if (sst_check_fit(o->block_sizes[i], (uint32_t)o->build.max_bytes, err))
            return -1;
    return 0;
}

/* The trials of a run so far, for the room check and the progress line. */
typedef struct trial_run {
    const char *source, *dir;
    bool cold;
    size_t i, n;
    uint64_t largest, source_size;
} trial_run;

/* Runs the trial t names (its sizes and compression set), adds it to rep. */
static int next_trial(trial_run *run, const tune_options *o, tune_report *rep, tune_trial *t,
                      sp_error *err) {
    if (run->largest &&
        check_room(run->dir, 2 * run->largest, "twice the largest trial so far", err))
        return -1;
    if (o->progress)
        sp_progress_store(&o->progress->step, run->i + 1);
    if (run_trial(run->source, run->dir, o, run->cold, run->source_size * run->i, t, err) ||
        tune_report_add(rep, t, err))
        return -1;
    if (t->file_size > run->largest)
        run->largest = t->file_size;
    if (o->on_trial)
        o->on_trial(o->on_trial_ctx, run->i, run->n, t);
    run->i++;
    return 0;
}

static int run_trials(const char *input, const tune_options *o, tune_report *rep, sp_error *err) {
    const char *dir = rep->scratch_dir;
    uint64_t need = 0;
    if (first_need(input, o->sample, &need, err) ||
        check_room(dir, need,
                   o->sample ? "the sample, one trial table and its sort spill"
                             : "one trial table and its sort spill, from the input's size",
                   err))
        return -1;
    scratch_file sample = {0};
    const char *source_path = input;
    int rc = 0;
    if (o->sample) {
        tune_sample_stats ss = {0};
        rc = scratch_file_name(&sample, dir, "sample.xml", err) ||
             tune_write_sample(input, o->sample, sample.path, &ss, err);
        rep->sample_limit = o->sample;
        rep->sample_bytes = ss.xml_bytes;
        rep->sample_pages = ss.pages;
        source_path = sample.path;
    }
    bool cold = rc == 0 && direct_io_ok(dir);
    struct statfs fs;
    if (rc == 0 && !cold)
        snprintf(rep->note, sizeof rep->note,
                 "the file system of %s does not support O_DIRECT: no cold profiles; the "
                 "recommendation uses warm latency",
                 dir);
    else if (rc == 0 && statfs(dir, &fs) == 0 &&
             (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC))
        snprintf(rep->note, sizeof rep->note,
                 "%s is in memory (tmpfs): cold figures are memory speed, not disk speed; use "
                 "--tmp on the disk that will serve the tables",
                 dir);
    trial_run run = {.source = source_path,
                     .dir = dir,
                     .cold = cold,
                     .n = o->n_block_sizes * o->n_cluster_sizes +
                          o->n_levels * o->n_dictionary_sizes};
    struct stat st;
    if (o->progress && rc == 0 && stat(source_path, &st) == 0 && S_ISREG(st.st_mode)) {
        run.source_size = (uint64_t)st.st_size;
        sp_progress_steps(o->progress, "trial", run.n);
        sp_progress_store(&o->progress->total_bytes, run.source_size * run.n);
    }
    for (size_t c = 0; c < o->n_cluster_sizes && rc == 0; c++)
        for (size_t b = 0; b < o->n_block_sizes && rc == 0; b++)
            rc = next_trial(
                &run, o, rep,
                &(tune_trial){.block_size = o->block_sizes[b], .cluster_size = o->cluster_sizes[c]},
                err);
    /* The compressed trials, at the block and cluster size of the best
     * uncompressed one. */
    if (rc == 0 && o->n_levels)
        rc = tune_recommend(rep, o->tolerance_pct, err);
    tune_trial base = rep->n_trials ? rep->trials[rep->best] : (tune_trial){0};
    for (size_t l = 0; l < o->n_levels && rc == 0; l++)
        for (size_t d = 0; d < o->n_dictionary_sizes && rc == 0; d++)
            rc = next_trial(&run, o, rep,
                            &(tune_trial){.block_size = base.block_size,
                                          .cluster_size = base.cluster_size,
                                          .level = o->levels[l],
                                          .dictionary_size = o->dictionary_sizes[d]},
                            err);
    scratch_file_remove(&sample);
    return rc ? -1 : 0;
}

int tune_run(const char *input, const tune_options *o, tune_report *rep, sp_error *err) {
    if (check_sizes(o, err))
        return -1;
    if (!strcmp(input, "-") && !o->sample)
        return sp_errorf(err, "tune: INPUT is read once per trial, so it must be a file, not "
                              "stdin (or use --sample)");
    if (!(rep->input = strdup(input)))
        return sp_errorf(err, "out of memory");
    rep->lookups = o->profile.n;
    rep->threads = o->profile.threads;
    rep->queue_depth = o->profile.queue_depth;
    rep->seed = o->profile.seed;
    sp_scratch_dir scratch;
    if (sp_scratch_dir_create(&scratch, o->work_dir, "sstpipe-tune", err))
        return -1;
    if (!(rep->scratch_dir = strdup(scratch.path))) {
        sp_scratch_dir_remove(&scratch, NULL);
        return sp_errorf(err, "out of memory");
    }
    int rc = run_trials(input, o, rep, err);
    if (sp_scratch_dir_remove(&scratch, rc ? NULL : err))
        rc = -1;
    if (rc == 0)
        rc = tune_recommend(rep, o->tolerance_pct, err);
    return rc;
}
