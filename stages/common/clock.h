/*
 * clock.h: the one clock of every measurement sstpipe reports: the
 * monotonic clock (in nanoseconds, or in seconds as a double) for phase and
 * latency times, and the CPU time of the process and of the calling thread
 * for the CPU figures beside them. Times are measurements of one run, never
 * part of an output file's content: nothing that is written depends on
 * them. (Dates, which are the real-time clock, are not here.)
 */
#ifndef SSTPIPE_COMMON_CLOCK_H
#define SSTPIPE_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The monotonic clock in nanoseconds: latencies and deadlines in whole
 * units, where a double would round. */
static inline uint64_t sp_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double sp_timespec_seconds(const struct timespec *ts) {
    return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

/* The monotonic clock in seconds: phase times, subtracted and printed. */
static inline double sp_clock_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return sp_timespec_seconds(&ts);
}

/* The time ns nanoseconds from now on the monotonic clock, as the absolute
 * deadline pthread_cond_timedwait takes on a condition variable that runs
 * on that clock (pthread_condattr_setclock). */
static inline struct timespec sp_clock_deadline(uint64_t ns) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns += (uint64_t)ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    return ts;
}

/* The CPU seconds (user and system) the whole process, every thread of it,
 * has used so far. */
static inline double sp_process_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return sp_timespec_seconds(&ts);
}

/* The CPU seconds the calling thread has used so far. */
static inline double sp_thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return sp_timespec_seconds(&ts);
}

#endif
