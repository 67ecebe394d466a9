/*
 * test_config.c: the configuration library: defaults and the shipped INI
 * files, precedence (defaults < file < --set < flag) with origins, every kind
 * of bad value with its file:line and key, typo suggestions, and how -c/--set
 * are taken out of a command's arguments.
 */
#include "config/config.h"
#include "config/keys.h"

#include "stages/common/record.h"
#include "stages/sort/sorter.h"
#include "stages/sst/format.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The shipped files, found from this source file's absolute path. */
static char *source_path(const char *rel) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s", __FILE__);
    char *tests = strstr(buf, "/tests/unit/");
    assert_non_null(tests);
    snprintf(tests, sizeof buf - (size_t)(tests - buf), "/%s", rel);
    return buf;
}

static char ini_path[64];

/* Writes text to a temporary INI file and returns its path. */
static const char *write_ini(const char *text) {
    snprintf(ini_path, sizeof ini_path, "/tmp/test_config_XXXXXX");
    int fd = mkstemp(ini_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return ini_path;
}

/* Loads text as an INI file; returns the error message ("" on success). */
static const char *load_text(sp_config *cfg, const char *text) {
    static sp_error err;
    sp_error_clear(&err);
    const char *path = write_ini(text);
    int rc = config_load_file(cfg, path, &err);
    unlink(path);
    assert_int_equal(rc, err.set ? -1 : 0);
    return err.set ? err.msg : "";
}

static void assert_contains(const char *haystack, const char *needle) {
    if (!strstr(haystack, needle))
        fail_msg("'%s' does not contain '%s'", haystack, needle);
}

static void test_defaults(void **state) {
    (void)state;
    sp_config cfg;
    config_init(&cfg);
    assert_int_equal(cfg.truncate.max_bytes, SP_DEFAULT_MAX_VALUE_BYTES);
    assert_int_equal(cfg.sort.memory, SORT_DEFAULT_MEMORY);
    assert_int_equal(cfg.sst.block_size, SST_DEFAULT_BLOCK_SIZE);
    assert_int_equal(cfg.sst.cluster_size, SST_DEFAULT_CLUSTER_SIZE);
    assert_int_equal(cfg.extract.namespace_count, 0);
    assert_false(cfg.extract.skip_redirects);
    assert_string_equal(cfg.output.name, "table.sst");
    assert_string_equal(cfg.output.dir, "");
    assert_int_equal(cfg.output.keep, 7);
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        assert_int_equal(cfg.origin[k], CONFIG_FROM_DEFAULT);
        assert_string_equal(config_origin_text(&cfg, (config_key)k), "default");
    }
    config_destroy(&cfg);
}

/* Each row's field is a member of the type its key type stores into
 * (keys.c reaches the member through the row's offset). */
static void test_key_fields_fit_types(void **state) {
    (void)state;
    sp_config c;
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        size_t want = 0;
        switch (config_keys[k].type) {
        case KT_STRING:
        case KT_FILENAME:
            want = sizeof c.input.path;
            break;
        case KT_BOOL:
        case KT_REDIRECTS:
            want = sizeof c.profile.cold;
            break;
        case KT_SIZE:
        case KT_POW2:
        case KT_COUNT:
        case KT_FAN_IN:
            want = sizeof c.sort.memory;
            break;
        case KT_NAMESPACES:
            want = sizeof c.extract.namespaces;
            break;
        case KT_PERCENT:
            want = sizeof c.profile.misses;
            break;
        case KT_PROGRESS:
            want = sizeof c.progress.show;
            break;
        case KT_RUNNER:
            want = sizeof c.cluster.runner;
            break;
        case KT_COMPRESSION:
            want = sizeof c.sst.compress;
            break;
        }
        if (config_keys[k].size != want)
            fail_msg("[%s] %s: its field has %zu bytes, its type stores %zu",
                     config_keys[k].section, config_keys[k].name, config_keys[k].size, want);
    }
}

