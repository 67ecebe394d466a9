/*
 * test_extract_cmd.c: `sstpipe extract` as a command (its table entry in
 * pipeline/command/): flags, usage errors, the record stream it writes, and that a
 * failed run leaves no output. The stage itself is test_extract.c.
 */
#include "pipeline/command/commands.h"
#include "stages/common/recstream.h"

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_dir.h"

static char *tmpdir;

static int setup(void **state) {
    (void)state;
    tmpdir = test_dir_make("test_extract_cmd");
    return tmpdir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(tmpdir);
}

static int cmd(const char *a0, ...) {
    char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && argc < 15; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    return sp_command_main(&extract_command, argc, argv);
}

static void test_cmd(void **state) {
    (void)state;
    const char *corpora = getenv("SSTPIPE_CORPORA");
    assert_non_null(corpora);
    char in[PATH_MAX], out[PATH_MAX], bad[PATH_MAX];
    snprintf(in, sizeof in, "%s/enwiki-11pages.xml", corpora);
    snprintf(out, sizeof out, "%s/out.rs", tmpdir);
    assert_int_equal(cmd("extract", "--help", NULL), 0);
    assert_int_equal(cmd("extract", "--bogus", NULL), 2);
    assert_int_equal(cmd("extract", "--namespaces", "0,x", "in", NULL), 2);
    assert_int_equal(cmd("extract", "a", "b", NULL), 2);

    assert_int_equal(
        cmd("extract", in, "-o", out, "--namespaces", "0,14", "--skip-redirects", "-v", NULL), 0);
    int fd = open(out, O_RDONLY);
    assert_true(fd >= 0);
    sp_error err = {0};
    rs_reader *r = rs_reader_init(fd, out, &err);
    assert_non_null(r);
    assert_int_equal(rs_reader_header(r)->flags, 0);
    assert_int_equal(rs_reader_header(r)->max_value_bytes, 0);
    sp_record rec;
    int n = 0;
    int got;
    while ((got = rs_reader_next(r, 0, &rec, &err)) == 1) {
        if (n == 0)
            assert_memory_equal(rec.key, "Konica Minolta Cup", rec.key_len);
        n++;
    }
    assert_int_equal(got, 0);
    /* 7 pages in ns 0 and 2 in ns 14, of which 3 are redirects. */
    assert_int_equal(n, 6);
    rs_reader_destroy(r);
    close(fd);
    assert_int_equal(unlink(out), 0);

    /* A failing input leaves neither the output nor its temporary. */
    snprintf(bad, sizeof bad, "%s/cmdbad.xml", tmpdir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.11/\" version=\"0.11\">\n"
          "<page><title>A</title>",
          f);
    assert_int_equal(fclose(f), 0);
    snprintf(out, sizeof out, "%s/never.rs", tmpdir);
    assert_int_equal(cmd("extract", bad, "-o", out, NULL), 1);
    assert_int_equal(access(out, F_OK), -1);
    assert_int_equal(test_dir_entries(tmpdir), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmd),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
