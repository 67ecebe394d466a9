/*
 * serve_metrics.c: the server's counters and their Prometheus text form;
 * see serve_metrics.h.
 *
 * Requests are counted per endpoint and exact status code in a fixed
 * array (6 x 600 counters, 28 KiB) rather than a map, so recording never
 * allocates or locks; only non-zero pairs are printed.
 */
#include "stages/serve/serve_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const endpoint_names[SERVE_EP_COUNT] = {"get",     "get_many", "prefix",  "info",
                                                           "healthz", "metrics",  "suggest", "page",
                                                           "search",  "other"};

/* Seconds: from a warm lookup (microseconds) to a stalled client. */
static const double bucket_le[SERVE_LATENCY_BUCKETS] = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
    0.005,   0.01,     0.025,   0.05,   0.1,     0.25,   1,     10};

void serve_metrics_init(serve_metrics *m) {
    memset(m, 0, sizeof *m);
}

void serve_metrics_record(serve_metrics *m, serve_endpoint ep, unsigned status, uint64_t ns,
                          bool missed) {
    if (ep >= SERVE_EP_COUNT)
        ep = SERVE_EP_OTHER;
    if (status >= SERVE_STATUS_MAX)
        status = 0; /* printed as status="other"; HTTP has none above 599 */
    atomic_fetch_add_explicit(&m->requests[ep][status], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < SERVE_LATENCY_BUCKETS && (double)ns > bucket_le[b] * 1e9)
        b++;
    atomic_fetch_add_explicit(&m->latency[ep][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->latency_ns_sum[ep], ns, memory_order_relaxed);
    if (missed)
        atomic_fetch_add_explicit(&m->misses, 1, memory_order_relaxed);
}

static uint64_t get(atomic_uint_fast64_t *c) {
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', out);
        if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

static void put_requests(FILE *out, serve_metrics *m) {
    fputs("# HELP sstpipe_serve_requests_total Requests answered, by endpoint and status.\n"
          "# TYPE sstpipe_serve_requests_total counter\n",
          out);
    for (int ep = 0; ep < SERVE_EP_COUNT; ep++)
        for (int s = 0; s < SERVE_STATUS_MAX; s++) {
            uint64_t n = get(&m->requests[ep][s]);
            if (!n)
                continue;
            fprintf(out, "sstpipe_serve_requests_total{endpoint=\"%s\",status=\"",
                    endpoint_names[ep]);
            if (s)
                fprintf(out, "%d", s);
            else
                fputs("other", out);
            fprintf(out, "\"} %llu\n", (unsigned long long)n);
        }
}

static void put_latency(FILE *out, serve_metrics *m) {
    fputs("# HELP sstpipe_serve_request_duration_seconds Time from a request's headers to its "
          "response sent.\n"
          "# TYPE sstpipe_serve_request_duration_seconds histogram\n",
          out);
    for (int ep = 0; ep < SERVE_EP_COUNT; ep++) {
        uint64_t cum = 0;
        for (int b = 0; b <= SERVE_LATENCY_BUCKETS; b++) {
            cum += get(&m->latency[ep][b]);
            fprintf(out, "sstpipe_serve_request_duration_seconds_bucket{endpoint=\"%s\",le=\"",
                    endpoint_names[ep]);
            if (b < SERVE_LATENCY_BUCKETS)
                fprintf(out, "%g", bucket_le[b]);
            else
                fputs("+Inf", out);
            fprintf(out, "\"} %llu\n", (unsigned long long)cum);
        }
        fprintf(out,
                "sstpipe_serve_request_duration_seconds_sum{endpoint=\"%s\"} %.9f\n"
                "sstpipe_serve_request_duration_seconds_count{endpoint=\"%s\"} %llu\n",
                endpoint_names[ep], (double)get(&m->latency_ns_sum[ep]) / 1e9, endpoint_names[ep],
                (unsigned long long)cum);
    }
}

char *serve_metrics_render(serve_metrics *m, const served_table *t, uint64_t swaps, size_t *len) {
    char *buf = NULL;
    FILE *out = open_memstream(&buf, len);
    if (!out)
        return NULL;
    put_requests(out, m);
    put_latency(out, m);
    sstpipe_info info;
    sstpipe_info_get(t->table, &info);
    fprintf(out,
            "# HELP sstpipe_serve_lookup_misses_total Lookups (/v1/get) of absent keys.\n"
            "# TYPE sstpipe_serve_lookup_misses_total counter\n"
            "sstpipe_serve_lookup_misses_total %llu\n"
            "# HELP sstpipe_serve_in_flight Requests being answered now.\n"
            "# TYPE sstpipe_serve_in_flight gauge\n"
            "sstpipe_serve_in_flight %lld\n"
            "# HELP sstpipe_serve_table_info The served table, by name (the value is always 1).\n"
            "# TYPE sstpipe_serve_table_info gauge\n"
            "sstpipe_serve_table_info{path=\"",
            (unsigned long long)get(&m->misses),
            (long long)atomic_load_explicit(&m->in_flight, memory_order_relaxed));
    put_label(out, t->name);
    fprintf(out,
            "\"} 1\n"
            "# HELP sstpipe_serve_table_build_time_seconds When the served table was written "
            "(its mtime, Unix time).\n"
            "# TYPE sstpipe_serve_table_build_time_seconds gauge\n"
            "sstpipe_serve_table_build_time_seconds %lld\n"
            "# HELP sstpipe_serve_table_records Records in the served table.\n"
            "# TYPE sstpipe_serve_table_records gauge\n"
            "sstpipe_serve_table_records %llu\n"
            "# HELP sstpipe_serve_table_swaps_total Publishes followed (tables swapped in).\n"
            "# TYPE sstpipe_serve_table_swaps_total counter\n"
            "sstpipe_serve_table_swaps_total %llu\n",
            (long long)t->build_time, (unsigned long long)info.records, (unsigned long long)swaps);
    if (fclose(out)) {
        free(buf);
        return NULL;
    }
    return buf;
}
