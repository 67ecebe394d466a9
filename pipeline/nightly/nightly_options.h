/*
 * nightly_options.h: what a nightly run (nightly.h) is told, with its
 * defaults in one place. A header of its own, so that the run's state
 * (nightly_state.h), at the bottom of the nightly's layers, can carry it.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_OPTIONS_H
#define SSTPIPE_PIPELINE_NIGHTLY_OPTIONS_H

#include "pipeline/build/build.h"
#include "pipeline/cluster/cluster_build.h"
#include "stages/profile/profile.h"
#include "stages/verify/verify.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* What a nightly run is told (`sstpipe nightly` fills it from a config:
 * config_apply_nightly, pipeline/command/config_apply.h). */
typedef struct nightly_options {
    /* [output] dir (required), the table's file name in a build directory
     * ([output] name) and the builds kept ([output] keep). */
    const char *dir;
    const char *table_name;
    uint64_t keep;
    /* [input] path, the glob the input is the newest match of (NULL: none),
     * and where it was set, for the messages that name it. */
    const char *input_glob;
    const char *input_glob_origin;
    /* [input] incremental and deletions; NULL: a full build. */
    const char *incremental;
    const char *deletions;
    /* The stages': build (a build's progress, and its scratch directory
     * when sort.tmp_dir is NULL, are the run's), verify, and profile
     * (n = 0: no profile). */
    build_options build;
    verify_options verify;
    profile_options profile;
    /* Builds are cluster builds ([cluster] set), with these options (owned:
     * nightly_options_destroy frees them). */
    bool cluster;
    cluster_build_options cluster_build;
    /* What decides a table's bytes, as the names of the cached tables of
     * an incremental run carry it. */
    uint64_t table_key;
    /* The configuration as the manifest records it (owned; NULL: null). */
    json_t *config;
    /* NULL: the newest match of input_glob (with incremental: the base,
     * the full dump the increments are merged over). */
    const char *input;
    /* Build and publish even when current was published from the same
     * inputs (else the run ends "up to date"). */
    bool force;
    /* Every log line goes here as well as to the run's nightly.log; NULL:
     * only the file. */
    FILE *echo;
    /* Progress is a live line rewritten in place on echo (a terminal) rather
     * than a log line every progress_period seconds. */
    bool live;
    double progress_period;
} nightly_options;

/* Fills o with the defaults: no directory (it must be set), the table
 * "table.sst", 7 builds kept, no input glob, a full build, the
 * stages' defaults, no cluster, the log's progress a line a minute, no
 * echo. */
void nightly_options_init(nightly_options *o);
/* Frees what o owns (its cluster options and config). */
void nightly_options_destroy(nightly_options *o);

#endif
