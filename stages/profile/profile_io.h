/*
 * profile_io.h: the timed lookups of a profile (private to stages/profile).
 * One lookup job per thread, on the one table (or set) the profile opened
 * through libsstpipe: each times the calls users make, sstpipe_get for one
 * key at a time or sstpipe_get_many for a batch of queue_depth keys, and
 * counts what each call read from outside it, in the kernel's count of its
 * thread's reads (/proc/thread-self/io), never in the code it times.
 */
#ifndef SSTPIPE_PROFILE_PROFILE_IO_H
#define SSTPIPE_PROFILE_PROFILE_IO_H

#include "stages/common/error.h"
#include "stages/profile/profile_keys.h"
#include "stages/sst/sstpipe.h"

#include <stdbool.h>
#include <stdint.h>

/* How a job's reads are counted, after the way the library reads. */
typedef enum lookup_reads {
    LOOKUP_READ_CALLS,  /* read system calls (syscr) of each call: pread lookups */
    LOOKUP_DISK_BLOCKS, /* blocks the disk delivered (read_bytes over the block
                         * size) to each call: io_uring reads, which make no
                         * read call */
    LOOKUP_RUN_CALLS,   /* read system calls of the job's whole run, each call
                         * its share: mapped lookups (profile_io.c says why) */
} lookup_reads;

typedef struct lookup_job {
    /* in */
    sstpipe_table *t; /* shared by every job */
    const profile_keys *keys;
    uint64_t first, count; /* this job's keys */
    unsigned batch;        /* keys per timed call: 1 sstpipe_get, more sstpipe_get_many */
    lookup_reads reads_are;
    uint32_t block_size;
    /* out, indexed by key number (shared arrays, disjoint ranges) */
    uint64_t *lat_ns; /* a key of a batch has the batch's time */
    double *reads;    /* a key of a batch has its share of the batch's */
    uint64_t bytes;   /* bytes the disk delivered to this thread's calls */
    uint64_t busy_ns; /* time inside the timed calls */
    uint64_t hits, misses;
    int rc;
    sp_error err;
} lookup_job;

/* Runs a job (a pthread start routine: arg is a lookup_job). */
void *lookup_job_run(void *arg);

#endif
