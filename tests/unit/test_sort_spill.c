/*
 * test_sort_spill.c: the external path. ~30 MB of random records under a
 * 1 MiB budget with fan-in 2 (dozens of runs, several merge passes), and
 * values too large for a run's read buffer under the automatic fan-in,
 * each compared byte for byte with a reference (qsort, last record wins),
 * with duplicates within chunks, across runs and across merge groups. The
 * scratch directory must stay empty throughout.
 */
#include "stages/sort/sorter.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_dir.h"

static uint64_t rng_state;

static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct ref_record {
    uint8_t *key;
    uint32_t key_len;
    uint8_t *value;
    uint32_t value_len;
    size_t seq;
} ref_record;

static int ref_cmp(const void *pa, const void *pb) {
    const ref_record *a = pa, *b = pb;
    uint32_t m = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, m);
    if (c)
        return c;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Sorts the records and keeps the last of each key; returns how many remain. */
static size_t reference(ref_record *r, size_t n) {
    qsort(r, n, sizeof *r, ref_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && r[i].key_len == r[i + 1].key_len &&
            !memcmp(r[i].key, r[i + 1].key, r[i].key_len))
            continue;
        r[out++] = r[i];
    }
    return out;
}

/* Compares what the sorter emits with the reference, record by record. */
typedef struct checker {
    const ref_record *ref;
    size_t n, at;
} checker;

static int check_put(void *ctx, const sp_record *rec, sp_error *err) {
    (void)err;
    checker *c = ctx;
    assert_true(c->at < c->n);
    const ref_record *want = &c->ref[c->at++];
    assert_int_equal(rec->value_fd, -1);
    assert_int_equal(rec->key_len, want->key_len);
    assert_memory_equal(rec->key, want->key, want->key_len);
    assert_int_equal(rec->value_len, want->value_len);
    if (want->value_len)
        assert_memory_equal(rec->value, want->value, want->value_len);
    return 0;
}

static uint8_t *random_bytes(size_t n) {
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
    return p;
}

/* A pool of keys: random bytes (NUL and bytes >= 0x80 included), a quarter
 * sharing a long prefix so ties on the cached 8 bytes are common. */
static void make_keys(ref_record *pool, size_t n) {
    static const char common[] = "Category:Shared prefix ";
    for (size_t i = 0; i < n; i++) {
        uint32_t len = 1 + (uint32_t)(rnd() % 48);
        uint8_t *k = random_bytes(len + sizeof common);
        if (i % 4 == 0) {
            memcpy(k, common, sizeof common - 1);
            len += sizeof common - 1;
        }
        pool[i].key = k;
        pool[i].key_len = len;
    }
}

/*
 * Feeds n records (keys from a pool of pool_n, values up to max_value
 * bytes) through a sorter with these options, then checks its output and
 * stats against the reference. The key "dup" goes in first, in the middle
 * and last, so it is replaced across the first and last runs, which stay
 * in different merge groups until the final pass.
 */
static sort_stats run_case(const sort_options *opts, size_t n, size_t pool_n, size_t max_value,
                           const char *tmp) {
    ref_record *pool = calloc(pool_n, sizeof *pool);
    make_keys(pool, pool_n);
    ref_record *recs = calloc(n, sizeof *recs);
    uint8_t **values = calloc(n, sizeof *values); /* recs is compacted by reference() */
    sp_error err = {0};
    sorter *s = sorter_init(opts, &err);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        ref_record *r = &recs[i];
        if (i == 0 || i == n / 2 || i == n - 1) {
            r->key = (uint8_t *)"dup";
            r->key_len = 3;
        } else {
            *r = pool[rnd() % pool_n];
        }
        r->value_len = (uint32_t)(rnd() % (max_value + 1));
        r->value = values[i] = random_bytes(r->value_len);
        r->seq = i;
        sp_record rec = {.key = r->key,
                         .key_len = r->key_len,
                         .value = r->value,
                         .value_len = r->value_len,
                         .value_fd = -1};
        assert_int_equal(sorter_add(s, &rec, &err), 0);
    }
    uint8_t *last_dup = recs[n - 1].value;
    uint32_t last_dup_len = recs[n - 1].value_len;
    size_t unique = reference(recs, n);

    checker c = {.ref = recs, .n = unique};
    sp_sink out = {.put = check_put, .ctx = &c};
    assert_int_equal(sorter_finish(s, &out, &err), 0);
    assert_int_equal(c.at, unique);
    /* Scratch files have no names: nothing appears in tmp even before destroy. */
    assert_int_equal(test_dir_entries(tmp), 0);
    for (size_t i = 0; i < unique; i++)
        if (recs[i].key_len == 3 && !memcmp(recs[i].key, "dup", 3)) {
            assert_int_equal(recs[i].value_len, last_dup_len);
            assert_ptr_equal(recs[i].value, last_dup);
        }

    sort_stats st = *sorter_stats(s);
    assert_int_equal(st.records_in, n);
    assert_int_equal(st.records_out, unique);
    assert_int_equal(st.duplicates_replaced, n - unique);
    sorter_destroy(s);
    assert_int_equal(test_dir_entries(tmp), 0);

    for (size_t i = 0; i < n; i++)
        free(values[i]);
    for (size_t i = 0; i < pool_n; i++)
        free(pool[i].key);
    free(values);
    free(recs);
    free(pool);
    return st;
}

