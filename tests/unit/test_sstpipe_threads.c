/*
 * test_sstpipe_threads.c: one libsstpipe table used by many threads at
 * once, mapped and with direct I/O. The threads start together on a fresh
 * table (so several race to check the same block on its first lookup),
 * each looks every key up in its own order, checks absent keys, and runs
 * prefix scans beside the lookups; every answer is compared with the
 * records (a scan's keys and values one by one, and where it stops). Any wrong answer, error or
 * sanitizer report fails. A compressed table (format version 2) with a cache of a few blocks
 * (block_cache.h) has two threads evict each other's blocks while they look up: every value,
 * a copy in the thread's own buffer, must still be its record's.
 */
#include "stages/sst/sstpipe.h"
#include "test_sst_util.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define BS 2048u
#define CS 4096u
#define MVB 300u
#define THREADS 8

typedef struct shared {
    sstpipe_table *t;
    const trecs *s;
    pthread_barrier_t start;
} shared;

typedef struct worker {
    shared *sh;
    uint64_t seed;
    size_t wrong, errors, found, scans, wrong_scans;
} worker;

static bool has_prefix(const trec *r, const uint8_t *prefix, size_t plen) {
    return r->klen >= plen && !memcmp(r->key, prefix, plen);
}

/* A scan of the keys starting with r's first two bytes must give exactly
 * the records with that prefix, keys and values, in key order, and stop
 * at the last of them: the records are sorted, so those are one run, and
 * anything after it (a scan running on past the prefix) is wrong. */
static int scan_prefix(worker *w, const trec *r) {
    const trecs *s = w->sh->s;
    size_t plen = r->klen < 2 ? r->klen : 2;
    sstpipe_iter *it = sstpipe_iter_new(w->sh->t, NULL, 0, r->key, plen);
    if (!it)
        return -1;
    size_t i = 0;
    while (i < s->n && !has_prefix(&s->r[i], r->key, plen))
        i++;
    const void *k, *v;
    size_t kl, vl;
    char *msg = NULL;
    int rc, bad = 0;
    while ((rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1) {
        const trec *want = i < s->n && has_prefix(&s->r[i], r->key, plen) ? &s->r[i] : NULL;
        if (!want || kl != want->klen || memcmp(k, want->key, kl) || vl != want->vlen ||
            (vl && memcmp(v, want->val, vl)))
            bad = 1;
        i++;
    }
    sstpipe_iter_free(it);
    if (rc < 0) {
        sstpipe_free(msg);
        w->errors++;
        return -1;
    }
    /* Ended, and not before the run's last record. */
    if (i < s->n && has_prefix(&s->r[i], r->key, plen))
        bad = 1;
    return bad ? -1 : 0;
}

static void *run(void *arg) {
    worker *w = arg;
    const trecs *s = w->sh->s;
    size_t *order = malloc(s->n * sizeof *order);
    for (size_t i = 0; i < s->n; i++)
        order[i] = i;
    for (size_t i = s->n; i > 1; i--) {
        size_t j = (size_t)(t_rand(&w->seed) % i), x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    pthread_barrier_wait(&w->sh->start);
    for (size_t n = 0; n < s->n; n++) {
        const trec *r = &s->r[order[n]];
        const void *v;
        size_t vlen;
        char *msg = NULL;
        int rc = sstpipe_get(w->sh->t, r->key, r->klen, &v, &vlen, &msg);
        if (rc < 0) {
            sstpipe_free(msg);
            w->errors++;
        } else if (rc != 1 || vlen != r->vlen || (vlen && memcmp(v, r->val, vlen))) {
            w->wrong++;
        } else {
            w->found++;
        }
        uint8_t miss[SP_MAX_KEY_BYTES + 1];
        memcpy(miss, r->key, r->klen);
        miss[r->klen] = 0x01; /* no key byte is below 0x02 */
        if (sstpipe_get(w->sh->t, miss, r->klen + 1, &v, &vlen, NULL) != 0)
            w->wrong++;
        if (n % 97 == 0) {
            w->scans++;
            w->wrong_scans += scan_prefix(w, r) != 0;
        }
    }
    free(order);
    return NULL;
}

/* How a run's table is written and opened. */
typedef struct mode {
    bool direct, compressed;
    size_t block_cache; /* compressed: the cache's budget */
    int threads;
} mode;

static void many_threads(mode m) {
    char *dir = test_dir_make("sstpipe-threads");
    char *path = t_path(dir, "t.sst");
    trecs s = t_random(29, 6000, MVB);
    sp_error err = {0};
    table_options to = {.block_size = BS,
                        .cluster_size = CS,
                        .max_value_bytes = MVB,
                        .compress = m.compressed,
                        .compression_level = 1};
    assert_int_equal(t_write_opts(path, &to, &s, NULL, &err), 0);
    sstpipe_options *o = sstpipe_options_new();
    sstpipe_options_set_direct_io(o, m.direct);
    if (m.compressed)
        sstpipe_options_set_block_cache(o, m.block_cache);
    char *msg = NULL;
    shared sh = {.s = &s};
    sh.t = sstpipe_open_with(path, o, &msg);
    sstpipe_options_free(o);
    if (!sh.t)
        fail_msg("%s", msg);
    pthread_barrier_init(&sh.start, NULL, (unsigned)m.threads);
    pthread_t tid[THREADS];
    worker w[THREADS];
    for (int i = 0; i < m.threads; i++) {
        w[i] = (worker){.sh = &sh, .seed = (uint64_t)i * 7919 + 1};
        assert_int_equal(pthread_create(&tid[i], NULL, run, &w[i]), 0);
    }
    for (int i = 0; i < m.threads; i++) {
        pthread_join(tid[i], NULL);
        assert_int_equal(w[i].errors, 0);
        assert_int_equal(w[i].wrong, 0);
        assert_int_equal(w[i].found, s.n);
        assert_int_equal(w[i].wrong_scans, 0);
        assert_int_equal(w[i].scans, (s.n + 96) / 97);
    }
    pthread_barrier_destroy(&sh.start);
    sstpipe_close(sh.t);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
}

static void test_threads_mapped(void **state) {
    (void)state;
    many_threads((mode){.threads = THREADS});
}

static void test_threads_direct(void **state) {
    (void)state;
    many_threads((mode){.direct = true, .threads = THREADS});
}

/* A budget of a few of the table's unpacked blocks: nearly every lookup
 * evicts one, often one the other thread just used. */
static void test_threads_compressed_small_cache(void **state) {
    (void)state;
    many_threads((mode){.compressed = true, .block_cache = 4 * BS, .threads = 2});
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_mapped),
        cmocka_unit_test(test_threads_direct),
        cmocka_unit_test(test_threads_compressed_small_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
