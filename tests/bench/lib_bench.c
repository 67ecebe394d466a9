/*
 * lib_bench.c: times libsstpipe's sstpipe_get for the benchmark
 * (tests/bench/lib_bench.py), through the installed-style public header
 * and the shared library only.
 *
 *   lib_bench get TABLE KEYS
 *   lib_bench threads TABLE KEYS THREADS PASSES
 *
 * KEYS is bench_keys' output: the keys `sstpipe profile TABLE N --seed S`
 * looks up, in its order (u32 little-endian length, then the key).
 *
 * get: a fresh process opens TABLE and looks each key up once, in order,
 * each timed alone with CLOCK_MONOTONIC as profile times its warm lookups,
 * so the first lookup of a block pays its check here as it does there; then
 * a second pass over the same keys, every block already checked ("hot").
 * Prints JSON: lookups, p50_ns, p99_ns, hot_p50_ns.
 *
 * threads: one untimed pass checks every block the keys reach, then
 * THREADS threads share the one table, each making PASSES passes over all
 * keys (thread t starting at key t * N / THREADS), started together; the
 * wall time from start to the last join gives lookups per second, and the
 * process's CPU time over the same span the CPU cost of one lookup (equal
 * for 1 and 2 threads when the threads do not slow each other down, however
 * busy the machine's cores are). Prints JSON: threads, lookups, seconds,
 * lookups_per_sec, cpu_ns_per_lookup.
 *
 * Every key must be found (they were drawn from the table): a miss or an
 * error fails the run.
 */
#include "stages/sst/sstpipe.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct keys {
    size_t n;
    uint8_t *bytes;
    size_t *start; /* key i is bytes[start[i] .. start[i + 1]) */
} keys;

static uint64_t clock_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t now_ns(void) {
    return clock_ns(CLOCK_MONOTONIC);
}

static void die(const char *what, const char *msg) {
    fprintf(stderr, "lib_bench: %s: %s\n", what, msg ? msg : "failed");
    exit(1);
}

static void load_keys(const char *path, keys *k) {
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, "cannot open");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *raw = malloc((size_t)size + 1);
    if (!raw || fread(raw, 1, (size_t)size, f) != (size_t)size)
        die(path, "cannot read");
    fclose(f);
    size_t cap = 1024;
    k->n = 0;
    k->start = malloc(cap * sizeof *k->start);
    k->bytes = malloc((size_t)size + 1);
    size_t pos = 0, used = 0;
    while (pos + 4 <= (size_t)size) {
        uint32_t len = (uint32_t)raw[pos] | (uint32_t)raw[pos + 1] << 8 |
                       (uint32_t)raw[pos + 2] << 16 | (uint32_t)raw[pos + 3] << 24;
        pos += 4;
        if (len > (size_t)size - pos)
            die(path, "truncated key");
        if (k->n + 2 > cap)
            k->start = realloc(k->start, (cap *= 2) * sizeof *k->start);
        memcpy(k->bytes + used, raw + pos, len);
        k->start[k->n++] = used;
        used += len;
        pos += len;
    }
    k->start[k->n] = used;
    free(raw);
    if (k->n == 0)
        die(path, "no keys");
}

static void lookup(sstpipe_table *t, const keys *k, size_t i) {
    const void *v;
    size_t vlen;
    char *msg = NULL;
    int rc = sstpipe_get(t, k->bytes + k->start[i], k->start[i + 1] - k->start[i], &v, &vlen, &msg);
    if (rc != 1)
        die("sstpipe_get", rc < 0 ? msg : "a key drawn from the table was not found");
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *lat, size_t n, double p) {
    qsort(lat, n, sizeof *lat, cmp_u64);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return lat[i];
}

static int run_get(sstpipe_table *t, const keys *k) {
    uint64_t *lat = malloc(k->n * sizeof *lat);
    for (size_t i = 0; i < k->n; i++) {
        uint64_t t0 = now_ns();
        lookup(t, k, i);
        lat[i] = now_ns() - t0;
    }
    uint64_t p50 = pct(lat, k->n, 50), p99 = pct(lat, k->n, 99);
    for (size_t i = 0; i < k->n; i++) {
        uint64_t t0 = now_ns();
        lookup(t, k, i);
        lat[i] = now_ns() - t0;
    }
    printf("{\"lookups\": %zu, \"p50_ns\": %llu, \"p99_ns\": %llu, \"hot_p50_ns\": %llu}\n", k->n,
           (unsigned long long)p50, (unsigned long long)p99,
           (unsigned long long)pct(lat, k->n, 50));
    free(lat);
    return 0;
}

typedef struct job {
    sstpipe_table *t;
    const keys *k;
    size_t first;
    unsigned passes;
    pthread_barrier_t *go;
} job;

static void *job_run(void *arg) {
    job *j = arg;
    pthread_barrier_wait(j->go);
    for (unsigned p = 0; p < j->passes; p++)
        for (size_t n = 0, i = j->first; n < j->k->n; n++, i = i + 1 == j->k->n ? 0 : i + 1)
            lookup(j->t, j->k, i);
    return NULL;
}

static int run_threads(sstpipe_table *t, const keys *k, unsigned threads, unsigned passes) {
    for (size_t i = 0; i < k->n; i++)
        lookup(t, k, i);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, threads + 1);
    job *jobs = calloc(threads, sizeof *jobs);
    pthread_t *tids = calloc(threads, sizeof *tids);
    for (unsigned i = 0; i < threads; i++) {
        jobs[i] = (job){.t = t, .k = k, .first = k->n * i / threads, .passes = passes, .go = &go};
        if (pthread_create(&tids[i], NULL, job_run, &jobs[i]) != 0)
            die("pthread_create", "cannot start a thread");
    }
    uint64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    pthread_barrier_wait(&go);
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    double s = (double)(now_ns() - t0) / 1e9;
    double cpu = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
    double n = (double)k->n * passes * threads;
    printf("{\"threads\": %u, \"lookups\": %.0f, \"seconds\": %.6f, \"lookups_per_sec\": %.1f, "
           "\"cpu_ns_per_lookup\": %.1f}\n",
           threads, n, s, n / s, cpu / n);
    pthread_barrier_destroy(&go);
    free(jobs);
    free(tids);
    return 0;
}

int main(int argc, char **argv) {
    bool get = argc == 4 && strcmp(argv[1], "get") == 0;
    bool thr = argc == 6 && strcmp(argv[1], "threads") == 0;
    if (!get && !thr) {
        fprintf(stderr, "usage: lib_bench get TABLE KEYS\n"
                        "       lib_bench threads TABLE KEYS THREADS PASSES\n");
        return 2;
    }
    keys k;
    load_keys(argv[3], &k);
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(argv[2], &msg);
    if (!t)
        die(argv[2], msg);
    int rc = get ? run_get(t, &k)
                 : run_threads(t, &k, (unsigned)strtoul(argv[4], NULL, 10),
                               (unsigned)strtoul(argv[5], NULL, 10));
    sstpipe_close(t);
    free(k.bytes);
    free(k.start);
    return rc;
}
