/*
 * test_sort_memory.c: the budget holds. ~150 MB of records stream through a
 * sorter with an 8 MiB budget (records are generated on the fly and the
 * output is checked on the fly, so the test itself holds almost nothing);
 * the process's peak RSS may grow by the budget plus a small constant only.
 * Its own executable, so nothing else inflates the high-water mark.
 */
#include "stages/sort/sorter.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_rss.h"

#define BUDGET (8ull << 20)
#define RECORDS 150000u
#define SLACK (2ull << 20)

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Record i: a unique key in scrambled order, a value of 512..1535 bytes
 * that is a function of the key, so the output can be checked alone. */
static uint32_t make_key(uint32_t i, char *key) {
    return (uint32_t)sprintf(key, "%016llx:%u", (unsigned long long)mix(i), i);
}

static void fill_value(uint64_t seed, uint8_t *v, uint32_t len) {
    for (uint32_t j = 0; j < len; j++)
        v[j] = (uint8_t)(seed >> (j % 8 * 8)) + (uint8_t)j;
}

typedef struct checker {
    char last[64];
    uint32_t last_len;
    uint64_t n, bytes;
    uint8_t want[1536];
} checker;

static int check_put(void *ctx, const sp_record *rec, sp_error *err) {
    (void)err;
    checker *c = ctx;
    if (c->n) {
        uint32_t m = rec->key_len < c->last_len ? rec->key_len : c->last_len;
        int cmp = memcmp(c->last, rec->key, m);
        assert_true(cmp < 0 || (cmp == 0 && c->last_len < rec->key_len));
    }
    memcpy(c->last, rec->key, rec->key_len);
    c->last_len = rec->key_len;
    c->last[rec->key_len] = '\0';
    uint32_t i = (uint32_t)strtoul(strchr(c->last, ':') + 1, NULL, 10);
    uint64_t seed = mix(i);
    assert_int_equal(rec->value_len, 512 + seed % 1024);
    fill_value(seed, c->want, (uint32_t)rec->value_len);
    assert_memory_equal(rec->value, c->want, rec->value_len);
    c->n++;
    c->bytes += rec->key_len + rec->value_len;
    return 0;
}

static void test_peak_rss_within_budget(void **state) {
    (void)state;
    uint64_t before = status_bytes("VmRSS");
    sort_options o;
    sort_options_init(&o);
    o.memory = BUDGET;
    sp_error err = {0};
    sorter *s = sorter_init(&o, &err);
    assert_non_null(s);
    char key[64];
    uint8_t value[1536];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t i = 0; i < RECORDS; i++) {
        uint32_t klen = make_key(i, key);
        uint64_t seed = mix(i);
        uint32_t vlen = (uint32_t)(512 + seed % 1024);
        fill_value(seed, value, vlen);
        sp_record rec = {.key = (const uint8_t *)key,
                         .key_len = klen,
                         .value = value,
                         .value_len = vlen,
                         .value_fd = -1};
        assert_int_equal(sorter_add(s, &rec, &err), 0);
    }
    checker c = {0};
    sp_sink out = {.put = check_put, .ctx = &c};
    assert_int_equal(sorter_finish(s, &out, &err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(c.n, RECORDS);
    const sort_stats *st = sorter_stats(s);
    assert_true(st->runs > 10);
    uint64_t peak = status_bytes("VmHWM");
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("sort of %u records (%.1f MB) under %llu MiB: runs=%llu merge_passes=%llu, "
           "peak RSS growth %.2f MiB (budget + %.2f MiB), %.2f s, %.0f records/s, %.1f MB/s\n",
           RECORDS, (double)c.bytes / 1e6, BUDGET >> 20, (unsigned long long)st->runs,
           (unsigned long long)st->merge_passes, (double)(peak - before) / (1 << 20),
           ((double)(peak - before) - (double)BUDGET) / (1 << 20), secs, RECORDS / secs,
           (double)c.bytes / 1e6 / secs);
    assert_true(peak - before <= BUDGET + SLACK);
    sorter_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak_rss_within_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