/* default.ini is the key table written out: after its opening comment, each
 * section in table order, each key's help as a comment over `name =
 * default`, so a key added to config/keys.def and not to the file (or
 * described differently) fails here. */
static void test_default_ini_is_the_table(void **state) {
    (void)state;
    sp_config defaults;
    config_init(&defaults);
    size_t cap = 1 << 16, used = 0;
    char *want = malloc(cap);
    assert_non_null(want);
    want[0] = '\0';
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        const char *sec = config_key_section((config_key)k);
        char def[256];
        config_value_text(&defaults, (config_key)k, def, sizeof def);
        if (k == 0 || strcmp(sec, config_key_section((config_key)(k - 1))))
            used += (size_t)snprintf(want + used, cap - used, "\n[%s]\n", sec);
        used += (size_t)snprintf(want + used, cap - used, "; %s\n%s =%s%s\n",
                                 config_key_help((config_key)k), config_key_name((config_key)k),
                                 *def ? " " : "", def);
        assert_true(used < cap);
    }
    config_destroy(&defaults);
    FILE *f = fopen(source_path("config/default.ini"), "r");
    assert_non_null(f);
    char *got = calloc(1, cap);
    assert_non_null(got);
    size_t n = fread(got, 1, cap - 1, f);
    fclose(f);
    got[n] = '\0';
    const char *body = strstr(got, "\n\n[");
    assert_non_null(body);
    assert_string_equal(body + 1, want);
    free(got);
    free(want);
}

/* README.md's Configuration section names every key under its section:
 * each key's name stands in the span from `[section]` to the next
 * section, so a key added to config/keys.def is not left out of the docs
 * (the man page's key list is made from the table itself). */
static void test_readme_names_every_key(void **state) {
    (void)state;
    FILE *f = fopen(source_path("README.md"), "r");
    assert_non_null(f);
    size_t cap = 1 << 20;
    char *text = calloc(1, cap);
    assert_non_null(text);
    size_t n = fread(text, 1, cap - 1, f);
    fclose(f);
    text[n] = '\0';
    char *start = strstr(text, "\n## Configuration\n");
    assert_non_null(start);
    start += strlen("\n## Configuration\n\n");
    char *end = strstr(start, "\n\n"); /* its first paragraph */
    assert_non_null(end);
    *end = '\0';
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        char sec[64];
        snprintf(sec, sizeof sec, "`[%s]`", config_key_section((config_key)k));
        const char *span = strstr(start, sec);
        if (!span)
            fail_msg("README.md's Configuration does not name %s", sec);
        span += strlen(sec);
        const char *next = strstr(span, "`[");
        const char *name = config_key_name((config_key)k);
        const char *at = strstr(span, name);
        if (!at || (next && at > next))
            fail_msg("README.md's Configuration does not name [%s] %s",
                     config_key_section((config_key)k), name);
    }
    free(text);
}

/* default.ini sets every key, each to its default. */
static void test_default_ini_lists_every_key(void **state) {
    (void)state;
    sp_config defaults, cfg;
    config_init(&defaults);
    config_init(&cfg);
    sp_error err = {0};
    const char *path = source_path("config/default.ini");
    if (config_load_file(&cfg, path, &err))
        fail_msg("%s", err.msg);
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        char a[256], b[256];
        if (cfg.origin[k] != CONFIG_FROM_FILE)
            fail_msg("default.ini does not set [%s] %s", config_key_section((config_key)k),
                     config_key_name((config_key)k));
        assert_string_equal(config_value_text(&cfg, (config_key)k, a, sizeof a),
                            config_value_text(&defaults, (config_key)k, b, sizeof b));
        assert_non_null(strstr(config_origin_text(&cfg, (config_key)k), "default.ini:"));
    }
    config_destroy(&cfg);
    config_destroy(&defaults);
}

