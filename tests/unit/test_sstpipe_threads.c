/*
 * test_sstpipe_threads.c: one libsstpipe table used by many threads at
 * once, mapped and with direct I/O. The threads start together on a fresh
 * table (so several race to check the same block on its first lookup),
 * each looks every key up in its own order, checks absent keys, and runs
 * prefix scans beside the lookups; every answer is compared with the
 * records. Any wrong answer, error or sanitizer report fails.
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
    size_t wrong, errors, found;
} worker;

static int scan_prefix(worker *w, const trec *r) {
    size_t plen = r->klen < 2 ? r->klen : 2;
    sstpipe_iter *it = sstpipe_iter_new(w->sh->t, NULL, 0, r->key, plen);
    if (!it)
        return -1;
    const void *k, *v;
    size_t kl, vl, n = 0, expect = 0;
    for (size_t i = 0; i < w->sh->s->n; i++)
        expect += w->sh->s->r[i].klen >= plen && !memcmp(w->sh->s->r[i].key, r->key, plen);
    char *msg = NULL;
    int rc;
    while ((rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1)
        n += kl >= plen && !memcmp(k, r->key, plen);
    sstpipe_iter_free(it);
    if (rc < 0) {
        sstpipe_free(msg);
        w->errors++;
    }
    return n == expect ? 0 : -1;
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
        if (n % 97 == 0 && scan_prefix(w, r))
            w->wrong++;
    }
    free(order);
    return NULL;
}

static void many_threads(bool direct) {
    char *dir = test_dir_make("sstpipe-threads");
    char *path = t_path(dir, "t.sst");
    trecs s = t_random(29, 6000, MVB);
    sp_error err = {0};
    assert_int_equal(t_write(path, BS, CS, MVB, &s, NULL, &err), 0);
    sstpipe_options *o = sstpipe_options_init();
    sstpipe_options_set_direct_io(o, direct);
    char *msg = NULL;
    shared sh = {.s = &s};
    sh.t = sstpipe_open_with(path, o, &msg);
    sstpipe_options_destroy(o);
    if (!sh.t)
        fail_msg("%s", msg);
    pthread_barrier_init(&sh.start, NULL, THREADS);
    pthread_t tid[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.sh = &sh, .seed = (uint64_t)i * 7919 + 1};
        assert_int_equal(pthread_create(&tid[i], NULL, run, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
        assert_int_equal(w[i].errors, 0);
        assert_int_equal(w[i].wrong, 0);
        assert_int_equal(w[i].found, s.n);
    }
    pthread_barrier_destroy(&sh.start);
    sstpipe_close(sh.t);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
}

static void test_threads_mapped(void **state) {
    (void)state;
    many_threads(false);
}

static void test_threads_direct(void **state) {
    (void)state;
    many_threads(true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_mapped),
        cmocka_unit_test(test_threads_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
