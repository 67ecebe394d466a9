/*
 * table_merge.h: `sstpipe merge`'s engine, the streaming k-way merge of
 * SSTables into one.
 *
 * Every key of the inputs is in the output once; where several inputs hold
 * a key, the value of the last of them wins, the rule a later page already
 * follows within a dump. So merging the tables built from dumps D1 ... Dn
 * holds the records of one build of D1 ... Dn concatenated.
 *
 * The largest input whose block size and format version are the output's
 * is the base: a block of it into which no key of another input falls is
 * copied as it is, from the bytes just checked (or its extents shared
 * where the file system can; see table_writer_copy_block), only blocks
 * around changed keys are decoded and rebuilt, and the index is written
 * anew. A version 2 output takes a version 2 base's dictionary, so that
 * its copied blocks decode and its rebuilt ones are compressed alike, and
 * its filter is built from every key, copied or rebuilt.
 * With canonical set there is no base: every record is re-encoded, filling
 * blocks greedily as build does, which gives build's bytes exactly.
 *
 * Memory: one chunk read per input (read_bytes; 1 MiB for the base) and
 * a 64 KiB buffer of its index (the inputs are opened streamed and their
 * first keys read entry after entry: table_check.h), the writer's 4 MiB
 * batch and 256 KiB of the output's index (the rest waits in a scratch
 * file beside the output until the data is written), whatever the table
 * sizes. A table set input costs what one of its shards does: they are
 * opened one at a time, in key order (table_source.h). The output's title
 * index adds one read chunk per input and a sort's budget (title_merge.c).
 */
#ifndef SSTPIPE_MERGE_TABLE_MERGE_H
#define SSTPIPE_MERGE_TABLE_MERGE_H

#include "stages/common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A key, for table_merge_options' drop list. */
typedef struct table_merge_key {
    const uint8_t *key;
    uint32_t len;
} table_merge_key;

typedef struct table_merge_options {
    uint32_t block_size;   /* 0: the first input's */
    uint32_t cluster_size; /* 0: the first input's */
    bool canonical;        /* re-encode everything: build's bytes */
    /* The output's format version (FORMAT.md): 1, 2 (compressed), or 0:
     * the base's, the largest input of the output's block size (with
     * canonical, or none of that size: the first input's). Version 2
     * blocks are compressed with the base's dictionary, which the output
     * takes, when the base is a version 2 table (not a set, whose shards
     * have a dictionary each): its blocks are then copied as they are.
     * Else a dictionary of up to dictionary_size bytes is trained, as
     * build trains one, at compression_level. */
    unsigned format_version;
    int compression_level;
    uint32_t dictionary_size;
    size_t read_bytes; /* read buffer per input */
    /* Keys left out of the output whichever input holds them (the nightly's
     * [input] deletions): sorted in key order, no repeats; NULL for none.
     * A base block holding one is rebuilt, not copied. */
    const table_merge_key *drop;
    size_t n_drop;
    /* Only the keys in [lo, hi) of the inputs go into the output (a NULL
     * key: unbounded), the rest are passed over: one shard of a table set
     * merged with the keys of other tables in its range (the nightly of a
     * set). A base block is copied only when it lies wholly in the range. */
    table_merge_key lo, hi;
    /* Whether the output gets a title index (title_rules.h), merged from
     * the inputs' (title_merge.h) and published with it, both or neither
     * (title_index.h): true unless the caller says otherwise. Without one
     * (an input without its index, or false) the output has none: an
     * earlier output's index is removed with the table it was for. */
    bool titles;
} table_merge_options;

typedef struct table_merge_stats {
    unsigned inputs;
    uint64_t records;        /* in the output */
    uint64_t replaced;       /* records of an earlier input replaced by a later one's */
    uint64_t dropped;        /* records left out: their key is in the drop list */
    uint64_t blocks_copied;  /* base blocks copied as they are */
    uint64_t blocks_cloned;  /* of those, shared with the base (FICLONERANGE) */
    uint64_t blocks_rebuilt; /* base blocks decoded and re-encoded */
    uint64_t data_blocks;    /* in the output */
    uint64_t file_size;
    /* Where the time went, in nanoseconds (the -v line gives microseconds;
     * tests/bench/bench_merge.py records them): opening the inputs (their
     * footers and indexes checked); runs of copied base blocks (each read,
     * checked and written, or shared); rebuilt runs (records decoded,
     * merged and encoded, with their reads and writes); the rest of the
     * file (the last write batch, the index, the footer); and the commit
     * (fsync, link, rename, the directory's fsync). A write of the batch
     * counts in the phase that filled it up. */
    uint64_t open_ns, copy_ns, rebuild_ns, finish_ns, commit_ns;
    /* On failure: the input whose open, read or check failed (it is
     * damaged or unreadable), or -1 when the error was not an input's
     * (the output, memory). */
    int failed_input;
    /* The first input without a title index built for it (the output
     * then has none), or -1. */
    int titles_missing;
} table_merge_stats;

void table_merge_options_init(table_merge_options *o);
/* Merges inputs[0..n) (n >= 1; the last wins) into a table at out, written
 * atomically: out is the new table or, on any error, as it was. */
int table_merge(const char *out, const char *const *inputs, unsigned n,
                const table_merge_options *o, table_merge_stats *st, sp_error *err);
/* The `-v` line, without its newline, into buf (cap bytes; 512 hold it):
 * "merge: inputs=N records=N replaced=N blocks_copied=N ... us_open=N
 * us_copy=N us_rebuild=N us_finish=N us_commit=N". The command
 * prints it; the library prints nothing. */
void table_merge_stats_format(const table_merge_stats *s, char *buf, size_t cap);

#endif
