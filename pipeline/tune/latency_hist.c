/* latency_hist.c: the log-linear latency histogram; see latency_hist.h. */
#include "pipeline/tune/latency_hist.h"

#include <string.h>

void latency_hist_init(latency_hist *h) {
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

/* Bin of v: v itself below 64; above, the power of two (msb) picks a group
 * of 32 bins and the 5 bits after the leading one pick the bin in it. */
static unsigned bin_of(uint64_t v) {
    if (v < 64)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - 5;
    return 64 + (shift - 1) * 32 + (unsigned)((v >> shift) - 32);
}

/* The largest value that falls in bin b. */
static uint64_t bin_upper(unsigned b) {
    if (b < 64)
        return b;
    unsigned shift = (b - 64) / 32 + 1;
    uint64_t top = 32 + (b - 64) % 32;
    return ((top + 1) << shift) - 1;
}

void latency_hist_add(latency_hist *h, uint64_t v) {
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->bins[bin_of(v)]++;
}

void latency_hist_merge(latency_hist *into, const latency_hist *from) {
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
    for (unsigned b = 0; b < LATENCY_HIST_BINS; b++)
        into->bins[b] += from->bins[b];
}

uint64_t latency_hist_percentile(const latency_hist *h, double p) {
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)((p / 100.0) * (double)h->count + 0.999999999);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (unsigned b = 0; b < LATENCY_HIST_BINS; b++) {
        seen += h->bins[b];
        if (seen >= rank) {
            uint64_t v = bin_upper(b);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}
