/*
 * serve_holder.h: the table the server answers from, and following it
 * across publishes.
 *
 * A served_table is one opened table with a reference count. Every request
 * takes a reference when it starts (serve_holder_acquire) and drops it when
 * its response has been sent (served_table_release), so after a publish new
 * requests get the new table while those in flight finish on the old one,
 * which is closed by whichever release drops its last reference.
 *
 * What is followed: given a nightly output directory, DIR/current/NAME
 * (NAME is [output] name when the configuration sets it, else the table
 * the published build's manifest.json names); given a table file, that
 * path (a rebuild renames a new file over it). See serve_holder.c for how
 * changes are noticed.
 */
#ifndef SSTPIPE_SERVE_SERVE_HOLDER_H
#define SSTPIPE_SERVE_SERVE_HOLDER_H

#include "stages/common/error.h"
#include "stages/sst/sstpipe.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct served_table {
    sstpipe_table *table;
    const char *path;    /* the resolved file (builds/<name>/table.sst, not current/) */
    const char *name;    /* the end of path a client is shown: "table.sst" (see open_table) */
    int64_t build_time;  /* the file's mtime, seconds since the epoch: when it was written */
    uint64_t generation; /* 1 for the first table, +1 per swap */
    /* Compressed: a value lives in a buffer of the thread that looked it
     * up, until its next lookup (sstpipe.h, Lifetimes), not in the table. */
    bool values_borrowed;
} served_table;

typedef struct serve_holder serve_holder;

typedef struct serve_holder_options {
    const char *target; /* a table file or a nightly output directory */
    /* The table's file name inside a nightly build; NULL: the one the
     * published build holds. */
    const char *table_name;
    bool direct_io;        /* open with sstpipe_options_set_direct_io */
    size_t block_cache;    /* sstpipe_options_set_block_cache */
    unsigned poll_seconds; /* check every so many seconds without an event too; 0: never */
    /* Called from the watcher thread after each swap, and when a changed
     * target could not be opened (err set; the old table stays served). */
    void (*on_change)(void *ctx, const served_table *now, const sp_error *err);
    void *ctx;
} serve_holder_options;

/* Opens the target's current table and starts watching it. NULL on error. */
serve_holder *serve_holder_init(const serve_holder_options *o, sp_error *err);
/* Stops watching and closes the table; every reference must be released. */
void serve_holder_destroy(serve_holder *h);

/* The table to answer a new request from, with a reference taken. */
served_table *serve_holder_acquire(serve_holder *h);
void served_table_release(served_table *t);

/* Checks the target now (as a change event would): 1 swapped, 0 unchanged,
 * -1 the target cannot be resolved or its table opened, now or when it was
 * last tried (err set; the old one stays). */
int serve_holder_check(serve_holder *h, sp_error *err);

#endif
