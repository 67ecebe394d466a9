/*
 * get_vs_profile.c: sstpipe_get's warm p50 against profile's, on the same
 * keys, paired and interleaved in time in one process (tests/bench/lib_bench.py).
 *
 *   get_vs_profile TABLE N SEED ROUNDS
 *
 * The two time the same call (profile times sstpipe_get itself, issue 30;
 * it also reads the kernel's read counts between calls, which this
 * measures the effect of) and their p50s sit near 1 us, so
 * the figure is a ratio near 1 that one process's luck (where its pages and
 * keys land, the machine's moment) moves by more than any cost of the API:
 * timed as two programs one after the other, the p50 of one program varied
 * from 0.79 to 1.12 us between runs of one 1G benchmark. Here both sides
 * run in one process, round after round, each round with the keys of its
 * own seed (SEED + round):
 *
 *   - profile: profile_run, the function `sstpipe profile TABLE N --seed S`
 *     runs (warm, mapped, 1 thread): its own fresh sstpipe_open, so the
 *     first lookup of a block pays the block's full check, and its p50;
 *   - get: the same keys (profile_keys_draw, its hash checked against
 *     profile's), a fresh sstpipe_open (so each block is checked on its
 *     first lookup here too), each key looked up once with sstpipe_get
 *     through the shared library, timed alone with CLOCK_MONOTONIC on a
 *     thread of its own as profile's are, and the p50 by profile's
 *     nearest rank.
 *
 * The order within a round alternates (profile first, then get first), so
 * that a drift of the machine's speed favours neither; the figure is the
 * median of the rounds' ratios (get over profile). Prints JSON: every
 * round (its seed, its keys' hash as bench_keys prints it, which side ran
 * first, both p50s, their ratio), and that median.
 *
 * Every key must be found (they were drawn from the table): a miss or an
 * error fails the run.
 */
#include "stages/profile/profile.h"
#include "stages/profile/profile_keys.h"
#include "stages/sst/sstpipe.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what, const char *msg) {
    fprintf(stderr, "get_vs_profile: %s: %s\n", what, msg ? msg : "failed");
    exit(1);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* profile's p50: the nearest rank, ceil(n / 2). */
static uint64_t p50(uint64_t *lat, uint64_t n) {
    qsort(lat, n, sizeof *lat, cmp_u64);
    return lat[(n + 1) / 2 - 1];
}

typedef struct get_pass {
    const char *path;
    const profile_keys *keys;
    uint64_t *lat;
} get_pass;

static void *get_run(void *arg) {
    get_pass *g = arg;
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(g->path, &msg);
    if (!t)
        die(g->path, msg);
    const profile_keys *k = g->keys;
    for (uint64_t i = 0; i < k->n; i++) {
        const void *v;
        size_t vlen;
        uint64_t t0 = now_ns();
        int rc =
            sstpipe_get(t, k->bytes + k->start[i], k->start[i + 1] - k->start[i], &v, &vlen, &msg);
        g->lat[i] = now_ns() - t0;
        if (rc != 1)
            die("sstpipe_get", rc < 0 ? msg : "a key drawn from the table was not found");
    }
    sstpipe_close(t);
    return NULL;
}

/* The get side of a round: sstpipe_get's p50 over keys, on a fresh table. */
static uint64_t get_p50(const char *path, const profile_keys *keys) {
    get_pass g = {.path = path, .keys = keys, .lat = malloc(keys->n * sizeof(uint64_t))};
    pthread_t tid;
    if (!g.lat)
        die("get", "out of memory");
    if (pthread_create(&tid, NULL, get_run, &g) != 0)
        die("pthread_create", "cannot start the lookup thread");
    pthread_join(tid, NULL);
    uint64_t p = p50(g.lat, keys->n);
    free(g.lat);
    return p;
}

/* The profile side of a round: profile_run's p50; *hash its key sequence's. */
static uint64_t profile_p50(const char *path, uint64_t n, uint64_t seed, uint64_t *hash) {
    profile_options o;
    profile_options_init(&o);
    o.n = n;
    o.seed = seed;
    profile_result res;
    profile_result_init(&res);
    sp_error err = {0};
    if (profile_run(path, &o, &res, &err))
        die("profile", err.msg);
    if (res.hits != n)
        die("profile", "a key drawn from the table was not found");
    uint64_t p = res.p50_ns;
    *hash = res.key_sequence_hash;
    profile_result_destroy(&res);
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: get_vs_profile TABLE N SEED ROUNDS\n");
        return 2;
    }
    const char *path = argv[1];
    uint64_t n = strtoull(argv[2], NULL, 10), seed = strtoull(argv[3], NULL, 10);
    unsigned rounds = (unsigned)strtoul(argv[4], NULL, 10);
    if (n == 0 || rounds == 0)
        die("usage", "N and ROUNDS must be at least 1");
    double *ratio = calloc(rounds, sizeof *ratio);
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(path, &msg); /* for drawing the keys, untimed */
    if (!t || !ratio)
        die(path, t ? "out of memory" : msg);
    printf("{\"lookups\": %llu, \"rounds\": [", (unsigned long long)n);
    for (unsigned r = 0; r < rounds; r++) {
        profile_keys keys;
        sp_error err = {0};
        if (profile_keys_draw(t, n, 0, seed + r, &keys, &err))
            die("profile_keys_draw", err.msg);
        bool get_first = r % 2;
        uint64_t hash = 0, g = get_first ? get_p50(path, &keys) : 0;
        uint64_t p = profile_p50(path, n, seed + r, &hash);
        if (!get_first)
            g = get_p50(path, &keys);
        if (hash != keys.hash)
            die("profile", "profile_run drew other keys than profile_keys_draw");
        ratio[r] = (double)g / (double)p;
        printf("%s\n {\"seed\": %llu, \"key_hash\": \"%016llx\", \"first\": \"%s\", "
               "\"profile_p50_ns\": %llu, \"get_p50_ns\": %llu, \"ratio\": %.4f}",
               r ? "," : "", (unsigned long long)(seed + r), (unsigned long long)keys.hash,
               get_first ? "get" : "profile", (unsigned long long)p, (unsigned long long)g,
               ratio[r]);
        profile_keys_destroy(&keys);
    }
    qsort(ratio, rounds, sizeof *ratio, cmp_double);
    double med = rounds % 2 ? ratio[rounds / 2] : (ratio[rounds / 2 - 1] + ratio[rounds / 2]) / 2;
    printf("],\n \"ratio\": %.4f}\n", med);
    sstpipe_close(t);
    free(ratio);
    return 0;
}
