/*
 * profile_io.h: the timed lookups of a profile (private to stages/profile).
 * One lookup job per thread; each times its lookups one by one, with one
 * read in flight (pread) or queue_depth reads in flight (io_uring).
 */
#ifndef SSTPIPE_PROFILE_PROFILE_IO_H
#define SSTPIPE_PROFILE_PROFILE_IO_H

#include "stages/common/error.h"
#include "stages/profile/profile_keys.h"
#include "stages/sst/table_reader.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lookup_job {
    /* in */
    const sst_reader *r; /* the in-memory index, and the mapping when mapped */
    int fd;              /* where blocks are read (O_DIRECT in cold mode) */
    bool mapped;         /* read blocks through r's mapping instead of fd */
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
