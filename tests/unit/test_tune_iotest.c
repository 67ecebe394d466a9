/*
 * test_tune_iotest.c: iotest's engine on a small real file: pattern
 * parsing, the latency histogram against exact percentiles, and short runs
 * whose figures must agree with each other and leave no test file behind.
 */
#include "pipeline/tune/iotest.h"
#include "pipeline/tune/latency_hist.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_dir.h"

static void test_patterns(void **state) {
    (void)state;
    iotest_pattern p;
    sp_error err = {0};
    char name[32];
    assert_int_equal(iotest_parse_pattern("rr:8K", &p, &err), 0);
    assert_true(p.random && !p.write && p.io_size == 8192);
    assert_int_equal(iotest_parse_pattern("sw:256K", &p, &err), 0);
    assert_true(!p.random && p.write && p.io_size == 262144);
    assert_string_equal(iotest_pattern_name(&p, name, sizeof name), "sw:256K");
    assert_string_equal(iotest_pattern_kind(&p), "sequential write");
    const char *bad[] = {"rx:8K", "r:8K", "rr8K", "rr:3K", "rr:2K", "rr:32M", "rr:", "rrr:8K"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sp_error e = {0};
        assert_int_equal(iotest_parse_pattern(bad[i], &p, &e), -1);
        assert_true(e.set);
    }
    const char *defaults[] = {"rr:8K", "rr:64K", "rw:8K", "sr:64K", "sw:8K", "sr:256K"};
    for (size_t i = 0; i < IOTEST_DEFAULT_PATTERN_COUNT; i++)
        assert_string_equal(iotest_pattern_name(&iotest_default_patterns[i], name, sizeof name),
                            defaults[i]);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Percentiles at most 1/32 above the exact nearest-rank value, never below. */
static void test_histogram_percentiles(void **state) {
    (void)state;
    enum { N = 100000 };
    uint64_t *v = malloc(N * sizeof *v);
    assert_non_null(v);
    latency_hist h;
    latency_hist_init(&h);
    uint64_t s = 12345, sum = 0;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = 20 + (s >> 33) % 5000000; /* 20 ns .. 5 ms */
        sum += v[i];
        latency_hist_add(&h, v[i]);
    }
    qsort(v, N, sizeof *v, cmp_u64);
    assert_int_equal(h.count, N);
    assert_int_equal(h.min, v[0]);
    assert_int_equal(h.max, v[N - 1]);
    assert_int_equal(h.sum, sum);
    double ps[] = {1, 50, 90, 99, 99.9, 100};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        uint64_t exact = v[(size_t)((ps[i] / 100.0) * N + 0.999999999) - 1];
        uint64_t got = latency_hist_percentile(&h, ps[i]);
        assert_true(got >= exact);
        assert_true((double)got <= (double)exact * (1 + 1.0 / 32) + 1);
    }
    /* Exact below 64, and merging adds up. */
    latency_hist a, b;
    latency_hist_init(&a);
    latency_hist_init(&b);
    for (uint64_t x = 1; x <= 50; x++)
        latency_hist_add(x % 2 ? &a : &b, x);
    latency_hist_merge(&a, &b);
    assert_int_equal(a.count, 50);
    assert_int_equal(latency_hist_percentile(&a, 50), 25);
    assert_int_equal(latency_hist_percentile(&a, 100), 50);
    free(v);
}

static void assert_sane(const iotest_pattern_result *p) {
    assert_true(p->ios > 0);
    assert_int_equal(p->bytes, p->ios * p->pattern.io_size);
    assert_true(p->seconds > 0);
    assert_true(p->iops > 0);
    double expect = p->iops * p->pattern.io_size / 1e6;
    assert_true(p->mb_per_s > expect * (1 - 1e-9) && p->mb_per_s < expect * (1 + 1e-9));
    assert_true(p->min_ns > 0);
    assert_true(p->min_ns <= p->p50_ns && p->p50_ns <= p->p99_ns && p->p99_ns <= p->max_ns);
    assert_true((double)p->min_ns <= p->avg_ns && p->avg_ns <= (double)p->max_ns);
}

static void test_short_run(void **state) {
    (void)state;
    char dir[] = "/tmp/test_iotest.XXXXXX";
    assert_non_null(mkdtemp(dir));
    iotest_pattern pats[2];
    sp_error err = {0};
    assert_int_equal(iotest_parse_pattern("rr:4K", &pats[0], &err), 0);
    assert_int_equal(iotest_parse_pattern("sw:16K", &pats[1], &err), 0);
    iotest_options o;
    iotest_options_init(&o);
    o.file_size = 4u << 20;
    o.duration = 0.2;
    o.threads = 2;
    o.queue_depth = 2;
    o.patterns = pats;
    o.n_patterns = 2;
    iotest_result r;
    iotest_result_init(&r);
    if (iotest_run(dir, &o, &r, &err))
        fail_msg("iotest_run: %s", err.msg);
    assert_int_equal(r.n_results, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_memory_equal(&r.results[i].pattern, &pats[i], sizeof pats[i]);
        assert_sane(&r.results[i]);
    }
    assert_int_equal(test_dir_entries(dir), 0); /* the test file is gone */
    json_t *j = iotest_result_to_json(&r);
    assert_int_equal(json_array_size(json_object_get(j, "patterns")), 2);
    json_decref(j);
    iotest_result_destroy(&r);

    /* Too small a file for the threads: refused before anything is created. */
    o.file_size = 16u << 10;
    o.threads = 4;
    iotest_result_init(&r);
    sp_error err2 = {0};
    assert_int_equal(iotest_run(dir, &o, &r, &err2), -1);
    assert_non_null(strstr(err2.msg, "too small"));
    assert_int_equal(test_dir_entries(dir), 0);
    iotest_result_destroy(&r);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_histogram_percentiles),
        cmocka_unit_test(test_short_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
