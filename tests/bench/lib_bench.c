/*
 * lib_bench.c: times libsstpipe's sstpipe_get with 2 threads on one table
 * against 1 for the benchmark (tests/bench/lib_bench.py), through the
 * installed-style public header and the shared library only.
 *
 *   lib_bench scaling TABLE KEYS WINDOW_MS PAIRS
 *
 * KEYS is bench_keys' output: the keys `sstpipe profile TABLE N --seed S`
 * looks up, in its order (u32 little-endian length, then the key). (The
 * single-thread p50 against profile's is get_vs_profile.c's.)
 *
 * scaling: lookups per second of 2 threads sharing the one table against 1
 * thread, in one process on one warm table. After an untimed pass over
 * the keys (every block they reach checked) and a 2-thread window, PAIRS pairs of timed
 * windows of WINDOW_MS each, 1 thread and 2 in alternating order; in every
 * window the threads start at one barrier and stop at one flag, each
 * walking all the keys from its own start and counting its lookups, and
 * the window's rate is the sum of each thread's lookups over its own time.
 * Beside each, the CPU time per lookup (equal for 1 and 2 threads when the
 * threads do not slow each other down, however busy the machine is), and
 * the same pair of windows for a control that only does arithmetic in
 * registers: what 2 threads give over 1 on this machine with no memory in
 * play. Prints JSON: every pair's figures, and the medians of the pairs'
 * ratios (ratio, cpu_ratio, arith_ratio).
 *
 * Every key must be found (they were drawn from the table): a miss or an
 * error fails the run.
 */
#include "stages/sst/sstpipe.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
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

/* ------------------------------------------------------------- scaling */

/* What one thread of a window did; each on its own cache line, so that the
 * bench's own bookkeeping shares nothing between threads. */
typedef struct tally {
    _Alignas(64) uint64_t ops;
    uint64_t wall_ns, cpu_ns;
} tally;

typedef struct window {
    sstpipe_table *t;
    const keys *k;
    bool arith; /* the control: arithmetic in registers, no memory */
    pthread_barrier_t go;
    _Alignas(64) atomic_bool stop;
} window;

typedef struct job {
    window *w;
    size_t first; /* the key this thread starts at */
    tally *out;
} job;

/* Lookups in batches between looks at the stop flag, so that the flag's
 * cache line is read once per batch, never written until the end. */
#define BATCH 64

static void *job_run(void *arg) {
    job *j = arg;
    window *w = j->w;
    const keys *k = w->k;
    size_t i = j->first;
    uint64_t ops = 0, x = j->first + 1;
    pthread_barrier_wait(&w->go);
    uint64_t t0 = now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
        if (w->arith) {
            for (unsigned b = 0; b < BATCH * 256; b++)
                x = x * 6364136223846793005u + 1442695040888963407u;
            /* An empty asm that takes x: the loop must run. */
            __asm__ volatile("" : : "r"(x));
        } else {
            for (unsigned b = 0; b < BATCH; b++) {
                lookup(w->t, k, i);
                i = i + 1 == k->n ? 0 : i + 1;
            }
        }
        ops += BATCH;
    }
    j->out->wall_ns = now_ns() - t0;
    j->out->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    j->out->ops = ops;
    return NULL;
}

/* Runs threads threads for ms milliseconds, all started at one barrier and
 * stopped by one flag: the rate is the sum of each thread's operations over
 * its own time between the two, so every thread counts over the same
 * window and a thread that finishes late adds nothing. Returns operations
 * per second; *cpu_per_op the CPU time per operation. */
