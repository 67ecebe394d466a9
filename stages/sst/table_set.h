/*
 * table_set.h: table sets, the output of a sharded build: a directory of
 * shard tables, each holding one key range, and the manifest tableset.json
 * that lists them (TABLESET.md beside this file is the specification).
 *
 * Two halves, one shard description:
 * - the reader (table_set.c, also in libsstpipe) parses a manifest and
 *   checks everything the manifest alone can tell plus each shard file's
 *   presence and size; libsstpipe then opens the shards and checks their
 *   footers and key ranges (sstpipe_set.c). Every error names the
 *   manifest (or shard file) and what is wrong.
 * - the writer (table_set_write.c, the cluster build's finishing step)
 *   takes what the caller already knows of each shard, checks the same
 *   order and contiguity rules and writes the manifest atomically (temp
 *   file, fsync, rename, fsync of the directory), so a directory either
 *   has a whole, valid manifest or is not a set.
 * The rules live once, in table_set_check_shards, which both call.
 */
#ifndef SSTPIPE_SST_TABLE_SET_H
#define SSTPIPE_SST_TABLE_SET_H

#include "stages/common/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TABLE_SET_MANIFEST "tableset.json"
#define TABLE_SET_FORMAT "sstpipe-tableset"
#define TABLE_SET_VERSION 1
/* XXH3-128 of a shard file as 32 lowercase hex digits, plus the NUL. */
#define TABLE_SET_CHECKSUM_HEX 33

/* One shard as the manifest lists it. A bound is a key (bytes); has_lo /
 * has_hi false means unbounded (lo/hi then ignored). lo is inclusive, hi
 * exclusive. file is a plain name inside the set's directory. */
typedef struct table_set_shard {
    const char *file;
    const uint8_t *lo;
    size_t lo_len;
    bool has_lo;
    const uint8_t *hi;
    size_t hi_len;
    bool has_hi;
    uint64_t records;
    uint64_t bytes;       /* the file's size */
    const char *checksum; /* XXH3-128 of the file, 32 lowercase hex digits */
} table_set_shard;

/* The table options every shard shares, as `info --json` names them. */
typedef struct table_set_options {
    uint32_t format_version;
    uint32_t block_size;
    uint32_t cluster_size;
    uint32_t max_value_bytes;
    uint32_t restart_interval;
} table_set_options;

/* ------------------------------------------------------------------ rules */

/* The rules of TABLESET.md on a shard list, for manifest `name` (errors
 * start with it): at least one shard; file names plain and unique; bounds
 * 1 to 320 bytes; shard 0 unbounded below, the last unbounded above, every
 * other bound set; each range non-empty (lo < hi); contiguous (hi of i ==
 * lo of i+1); checksums 32 lowercase hex digits. */
int table_set_check_shards(const char *name, const table_set_shard *shards, size_t n,
                           sp_error *err);

/* Whether key lies in shard s's range [lo, hi). */
bool table_set_shard_holds(const table_set_shard *s, const uint8_t *key, size_t klen);

/* A shard's bound as the manifest writes it: its n bytes in lowercase hex,
 * or JSON null for b NULL (unbounded); NULL when out of memory. */
json_t *table_set_bound_json(const void *b, size_t n);

/* XXH3-128 of the whole file at path, as TABLESET.md's checksum (hex). */
int table_set_file_checksum(const char *path, char out[TABLE_SET_CHECKSUM_HEX], sp_error *err);

/* ----------------------------------------------------------------- reader */

typedef struct table_set table_set;

/* Whether path names a table set rather than a table: a directory, or a
 * file whose name is tableset.json. Nothing is read but its metadata; a
 * path that does not exist is not a set (opening it as a table then says
 * so). */
bool table_set_is_set_path(const char *path);

/* Reads and checks the manifest of the set at path (its directory or its
 * tableset.json): the JSON, the format and version, every shard member
 * (hex bounds, counts, checksum), the rules above, the options, and that
 * each shard file exists as a regular file of its listed size. NULL on
 * failure with err naming the manifest (and shard) and what is wrong. */
table_set *table_set_read(const char *path, sp_error *err);
/* table_set_read without looking at the shard files (verify checks each
 * shard file on its own and reports each one's problems). */
table_set *table_set_read_manifest(const char *path, sp_error *err);
void table_set_free(table_set *s);

/* Parses manifest text as table_set_read does, without looking at any
 * shard file (the fuzz target's entry, and the checks' unit tests). name
 * is for errors and dir the directory shard paths are made under. */
table_set *table_set_parse(const char *text, size_t len, const char *name, const char *dir,
                           sp_error *err);

/* The manifest's path, the shard count, shard i (its bounds and strings
 * live as long as s), shard i's file path (dir/file) and the options. */
const char *table_set_manifest_path(const table_set *s);
size_t table_set_count(const table_set *s);
const table_set_shard *table_set_shard_at(const table_set *s, size_t i);
const char *table_set_shard_path(const table_set *s, size_t i);
const table_set_options *table_set_get_options(const table_set *s);

/* Shard i's own figures against the manifest: records and file size from
 * its footer, and its options against the set's. Errors name the
 * manifest, the shard and both sides. */
int table_set_check_footer(const table_set *s, size_t i, uint64_t records, uint64_t file_size,
                           const table_set_options *f, sp_error *err);
/* Whether shard i's range holds key, else an error naming the manifest,
 * the shard, which key it is ("first", "last") and the range, in hex. */
int table_set_check_key(const table_set *s, size_t i, const char *which, const uint8_t *key,
                        size_t klen, sp_error *err);

/* The shard whose range holds key (binary search over the lo bounds). */
size_t table_set_find(const table_set *s, const uint8_t *key, size_t klen);

/* ----------------------------------------------------------------- writer */

/*
 * Writes dir/tableset.json for the n shards (already in dir, complete and
 * synced by the caller), with options_json (a JSON object: the shards'
 * common options as `info --json` names them) and inputs_json (a JSON
 * array: what the build read) embedded as they are. Checks the shard list
 * (table_set_check_shards) and that both JSON texts parse; computes nothing
 * the caller knows. Atomic: a temporary file in dir, fsync, rename over
 * tableset.json, fsync of dir; on any error nothing is left and an earlier
 * manifest is untouched.
 */
int table_set_write_manifest(const char *dir, const table_set_shard *shards, size_t n,
                             const char *options_json, const char *inputs_json, sp_error *err);

#endif
