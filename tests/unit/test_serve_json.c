/*
 * test_serve_json.c: serve_json_string, the suggestions' hand-written JSON
 * strings, against jansson's json_dumps of the same strings byte for byte:
 * every control character, the quote, the backslash, the slash and DEL,
 * and UTF-8 of two, three and four bytes (a character past the BMP, and
 * U+2028, which JSON takes as it is); and one string spelled out, so the
 * expectation is not jansson's alone. The bound of serve_json.h holds.
 */
#include "stages/serve/serve_json.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* text (n bytes) written by serve_json_string is what jansson writes. */
static void same_as_jansson(const char *text, size_t n) {
    char out[SERVE_JSON_STRING_MAX(64)];
    assert_true(n <= 64);
    size_t len = serve_json_string(out, text, n);
    assert_true(len <= SERVE_JSON_STRING_MAX(n));
    json_t *s = json_stringn(text, n);
    assert_non_null(s);
    char *want = json_dumps(s, JSON_ENCODE_ANY);
    json_decref(s);
    assert_non_null(want);
    if (len != strlen(want) || memcmp(out, want, len))
        fail_msg("%.*s, jansson %s", (int)len, out, want);
    free(want);
}

static void test_every_control_character(void **state) {
    (void)state;
    for (int c = 0; c < 0x20; c++) {
        char text[3] = {'a', (char)c, 'b'};
        same_as_jansson(text, sizeof text);
    }
    char all[0x20];
    for (int c = 0; c < 0x20; c++)
        all[c] = (char)c;
    same_as_jansson(all, sizeof all);
}

static void test_quotes_backslash_and_utf8(void **state) {
    (void)state;
    static const char *const texts[] = {
        "\"",
        "\\",
        "/",
        "\x7f",
        "say \"hi\" \\ there",
        "\xc3\x85ngstr\xc3\xb6m",
        "\xe2\x82\xac",
        "\xe2\x80\xa8",
        "\xf0\x9f\x98\x8a David History",
        "",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        same_as_jansson(texts[i], strlen(texts[i]));
}

static void test_spelled_out(void **state) {
    (void)state;
    static const char text[] = "a\"\\\n\x01\x1f\xf0\x9f\x98\x8a";
    static const char want[] = "\"a\\\"\\\\\\n\\u0001\\u001F\xf0\x9f\x98\x8a\"";
    char out[SERVE_JSON_STRING_MAX(sizeof text)];
    size_t len = serve_json_string(out, text, sizeof text - 1);
    assert_int_equal(len, sizeof want - 1);
    assert_memory_equal(out, want, len);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_control_character),
        cmocka_unit_test(test_quotes_backslash_and_utf8),
        cmocka_unit_test(test_spelled_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