/* Passes a merge with this fan-in needs: each pass merges groups of fan_in runs. */
static uint64_t expected_passes(uint64_t runs, uint64_t fan_in) {
    uint64_t passes = 1;
    for (; runs > fan_in; runs = (runs + fan_in - 1) / fan_in)
        passes++;
    return passes;
}

static char tmp[64];

static int setup(void **state) {
    (void)state;
    strcpy(tmp, "/tmp/sp-test-sort-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    assert_int_equal(rmdir(tmp), 0);
    return 0;
}

static void test_multi_pass_fan_in_2(void **state) {
    (void)state;
    rng_state = 42;
    sort_options o;
    sort_options_init(&o);
    o.memory = SORT_MIN_MEMORY;
    o.fan_in = 2;
    o.tmp_dir = tmp;
    /* 30000 records of 0..2 KiB: ~30 MB over 20000 keys (many duplicates). */
    sort_stats st = run_case(&o, 30000, 20000, 2048, tmp);
    assert_true(st.runs >= 30);
    uint64_t passes = expected_passes(st.runs, 2);
    assert_int_equal(st.merge_passes, passes);
    assert_true(st.merge_passes >= 5);
    /* Run formation plus every pass but the last one wrote the data again. */
    assert_true(st.spilled_bytes > (passes - 1) * 20 * 1000 * 1000);
    printf("fan-in 2: runs=%llu merge_passes=%llu spilled_bytes=%llu duplicates=%llu\n",
           (unsigned long long)st.runs, (unsigned long long)st.merge_passes,
           (unsigned long long)st.spilled_bytes, (unsigned long long)st.duplicates_replaced);
}

static void test_fan_in_3_odd_groups(void **state) {
    (void)state;
    rng_state = 7;
    sort_options o;
    sort_options_init(&o);
    o.memory = SORT_MIN_MEMORY + 12345; /* an odd budget must not misalign anything */
    o.fan_in = 3;
    o.tmp_dir = tmp;
    /* ~15 MB over few keys: duplicates inside most chunks and across all runs. */
    sort_stats st = run_case(&o, 20000, 3000, 1500, tmp);
    assert_true(st.runs > 9);
    assert_true(st.runs % 3 != 0); /* a short last group in the first pass */
    assert_int_equal(st.merge_passes, expected_passes(st.runs, 3));
    assert_true(st.merge_passes >= 3);
}

static void test_values_larger_than_read_buffers(void **state) {
    (void)state;
    rng_state = 1234;
    sort_options o;
    sort_options_init(&o);
    o.memory = SORT_MIN_MEMORY; /* automatic fan-in: read buffers of ~64 KiB */
    o.tmp_dir = tmp;
    /* Values up to 250 KiB, near the quarter-budget limit. */
    sort_stats st = run_case(&o, 250, 120, 250 << 10, tmp);
    assert_true(st.runs > 10);
    assert_true(st.merge_passes >= 2);
    printf("large values: runs=%llu merge_passes=%llu\n", (unsigned long long)st.runs,
           (unsigned long long)st.merge_passes);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_multi_pass_fan_in_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fan_in_3_odd_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_values_larger_than_read_buffers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
