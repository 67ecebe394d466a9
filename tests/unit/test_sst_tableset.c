/*
 * test_sst_tableset.c: the table set manifest (table_set.h, TABLESET.md):
 * the writer's manifest read back by the reader with every shard as given;
 * each rule refused with a message naming the manifest, the shard and the
 * defect (missing shard file, a file of the wrong size, overlapping and
 * gapped ranges, an inverted range, bounds where none may be, bad hex, a
 * bad checksum, a file listed twice, a path as a file name, bad options,
 * a truncated or not-JSON manifest, a version from the future); the
 * writer refusing the same lists before writing anything, leaving an
 * earlier manifest alone; and the binary search routing keys to shards.
 */
#include "stages/sst/table_set.h"
#include "test_dir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define OPTS                                                                                       \
    "{\"format_version\": 1, \"block_size\": 8192, \"cluster_size\": 4096, "                       \
    "\"max_value_bytes\": 1024, \"restart_interval\": 16, \"checksum\": \"xxh3-64\"}"
#define SUM "00112233445566778899aabbccddeeff"

static char *dir;

static void put_file(const char *name, size_t size) {
    char p[TEST_DIR_CAP + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < size; i++)
        fputc(0, f);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
    (void)state;
    dir = test_dir_make("tableset");
    if (!dir)
        return -1;
    put_file("a.sst", 4096);
    put_file("b.sst", 8192);
    put_file("c.sst", 12288);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(dir);
}

/* Three shards: (-inf, "M"), ["M", "Moon"), ["Moon", +inf). */
static void three(table_set_shard s[3]) {
    memset(s, 0, 3 * sizeof *s);
    s[0] = (table_set_shard){.file = "a.sst",
                             .hi = (const uint8_t *)"M",
                             .hi_len = 1,
                             .has_hi = true,
                             .records = 1,
                             .bytes = 4096,
                             .checksum = SUM};
    s[1] = (table_set_shard){.file = "b.sst",
                             .lo = (const uint8_t *)"M",
                             .lo_len = 1,
                             .has_lo = true,
                             .hi = (const uint8_t *)"Moon",
                             .hi_len = 4,
                             .has_hi = true,
                             .records = 2,
                             .bytes = 8192,
                             .checksum = SUM};
    s[2] = (table_set_shard){.file = "c.sst",
                             .lo = (const uint8_t *)"Moon",
                             .lo_len = 4,
                             .has_lo = true,
                             .records = 3,
                             .bytes = 12288,
                             .checksum = SUM};
}

