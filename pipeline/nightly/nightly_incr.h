/*
 * nightly_incr.h: the incremental nightly ([input] incremental): the newest
 * full dump (the base) plus every daily adds/changes dump dated after it,
 * each built once into a table kept in [output] dir/cache/ and merged, the
 * later day winning, into the table nightly verifies and publishes.
 *
 * A dump's date is the YYYYMMDD in its file name, the way Wikimedia names
 * both kinds (enwiki-20261120-pages-articles-multistream.xml.bz2,
 * enwiki-20261201-pages-meta-hist-incr.xml.bz2). A cached table is named
 * by what it was built from and how: cache/<kind>-<date>-<XXH3-64 of the
 * dump>-<options key>.sst, the options key being the XXH3-64 of the
 * settings that change a table's bytes ([extract], [truncate], [sst]), so
 * a changed dump or setting builds anew and nothing else does. With
 * [cluster] shards > 1 the base is a table set, cache/base-<date>-<XXH3-64>-
 * <options key>-<N>shards.set, the increments still one table each, and
 * the night's output a set of the base's shards (nightly_incr_set.c). Tables are
 * built in the staging directory and renamed into cache/ whole, so a run
 * that dies leaves no partial entry there.
 *
 * Internal to nightly*.c; the run's steps are in nightly.c.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_INCR_H
#define SSTPIPE_PIPELINE_NIGHTLY_INCR_H

#include "pipeline/build/build.h"
#include "stages/common/error.h"
#include "stages/merge/table_merge.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define NIGHTLY_CACHE_DIR "cache"

struct nightly_run_state;

/* One input dump of an incremental run. */
typedef struct nightly_dump {
    char *path;
    uint32_t date; /* YYYYMMDD */
    uint64_t size;
    time_t mtime;
    bool compressed;
    uint64_t xxh3;
    bool checksum_reused;     /* xxh3 from cache/checksums.json (nightly_sums.h) */
    char table[NAME_MAX + 1]; /* its table's file name in cache/ */
    bool cached;              /* that table was there already */
    char *damaged;            /* the cached table failed the merge's check: why (rebuilt) */
    bool built;               /* built by this run: stats hold its figures */
    build_stats stats;
} nightly_dump;

typedef struct nightly_plan {
    nightly_dump base;
    nightly_dump *incr; /* dated after the base, in date order */
    size_t n_incr;
    nightly_dump *skipped; /* dated on or before the base: not applied */
    size_t n_skipped;
    uint32_t *gaps; /* days after the base, up to the last increment, with no file */
    size_t n_gaps;
    uint64_t options_key;           /* XXH3-64 of the settings that shape a table */
    uint64_t inputs_key;            /* XXH3-64 of the options key and every input's checksum */
    char up_to_date_with[PATH_MAX]; /* set when current was built from the same inputs */
    /* [input] deletions: the file, and its titles in key order */
    uint64_t deletions_size, deletions_xxh3;
    char *deletions_text;
    table_merge_key *deletions;
    size_t n_deletions;
    table_merge_stats merge; /* a set's: summed over its shards */
    bool merged;
    /* A base built as a table set ([cluster] shards > 1): its shards, and
     * how many of them no increment touched (linked, not rewritten). */
    size_t shards, shards_reused;
} nightly_plan;

/* The YYYYMMDD in path's file name: the first run of exactly eight digits
 * that is a calendar date. Error naming the file when there is none. */
int nightly_dump_date(const char *path, uint32_t *date, sp_error *err);

/* Picks the base (base_arg, or the newest-dated match of [input] path) and
 * the increments (the matches of [input] incremental), with the skipped
 * ones and the gaps; logs each. */
int nightly_incr_plan(struct nightly_run_state *r, const char *base_arg);
/* XXH3-64 of every input (the dumps' from cache/checksums.json where
 * their stat is unchanged: nightly_sums.h), then the options and inputs
 * keys. */
int nightly_incr_checksum(struct nightly_run_state *r);
/* Whether current was published from exactly these inputs and options
 * (plan->up_to_date_with names it then). */
bool nightly_incr_up_to_date(struct nightly_run_state *r);
/* Bytes the tables still to build and the merged output may take (the
 * free-space check), and the largest single build (its sort may spill). */
void nightly_incr_space(const struct nightly_run_state *r, uint64_t *need, uint64_t *largest);
/* Builds the tables not in cache/ (a cached one that no longer opens is
 * rebuilt), then merges base and increments into r->table_path; a cached
 * table whose blocks fail the merge's check is rebuilt from its dump and
 * the merge run again. */
int nightly_incr_build(struct nightly_run_state *r);
int nightly_incr_merge(struct nightly_run_state *r);
/* The merge when the base is a table set (nightly_incr_set.c): paths[0]
 * the cached base set, paths[1..n) the increments' tables; the night's
 * set at r->table_path, each shard the base's shard merged with the keys
 * of the increments in its range; plan->merge the sums, failed_input as
 * table_merge's; *base_bytes the base's shard bytes. */
int nightly_incr_merge_set(struct nightly_run_state *r, const char *const *paths, unsigned n,
                           const table_merge_options *o, uint64_t *base_bytes, sp_error *err);
/* After a publish: deletes the tables in cache/ this run did not use. */
void nightly_incr_retain(struct nightly_run_state *r);
/* The manifest's "incremental" object (new reference). */
json_t *nightly_incr_json(const struct nightly_run_state *r);
void nightly_plan_destroy(nightly_plan *p);

#endif
