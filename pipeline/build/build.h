/*
 * build.h: the fused pipeline, extract -> truncate -> sort -> write in one
 * process. Its output is byte-identical to running the four stage commands
 * piped together with the same options.
 */
#ifndef SSTPIPE_PIPELINE_BUILD_H
#define SSTPIPE_PIPELINE_BUILD_H

#include "stages/common/error.h"
#include "stages/common/progress.h"
#include "stages/extract/extract.h"
#include "stages/sort/sorter.h"
#include "stages/sst/table_writer.h"

#include <stdint.h>
#include <stdio.h>

typedef struct build_options {
    extract_options extract; /* its progress is build's own */
    uint64_t max_bytes;      /* truncate */
    sort_options sort;
    table_options table; /* table.max_value_bytes is set from max_bytes */
    /* NULL, or stored into about every MiB of XML while reading (phase
     * reading: input, XML, pages, records extracted) and every 64Ki records
     * while writing (phase writing: records written of records_total, the
     * records into the sort, at most one less per duplicate). */
    sp_progress *progress;
} build_options;

typedef struct stage_times {
    double wall_seconds;
    double cpu_seconds;
} stage_times;

typedef struct build_stats {
    extract_stats extract;
    uint64_t truncated; /* records whose value was cut */
    sort_stats sort;
    table_stats table;
    /* extract+truncate+run formation, then merge+write */
    stage_times read_phase, write_phase;
    uint64_t peak_rss_bytes;
} build_stats;

void build_options_init(build_options *opts);
/* Builds input into output (an SSTable); stats may be NULL. */
int build_run(const char *input, const char *output, const build_options *opts, build_stats *stats,
              sp_error *err);

/*
 * What build_run writes into its table: the records of input (or of
 * opts->extract.slice of it), truncated, sorted and unique (a later page
 * with the same title wins), into sink in key order. opts->table is not
 * used; stats->table is left zero. A cluster map task's records go this way
 * into its per-shard tables (pipeline/cluster/cluster_task.h).
 */
int build_sorted(const char *input, const build_options *opts, const sp_sink *sink,
                 build_stats *stats, sp_error *err);

/* The -v lines, one per stage (the same keys each stage command prints). */
void build_print_stats(FILE *out, const build_stats *s);

#endif
