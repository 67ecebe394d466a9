/*
 * test_common_error.c: an sp_error is one line, whatever it quotes
 * (stages/common/error.h). The table set's manifest reader quoted jansson's
 * message, which holds the raw token it stopped at, line breaks included:
 * fuzz_tableset found a two-line error that way.
 */
#include "stages/common/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

static void test_control_bytes_escaped(void **state) {
    (void)state;
    sp_error err = {0};
    assert_int_equal(sp_errorf(&err, "m.json: invalid escape near '%s'", "\"a\\\nb\tc\r\x01"), -1);
    assert_true(err.set);
    assert_string_equal(err.msg, "m.json: invalid escape near '\"a\\\\nb\\tc\\r\\x01'");
}

static void test_plain_message_unchanged(void **state) {
    (void)state;
    sp_error err = {0};
    sp_errorf(&err, "t.sst: offset %d: bad block (UTF-8 \xc3\xa9 kept)", 4096);
    assert_string_equal(err.msg, "t.sst: offset 4096: bad block (UTF-8 \xc3\xa9 kept)");
}

static void test_errno_message_escaped(void **state) {
    (void)state;
    sp_error err = {0};
    errno = ENOENT;
    sp_errorf_errno(&err, "cannot open '%s'", "a\nb");
    assert_string_equal(err.msg, "cannot open 'a\\nb': No such file or directory");
    assert_int_equal(errno, ENOENT);
}

static void test_escape_cut_at_the_end(void **state) {
    (void)state;
    /* A message that fills the buffer: the escapes push it past the end, so
     * it is cut before an escape rather than through one. */
    char quoted[sizeof((sp_error *)0)->msg];
    memset(quoted, '\n', sizeof quoted - 1);
    quoted[sizeof quoted - 1] = '\0';
    sp_error err = {0};
    sp_errorf(&err, "%s", quoted);
    size_t n = strlen(err.msg);
    assert_true(n < sizeof err.msg);
    assert_int_equal(n % 2, 0);
    assert_null(strchr(err.msg, '\n'));
    for (size_t i = 0; i < n; i += 2)
        assert_memory_equal(err.msg + i, "\\n", 2);
}

static void test_first_error_wins(void **state) {
    (void)state;
    sp_error err = {0};
    sp_errorf(&err, "first");
    sp_errorf(&err, "second\n");
    assert_string_equal(err.msg, "first");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_bytes_escaped),
        cmocka_unit_test(test_plain_message_unchanged),
        cmocka_unit_test(test_errno_message_escaped),
        cmocka_unit_test(test_escape_cut_at_the_end),
        cmocka_unit_test(test_first_error_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
