/*
 * test_truncate_cmd.c: `sstpipe truncate` as a command: the stream it
 * writes (header bound and flags, cut values), its flag checking, and that
 * a failure leaves no output file.
 */
#include "pipeline/command/commands.h"
#include "stages/common/record.h"
#include "stages/common/recstream.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64];
static char in_path[128], out_path[128];

static const char *keys[] = {"Alpha", "Beta", "Gamma", "Delta"};
static const char *vals[] = {"short", "exactly10!", "a\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9z", ""};

static int setup(void **state) {
    (void)state;
    strcpy(dir, "/tmp/sp-test-truncate-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(in_path, sizeof in_path, "%s/in.rs", dir);
    snprintf(out_path, sizeof out_path, "%s/out.rs", dir);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(in_path);
    unlink(out_path);
    assert_int_equal(rmdir(dir), 0); /* fails if anything else was left behind */
    return 0;
}

/* Writes the four records, optionally without the end marker. */
static void write_input(uint32_t flags, bool finish) {
    sp_error err = {0};
    int fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    rs_header h = {.flags = flags, .max_value_bytes = 0};
    rs_writer *w = rs_writer_init(fd, in_path, &h, &err);
    assert_non_null(w);
    for (int i = 0; i < 4; i++) {
        sp_record rec = {.key = (const uint8_t *)keys[i],
                         .key_len = (uint32_t)strlen(keys[i]),
                         .value = (const uint8_t *)vals[i],
                         .value_len = strlen(vals[i]),
                         .value_fd = -1};
        assert_int_equal(rs_writer_put(w, &rec, &err), 0);
    }
    assert_int_equal(rs_writer_finish(w, &err), 0);
    if (!finish)
        assert_int_equal(ftruncate(fd, lseek(fd, 0, SEEK_END) - 9), 0);
    rs_writer_destroy(w);
    close(fd);
}

static int run(int argc, char **argv) {
    return sp_command_main(&truncate_command, argc, argv);
}

static void test_cuts_and_keeps_header(void **state) {
    (void)state;
    write_input(RS_SORTED, true);
    char *argv[] = {"truncate", in_path, "--max-bytes", "6", "-o", out_path, "-v", NULL};
    assert_int_equal(run(7, argv), 0);

    sp_error err = {0};
    int fd = open(out_path, O_RDONLY);
    assert_true(fd >= 0);
    rs_reader *r = rs_reader_init(fd, out_path, &err);
    assert_non_null(r);
    assert_int_equal(rs_reader_header(r)->max_value_bytes, 6);
    assert_int_equal(rs_reader_header(r)->flags, RS_SORTED);
    /* "exactly10!" -> 6 bytes; "aéééé z" -> "aéé" (5 bytes: the third é would straddle 6). */
    const char *want[] = {"short", "exactl", "a\xC3\xA9\xC3\xA9", ""};
    sp_record rec;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rs_reader_next(r, 0, &rec, &err), 1);
        assert_int_equal(rec.key_len, strlen(keys[i]));
        assert_memory_equal(rec.key, keys[i], rec.key_len);
        assert_int_equal(rec.value_len, strlen(want[i]));
        assert_memory_equal(rec.value, want[i], rec.value_len);
    }
    assert_int_equal(rs_reader_next(r, 0, &rec, &err), 0);
    rs_reader_destroy(r);
    close(fd);
}

static void test_default_keeps_short_values(void **state) {
    (void)state;
    write_input(0, true);
    char *argv[] = {"truncate", in_path, "-o", out_path, NULL};
    assert_int_equal(run(4, argv), 0);
    sp_error err = {0};
    int fd = open(out_path, O_RDONLY);
    rs_reader *r = rs_reader_init(fd, out_path, &err);
    assert_non_null(r);
    assert_int_equal(rs_reader_header(r)->max_value_bytes, SP_DEFAULT_MAX_VALUE_BYTES);
    assert_int_equal(rs_reader_header(r)->flags, 0);
    sp_record rec;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rs_reader_next(r, 0, &rec, &err), 1);
        assert_int_equal(rec.value_len, strlen(vals[i]));
    }
    rs_reader_destroy(r);
    close(fd);
}

static void test_bad_flags_are_usage_errors(void **state) {
    (void)state;
    write_input(0, true);
    const char *bad[] = {"0", "junk", "2G", "-5", "10X"};
    for (int i = 0; i < 5; i++) {
        char *argv[] = {"truncate", in_path, "--max-bytes", (char *)bad[i], "-o", out_path, NULL};
        assert_int_equal(run(6, argv), 2);
        assert_int_equal(access(out_path, F_OK), -1);
    }
    char *extra[] = {"truncate", in_path, in_path, NULL};
    assert_int_equal(run(3, extra), 2);
    char *unknown[] = {"truncate", in_path, "-x", NULL};
    assert_int_equal(run(3, unknown), 2);
    char *no_arg[] = {"truncate", in_path, "--max-bytes", NULL};
    assert_int_equal(run(3, no_arg), 2);
    char *help[] = {"truncate", "--help", NULL};
    assert_int_equal(run(2, help), 0);
    char *big[] = {"truncate", in_path, "--max-bytes", "1G", "-o", out_path, NULL};
    assert_int_equal(run(6, big), 0);
}

static void test_bad_input_leaves_no_output(void **state) {
    (void)state;
    write_input(0, false); /* no end marker: a stage died mid-pipe */
    char *argv[] = {"truncate", in_path, "-o", out_path, NULL};
    assert_int_equal(run(4, argv), 1);
    assert_int_equal(access(out_path, F_OK), -1);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.rs", dir);
    char *argv2[] = {"truncate", missing, "-o", out_path, NULL};
    assert_int_equal(run(4, argv2), 2); /* refused before any work */
    assert_int_equal(access(out_path, F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cuts_and_keeps_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_keeps_short_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_flags_are_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input_leaves_no_output, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
