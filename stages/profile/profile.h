/*
 * profile.h: `sstpipe profile`, timed point lookups against an SSTable.
 *
 * profile_run opens the table once through libsstpipe, draws N keys (a
 * given share of them guaranteed absent) with a seeded generator, then
 * times the library's own calls: sstpipe_get for each key on its own, or
 * sstpipe_get_many for batches of queue_depth keys. Warm: the table mapped,
 * each block checked whole on its first lookup; cold: opened with direct
 * I/O and its files dropped from the page cache, every block read from the
 * device (a batch's together through io_uring). What each call read is
 * counted outside the library, by the kernel (profile_io.h). The result
 * holds every figure and the sorted latencies, so callers (the command,
 * `sstpipe nightly`, `sstpipe tune`) can print, write JSON or draw the
 * distribution.
 *
 * path may be a table set: keys are drawn from the whole set and each
 * lookup is the set's, routed to its shard by the library.
 */
#ifndef SSTPIPE_PROFILE_PROFILE_H
#define SSTPIPE_PROFILE_PROFILE_H

#include "stages/common/error.h"
#include "stages/common/progress.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct profile_options {
    uint64_t n;            /* lookups, > 0 */
    bool cold;             /* drop the file from the page cache, read with O_DIRECT */
    unsigned threads;      /* lookup threads, each doing its share of n (default 1) */
    unsigned queue_depth;  /* keys per call: 1 sstpipe_get, > 1 sstpipe_get_many (default 1) */
    double misses_pct;     /* percent of lookups for absent keys, 0..100 (default 0) */
    uint64_t seed;         /* same seed, same file -> same key sequence */
    sp_progress *progress; /* NULL, or where the lookups done are counted */
} profile_options;

typedef struct profile_result {
    profile_options opts;
    char *path; /* owned */
    /* the file */
    uint64_t file_size, records, data_blocks; /* of a table set: the sums */
    uint32_t block_size, cluster_size;
    uint64_t shards; /* 1 for a table; a set's shard count */
    /* what was done */
    uint64_t lookups, hits, misses;
    uint64_t misses_requested; /* absent keys drawn; each must come back a miss */
    const char *io;            /* how blocks were read: "mapped", "pread" or "io_uring" */
    uint64_t blocks_searched;  /* one per lookup: every key drawn lies in one block's range */
    double blocks_per_lookup;
    /* As the kernel counted them (profile_io.h): reads made (read system
     * calls; io_uring: blocks the disk delivered) and the bytes the disk
     * delivered. A key of a batch counts its share of the batch's reads. */
    uint64_t reads, bytes_read;
    double min_reads_per_lookup, max_reads_per_lookup;
    double reads_per_lookup, bytes_per_lookup;
    /* The misses' share of the reads (reads_per_miss: 0 with no misses),
     * and the filter for absent keys that spares a miss its read (a
     * version 2 table's; of a set: the sums; 0 bytes: none). */
    double reads_per_miss;
    uint64_t filter_bytes;
    double filter_bits_per_key;
    double seconds; /* the lookup phase: the busiest thread's time in its calls */
    double lookups_per_sec;
    /* latency of one lookup, nanoseconds */
    uint64_t min_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns;
    double avg_ns;
    uint64_t key_sequence_hash; /* XXH3-64 over the drawn keys in order */
    uint64_t *latencies_ns;     /* lookups entries, sorted ascending */
} profile_result;

void profile_options_init(profile_options *opts);
void profile_result_init(profile_result *res);
void profile_result_destroy(profile_result *res);

/* Runs the lookups; res must be freshly initialised. -1 with err on any
 * failure (bad options, not an SSTable, a corrupt block, io_uring setup). */
int profile_run(const char *path, const profile_options *opts, profile_result *res, sp_error *err);

/* The text report (ends with the Profile results / Average / Min / Max lines). */
void profile_print(const profile_result *res, FILE *out);
/* Every figure as a JSON object (new reference; fields in stages/profile/README.md). */
json_t *profile_result_to_json(const profile_result *res);
int profile_write_json(const profile_result *res, const char *json_path, sp_error *err);
/* Histogram and CDF of the latencies on a log time axis, percentiles marked. */
int profile_write_svg(const profile_result *res, const char *svg_path, sp_error *err);

/*
 * What the latency chart is drawn from: the histogram of every lookup and
 * the CDF sampled at PROFILE_CHART_CDF ranks, small enough to travel in the
 * JSON report ("latency_chart"), so a page made later from profile.json or
 * the nightly manifest (pipeline/nightly) draws the same picture without the
 * latencies themselves.
 */
#define PROFILE_CHART_BINS 60
#define PROFILE_CHART_CDF 400

typedef struct profile_chart {
    const char *path; /* not owned */
    uint64_t lookups;
    bool cold;
    unsigned threads, queue_depth;
    double avg_ns;
    uint64_t min_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns;
    uint64_t bins[PROFILE_CHART_BINS];  /* lookups per bin of the log axis from min to max */
    uint64_t n_cdf;                     /* min(lookups, PROFILE_CHART_CDF) */
    uint64_t cdf_ns[PROFILE_CHART_CDF]; /* the latency of rank k * (lookups - 1) / (n_cdf - 1) */
} profile_chart;

void profile_chart_from_result(const profile_result *res, profile_chart *c);
/* From a profile JSON object (profile.json, the manifest's "profile"); -1
 * with err naming what is missing or out of range. */
int profile_chart_from_json(const json_t *profile, profile_chart *c, sp_error *err);
/* The chart's SVG; standalone: with the XML declaration, for a file. */
void profile_chart_draw(const profile_chart *c, FILE *o, bool standalone);

#endif
