/*
 * verify.h: `sstpipe verify`, a full check of SSTable files.
 *
 * verify_file reads every byte of a file once, front to back in large
 * sequential reads, and checks everything the format (stages/sst/FORMAT.md)
 * promises: footer magic and checksum, every block's checksum, trailer and
 * zero padding, key order inside and across blocks, the index against the
 * blocks, the footer's counts against what was found, value bounds, UTF-8,
 * and the file size. It goes on after a problem wherever it can, so one run
 * lists every problem it finds (each with what, block and byte offset).
 *
 * The command front end and `sstpipe nightly` both call verify_file in
 * process; a file with problems is still a run that succeeded (returns 0,
 * problems in the report); -1 means the file could not be checked at all
 * (missing, unreadable, not an SSTable).
 *
 * A table set (stages/sst/TABLESET.md) is verified shard by shard: the
 * command reads the manifest and checks each shard file with
 * verify_file, its options naming the shard's manifest entry and the
 * set's options, so that on top of the table's own checks every key is
 * checked against the shard's range, the footer's options against the
 * set's, and the records, size and XXH3-128 checksum of the file against
 * the manifest (that checksum costs a second read of the file).
 *
 * A title index (FILE.titles, title_rules.h) is a table too; on top, its
 * recorded identity is checked against FILE's, and one built for another
 * table is a problem of the index.
 */
#ifndef SSTPIPE_VERIFY_VERIFY_H
#define SSTPIPE_VERIFY_VERIFY_H

#include "stages/common/error.h"
#include "stages/common/progress.h"
#include "stages/sst/table_set.h"
#include "stages/verify/verify_problems.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct verify_options {
    size_t read_size;    /* bytes per sequential read (default 8 MiB) */
    size_t max_problems; /* problems kept in the list; all are counted (default 1000) */
    /* threads reading and checking the data blocks; 0 (the default): one
     * per core the process may run on. The report is the same for any. */
    unsigned threads;
    /* NULL (the default), or where the check stores how far it has got: bytes
     * read (in_bytes, of the file's size in total_bytes) and records checked,
     * after every read of read_size, for a live progress line. */
    sp_progress *progress;
    /* NULL (a plain table), or the file is shard `shard` of the table set
     * whose manifest is `tableset`, with the set's options. */
    const char *tableset;
    const table_set_shard *shard;
    const table_set_options *set_options;
} verify_options;

typedef struct verify_report {
    verify_options opts;
    char *path;               /* the file checked (owned) */
    uint64_t records;         /* records read from the data blocks */
    uint64_t blocks;          /* data blocks read */
    uint64_t bytes;           /* bytes read (the file size) */
    double seconds;           /* wall time of the check */
    double mb_per_s;          /* bytes / seconds, in MB (10^6 bytes) per second */
    uint64_t problem_count;   /* problems found (may exceed n_problems) */
    verify_problem *problems; /* up to max_problems of them, by byte offset */
    size_t n_problems;
    char *error; /* why the file could not be checked (verify_file returned -1), or NULL */
} verify_report;

void verify_options_init(verify_options *opts);
/* Makes opts name shard i of the set s, the manifest's entry and the set's
 * options, as `sstpipe verify SET` and nightly's verify of a set check each
 * shard; s NULL: a plain table. */
void verify_options_shard(verify_options *opts, const table_set *s, size_t i);
/* opts NULL: defaults. */
void verify_report_init(verify_report *rep, const verify_options *opts);
void verify_report_destroy(verify_report *rep);

/* 0: the file was checked (rep->problem_count says whether it is clean);
 * -1: it could not be checked (err says why). rep must be freshly initialised. */
int verify_file(const char *path, verify_report *rep, sp_error *err);

/* The text report: one line per problem, then the summary line. */
void verify_report_print(const verify_report *rep, FILE *out);
/* The report as a JSON object (new reference; fields in stages/verify/README.md). */
json_t *verify_report_to_json(const verify_report *rep);
/* {"files": [report...], "problems": total, "utf8_check": the path of
 * verify_utf8_fast_path, or "scalar"} written atomically to json_path. */
int verify_write_json(const verify_report *reps, size_t n, const char *json_path, sp_error *err);

#endif
