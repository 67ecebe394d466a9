/*
 * test_common_hex.c: the one spelling of a binary key in text
 * (stages/common/hex.h): every byte value both ways, and what a reader
 * refuses (uppercase, other characters), by position, since a manifest's
 * error names the bad digit.
 */
#include "stages/common/hex.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static void test_every_byte_round_trips(void **state) {
    (void)state;
    uint8_t all[256], back[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    char *h = sp_hex_encode(all, sizeof all);
    assert_non_null(h);
    assert_int_equal(strlen(h), 512);
    assert_memory_equal(h, "000102", 6);
    assert_string_equal(h + 500, "fafbfcfdfeff");
    assert_int_equal(sp_hex_decode(h, 512, back), 512);
    assert_memory_equal(back, all, sizeof all);
    free(h);
}

static void test_write_and_empty(void **state) {
    (void)state;
    char out[8];
    sp_hex_write("\x0a\xb0\x7f", 3, out);
    assert_string_equal(out, "0ab07f");
    sp_hex_write("", 0, out);
    assert_string_equal(out, "");
    uint8_t b[1];
    assert_int_equal(sp_hex_decode("", 0, b), 0);
}

static void test_refuses_by_position(void **state) {
    (void)state;
    uint8_t b[4];
    /* Uppercase is not the spelling: the first bad digit is named. */
    assert_int_equal(sp_hex_decode("00Ab", 4, b), 2);
    assert_int_equal(sp_hex_decode("0g", 2, b), 1);
    assert_int_equal(sp_hex_decode("x0", 2, b), 0);
    assert_int_equal(sp_hex_decode("abcd ef0", 8, b), 4);
    assert_int_equal(sp_hex_decode("abcdef01", 8, b), 8);
    assert_memory_equal(b, "\xab\xcd\xef\x01", 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_byte_round_trips),
        cmocka_unit_test(test_write_and_empty),
        cmocka_unit_test(test_refuses_by_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