static void test_nightly_ini_loads(void **state) {
    (void)state;
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    if (config_load_file(&cfg, source_path("config/nightly.ini"), &err))
        fail_msg("%s", err.msg);
    assert_int_equal(cfg.extract.namespace_count, 2);
    assert_int_equal(cfg.extract.namespaces[1], 1);
    assert_true(cfg.extract.skip_redirects);
    assert_int_equal(cfg.sort.memory, 2ull << 30);
    assert_int_equal(cfg.sst.block_size, 4096);
    assert_true(cfg.profile.cold);
    assert_string_equal(cfg.output.name, "enwiki.sst");
    config_destroy(&cfg);
}

static void test_precedence_and_origins(void **state) {
    (void)state;
    const char *path = write_ini("[sst]\nblock_size = 16K\ncluster_size = 8K\n"
                                 "[sort]\nmemory = 64M\n[truncate]\nmax_bytes = 2K\n");
    char *argv[] = {"build",
                    "in.xml",
                    "-c",
                    (char *)path,
                    "--set",
                    "sst.block_size=32K",
                    "--set=sort.memory=128M",
                    "-o",
                    "out.sst",
                    "--block-size",
                    "64K",
                    NULL};
    int argc = 11;
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    if (config_parse_args(&cfg, &argc, argv, &err))
        fail_msg("%s", err.msg);
    unlink(path);
    /* Only the command's own arguments are left, in order. */
    assert_int_equal(argc, 6);
    assert_string_equal(argv[1], "in.xml");
    assert_string_equal(argv[2], "-o");
    assert_string_equal(argv[3], "out.sst");
    assert_string_equal(argv[4], "--block-size");
    assert_null(argv[6]);
    /* The command's flag comes last and wins. */
    if (config_set_flag(&cfg, CONFIG_SST_BLOCK_SIZE, "--block-size", argv[5], &err))
        fail_msg("%s", err.msg);

    assert_int_equal(cfg.sst.block_size, 64 << 10);
    assert_int_equal(cfg.origin[CONFIG_SST_BLOCK_SIZE], CONFIG_FROM_FLAG);
    assert_string_equal(config_origin_text(&cfg, CONFIG_SST_BLOCK_SIZE), "--block-size");

    assert_int_equal(cfg.sort.memory, 128 << 20);
    assert_int_equal(cfg.origin[CONFIG_SORT_MEMORY], CONFIG_FROM_SET);
    assert_string_equal(config_origin_text(&cfg, CONFIG_SORT_MEMORY), "--set sort.memory=128M");

    char where[128];
    snprintf(where, sizeof where, "%s:3", path);
    assert_int_equal(cfg.sst.cluster_size, 8 << 10);
    assert_string_equal(config_origin_text(&cfg, CONFIG_SST_CLUSTER_SIZE), where);
    snprintf(where, sizeof where, "%s:7", path);
    assert_int_equal(cfg.truncate.max_bytes, 2048);
    assert_string_equal(config_origin_text(&cfg, CONFIG_TRUNCATE_MAX_BYTES), where);

    assert_int_equal(cfg.sst.block_size, 64 << 10);
    assert_int_equal(cfg.origin[CONFIG_OUTPUT_KEEP], CONFIG_FROM_DEFAULT);

    /* config show prints value and origin on one line. */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    config_print(&cfg, out);
    fclose(out);
    assert_contains(text, "block_size = 64K");
    assert_contains(text, "; --block-size\n");
    assert_contains(text, "memory = 128M");
    assert_contains(text, "; --set sort.memory=128M\n");
    assert_contains(text, "keep = 7");
    free(text);

    json_t *j = config_to_json(&cfg);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(j, "sst"), "block_size"), "value")),
                     64 << 10);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(j, "sort"), "memory"), "origin")),
                        "--set sort.memory=128M");
    json_decref(j);
    config_destroy(&cfg);
}

