/*
 * clock.h: the monotonic clock in nanoseconds, for the phase times the
 * commands report with -v (merge's copy, rebuild, index and sync phases).
 * Phase times are measurements of one run, never part of an output file:
 * nothing that is written depends on them.
 */
#ifndef SSTPIPE_COMMON_CLOCK_H
#define SSTPIPE_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t sp_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
