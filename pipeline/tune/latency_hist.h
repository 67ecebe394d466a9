/*
 * latency_hist.h: a log-linear histogram of latencies (private to
 * pipeline/tune).
 *
 * iotest can do millions of IOs per pattern, too many to keep each
 * latency; a histogram with 32 linear bins per power of two keeps the
 * percentiles within 1/32 of the truth in fixed memory, and threads merge
 * their own histograms at the end without locks. Min, max and the sum (so
 * the average) are kept exactly.
 */
#ifndef SSTPIPE_TUNE_LATENCY_HIST_H
#define SSTPIPE_TUNE_LATENCY_HIST_H

#include <stdint.h>

/* Values below 64 get a bin each; above, 32 bins per power of two up to 2^64. */
#define LATENCY_HIST_BINS (64 + 58 * 32)

typedef struct latency_hist {
    uint64_t count, sum, min, max;
    uint64_t bins[LATENCY_HIST_BINS];
} latency_hist;

void latency_hist_init(latency_hist *h);
void latency_hist_add(latency_hist *h, uint64_t v);
void latency_hist_merge(latency_hist *into, const latency_hist *from);
/* The upper bound of the bin holding the nearest-rank p-th percentile,
 * clamped to [min, max]; 0 when empty. */
uint64_t latency_hist_percentile(const latency_hist *h, double p);

#endif
