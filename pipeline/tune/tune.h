/*
 * tune.h: `sstpipe tune`, block and cluster sizes chosen by measurement on
 * the user's own disk and data instead of a rule of thumb.
 *
 * tune_run builds the input (or a sample of it, pipeline/tune/tune_sample.h)
 * once per block size x cluster size combination, uncompressed, into a
 * scratch directory (sstpipe-tune.XXXXXX under work_dir), verifies each
 * table, profiles it warm (straight after the build, through the page
 * cache) and cold (O_DIRECT, page cache dropped), records the figures and
 * removes the table before the next trial, so at most one trial table
 * exists at a time. Then, at the block and cluster size the rule of
 * tune_report.h picks from those, once per compression level x dictionary
 * size, compressed (zstd): a grid of its own rather than a third factor
 * of the first, which would multiply the run's time. The rule then picks
 * from every trial.
 *
 * Every scratch file is registered with stages/common/cleanup.h while it
 * exists and removed on every return path; the scratch directory is
 * removed too.
 */
#ifndef SSTPIPE_PIPELINE_TUNE_H
#define SSTPIPE_PIPELINE_TUNE_H

#include "pipeline/build/build.h"
#include "pipeline/tune/tune_report.h"
#include "stages/common/error.h"
#include "stages/common/progress.h"
#include "stages/profile/profile.h"
#include "stages/verify/verify.h"

#include <stddef.h>
#include <stdint.h>

#define TUNE_MAX_SIZES 16

typedef struct tune_options {
    build_options build; /* table.block_size/cluster_size are set per trial */
    verify_options verify;
    profile_options profile; /* n, threads, queue depth, misses, seed; cold set per run */
    uint32_t block_sizes[TUNE_MAX_SIZES];
    size_t n_block_sizes;
    uint32_t cluster_sizes[TUNE_MAX_SIZES];
    size_t n_cluster_sizes;
    /* The compressed trials' zstd levels and dictionary sizes (0: none);
     * no levels: no compressed trials. */
    int levels[TUNE_MAX_SIZES];
    size_t n_levels;
    uint32_t dictionary_sizes[TUNE_MAX_SIZES];
    size_t n_dictionary_sizes;
    uint64_t sample;      /* bytes of XML to sample; 0: build from the whole input */
    const char *work_dir; /* the scratch directory goes here (NULL: $TMPDIR or /tmp) */
    double tolerance_pct;
    /* Called after each trial (may be NULL): i of n, the figures. A
     * result, not progress: progress is the counters below. */
    void (*on_trial)(void *ctx, size_t i, size_t n, const tune_trial *t);
    void *on_trial_ctx;
    /* NULL, or the counters of a live progress line: the trial under way (a
     * step of all of them), its phase (reading, writing, checking,
     * profiling), input bytes read by the builds of every trial so far of
     * trials x the source's size, its XML bytes, pages and records. */
    sp_progress *progress;
} tune_options;

/* Defaults: block sizes 4K,8K,16K,64K; cluster sizes 4K,64K; levels 1,3,9;
 * dictionary sizes 0, a quarter of SST_DEFAULT_DICTIONARY_SIZE and that
 * default; 10000 lookups. */
void tune_options_init(tune_options *opts);

/* Runs every trial and the recommendation into rep (freshly initialised). */
int tune_run(const char *input, const tune_options *opts, tune_report *rep, sp_error *err);

#endif
