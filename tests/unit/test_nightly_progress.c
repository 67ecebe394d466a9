/*
 * test_nightly_progress.c: a nightly run's log shows its stages moving. A
 * run with a short progress period (the command's is a minute) over a
 * corpus dump must leave build progress lines in its nightly.log, from the
 * meter each stage starts (stages/common/progress.h's log rendering).
 */
#include "pipeline/nightly/nightly.h"

#include "test_dir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines of the log matching pattern (an extended regex). */
static int count_lines(const char *path, const char *pattern) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (regexec(&re, line, 0, NULL, 0) == 0)
            n++;
    regfree(&re);
    fclose(f);
    return n;
}

static void test_log_has_build_progress(void **state) {
    (void)state;
    const char *corpora = getenv("SSTPIPE_CORPORA");
    if (!corpora)
        fail_msg("SSTPIPE_CORPORA is not set");
    char input[4096];
    snprintf(input, sizeof input, "%s/ltgwiki-2004pages.xml", corpora);
    char *dir = test_dir_make("nightly_progress");
    assert_non_null(dir);

    sp_error err = {0};
    nightly_options o;
    nightly_options_init(&o); /* no profile */
    o.dir = dir;
    o.input = input;
    o.progress_period = 0.001;
    nightly_result res;
    int rc = nightly_run(&o, &res, &err);
    if (rc)
        fail_msg("nightly: %s", err.msg);
    assert_int_equal(res.outcome, NIGHTLY_PUBLISHED);
    assert_int_equal(nightly_exit_code(res.outcome), 0);

    char log[TEST_DIR_CAP + 32];
    snprintf(log, sizeof log, "%s/current/nightly.log", dir);
    /* The log rendering of the build's counters: "build: 1.2M of 3.5M
     * (35.2%), ..." while reading, "build: input read; writing record ..."
     * after. */
    int lines = count_lines(
        log, "Z nightly: build: ([0-9.]+[KMG]? of [0-9.]+[KMG]? \\(|input read; writing "
             "record |running, elapsed )");
    if (lines < 1)
        fail_msg("no build progress line in %s", log);
    nightly_options_destroy(&o);
    assert_int_equal(test_dir_remove(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_has_build_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
