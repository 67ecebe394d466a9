/*
 * nightly_state.h: the state of one nightly run, which every step of it
 * reads and fills, and the small helpers those steps share. The bottom of
 * the nightly's layers: nightly_build.c, nightly_sums.c, nightly_incr*.c,
 * nightly_manifest.c and nightly.c stand on it, and it on none of them.
 * Internal to nightly*.c.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_STATE_H
#define SSTPIPE_PIPELINE_NIGHTLY_STATE_H

#include "pipeline/build/build.h"
#include "pipeline/nightly/nightly_log.h"
#include "pipeline/nightly/nightly_options.h"
#include "stages/profile/profile.h"
#include "stages/verify/verify.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct nightly_plan;

typedef struct nightly_run_state {
    const nightly_options *o;
    const char *dir; /* [output] dir */
    nightly_log log;
    FILE *log_file;
    char staging[PATH_MAX - 512]; /* "" once moved away; leaves room for file names */
    char table_path[PATH_MAX];    /* staging/<[output] name> */
    char stamp[32];               /* the run's start, "20260131T020000Z" */
    char input_base[256];         /* the input's file name; dirs are <stamp>-<input_base> */
    char final_rel[PATH_MAX];     /* "builds/<name>" or "failed/<name>", relative to dir */
    char started_at[32];
    double t0;
    /* input */
    char *input;
    uint64_t input_size;
    time_t input_mtime;
    bool compressed;
    uint64_t input_xxh3;
    bool have_checksum;
    uint64_t need_bytes, avail_bytes;
    struct nightly_plan *plan; /* [input] incremental set: its inputs; else NULL */
    /* stages */
    json_t *stages; /* array of per-stage figures, in run order */
    build_stats build;
    bool built, build_ok; /* build_run ran; it succeeded */
    /* The largest peak resident memory of a cluster task of any build of
     * the run, as the tasks reported it (0: no cluster build). */
    uint64_t task_peak_rss_bytes;
    verify_report verify;
    bool verify_inited, verified;
    profile_result profile;
    bool profile_inited, profiled;
    char profile_error[1024];
    json_t *outputs; /* files with sizes and checksums; NULL until computed */
    /* outcome */
    const char *failed_stage;
    int exit_code;
    sp_error err;
} nightly_run_state;

/* XXH3-64 and size of a whole file in one sequential pass; progress into *done (may be NULL). */
int nightly_hash_file(const char *path, uint64_t *size, uint64_t *hash, _Atomic uint64_t *done,
                      sp_error *err);
/* Appends a stage's figures; records_in/out < 0 are recorded as null.
 * Returns the stage's object (owned by r->stages) for more fields. */
json_t *nightly_manifest_stage(nightly_run_state *r, const char *name, double wall, double cpu,
                               uint64_t bytes_in, uint64_t bytes_out, int64_t records_in,
                               int64_t records_out);
/* The manifest's "counts" of one build (new reference). */
json_t *nightly_counts_json(const build_stats *b);
/* The table a dump of size bytes gives at most, its values cut to
 * max_bytes (config/MANIFEST.md). */
uint64_t nightly_table_estimate(uint64_t max_bytes, uint64_t size, bool compressed);

#endif