static void test_roundtrip(void **state) {
    (void)state;
    table_set_shard s[3];
    three(s);
    sp_error err = {0};
    assert_int_equal(table_set_write_manifest(dir, s, 3, OPTS, "[{\"path\": \"x.xml\"}]", &err), 0);
    table_set *t = table_set_read(dir, &err);
    if (!t)
        fail_msg("%s", err.msg);
    assert_int_equal(table_set_count(t), 3);
    for (size_t i = 0; i < 3; i++) {
        const table_set_shard *g = table_set_shard_at(t, i);
        assert_string_equal(g->file, s[i].file);
        assert_int_equal(g->has_lo, s[i].has_lo);
        assert_int_equal(g->has_hi, s[i].has_hi);
        if (g->has_lo)
            assert_memory_equal(g->lo, s[i].lo, s[i].lo_len);
        if (g->has_hi)
            assert_memory_equal(g->hi, s[i].hi, s[i].hi_len);
        assert_int_equal(g->records, s[i].records);
        assert_int_equal(g->bytes, s[i].bytes);
        assert_string_equal(g->checksum, SUM);
    }
    assert_int_equal(table_set_get_options(t)->block_size, 8192);
    assert_int_equal(table_set_get_options(t)->max_value_bytes, 1024);
    /* Routing: the last shard whose lo is <= the key. */
    struct {
        const char *k;
        size_t shard;
    } cases[] = {{"A", 0},    {"L\xff", 0},    {"M", 1}, {"Ma", 1},  {"Moo", 1},
                 {"Moon", 2}, {"Moon\x00", 2}, {"Z", 2}, {"\x01", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t klen = strlen(cases[i].k) + (strcmp(cases[i].k, "Moon") == 0 && i == 6);
        size_t f = table_set_find(t, (const uint8_t *)cases[i].k, klen);
        assert_int_equal(f, cases[i].shard);
        assert_true(
            table_set_shard_holds(table_set_shard_at(t, f), (const uint8_t *)cases[i].k, klen));
    }
    /* Read through the manifest's own path too. */
    char p[TEST_DIR_CAP + 64];
    snprintf(p, sizeof p, "%s/%s", dir, TABLE_SET_MANIFEST);
    table_set *t2 = table_set_read(p, &err);
    assert_non_null(t2);
    assert_string_equal(table_set_shard_path(t2, 1), table_set_shard_path(t, 1));
    table_set_free(t2);
    table_set_free(t);
}

/* The writer refuses a list, names the defect, and leaves the earlier
 * manifest as it was. */
static void refused(table_set_shard *s, size_t n, const char *want) {
    char p[TEST_DIR_CAP + 64];
    snprintf(p, sizeof p, "%s/%s", dir, TABLE_SET_MANIFEST);
    table_set_shard good[3];
    three(good);
    sp_error err = {0};
    assert_int_equal(table_set_write_manifest(dir, good, 3, OPTS, "[]", &err), 0);
    FILE *f = fopen(p, "rb");
    char before[8192];
    size_t nb = fread(before, 1, sizeof before, f);
    fclose(f);
    assert_int_equal(table_set_write_manifest(dir, s, n, OPTS, "[]", &err), -1);
    if (!strstr(err.msg, want) || !strstr(err.msg, TABLE_SET_MANIFEST))
        fail_msg("message \"%s\" does not name the manifest and say \"%s\"", err.msg, want);
    f = fopen(p, "rb");
    char after[8192];
    size_t na = fread(after, 1, sizeof after, f);
    fclose(f);
    assert_int_equal(na, nb);
    assert_memory_equal(after, before, na);
    assert_int_equal(test_dir_entries(dir), 4); /* a.sst b.sst c.sst tableset.json */
}

static void test_writer_refuses(void **state) {
    (void)state;
    table_set_shard s[3];
    three(s);
    s[1].lo = (const uint8_t *)"L"; /* overlaps shard 0 */
    refused(s, 3, "shard 1 (b.sst): ranges not contiguous: its lo is below (overlap)");
    three(s);
    s[2].lo = (const uint8_t *)"Moop"; /* a gap after shard 1 */
    refused(s, 3, "shard 2 (c.sst): ranges not contiguous: its lo is above (gap)");
    three(s);
    s[1].hi = (const uint8_t *)"A";
    s[1].hi_len = 1;
    s[2].lo = s[1].hi;
    s[2].lo_len = 1;
    refused(s, 3, "shard 1 (b.sst): empty or inverted range");
    three(s);
    s[0].has_lo = true;
    s[0].lo = (const uint8_t *)"A";
    s[0].lo_len = 1;
    refused(s, 3, "shard 0 (a.sst): lo must be null");
    three(s);
    s[2].has_hi = true;
    s[2].hi = (const uint8_t *)"Z";
    s[2].hi_len = 1;
    refused(s, 3, "shard 2 (c.sst): hi must be null");
    three(s);
    s[1].has_hi = false;
    refused(s, 3, "shard 1 (b.sst): hi is null");
    three(s);
    s[2].file = "a.sst";
    refused(s, 3, "shard file a.sst is listed twice");
    three(s);
    s[1].file = "../b.sst";
    refused(s, 3, "shard 1: file \"../b.sst\" is not a plain file name");
    three(s);
    s[1].checksum = "00112233445566778899AABBCCDDEEFF";
    refused(s, 3, "shard 1 (b.sst): checksum is not 32 lowercase hex digits");
    refused(s, 0, "no shards");
    three(s);
    sp_error err = {0};
    assert_int_equal(table_set_write_manifest(dir, s, 3, "[1]", "[]", &err), -1);
    assert_non_null(strstr(err.msg, "options given are not a JSON object"));
}

/* The reader on manifest text: each defect refused with its message. */
static void parse_refused(const char *text, const char *want) {
    sp_error err = {0};
    table_set *t = table_set_parse(text, strlen(text), "set/tableset.json", "set", &err);
    if (t) {
        table_set_free(t);
        fail_msg("accepted: %s", text);
    }
    if (!strstr(err.msg, want) || strncmp(err.msg, "set/tableset.json: ", 19) != 0)
        fail_msg("message \"%s\" does not name the manifest and say \"%s\"", err.msg, want);
}

#define SH0                                                                                        \
    "{\"file\": \"a.sst\", \"lo\": null, \"hi\": \"4d\", \"records\": 1, \"bytes\": 4096, "        \
    "\"checksum\": \"" SUM "\"}"
#define SH1(lo)                                                                                    \
    "{\"file\": \"b.sst\", \"lo\": " lo ", \"hi\": null, \"records\": 1, "                         \
    "\"bytes\": 8192, \"checksum\": \"" SUM "\"}"
#define DOC(shards, opts)                                                                          \
    "{\"format\": \"sstpipe-tableset\", \"version\": 1, \"shards\": [" shards                      \
    "], \"options\": " opts ", \"inputs\": []}"

static void test_parse_refuses(void **state) {
    (void)state;
    sp_error err = {0};
    const char *good = DOC(SH0 ", " SH1("\"4d\""), OPTS);
    table_set *t = table_set_parse(good, strlen(good), "set/tableset.json", "set", &err);
    if (!t)
        fail_msg("%s", err.msg);
    assert_string_equal(table_set_shard_path(t, 1), "set/b.sst");
    table_set_free(t);
    /* Shards of format version 2 (compressed) make a set as version 1's do. */
    const char *v2 = DOC(SH0 ", " SH1("\"4d\""),
                         "{\"format_version\": 2, \"block_size\": 8192, \"cluster_size\": 4096, "
                         "\"max_value_bytes\": 1024, \"restart_interval\": 16, \"checksum\": "
                         "\"xxh3-64\"}");
    if (!(t = table_set_parse(v2, strlen(v2), "set/tableset.json", "set", &err)))
        fail_msg("%s", err.msg);
    assert_int_equal(table_set_get_options(t)->format_version, 2);
    table_set_free(t);
    parse_refused(DOC(SH0 ", " SH1("\"4d\""),
                      "{\"format_version\": 3, \"block_size\": 8192, \"cluster_size\": 4096, "
                      "\"max_value_bytes\": 1024, \"restart_interval\": 16, \"checksum\": "
                      "\"xxh3-64\"}"),
                  "options: format_version 3, this sstpipe reads 1 and 2");

    parse_refused(DOC(SH0 ", " SH1("\"4g\""), OPTS),
                  "shard 1 (b.sst): \"lo\" is not lowercase hex: bad digit at position 1");
    parse_refused(DOC(SH0 ", " SH1("\"4D\""), OPTS), "\"lo\" is not lowercase hex");
    parse_refused(DOC(SH0 ", " SH1("\"4d6\""), OPTS), "\"lo\" has 3 hex digits");
    parse_refused(DOC(SH0 ", " SH1("\"\""), OPTS), "\"lo\" has 0 hex digits");
    parse_refused(DOC(SH0 ", " SH1("42"), OPTS), "\"lo\" is neither null nor a hex string");
    parse_refused(DOC(SH0 ", " SH1("\"4c\""), OPTS), "ranges not contiguous: its lo is below");
    parse_refused(DOC(SH0 ", " SH1("\"4e\""), OPTS), "ranges not contiguous: its lo is above");
    parse_refused(DOC(SH0 ", " SH1("null"), OPTS), "shard 1 (b.sst): lo is null");
    parse_refused(DOC(SH0, OPTS), "shard 0 (a.sst): hi must be null");
    parse_refused(DOC("", OPTS), "no shards");
    parse_refused(DOC(SH0 ", 7", OPTS), "shard 1 is not an object");
    parse_refused(
        DOC("{\"file\": \"a.sst\", \"lo\": null, \"hi\": null, \"records\": -1, \"bytes\": 1, "
            "\"checksum\": \"" SUM "\"}",
            OPTS),
        "shard 0 (a.sst): \"records\" is of the wrong type, not a whole number >= 0");
    parse_refused(DOC("{\"file\": \"a.sst\", \"hi\": null, \"records\": 1, \"bytes\": 1, "
                      "\"checksum\": \"" SUM "\"}",
                      OPTS),
                  "shard 0 (a.sst): no \"lo\"");
    parse_refused(DOC("{\"lo\": null, \"hi\": null}", OPTS), "shard 0: \"file\" is missing");
    parse_refused(DOC(SH0 ", " SH1("\"4d\""), "{}"), "options: \"format_version\" is missing");
    parse_refused(DOC(SH0 ", " SH1("\"4d\""),
                      "{\"format_version\": 1, \"block_size\": 1000, \"cluster_size\": 4096, "
                      "\"max_value_bytes\": 1024, \"restart_interval\": 16, \"checksum\": "
                      "\"xxh3-64\"}"),
                  "block_size 1000 or cluster_size 4096 is not a power of two");
    parse_refused("{\"format\": \"sstpipe-tableset\", \"version\": 2, \"shards\": []}",
                  "version 2, this sstpipe reads version 1");
    parse_refused("{\"format\": \"something\", \"version\": 1}", "\"format\" is not");
    parse_refused("[]", "not a JSON object");
    /* A manifest cut short, as a crash without the atomic rename would leave. */
    char cut[512];
    snprintf(cut, sizeof cut, "%.*s", (int)(strlen(good) / 2), good);
    parse_refused(cut, "not valid JSON");
    parse_refused("", "line 1, column 0: not valid JSON");
}

/* The reader's look at the shard files: missing, wrong size, a directory. */
static void test_read_files(void **state) {
    (void)state;
    table_set_shard s[3];
    three(s);
    sp_error err = {0};
    assert_int_equal(table_set_write_manifest(dir, s, 3, OPTS, "[]", &err), 0);
    char p[TEST_DIR_CAP + 64], q[TEST_DIR_CAP + 64];
    snprintf(p, sizeof p, "%s/b.sst", dir);
    snprintf(q, sizeof q, "%s/b.moved", dir);
    assert_int_equal(rename(p, q), 0);
    assert_null(table_set_read(dir, &err));
    assert_non_null(strstr(err.msg, "tableset.json: shard 1: "));
    assert_non_null(strstr(err.msg, "/b.sst: missing or unreadable: No such file or directory"));
    assert_int_equal(rename(q, p), 0);
    put_file("c.sst", 100);
    err = (sp_error){0};
    assert_null(table_set_read(dir, &err));
    assert_non_null(strstr(err.msg, "/c.sst: 100 bytes, the manifest says 12288"));
    put_file("c.sst", 12288);
    err = (sp_error){0};
    table_set *t = table_set_read(dir, &err);
    assert_non_null(t);
    table_set_free(t);
    /* A directory that never got its manifest is not a set. */
    char *empty = test_dir_make("tableset-empty");
    err = (sp_error){0};
    assert_null(table_set_read(empty, &err));
    assert_non_null(strstr(err.msg, "without tableset.json, not a table set"));
    assert_true(table_set_is_set_path(empty));
    assert_false(table_set_is_set_path(p));
    test_dir_remove(empty);
}

static void test_file_checksum(void **state) {
    (void)state;
    /* XXH3-128 of the empty input, as xxhsum -H2 prints it (xxHash's
     * published test vector): high 64 bits first. */
    char p[TEST_DIR_CAP + 64], sum[TABLE_SET_CHECKSUM_HEX];
    put_file("empty", 0);
    snprintf(p, sizeof p, "%s/empty", dir);
    sp_error err = {0};
    assert_int_equal(table_set_file_checksum(p, sum, &err), 0);
    assert_string_equal(sum, "99aa06d3014798d86001c324468d497f");
    snprintf(p, sizeof p, "%s/a.sst", dir);
    assert_int_equal(table_set_file_checksum(p, sum, &err), 0);
    assert_int_equal(strlen(sum), 32);
    char again[TABLE_SET_CHECKSUM_HEX];
    snprintf(p, sizeof p, "%s/b.sst", dir);
    assert_int_equal(table_set_file_checksum(p, again, &err), 0);
    assert_string_not_equal(sum, again);
    snprintf(p, sizeof p, "%s/none.sst", dir);
    assert_int_equal(table_set_file_checksum(p, sum, &err), -1);
    assert_non_null(strstr(err.msg, "none.sst: cannot open"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writer_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_checksum, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