static double run_window(window *w, unsigned threads, unsigned ms, double *cpu_per_op) {
    tally *tl = aligned_alloc(64, threads * sizeof *tl);
    job *jobs = calloc(threads, sizeof *jobs);
    pthread_t *tids = calloc(threads, sizeof *tids);
    if (!tl || !jobs || !tids)
        die("scaling", "out of memory");
    atomic_store(&w->stop, false);
    pthread_barrier_init(&w->go, NULL, threads + 1);
    for (unsigned i = 0; i < threads; i++) {
        /* Every thread walks all the keys, each from its own start: the
         * same work per thread, the same blocks warm. */
        jobs[i] = (job){.w = w, .first = w->k->n * i / threads, .out = &tl[i]};
        if (pthread_create(&tids[i], NULL, job_run, &jobs[i]) != 0)
            die("pthread_create", "cannot start a thread");
    }
    pthread_barrier_wait(&w->go);
    struct timespec d = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&d, &d) != 0)
        ;
    atomic_store(&w->stop, true);
    double rate = 0, ops = 0, cpu = 0;
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        rate += (double)tl[i].ops / ((double)tl[i].wall_ns / 1e9);
        ops += (double)tl[i].ops;
        cpu += (double)tl[i].cpu_ns;
    }
    pthread_barrier_destroy(&w->go);
    *cpu_per_op = cpu / ops;
    free(tl);
    free(jobs);
    free(tids);
    return rate;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* PAIRS pairs of windows, 1 thread and 2, their order alternating (1 2,
 * 2 1, ...) so that a drift of the machine's speed favours neither; the
 * same for the arithmetic control. */
static int run_scaling(sstpipe_table *t, const keys *k, unsigned ms, unsigned pairs) {
    window w = {.t = t, .k = k};
    double cpu;
    /* Untimed: every block the keys reach checked, then a window of both
     * threads to warm the caches. */
    for (size_t i = 0; i < k->n; i++)
        lookup(t, k, i);
    run_window(&w, 2, ms, &cpu);
    double *ratio = calloc(pairs, sizeof *ratio), *cratio = calloc(pairs, sizeof *cratio);
    double *cpu_ratio = calloc(pairs, sizeof *cpu_ratio);
    if (!ratio || !cratio || !cpu_ratio)
        die("scaling", "out of memory");
    printf("{\"window_ms\": %u, \"pairs\": [", ms);
    for (unsigned p = 0; p < pairs; p++) {
        double rate[2][2], cpn[2][2];
        for (unsigned arith = 0; arith < 2; arith++) {
            w.arith = arith;
            for (unsigned o = 0; o < 2; o++) {
                unsigned n = p % 2 ? 2 - o : 1 + o;
                rate[arith][n - 1] = run_window(&w, n, ms, &cpn[arith][n - 1]);
            }
        }
        ratio[p] = rate[0][1] / rate[0][0];
        cpu_ratio[p] = cpn[0][1] / cpn[0][0];
        cratio[p] = rate[1][1] / rate[1][0];
        printf("%s\n {\"t1_lookups_per_sec\": %.1f, \"t2_lookups_per_sec\": %.1f, "
               "\"t1_cpu_ns_per_lookup\": %.1f, \"t2_cpu_ns_per_lookup\": %.1f, "
               "\"arith_t1_ops_per_sec\": %.1f, \"arith_t2_ops_per_sec\": %.1f}",
               p ? "," : "", rate[0][0], rate[0][1], cpn[0][0], cpn[0][1], rate[1][0], rate[1][1]);
    }
    printf("],\n \"ratio\": %.4f, \"cpu_ratio\": %.4f, \"arith_ratio\": %.4f}\n",
           median(ratio, pairs), median(cpu_ratio, pairs), median(cratio, pairs));
    free(ratio);
    free(cratio);
    free(cpu_ratio);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6 || strcmp(argv[1], "scaling") != 0) {
        fprintf(stderr, "usage: lib_bench scaling TABLE KEYS WINDOW_MS PAIRS\n");
        return 2;
    }
    keys k;
    load_keys(argv[3], &k);
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(argv[2], &msg);
    if (!t)
        die(argv[2], msg);
    int rc = run_scaling(t, &k, (unsigned)strtoul(argv[4], NULL, 10),
                         (unsigned)strtoul(argv[5], NULL, 10));
    sstpipe_close(t);
    free(k.bytes);
    free(k.start);
    return rc;
}
