/*
 * test_truncate.c: the truncating sink cuts values on UTF-8 boundaries:
 * ASCII, 2/3/4-byte characters straddling the cut, exact length, max 1,
 * short values, and page text spilled to a file descriptor.
 */
#include "stages/common/fileio.h"
#include "stages/truncate/truncate.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Keeps a copy of the last record it receives. */
typedef struct capture {
    uint8_t key[SP_MAX_KEY_BYTES];
    uint32_t key_len;
    uint8_t *value;
    uint64_t value_len;
    int value_fd;
    int calls;
} capture;

static int capture_put(void *ctx, const sp_record *rec, sp_error *err) {
    (void)err;
    capture *c = ctx;
    memcpy(c->key, rec->key, rec->key_len);
    c->key_len = rec->key_len;
    free(c->value);
    c->value = malloc(rec->value_len + 1);
    memcpy(c->value, rec->value, rec->value_len);
    c->value_len = rec->value_len;
    c->value_fd = rec->value_fd;
    c->calls++;
    return 0;
}

/* Truncates value to max and returns what came out (as a string in c). */
static void cut(capture *c, truncator *t, const char *value, uint64_t max) {
    truncator_init(t, max, (sp_sink){.put = capture_put, .ctx = c});
    sp_sink s = truncator_sink(t);
    sp_record rec = {.key = (const uint8_t *)"K",
                     .key_len = 1,
                     .value = (const uint8_t *)value,
                     .value_len = strlen(value),
                     .value_fd = -1};
    sp_error err = {0};
    assert_int_equal(sp_sink_put(&s, &rec, &err), 0);
    c->value[c->value_len] = '\0';
    assert_int_equal(c->value_fd, -1);
    assert_int_equal(c->key_len, 1);
    assert_memory_equal(c->key, "K", 1);
}

/* A macro, so a failure names the line of the case. */
#define EXPECT_CUT(in_, max_, want_, was_cut_)                                                     \
    do {                                                                                           \
        capture c_ = {0};                                                                          \
        truncator t_;                                                                              \
        cut(&c_, &t_, in_, max_);                                                                  \
        assert_string_equal((char *)c_.value, want_);                                              \
        assert_int_equal(t_.records, 1);                                                           \
        assert_int_equal(t_.truncated, was_cut_);                                                  \
        free(c_.value);                                                                            \
    } while (0)

static void test_ascii(void **state) {
    (void)state;
    EXPECT_CUT("hello world", 5, "hello", 1);
    EXPECT_CUT("hello world", 10, "hello worl", 1);
    EXPECT_CUT("hello", 5, "hello", 0); /* exact length: not cut */
    EXPECT_CUT("hi", 1024, "hi", 0);    /* shorter than max */
    EXPECT_CUT("", 1024, "", 0);
}

static void test_two_byte(void **state) {
    (void)state;
    /* "aé b": é = C3 A9 occupies bytes 1..2 */
    EXPECT_CUT("a\xC3\xA9"
               "b",
               1, "a", 1);
    EXPECT_CUT("a\xC3\xA9"
               "b",
               2, "a", 1); /* cut would split é */
    EXPECT_CUT("a\xC3\xA9"
               "b",
               3, "a\xC3\xA9", 1);
    EXPECT_CUT("a\xC3\xA9", 3, "a\xC3\xA9", 0);
}

static void test_three_byte(void **state) {
    (void)state;
    /* € = E2 82 AC at bytes 1..3 */
    const char *v = "a\xE2\x82\xAC"
                    "b";
    EXPECT_CUT(v, 2, "a", 1);
    EXPECT_CUT(v, 3, "a", 1);
    EXPECT_CUT(v, 4, "a\xE2\x82\xAC", 1);
    EXPECT_CUT(v, 5, v, 0);
}

