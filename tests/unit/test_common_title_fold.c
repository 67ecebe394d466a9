/*
 * test_common_title_fold.c: the title fold (stages/common/title_rules.h)
 * of ASCII titles, which title_rules.c maps without utf8proc, against
 * utf8proc's own result. A title with a character past ASCII goes through
 * utf8proc whole; "ж" (which folds to itself and combines with nothing)
 * appended to an ASCII title sends it there, so the fold of the title
 * must be that fold less its last two bytes.
 */
#include "stages/common/title_rules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#define ZHE "\xd0\xb6"

/* The fold of s (n bytes, ASCII) against utf8proc's fold of s + "ж". */
static void check(const uint8_t *s, size_t n) {
    uint8_t in[64], fast[128], slow[128];
    memcpy(in, s, n);
    memcpy(in + n, ZHE, 2);
    size_t lf = sp_title_fold(s, n, fast, sizeof fast);
    size_t ls = sp_title_fold(in, n + 2, slow, sizeof slow);
    if (ls != lf + 2 || memcmp(slow, fast, lf) != 0 || memcmp(slow + lf, ZHE, 2) != 0)
        fail_msg("fold of ASCII \"%.*s\" (%zu bytes): %zu bytes, utf8proc's %zu", (int)n,
                 (const char *)s, n, lf, ls);
}

static void test_every_ascii_character(void **state) {
    (void)state;
    for (int c = 1; c < 128; c++) {
        uint8_t s[3] = {(uint8_t)c, 'x', (uint8_t)c};
        check(s, 1);
        check(s, 3);
    }
}

static void test_every_pair(void **state) {
    (void)state;
    for (int a = 1; a < 128; a++)
        for (int b = 1; b < 128; b++) {
            uint8_t s[2] = {(uint8_t)a, (uint8_t)b};
            check(s, 2);
        }
}

static void test_titles(void **state) {
    (void)state;
    const char *titles[] = {"Abraham Lincoln",
                            "abraham_lincoln ",
                            "  Leading__and  trailing  ",
                            "C++ (programming language)",
                            "AC/DC",
                            "Title: with \"quotes\""};
    for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++)
        check((const uint8_t *)titles[i], strlen(titles[i]));
    uint8_t out[8];
    /* A fold longer than cap is cut at cap, as utf8proc's is. */
    assert_int_equal(sp_title_fold((const uint8_t *)"ABCDEFGHIJ", 10, out, 4), 4);
    assert_memory_equal(out, "abcd", 4);
    /* A 0x00 folds to nothing. */
    assert_int_equal(sp_title_fold((const uint8_t *)"A\0B", 3, out, sizeof out), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_ascii_character),
        cmocka_unit_test(test_every_pair),
        cmocka_unit_test(test_titles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
