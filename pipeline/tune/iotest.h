/*
 * iotest.h: `sstpipe iotest`, the disk measurement behind `sstpipe tune`.
 *
 * The rule of thumb for block and cluster sizes came from diskspd runs of
 * six patterns (random read 8K and 64K, random write 8K, sequential read
 * 64K and 256K, sequential write 8K; 8 threads with 8 outstanding IOs
 * each), and its answer depended on the hardware. iotest runs the same
 * patterns on the user's own disk: a test file is created in a directory
 * and filled once with incompressible bytes, then each pattern runs for a
 * fixed time with every thread keeping queue_depth IOs in flight through
 * its own io_uring, reading or writing with O_DIRECT so the page cache is
 * not what gets measured. The file is removed afterwards, on errors and on
 * SIGINT/SIGTERM too (stages/common/cleanup.h).
 *
 * Random patterns pick offsets uniformly, aligned to the IO size, over the
 * whole file. Sequential patterns give each thread its own equal slice of
 * the file and walk it front to back, wrapping at its end, so threads do
 * not read each other's blocks (diskspd -T style striding, not a shared
 * cursor).
 *
 * A file system without O_DIRECT (tmpfs) is not an error: the run falls
 * back to buffered IO and says so (result.direct false, result.note), since
 * those figures are then memory speed, not disk speed.
 */
#ifndef SSTPIPE_TUNE_IOTEST_H
#define SSTPIPE_TUNE_IOTEST_H

#include "stages/common/error.h"
#include "stages/common/progress.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define IOTEST_MIN_IO_SIZE 4096u       /* also the alignment of every IO */
#define IOTEST_MAX_IO_SIZE (16u << 20) /* per IO */
#define IOTEST_MAX_PATTERNS 64
#define IOTEST_DEFAULT_PATTERN_COUNT 6

typedef struct iotest_pattern {
    bool random; /* else sequential */
    bool write;  /* else read */
    uint32_t io_size;
} iotest_pattern;

/* The six diskspd patterns: rr:8K rr:64K rw:8K sr:64K sw:8K sr:256K. */
extern const iotest_pattern iotest_default_patterns[IOTEST_DEFAULT_PATTERN_COUNT];

/* "rr:8K" (random read), "rw:", "sr:", "sw:"; the size a multiple of 4K up to 16M. */
int iotest_parse_pattern(const char *text, iotest_pattern *out, sp_error *err);
/* The pattern as "rr:8K", in buf. */
const char *iotest_pattern_name(const iotest_pattern *p, char *buf, size_t cap);
/* "random read", "sequential write", ... */
const char *iotest_pattern_kind(const iotest_pattern *p);

typedef struct iotest_options {
    uint64_t file_size;             /* test file, a multiple of 4K (default 1G) */
    double duration;                /* seconds per pattern (default 10) */
    unsigned threads;               /* default 8 */
    unsigned queue_depth;           /* IOs in flight per thread (default 8) */
    const iotest_pattern *patterns; /* NULL: the six defaults */
    size_t n_patterns;
    /* NULL (the default), or the counters of a live progress line: filling
     * the test file (writing, bytes of its size), then each pattern as a
     * step (reading or writing), in_bytes adding every IO's bytes and
     * records counting the IOs of all patterns so far. */
    sp_progress *progress;
} iotest_options;

typedef struct iotest_pattern_result {
    iotest_pattern pattern;
    uint64_t ios;          /* completed IOs, each of pattern.io_size bytes */
    uint64_t bytes;        /* ios * io_size */
    double seconds;        /* from the first submission to the last completion */
    double iops, mb_per_s; /* MB = 10^6 bytes, so mb_per_s = iops * io_size / 10^6 */
    /* latency of one IO, submission to completion, nanoseconds; min, avg and
     * max exact, percentiles from a log histogram (at most 1/32 high) */
    uint64_t min_ns, p50_ns, p99_ns, max_ns;
    double avg_ns;
} iotest_pattern_result;

typedef struct iotest_result {
    iotest_options opts;            /* as run; patterns NULL, results[i].pattern holds each */
    char *dir;                      /* where the test file was (owned) */
    char *file;                     /* the test file's path, removed by now (owned) */
    bool direct;                    /* O_DIRECT was used */
    char note[512];                 /* why not, when direct is false; else "" */
    double fill_seconds;            /* creating and filling the test file */
    iotest_pattern_result *results; /* n_results, in the order run */
    size_t n_results;
} iotest_result;

void iotest_options_init(iotest_options *opts);
void iotest_result_init(iotest_result *res);
void iotest_result_destroy(iotest_result *res);

/* Runs every pattern on a test file created in dir; res freshly initialised.
 * -1 with err on bad options, no room, io_uring setup or an IO error; the
 * test file is gone either way. */
int iotest_run(const char *dir, const iotest_options *opts, iotest_result *res, sp_error *err);

/* The text report: one line per pattern (IOPS, MB/s, latency avg/p50/p99/max). */
void iotest_print(const iotest_result *res, FILE *out);
/* Every figure as JSON (new reference; fields in pipeline/tune/README.md). */
json_t *iotest_result_to_json(const iotest_result *res);
int iotest_write_json(const iotest_result *res, const char *json_path, sp_error *err);

#endif