static void test_four_byte(void **state) {
    (void)state;
    /* U+1F600 = F0 9F 98 80 at bytes 1..4 */
    const char *v = "a\xF0\x9F\x98\x80"
                    "b";
    EXPECT_CUT(v, 1, "a", 1);
    EXPECT_CUT(v, 2, "a", 1);
    EXPECT_CUT(v, 3, "a", 1);
    EXPECT_CUT(v, 4, "a", 1);
    EXPECT_CUT(v, 5, "a\xF0\x9F\x98\x80", 1);
    EXPECT_CUT(v, 6, v, 0);
}

static void test_max_one(void **state) {
    (void)state;
    EXPECT_CUT("ab", 1, "a", 1);
    EXPECT_CUT("a", 1, "a", 0);
    EXPECT_CUT("\xC3\xA9", 1, "", 1); /* a lone character wider than max: empty */
    EXPECT_CUT("\xF0\x9F\x98\x80", 1, "", 1);
}

static void test_counts_many(void **state) {
    (void)state;
    capture c = {0};
    truncator t;
    truncator_init(&t, 3, (sp_sink){.put = capture_put, .ctx = &c});
    sp_sink s = truncator_sink(&t);
    const char *vals[] = {"abc", "abcd", "", "xyz12", "\xE2\x82\xAC"};
    for (size_t i = 0; i < 5; i++) {
        sp_record rec = {.key = (const uint8_t *)"k",
                         .key_len = 1,
                         .value = (const uint8_t *)vals[i],
                         .value_len = strlen(vals[i]),
                         .value_fd = -1};
        sp_error err = {0};
        assert_int_equal(sp_sink_put(&s, &rec, &err), 0);
    }
    assert_int_equal(c.calls, 5);
    assert_int_equal(t.records, 5);
    assert_int_equal(t.truncated, 2);
    free(c.value);
}

/* A spilled value: only the first max+1 bytes matter, the record that comes
 * out holds its cut value in memory. */
static void test_spilled_value(void **state) {
    (void)state;
    sp_error err = {0};
    int fd = sp_tmpfile_open(NULL, &err);
    assert_true(fd >= 0);
    size_t len = 3u << 20;
    uint8_t *text = malloc(len);
    for (size_t i = 0; i < len; i++)
        text[i] = (uint8_t)('a' + i % 26);
    /* A 3-byte character straddling byte 1024: bytes 1023..1025. */
    memcpy(text + 1023, "\xE2\x82\xAC", 3);
    assert_int_equal(sp_pwrite_all(fd, text, len, 0, "spill", &err), 0);

    capture c = {0};
    truncator t;
    truncator_init(&t, 1024, (sp_sink){.put = capture_put, .ctx = &c});
    sp_sink s = truncator_sink(&t);
    sp_record rec = {.key = (const uint8_t *)"Big",
                     .key_len = 3,
                     .value = NULL,
                     .value_len = len,
                     .value_fd = fd};
    assert_int_equal(sp_sink_put(&s, &rec, &err), 0);
    assert_int_equal(c.value_fd, -1);
    assert_int_equal(c.value_len, 1023);
    assert_memory_equal(c.value, text, 1023);
    assert_int_equal(t.truncated, 1);

    /* A spilled value shorter than max passes whole. */
    rec.value_len = 700;
    assert_int_equal(sp_sink_put(&s, &rec, &err), 0);
    assert_int_equal(c.value_len, 700);
    assert_memory_equal(c.value, text, 700);
    assert_int_equal(t.truncated, 1);
    assert_int_equal(t.records, 2);

    /* A spilled value claiming more bytes than the file holds is an error. */
    close(fd);
    fd = sp_tmpfile_open(NULL, &err);
    rec.value_fd = fd;
    rec.value_len = 5000;
    assert_int_equal(sp_sink_put(&s, &rec, &err), -1);
    assert_true(err.set);
    assert_non_null(strstr(err.msg, "spilled page text"));
    close(fd);
    free(text);
    free(c.value);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ascii),         cmocka_unit_test(test_two_byte),
        cmocka_unit_test(test_three_byte),    cmocka_unit_test(test_four_byte),
        cmocka_unit_test(test_max_one),       cmocka_unit_test(test_counts_many),
        cmocka_unit_test(test_spilled_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
