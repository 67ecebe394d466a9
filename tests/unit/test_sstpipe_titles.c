/*
 * test_sstpipe_titles.c: libsstpipe's titles (sstpipe_lookup,
 * sstpipe_lookup_many, sstpipe_suggest) through its public header, on a
 * table written with its title index by sp_sst's writer (title_index.h):
 * a title typed in any case or with underscores finds its record; a
 * redirect is followed (a "#section" dropped) and named, its record kept
 * with SSTPIPE_LOOKUP_RAW; a redirect to a missing page is absent with the
 * missing target named; a loop stops; the batch call answers as the single
 * one; suggestions fold case and accents and rank articles first; and the
 * errors sstpipe.h states: a limit out of range, empty or invalid text, a
 * table without a title index, each -1 with a message the caller frees,
 * the result's strings the caller's after the table is closed.
 */
#include "stages/sst/sstpipe.h"
#include "stages/sst/title_index.h"
#include "test_dir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* In key order, as the writer takes them. */
static const char *const RECORDS[][2] = {
    {"AbacuS", "#REDIRECT [[Abacus]]"},    {"Abacus", "beads on rods"},
    {"Dangling", "#REDIRECT [[Nowhere]]"}, {"Loop1", "#REDIRECT [[Loop2]]"},
    {"Loop2", "#REDIRECT [[loop1]]"},      {"Section", "#REDIRECT [[Abacus#History]]"},
    {"\xc3\x85ngstr\xc3\xb6m", "a unit"},
};
#define N_RECORDS (sizeof RECORDS / sizeof RECORDS[0])

typedef struct fixture {
    char *dir, *path;
} fixture;

