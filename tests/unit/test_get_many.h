/*
 * test_get_many.h: the check that sstpipe_get_many answers as sstpipe_get
 * does, key by key, over a table's records: every key in a shuffled order,
 * some twice (duplicates in one batch), a miss just after each, an empty
 * and an over-long key; in one batch of them all and in small batches.
 * Header-only, for test_sstpipe_api.c (tables) and test_sstpipe_set.c
 * (sets); include it after cmocka.h and test_sst_util.h.
 */
#ifndef SSTPIPE_TEST_GET_MANY_H
#define SSTPIPE_TEST_GET_MANY_H

#include "stages/sst/sstpipe.h"

#include <stdlib.h>
#include <string.h>

typedef struct gm_case {
    uint8_t key[SP_MAX_KEY_BYTES + 2];
    size_t klen;
    int found; /* sstpipe_get's answer */
    uint8_t *value;
    size_t vlen;
} gm_case;

/* Keys [0, n) of c in batches of at most step, each compared with c. */
static inline void gm_batches(sstpipe_table *t, const gm_case *c, size_t n, size_t step) {
    const void **keys = calloc(n, sizeof *keys), **values = calloc(n, sizeof *values);
    size_t *klens = calloc(n, sizeof *klens), *vlens = calloc(n, sizeof *vlens);
    assert_true(keys && values && klens && vlens);
    for (size_t at = 0; at < n; at += step) {
        size_t m = n - at < step ? n - at : step;
        for (size_t i = 0; i < m; i++) {
            keys[i] = c[at + i].key;
            klens[i] = c[at + i].klen;
        }
        char *msg = NULL;
        if (sstpipe_get_many(t, m, keys, klens, values, vlens, &msg) != 0)
            fail_msg("get_many: %s", msg);
        for (size_t i = 0; i < m; i++) {
            const gm_case *w = &c[at + i];
            if (!w->found) {
                assert_null(values[i]);
                assert_int_equal(vlens[i], 0);
                continue;
            }
            assert_non_null(values[i]);
            assert_int_equal(vlens[i], w->vlen);
            if (w->vlen)
                assert_memory_equal(values[i], w->value, w->vlen);
        }
    }
    free(keys);
    free(values);
    free(klens);
    free(vlens);
}

static inline void get_many_as_get(sstpipe_table *t, const trecs *s, uint64_t seed) {
    size_t n = 2 * s->n + s->n / 5 + 2, k = 0;
    gm_case *c = calloc(n, sizeof *c);
    assert_non_null(c);
    for (size_t i = 0; i < s->n; i++) {
        const trec *r = &s->r[i];
        memcpy(c[k].key, r->key, r->klen);
        c[k++].klen = r->klen;
        memcpy(c[k].key, r->key, r->klen);
        c[k++].klen = r->klen + 1; /* just after it: key and a zero byte */
        if (i % 5 == 0) {
            memcpy(c[k].key, r->key, r->klen);
            c[k++].klen = r->klen;
        }
    }
    c[k++].klen = 0;
    memset(c[k].key, 'A', SP_MAX_KEY_BYTES + 1);
    c[k++].klen = SP_MAX_KEY_BYTES + 1;
    assert_int_equal(k, n);
    for (size_t i = n - 1; i > 0; i--) { /* shuffled: duplicates far apart and close */
        size_t j = (size_t)(t_rand(&seed) % (i + 1));
        gm_case tmp = c[i];
        c[i] = c[j];
        c[j] = tmp;
    }
    for (size_t i = 0; i < n; i++) {
        const void *v;
        char *msg = NULL;
        c[i].found = sstpipe_get(t, c[i].key, c[i].klen, &v, &c[i].vlen, &msg);
        if (c[i].found < 0)
            fail_msg("get: %s", msg);
        if (c[i].found) {
            c[i].value = malloc(c[i].vlen + 1);
            memcpy(c[i].value, v, c[i].vlen);
        }
    }
    size_t steps[] = {n, 1, 2, 7, 64};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        gm_batches(t, c, n, steps[i]);
    for (size_t i = 0; i < n; i++)
        free(c[i].value);
    free(c);
}

#endif
