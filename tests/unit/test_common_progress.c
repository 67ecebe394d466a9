/*
 * test_common_progress.c: the text of the live progress line
 * (stages/common/progress.h) for each kind of work: a file of known size
 * (percent and ETA), a pipe (neither), work in steps (the step named), a
 * size learnt late, and counts that are not records (iotest's IOs).
 */
#include "stages/common/progress.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

static void text(const sp_progress *p, const char *what, double elapsed, char *out, size_t cap) {
    sp_progress_text(p, what, elapsed, out, cap);
}

static void test_known_size(void **state) {
    (void)state;
    sp_progress p;
    sp_progress_init(&p, NULL);
    sp_progress_store(&p.total_bytes, 4u << 20);
    sp_progress_store(&p.in_bytes, 1u << 20);
    sp_progress_store(&p.records, 7);
    sp_progress_phase(&p, SP_PHASE_CHECKING);
    char line[512];
    text(&p, "verify", 2.0, line, sizeof line);
    /* 1 MiB in 2 s: 0.5 MiB/s, 3 MiB left, so 6 s. */
    assert_string_equal(line, "verify: checking 1M of 4M (25.0%), 7 records, 0.5 MB/s, elapsed "
                              "0:00:02, ETA 0:00:06");
}

static void test_pipe_has_no_percent(void **state) {
    (void)state;
    sp_progress p;
    sp_progress_init(&p, NULL);
    sp_progress_store(&p.in_bytes, 3000000);
    char line[512];
    text(&p, "sort", 1.0, line, sizeof line);
    assert_null(strstr(line, "%"));
    assert_null(strstr(line, "ETA"));
    assert_non_null(strstr(line, "3.0 MB/s"));
}

static void test_steps(void **state) {
    (void)state;
    sp_progress p;
    sp_progress_init(&p, NULL);
    sp_progress_steps(&p, "trial", 8);
    char line[512];
    /* Before the first step: no step named. */
    text(&p, "tune", 0, line, sizeof line);
    assert_int_equal(strncmp(line, "tune: reading 0", 15), 0);
    sp_progress_store(&p.step, 3);
    sp_progress_phase(&p, SP_PHASE_PROFILING);
    sp_progress_store(&p.total_bytes, 8u << 20);
    sp_progress_store(&p.in_bytes, 3u << 20);
    text(&p, "tune", 3.0, line, sizeof line);
    assert_int_equal(strncmp(line, "tune: trial 3 of 8, profiling 3M of 8M (37.5%)", 46), 0);
    assert_non_null(strstr(line, ", ETA 0:00:05"));
}

static void test_records_name(void **state) {
    (void)state;
    sp_progress p;
    sp_progress_init(&p, NULL);
    p.records_name = "IOs";
    sp_progress_store(&p.records, 42);
    char line[512];
    text(&p, "iotest", 1.0, line, sizeof line);
    assert_non_null(strstr(line, ", 42 IOs, "));
    assert_null(strstr(line, "records"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_size),
        cmocka_unit_test(test_pipe_has_no_percent),
        cmocka_unit_test(test_steps),
        cmocka_unit_test(test_records_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
