/*
 * clock.h: the monotonic clock in nanoseconds, for the phase times the
 * commands report with -v (merge's copy, rebuild, index and sync phases),
 * and the calling thread's CPU time, for the per-thread CPU figures.
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

/* The CPU seconds the calling thread has used so far. */
static inline double sp_thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
