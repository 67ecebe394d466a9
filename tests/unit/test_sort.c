/*
 * test_sort.c: the sorter when everything fits in memory, duplicate keys in
 * one chunk, empty input, and the errors it must give (a record over a
 * quarter of the budget, a missing scratch directory, bad options).
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

/* Collects what the sorter emits, checking keys strictly increase. */
typedef struct collected {
    char **keys;
    char **vals;
    size_t n, cap;
} collected;

static int collect_put(void *ctx, const sp_record *rec, sp_error *err) {
    (void)err;
    collected *c = ctx;
    assert_int_equal(rec->value_fd, -1);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->keys = realloc(c->keys, c->cap * sizeof *c->keys);
        c->vals = realloc(c->vals, c->cap * sizeof *c->vals);
    }
    c->keys[c->n] = strndup((const char *)rec->key, rec->key_len);
    c->vals[c->n] = strndup((const char *)rec->value, rec->value_len);
    if (c->n)
        assert_true(strcmp(c->keys[c->n - 1], c->keys[c->n]) < 0);
    c->n++;
    return 0;
}

static void collected_free(collected *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->keys[i]);
        free(c->vals[i]);
    }
    free(c->keys);
    free(c->vals);
}

static void add(sorter *s, const char *k, const char *v) {
    sp_error err = {0};
    sp_record rec = {.key = (const uint8_t *)k,
                     .key_len = (uint32_t)strlen(k),
                     .value = (const uint8_t *)v,
                     .value_len = strlen(v),
                     .value_fd = -1};
    assert_int_equal(sorter_add(s, &rec, &err), 0);
}

static sorter *make(uint64_t memory) {
    sort_options o;
    sort_options_init(&o);
    o.memory = memory;
    sp_error err = {0};
    sorter *s = sorter_init(&o, &err);
    assert_non_null(s);
    return s;
}

static void finish(sorter *s, collected *c) {
    sp_error err = {0};
    sp_sink out = {.put = collect_put, .ctx = c};
    assert_int_equal(sorter_finish(s, &out, &err), 0);
}

static void test_in_memory(void **state) {
    (void)state;
    sorter *s = make(SORT_DEFAULT_MEMORY);
    /* Keys sharing 8-byte prefixes and differing after, and prefixes of each other. */
    const char *k[] = {
        "Category:Zebra",  "Category:Apple",    "Categor", "Category:", "Z", "A", "Ab",
        "Category:Apples", "\xC3\xA9t\xC3\xA9", "a"};
    for (int i = 0; i < 10; i++)
        add(s, k[i], k[i] + 1);
    /* Many records in descending order, so the sort has real work to do. */
    char key[32];
    for (int i = 5000; i > 0; i--) {
        snprintf(key, sizeof key, "n%06d", i * 7919 % 10007);
        add(s, key, key);
    }
    collected c = {0};
    finish(s, &c);
    const sort_stats *st = sorter_stats(s);
    assert_int_equal(st->records_in, 5010);
    assert_int_equal(st->records_out, 5010);
    assert_int_equal(c.n, 5010);
    assert_int_equal(st->duplicates_replaced, 0);
    assert_int_equal(st->runs, 0);
    assert_int_equal(st->merge_passes, 0);
    assert_int_equal(st->spilled_bytes, 0);
    const char *first[] = {
        "A", "Ab", "Categor", "Category:", "Category:Apple", "Category:Apples", "Category:Zebra",
        "Z", "a"};
    for (int i = 0; i < 9; i++) {
        assert_string_equal(c.keys[i], first[i]);
        assert_string_equal(c.vals[i], first[i] + 1);
    }
    assert_string_equal(c.keys[c.n - 1], "\xC3\xA9t\xC3\xA9"); /* bytes >= 0x80 sort last */
    collected_free(&c);
    sorter_destroy(s);
}

static void test_duplicates_in_one_chunk(void **state) {
    (void)state;
    sorter *s = make(SORT_MIN_MEMORY);
    add(s, "b", "first");
    add(s, "a", "only");
    add(s, "b", "second");
    add(s, "c", "x");
    add(s, "b", "third");
    add(s, "c", "y");
    collected c = {0};
    finish(s, &c);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.keys[1], "b");
    assert_string_equal(c.vals[1], "third");
    assert_string_equal(c.vals[2], "y");
    assert_int_equal(sorter_stats(s)->duplicates_replaced, 3);
    assert_int_equal(sorter_stats(s)->records_out, 3);
    collected_free(&c);
    sorter_destroy(s);
}

static void test_empty(void **state) {
    (void)state;
    sorter *s = make(SORT_MIN_MEMORY);
    collected c = {0};
    finish(s, &c);
    assert_int_equal(c.n, 0);
    const sort_stats *st = sorter_stats(s);
    assert_int_equal(st->records_in + st->records_out + st->runs + st->merge_passes, 0);
    sorter_destroy(s);
}

static void test_record_over_limit(void **state) {
    (void)state;
    sorter *s = make(SORT_MIN_MEMORY);
    size_t n = SORT_MIN_MEMORY / 4; /* with its key, just over a quarter */
    uint8_t *v = calloc(1, n);
    sp_record rec = {
        .key = (const uint8_t *)"Huge", .key_len = 4, .value = v, .value_len = n, .value_fd = -1};
    sp_error err = {0};
    assert_int_equal(sorter_add(s, &rec, &err), -1);
    assert_non_null(strstr(err.msg, "'Huge'"));
    assert_non_null(strstr(err.msg, "quarter of the sort memory"));
    assert_non_null(strstr(err.msg, "truncate"));
    /* Exactly a quarter is accepted, and comes back out. */
    rec.value_len = n - 4;
    sp_error_clear(&err);
    assert_int_equal(sorter_add(s, &rec, &err), 0);
    collected c = {0};
    finish(s, &c);
    assert_int_equal(c.n, 1);
    collected_free(&c);
    free(v);
    sorter_destroy(s);
}

static void test_bad_key(void **state) {
    (void)state;
    sorter *s = make(SORT_MIN_MEMORY);
    uint8_t key[SP_MAX_KEY_BYTES + 1];
    memset(key, 'k', sizeof key);
    sp_record rec = {
        .key = key, .key_len = sizeof key, .value = key, .value_len = 0, .value_fd = -1};
    sp_error err = {0};
    assert_int_equal(sorter_add(s, &rec, &err), -1);
    assert_non_null(strstr(err.msg, "key of 321 bytes"));
    sorter_destroy(s);
}

static void test_bad_options(void **state) {
    (void)state;
    sort_options o;
    sort_options_init(&o);
    sp_error err = {0};

    o.tmp_dir = "/nonexistent/sstpipe-scratch";
    assert_null(sorter_init(&o, &err));
    assert_non_null(strstr(err.msg, "/nonexistent/sstpipe-scratch"));
    assert_non_null(strstr(err.msg, "No such file or directory"));

    sort_options_init(&o);
    o.memory = SORT_MIN_MEMORY - 1;
    sp_error_clear(&err);
    assert_null(sorter_init(&o, &err));
    assert_non_null(strstr(err.msg, "minimum"));

    sort_options_init(&o);
    o.fan_in = 1;
    sp_error_clear(&err);
    assert_null(sorter_init(&o, &err));
    assert_non_null(strstr(err.msg, "fan-in"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_memory), cmocka_unit_test(test_duplicates_in_one_chunk),
        cmocka_unit_test(test_empty),     cmocka_unit_test(test_record_over_limit),
        cmocka_unit_test(test_bad_key),   cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
