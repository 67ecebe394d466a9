/*
 * tune_report.h: what `sstpipe tune` found, and what it recommends.
 *
 * tune.c runs the trials and fills a tune_report; everything that only reads the
 * figures lives here so it can be unit-tested on made-up trials: the
 * recommendation rule, the text table, the JSON, the SVG chart and the
 * config snippet.
 *
 * The rule: a lookup served from disk costs what the cold profile
 * measures, so the basis is each trial's cold p50 latency (warm p50 when
 * the file system could not do O_DIRECT). Every trial within
 * tolerance_pct of the best basis counts as equally fast, since runs of
 * the same trial differ by about that much; among those the most compact
 * file wins (the same records in fewer bytes: less disk, more of the file
 * in cache), then the smaller block size (fewer bytes read per lookup),
 * then the smaller cluster size, then no compression (nothing to
 * decompress), the lower level, the smaller dictionary.
 */
#ifndef SSTPIPE_TUNE_TUNE_REPORT_H
#define SSTPIPE_TUNE_TUNE_REPORT_H

#include "stages/common/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TUNE_DEFAULT_TOLERANCE_PCT 10.0

typedef struct tune_latency {
    uint64_t p50_ns, p99_ns;
    double avg_ns;
    double reads_per_lookup, bytes_per_lookup;
} tune_latency;

typedef struct tune_trial {
    uint32_t block_size, cluster_size;
    /* 0: no compression (format version 1); else zstd at this level with
     * a dictionary of up to dictionary_size bytes (0: none) */
    int level;
    uint32_t dictionary_size;
    /* the table built */
    uint64_t file_size, records, data_blocks, key_bytes, value_bytes;
    double compactness; /* (key_bytes + value_bytes) / file_size */
    /* as info shows them (stages/read/info_json.h) */
    double bytes_per_record, compression_ratio;
    double build_seconds;
    /* its verification (problems must be 0 for a trial to count) */
    double verify_seconds;
    uint64_t verify_problems;
    /* its profiles */
    tune_latency warm, cold;
    bool have_cold; /* false: the file system could not do O_DIRECT */
} tune_trial;

typedef struct tune_report {
    char *input;           /* as given (owned) */
    char *scratch_dir;     /* where the trials ran, removed by now (owned) */
    uint64_t sample_limit; /* --sample SIZE, 0 for the whole input */
    uint64_t sample_bytes; /* XML bytes of the sample actually used */
    uint64_t sample_pages; /* pages in it */
    uint64_t lookups;      /* per profile */
    unsigned threads, queue_depth;
    uint64_t seed;
    char note[512]; /* why there are no cold figures, else "" */
    tune_trial *trials;
    size_t n_trials, cap_trials;
    /* the recommendation (tune_recommend) */
    double tolerance_pct;
    size_t best; /* index into trials */
    char reason[1024];
} tune_report;

void tune_report_init(tune_report *r);
void tune_report_destroy(tune_report *r);
/* "none", or "zstd-3 dict 16K" ("zstd-3 no dict" without one). */
const char *tune_compression_name(const tune_trial *t, char *buf, size_t cap);
/* "block 8K / cluster 4K / zstd-3 dict 16K" (or "/ no compression"). */
const char *tune_trial_name(const tune_trial *t, char *buf, size_t cap);
int tune_report_add(tune_report *r, const tune_trial *t, sp_error *err);

/* Applies the rule above; -1 when there are no trials or one has problems. */
int tune_recommend(tune_report *r, double tolerance_pct, sp_error *err);

/* The table (one row per trial), the recommendation, its reason and the snippet. */
void tune_print(const tune_report *r, FILE *out);
/* "; comments\n[sst]\nblock_size = 8K\ncluster_size = 4K\ncompression = zstd\n
 * compression_level = 3\ndictionary_size = 16K\n" (the last two only with
 * zstd; malloc'd; NULL: no memory). */
char *tune_config_snippet(const tune_report *r);
/* Writes the snippet atomically to path. */
int tune_write_config(const tune_report *r, const char *path, sp_error *err);
/* Every figure (new reference; fields in pipeline/tune/README.md). */
json_t *tune_report_to_json(const tune_report *r);
int tune_write_json(const tune_report *r, const char *path, sp_error *err);
/* Lookup latency (p50, cold solid and warm dashed) against block size on
 * log axes, one line per cluster size through the uncompressed trials,
 * each compressed trial a labelled square, the recommendation ringed. */
int tune_write_svg(const tune_report *r, const char *path, sp_error *err);

#endif
