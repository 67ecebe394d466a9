/*
 * serve_metrics.h: the server's counters and their Prometheus text form
 * (GET /metrics): requests by endpoint and status, a latency histogram per
 * endpoint, lookups that missed, and what table is served.
 *
 * Recording is a few relaxed atomic increments, safe from every worker
 * thread at once; reading them while they change gives each counter's
 * value at some moment, which is all Prometheus asks.
 */
#ifndef SSTPIPE_SERVE_SERVE_METRICS_H
#define SSTPIPE_SERVE_SERVE_METRICS_H

#include "stages/serve/serve_holder.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum serve_endpoint {
    SERVE_EP_GET,
    SERVE_EP_GET_MANY,
    SERVE_EP_PREFIX,
    SERVE_EP_INFO,
    SERVE_EP_HEALTHZ,
    SERVE_EP_METRICS,
    SERVE_EP_SUGGEST,
    SERVE_EP_PAGE,   /* the nightly's HTML pages (serve_pages.h) */
    SERVE_EP_SEARCH, /* the search page at / (serve_search.h) */
    SERVE_EP_OTHER,  /* unknown paths */
    SERVE_EP_COUNT
} serve_endpoint;

/* Upper bounds of the latency buckets, in seconds (+Inf is implied). */
#define SERVE_LATENCY_BUCKETS 16
#define SERVE_STATUS_MAX 600

typedef struct serve_metrics {
    atomic_uint_fast64_t requests[SERVE_EP_COUNT][SERVE_STATUS_MAX];
    atomic_uint_fast64_t latency[SERVE_EP_COUNT][SERVE_LATENCY_BUCKETS + 1];
    atomic_uint_fast64_t latency_ns_sum[SERVE_EP_COUNT];
    atomic_uint_fast64_t misses;
    atomic_int_fast64_t in_flight;
} serve_metrics;

void serve_metrics_init(serve_metrics *m);

/* One finished request: its endpoint, status, time from its headers being
 * read to its response being sent, and whether it was a lookup that missed. */
void serve_metrics_record(serve_metrics *m, serve_endpoint ep, unsigned status, uint64_t ns,
                          bool missed);

/* The Prometheus text exposition (version 0.0.4), malloc'd; NULL when out
 * of memory. t is the table being served, swaps the swaps so far. */
char *serve_metrics_render(serve_metrics *m, const served_table *t, uint64_t swaps, size_t *len);

#endif