/* --set applies after the file even when written before -c. */
static void test_set_beats_file_in_any_order(void **state) {
    (void)state;
    const char *path = write_ini("[output]\nkeep = 3\n");
    char *argv[] = {"nightly", "--set", "output.keep=5", "--config", (char *)path, NULL};
    int argc = 5;
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    if (config_parse_args(&cfg, &argc, argv, &err))
        fail_msg("%s", err.msg);
    unlink(path);
    assert_int_equal(argc, 1);
    assert_int_equal(cfg.output.keep, 5);
    config_destroy(&cfg);
}

static void test_parse_args_edges(void **state) {
    (void)state;
    sp_config cfg;
    sp_error err = {0};

    char *twice[] = {"x", "-c", "a.ini", "-cb.ini", NULL};
    int argc = 4;
    config_init(&cfg);
    assert_int_equal(config_parse_args(&cfg, &argc, twice, &err), -1);
    assert_contains(err.msg, "-c given twice");
    config_destroy(&cfg);

    char *missing[] = {"x", "--set", NULL};
    argc = 2;
    sp_error_clear(&err);
    config_init(&cfg);
    assert_int_equal(config_parse_args(&cfg, &argc, missing, &err), -1);
    assert_contains(err.msg, "--set needs an argument");
    config_destroy(&cfg);

    /* After "--" nothing is taken: a key may start with -c. */
    char *dashdash[] = {"get", "--settle", "--", "-c", "x", NULL};
    argc = 5;
    sp_error_clear(&err);
    config_init(&cfg);
    assert_int_equal(config_parse_args(&cfg, &argc, dashdash, &err), 0);
    assert_int_equal(argc, 5);
    assert_string_equal(dashdash[1], "--settle");
    assert_string_equal(dashdash[3], "-c");
    config_destroy(&cfg);

    char *nofile[] = {"x", "-c", "/nonexistent/sstpipe.ini", NULL};
    argc = 3;
    sp_error_clear(&err);
    config_init(&cfg);
    assert_int_equal(config_parse_args(&cfg, &argc, nofile, &err), -1);
    assert_contains(err.msg, "/nonexistent/sstpipe.ini: cannot open config file");
    config_destroy(&cfg);
}

/* One bad value of every kind: the message names file:line and the key, and
 * the value stays as it was. */
