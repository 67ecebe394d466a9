/*
 * profile_io.h: the timed lookups of a profile (private to stages/profile).
 * One lookup job per thread; each times its lookups one by one, with one
 * read in flight (pread) or queue_depth reads in flight (io_uring).
 *
 * A table set is profiled as the one table it reads as: each shard has its
 * reader, with its lookup descriptor, and a lookup's time starts before the choice of
 * shard (table_set_find, the library's routing), so it is the time a
 * lookup in the set takes.
 */
#ifndef SSTPIPE_PROFILE_PROFILE_IO_H
#define SSTPIPE_PROFILE_PROFILE_IO_H

#include "stages/common/error.h"
#include "stages/profile/profile_keys.h"
#include "stages/sst/table_reader.h"
#include "stages/sst/table_set.h"

#include <stdbool.h>
#include <stdint.h>

/* A table, or one shard of a set. */
typedef struct profile_shard {
    /* The in-memory index, and the block source: the mapping when mapped,
     * the lookup descriptor (O_DIRECT in cold mode) otherwise. */
    sst_reader *r;
} profile_shard;

typedef struct lookup_job {
    /* in */
    const profile_shard *shards; /* one for a table */
    const table_set *set;        /* a set's bounds (routing), or NULL */
    bool mapped;                 /* read blocks through the mappings instead of fds */
    const profile_keys *keys;
    uint64_t first, count; /* this job's keys */
    unsigned queue_depth;
    /* out, indexed by key number (shared arrays, disjoint ranges) */
    uint64_t *lat_ns;
    uint32_t *reads; /* read calls made */
    uint64_t bytes;  /* the bytes they returned */
    uint64_t blocks; /* blocks searched */
    uint64_t hits, misses;
    int rc;
    sp_error err;
} lookup_job;

/* Runs a job (a pthread start routine: arg is a lookup_job). */
void *lookup_job_run(void *arg);

/* Whether an io_uring of this depth can be set up here. */
int lookup_uring_probe(unsigned queue_depth, sp_error *err);

#endif
