/*
 * test_command_front.c: the pieces the command front ends share
 * (pipeline/command/front.h): the exit code of a failed run, the -v line as
 * the stage formats it, a table that cannot be opened, and the live line
 * started only when the command line asks for it.
 */
#include "pipeline/command/front.h"
#include "stages/common/cli.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char err_path[64];
static int saved_stderr = -1;

/* stderr into a file, until stderr_text. */
static void capture_stderr(void) {
    strcpy(err_path, "/tmp/sp-test-front-XXXXXX");
    int fd = mkstemp(err_path);
    assert_true(fd >= 0);
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
}

/* What went to stderr since capture_stderr; stderr restored. */
static void stderr_text(char *buf, size_t cap) {
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    FILE *f = fopen(err_path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(err_path);
}

static void test_exit(void **state) {
    (void)state;
    sp_error err = {0};
    assert_int_equal(sp_front_exit(0, &err), SP_EXIT_OK);
    sp_errorf(&err, "in.rs: truncated record");
    char text[256];
    capture_stderr();
    int code = sp_front_exit(-1, &err);
    stderr_text(text, sizeof text);
    assert_int_equal(code, SP_EXIT_FAIL);
    assert_string_equal(text, "sstpipe: in.rs: truncated record\n");
}

/* A stats formatter as the stages write them: several figures. */
static void format_pair(unsigned a, unsigned b, char *buf, size_t cap) {
    snprintf(buf, cap, "stage: a=%u b=%u", a, b);
}

static void test_stats(void **state) {
    (void)state;
    char text[256];
    capture_stderr();
    SP_FRONT_STATS(false, format_pair, 1u, 2u);
    SP_FRONT_STATS(true, format_pair, 3u, 4u);
    stderr_text(text, sizeof text);
    assert_string_equal(text, "stage: a=3 b=4\n");
}

static void test_open_table(void **state) {
    (void)state;
    char text[512];
    int code = -1;
    capture_stderr();
    sstpipe_table *t = sp_front_open_table("/nonexistent/sp-front.sst", &code);
    stderr_text(text, sizeof text);
    assert_null(t);
    assert_int_equal(code, SP_EXIT_FAIL);
    assert_non_null(strstr(text, "/nonexistent/sp-front.sst"));
    assert_int_equal(strncmp(text, "sstpipe: ", 9), 0);
}

static void test_meter(void **state) {
    (void)state;
    sp_cmdline cl = {0};
    config_init(&cl.cfg);
    sp_front_meter m;
    cl.cfg.progress.show = CONFIG_PROGRESS_NEVER;
    assert_null(sp_front_progress(&m, &cl, NULL));
    sp_front_meter_start(&m, "test");
    assert_null(m.meter);
    assert_int_equal(sp_front_meter_stop(&m, 3), 3);
    cl.cfg.progress.show = CONFIG_PROGRESS_ALWAYS;
    char text[512];
    capture_stderr();
    sp_progress *p = sp_front_progress(&m, &cl, NULL);
    assert_ptr_equal(p, &m.prog);
    sp_front_meter_start(&m, "test");
    assert_non_null(m.meter);
    assert_int_equal(sp_front_meter_stop(&m, 0), 0);
    stderr_text(text, sizeof text);
    assert_null(m.meter);
    assert_non_null(strstr(text, "test: "));
    assert_non_null(strstr(text, "done"));
    config_destroy(&cl.cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_open_table),
        cmocka_unit_test(test_meter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