static void test_bad_values_in_file(void **state) {
    (void)state;
    static const struct {
        const char *ini;
        const char *expect;
    } cases[] = {
        {"[sst]\nblock_size = 3000\n", ":2: [sst] block_size: '3000' must be a power of two"},
        {"[sst]\nblock_size = 256\n", ":2: [sst] block_size: '256' must be a power of two "
                                      "from 512 to 1M"},
        {"[sst]\nblock_size = 2M\n", "[sst] block_size: '2M' must be a power of two"},
        {"[sst]\n\ncluster_size = 4Q\n", ":3: [sst] cluster_size: '4Q' is not a size"},
        {"[sort]\nmemory = lots\n", ":2: [sort] memory: 'lots' is not a size"},
        {"[sort]\nmemory = 512K\n", ":2: [sort] memory: '512K' must be from 1M to"},
        {"[sort]\nfan_in = 1\n", "[sort] fan_in: '1' must be 0 (automatic) or a whole number"},
        {"[build]\nthreads = -2\n", "[build] threads: '-2' must be a whole number from 0 to 1024"},
        {"[truncate]\nmax_bytes = 0\n", "[truncate] max_bytes: '0' must be from 1 to"},
        {"[truncate]\nmax_bytes = 8G\n", "[truncate] max_bytes: '8G' must be from 1 to"},
        {"[profile]\ncold = maybe\n", ":2: [profile] cold: 'maybe' is not a boolean"},
        {"[profile]\nmisses = 101\n", "[profile] misses: '101' must be a number from 0 to 100"},
        {"[profile]\nlookups = 1e4\n", "[profile] lookups: '1e4' must be a whole number"},
        {"[extract]\nnamespaces = 0,main\n", ":2: [extract] namespaces: '0,main' is not a "
                                             "namespace list"},
        {"[extract]\nnamespaces = 0,,14\n", "[extract] namespaces: '0,,14' is not a namespace"},
        {"[extract]\nnamespaces = 0,14,\n", "[extract] namespaces: '0,14,' is not a namespace"},
        {"[extract]\nnamespaces = -1\n", "[extract] namespaces: '-1' is not a namespace list"},
        {"[extract]\nnamespaces = 0, 14, 0\n", "[extract] namespaces: namespace 0 is listed "
                                               "twice"},
        {"[extract]\nredirects = drop\n", ":2: [extract] redirects: 'drop' must be keep or skip"},
        {"[output]\nname = a/b.sst\n", "[output] name: 'a/b.sst' must be a plain file name"},
        {"[output]\nname = manifest.json\n", "[output] name: 'manifest.json' is the name of"},
        {"[output]\nkeep = 0\n", ":2: [output] keep: '0' must be a whole number from 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_config cfg;
        config_init(&cfg);
        const char *msg = load_text(&cfg, cases[i].ini);
        assert_contains(msg, "/tmp/test_config_");
        assert_contains(msg, cases[i].expect);
        assert_int_equal(cfg.sst.block_size, SST_DEFAULT_BLOCK_SIZE);
        assert_int_equal(cfg.extract.namespace_count, 0);
        assert_string_equal(cfg.output.name, "table.sst");
        config_destroy(&cfg);
    }
}

static void test_good_values_in_file(void **state) {
    (void)state;
    sp_config cfg;
    config_init(&cfg);
    assert_string_equal(load_text(&cfg, "; comment\n# another\n[extract]\n"
                                        "  namespaces = 0, 14 ,6 ; inline comment\n"
                                        "redirects = SKIP # inline hash comment\n"
                                        "[profile] # a section's comment\ncold = yes\n"
                                        "misses = 12.5\nseed = 18446744073709551615\n"
                                        "[sort]\nfan_in = 0\ntmp_dir =\n[sst]\n"
                                        "block_size = 1MiB\ncluster_size = 512\t#\n"
                                        "[output]\nname = a#b.sst\n"),
                        "");
    assert_int_equal(cfg.extract.namespace_count, 3);
    assert_int_equal(cfg.extract.namespaces[2], 6);
    assert_true(cfg.extract.skip_redirects);
    assert_true(cfg.profile.cold);
    assert_true(cfg.profile.misses == 12.5);
    assert_true(cfg.profile.seed == UINT64_MAX);
    assert_int_equal(cfg.sst.block_size, 1 << 20);
    assert_int_equal(cfg.sst.cluster_size, 512);
    char buf[64];
    assert_string_equal(config_value_text(&cfg, CONFIG_EXTRACT_NAMESPACES, buf, sizeof buf),
                        "0,14,6");
    /* A '#' inside a word is part of the value. */
    assert_string_equal(cfg.output.name, "a#b.sst");
    config_destroy(&cfg);
}

static void test_file_structure_errors(void **state) {
    (void)state;
    static const struct {
        const char *ini;
        const char *expect;
    } cases[] = {
        {"[sst]\nblok_size = 4K\n", ":2: unknown key [sst] blok_size (did you mean [sst] "
                                    "block_size?)"},
        {"[sort]\nblock_size = 4K\n", ":2: unknown key [sort] block_size (did you mean [sst] "
                                      "block_size?)"},
        {"[output]\nKeep = 3\n", "unknown key [output] Keep (did you mean [output] keep?)"},
        {"[sort]\ntmpdir = /x\n", "unknown key [sort] tmpdir (did you mean [sort] tmp_dir?)"},
        /* The old name of [build] threads, gone: its new name is offered. */
        {"[sort]\nthreads = 2\n", ":2: unknown key [sort] threads (did you mean [build] threads?)"},
        {"[sort]\ncolour = red\n", ":2: unknown key [sort] colour\0"},
        {"[sst]\nblock_size = 4K\n[sts]\n", ":3: unknown section [sts] (did you mean [sst]?)"},
        {"[nonsense]\n", ":1: unknown section [nonsense] (sections: [input] [extract]"},
        {"block_size = 4K\n", ":1: key 'block_size' before any [section]"},
        {"[sst]\nblock_size 4K\n", ":2: expected 'key = value' or '[section]', got: block_size"},
        {"[sst\n", ":1: section header without ']'"},
        {"[sst]\nblock_size = 4K\n\nblock_size = 8K\n", ":4: [sst] block_size is set twice "
                                                        "(first at /tmp/test_config_"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_config cfg;
        config_init(&cfg);
        const char *msg = load_text(&cfg, cases[i].ini);
        assert_contains(msg, cases[i].expect);
        /* No suggestion when nothing is close. */
        if (strstr(cases[i].expect, "colour"))
            assert_null(strstr(msg, "did you mean"));
        config_destroy(&cfg);
    }
}

static void test_long_line(void **state) {
    (void)state;
    char text[600];
    snprintf(text, sizeof text, "[input]\npath = /%0400d\n", 0);
    sp_config cfg;
    config_init(&cfg);
    assert_contains(load_text(&cfg, text), ":2: line longer than");
    config_destroy(&cfg);
}

static void test_set_errors(void **state) {
    (void)state;
    static const struct {
        const char *arg;
        const char *expect;
    } cases[] = {
        {"sst.block_size=3000", "--set sst.block_size=3000: [sst] block_size: '3000' must be a "
                                "power of two from 512 to 1M"},
        {"sst.blocksize=4K", "--set sst.blocksize=4K: unknown key [sst] blocksize (did you mean "
                             "[sst] block_size?)"},
        {"sts.block_size=4K", "--set sts.block_size=4K: unknown section [sts] (did you mean "
                              "[sst]?)"},
        {"block_size=4K", "--set block_size=4K: expected section.key=value (did you mean [sst] "
                          "block_size?)"},
        {"sst.block_size", "--set sst.block_size: expected section.key=value"},
        {"sort.threads=2", "--set sort.threads=2: unknown key [sort] threads (did you mean "
                           "[build] threads?)"},
        {"profile.cold=2", "--set profile.cold=2: [profile] cold: '2' is not a boolean"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_config cfg;
        config_init(&cfg);
        sp_error err = {0};
        assert_int_equal(config_set_arg(&cfg, cases[i].arg, &err), -1);
        assert_contains(err.msg, cases[i].expect);
        assert_int_equal(cfg.origin[CONFIG_SST_BLOCK_SIZE], CONFIG_FROM_DEFAULT);
        config_destroy(&cfg);
    }
}

static void test_flag_errors(void **state) {
    (void)state;
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    assert_int_equal(config_set_flag(&cfg, CONFIG_SST_CLUSTER_SIZE, "--cluster-size", "3K", &err),
                     -1);
    assert_contains(err.msg, "--cluster-size: '3K' must be a power of two from 512 to 1G");
    assert_int_equal(cfg.sst.cluster_size, SST_DEFAULT_CLUSTER_SIZE);
    assert_int_equal(cfg.origin[CONFIG_SST_CLUSTER_SIZE], CONFIG_FROM_DEFAULT);
    config_destroy(&cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_key_fields_fit_types),
        cmocka_unit_test(test_default_ini_is_the_table),
        cmocka_unit_test(test_readme_names_every_key),
        cmocka_unit_test(test_default_ini_lists_every_key),
        cmocka_unit_test(test_nightly_ini_loads),
        cmocka_unit_test(test_precedence_and_origins),
        cmocka_unit_test(test_set_beats_file_in_any_order),
        cmocka_unit_test(test_parse_args_edges),
        cmocka_unit_test(test_bad_values_in_file),
        cmocka_unit_test(test_good_values_in_file),
        cmocka_unit_test(test_file_structure_errors),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_flag_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
