/*
 * nightly_build.h: one build of a nightly run into a directory (the
 * staging directory, or an incremental night's daily tables): in process
 * with build_run, or as a cluster build with a [cluster] section, its
 * progress shown by the run's log and its figures recorded as the
 * manifest's read and write stages. Internal to nightly*.c.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_BUILD_H
#define SSTPIPE_PIPELINE_NIGHTLY_BUILD_H

#include "pipeline/nightly/nightly_state.h"

/* Builds input (size bytes) into out with the run's options, recording
 * its read and write stages (each naming the input). With [cluster]
 * shards > 1 out is a table set, unless one_table (an incremental night's
 * daily tables: one table each, whatever the shards). */
int nightly_build_into(nightly_run_state *r, const char *input, uint64_t size, const char *out,
                       bool one_table, build_stats *st);

#endif