static char *path_in(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Records (n, in key order) into a table at path, with a title index
 * unless bare. */
static void write_records(const char *path, bool bare, const char *const (*records)[2], size_t n) {
    sp_error err = {0};
    table_options topts;
    table_options_init(&topts);
    topts.block_size = 4096;
    topts.cluster_size = 512;
    topts.max_value_bytes = 64;
    sort_options so;
    sort_options_init(&so);
    so.memory = SORT_MIN_MEMORY;
    sp_title_rules rules;
    sp_title_rules_init(&rules);
    title_index *x = bare ? NULL : title_index_init(path, &rules, &so, &topts, &err);
    assert_true(bare || x);
    table_writer *tw = table_writer_init(path, &topts, &err);
    assert_non_null(tw);
    sp_sink to = table_writer_sink(tw);
    sp_sink sink = x ? title_index_tee(x, &to) : to;
    for (size_t i = 0; i < n; i++) {
        sp_record rec = {.key = (const uint8_t *)records[i][0],
                         .key_len = (uint32_t)strlen(records[i][0]),
                         .value = (const uint8_t *)records[i][1],
                         .value_len = strlen(records[i][1]),
                         .value_fd = -1};
        assert_int_equal(sp_sink_put(&sink, &rec, &err), 0);
    }
    if (title_index_publish(x, tw, path, &err))
        fail_msg("publish: %s", err.msg);
    title_index_destroy(x);
    table_writer_destroy(tw);
}

static void write_table(const char *path, bool bare) {
    write_records(path, bare, RECORDS, N_RECORDS);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_dir_make("sstpipe-titles");
    f->path = path_in(f->dir, "t.sst");
    write_table(f->path, false);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_dir_remove(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static sstpipe_table *open_table(const char *path) {
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(path, &msg);
    if (!t)
        fail_msg("open %s: %s", path, msg);
    return t;
}

static void assert_text(const void *got, size_t len, const char *want) {
    assert_int_equal(len, strlen(want));
    assert_memory_equal(got, want, len);
}

/* Looks title up (flags), expecting found; its result's strings. */
static void expect(sstpipe_table *t, const char *title, unsigned flags, int found,
                   const char *value, const char *as, const char *from, const char *missing) {
    sstpipe_lookup_result res;
    char *msg = NULL;
    assert_int_equal(sstpipe_lookup(t, title, strlen(title), flags, &res, &msg), found);
    if (found)
        assert_text(res.value, res.vlen, value);
    if (as)
        assert_text(res.title, res.title_len, as);
    assert_text(res.redirect_from, res.redirect_from_len, from);
    assert_text(res.missing_target, res.missing_target_len, missing);
}

static void test_lookup(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_table(f->path);
    expect(t, "Abacus", 0, 1, "beads on rods", "Abacus", "", "");
    expect(t, "abacus", 0, 1, "beads on rods", "Abacus", "", "");
    expect(t, " abacus_", 0, 1, "beads on rods", "Abacus", "", "");
    expect(t, "AbacuS", 0, 1, "beads on rods", "Abacus", "AbacuS", "");
    expect(t, "abacuS", 0, 1, "beads on rods", "Abacus", "AbacuS", "");
    expect(t, "AbacuS", SSTPIPE_LOOKUP_RAW, 1, "#REDIRECT [[Abacus]]", "AbacuS", "", "");
    expect(t, "Section", 0, 1, "beads on rods", "Abacus", "Section", "");
    expect(t, "Dangling", 0, 0, NULL, NULL, "Dangling", "Nowhere");
    expect(t, "abacu", 0, 0, NULL, NULL, "", "");
    /* The loop stops at the redirect that closes it: that record. */
    expect(t, "Loop1", 0, 1, "#REDIRECT [[loop1]]", "Loop2", "Loop1", "");
    sstpipe_close(t);
}

static void test_lookup_many(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_table(f->path);
    const char *titles[] = {"abacus", "AbacuS", "nope", "Dangling", "Loop1", "AbacuS", "Section"};
    size_t n = sizeof titles / sizeof titles[0];
    size_t lens[sizeof titles / sizeof titles[0]];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(titles[i]);
    sstpipe_lookup_result many[sizeof titles / sizeof titles[0]];
    for (unsigned flags = 0; flags <= SSTPIPE_LOOKUP_RAW; flags++) {
        char *msg = NULL;
        assert_int_equal(
            sstpipe_lookup_many(t, n, (const void *const *)titles, lens, flags, many, &msg), 0);
        for (size_t i = 0; i < n; i++) {
            sstpipe_lookup_result one;
            int found = sstpipe_lookup(t, titles[i], lens[i], flags, &one, &msg);
            assert_int_equal(found, many[i].value != NULL);
            if (found) {
                assert_int_equal(many[i].vlen, one.vlen);
                assert_memory_equal(many[i].value, one.value, one.vlen);
            }
            assert_text(many[i].redirect_from, many[i].redirect_from_len, one.redirect_from);
            assert_text(many[i].missing_target, many[i].missing_target_len, one.missing_target);
        }
    }
    char *msg = NULL;
    assert_int_equal(sstpipe_lookup_many(t, 0, NULL, NULL, 0, many, &msg), 0);
    sstpipe_close(t);
}

static void test_suggest(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_table(f->path);
    sstpipe_suggestion s[SSTPIPE_SUGGEST_MAX];
    char *msg = NULL;
    assert_int_equal(sstpipe_suggest(t, "ABA", 3, 10, s, &msg), 2);
    assert_string_equal(s[0].title, "Abacus");
    assert_false(s[0].redirect);
    assert_string_equal(s[1].title, "AbacuS");
    assert_true(s[1].redirect);
    assert_int_equal(sstpipe_suggest(t, "angstr", 6, 1, s, &msg), 1);
    assert_string_equal(s[0].title, "\xc3\x85ngstr\xc3\xb6m");
    /* The exact title first, redirect though it is. */
    assert_int_equal(sstpipe_suggest(t, "abacuS", 6, 10, s, &msg), 2);
    assert_string_equal(s[0].title, "AbacuS");
    assert_int_equal(sstpipe_suggest(t, "zz", 2, 10, s, &msg), 0);
    sstpipe_close(t);
}

/* A prefix of more titles than a suggestion scans has a list of its best
 * in the index: "Ab z", of the shortest articles, is found though over a
 * thousand titles of "ab" come before it; "Ab 0", the exact match and in
 * the list of "ab 0" too, comes once; the redirect "Ab" matched exactly
 * comes first. */
static void test_suggest_listed(void **state) {
    fixture *f = *state;
    enum { MANY = 1200 };
    static char names[MANY][8];
    static const char *records[MANY + 3][2];
    size_t n = 0;
    records[n][0] = "Ab", records[n++][1] = "#REDIRECT [[Ab z]]";
    records[n][0] = "Ab 0", records[n++][1] = "x";
    for (int i = 0; i < MANY; i++) {
        snprintf(names[i], sizeof names[i], "Ab %04d", i);
        records[n][0] = names[i], records[n++][1] = "x";
    }
    records[n][0] = "Ab z", records[n++][1] = "x";
    char *path = path_in(f->dir, "many.sst");
    write_records(path, false, records, n);
    sstpipe_table *t = open_table(path);
    sstpipe_suggestion s[SSTPIPE_SUGGEST_MAX];
    char *msg = NULL;
    assert_int_equal(sstpipe_suggest(t, "ab ", 3, 3, s, &msg), 3);
    assert_string_equal(s[0].title, "Ab 0");
    assert_string_equal(s[1].title, "Ab z");
    assert_string_equal(s[2].title, "Ab 0000");
    assert_int_equal(sstpipe_suggest(t, "ab 0", 4, 2, s, &msg), 2);
    assert_string_equal(s[0].title, "Ab 0");
    assert_string_equal(s[1].title, "Ab 0000");
    assert_int_equal(sstpipe_suggest(t, "ab", 2, SSTPIPE_SUGGEST_MAX, s, &msg),
                     SSTPIPE_SUGGEST_MAX);
    assert_string_equal(s[0].title, "Ab");
    assert_true(s[0].redirect);
    assert_string_equal(s[2].title, "Ab z");
    assert_string_equal(s[SSTPIPE_SUGGEST_MAX - 1].title, "Ab 0096");
    sstpipe_close(t);
    free(path);
}

/* Each error: -1 and a message, the caller's to free. */
static void expect_error(sstpipe_table *t, const char *text, size_t len, size_t limit,
                         const char *says) {
    sstpipe_suggestion s[SSTPIPE_SUGGEST_MAX];
    char *msg = NULL;
    assert_int_equal(sstpipe_suggest(t, text, len, limit, s, &msg), -1);
    assert_non_null(msg);
    if (!strstr(msg, says))
        fail_msg("%s: not in %s", says, msg);
    sstpipe_free(msg);
}

static void test_errors(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_table(f->path);
    assert_true(sstpipe_has_titles(t));
    expect_error(t, "a", 1, 0, "a limit is 1 to 100");
    expect_error(t, "a", 1, SSTPIPE_SUGGEST_MAX + 1, "a limit is 1 to 100");
    expect_error(t, "", 0, 10, "1 to 320 bytes of UTF-8");
    expect_error(t, "\xff", 1, 10, "1 to 320 bytes of UTF-8");
    char *long_text = malloc(SSTPIPE_TITLE_MAX + 1);
    memset(long_text, 'a', SSTPIPE_TITLE_MAX + 1);
    expect_error(t, long_text, SSTPIPE_TITLE_MAX + 1, 10, "1 to 320 bytes of UTF-8");
    free(long_text);
    /* The result's strings are the caller's: still there once closed. */
    sstpipe_lookup_result res;
    char *msg = NULL;
    assert_int_equal(sstpipe_lookup(t, "AbacuS", 6, 0, &res, &msg), 1);
    sstpipe_close(t);
    assert_string_equal(res.title, "Abacus");
    assert_string_equal(res.redirect_from, "AbacuS");

    /* Without a title index: exact keys alone, and no suggestions. */
    char *bare = path_in(f->dir, "bare.sst");
    write_table(bare, true);
    t = open_table(bare);
    assert_false(sstpipe_has_titles(t));
    expect(t, "AbacuS", 0, 1, "#REDIRECT [[Abacus]]", "AbacuS", "", "");
    expect(t, "abacus", 0, 0, NULL, NULL, "", "");
    expect_error(t, "aba", 3, 10, "has no title index");
    sstpipe_close(t);
    free(bare);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suggest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suggest_listed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
