/*
 * test_tune.c: the parts of `sstpipe tune` that need no build: the
 * recommendation rule on made-up trials, the config snippet read back by
 * the config library, the SVG and JSON, the default trials, and the XML
 * sample cut at a page boundary.
 */
#include "config/config.h"
#include "pipeline/tune/tune.h"
#include "pipeline/tune/tune_report.h"
#include "pipeline/tune/tune_sample.h"
#include "stages/sst/format.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *make_tmpdir(void) {
    char *dir = strdup("/tmp/test_tune.XXXXXX");
    assert_non_null(dir);
    assert_non_null(mkdtemp(dir));
    return dir;
}

static char *path_in(const char *dir, const char *name) {
    char *p;
    assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static tune_trial trial(uint32_t block, uint32_t cluster, uint64_t file_size, uint64_t cold_p50,
                        uint64_t warm_p50) {
    tune_trial t = {.block_size = block, .cluster_size = cluster, .file_size = file_size};
    t.records = 100;
    t.key_bytes = 1000;
    t.value_bytes = 90000;
    t.compactness = (double)(t.key_bytes + t.value_bytes) / (double)file_size;
    t.have_cold = true;
    t.cold = (tune_latency){.p50_ns = cold_p50,
                            .p99_ns = 2 * cold_p50,
                            .avg_ns = cold_p50,
                            .reads_per_lookup = 1,
                            .bytes_per_lookup = block};
    t.warm = (tune_latency){.p50_ns = warm_p50,
                            .p99_ns = 2 * warm_p50,
                            .avg_ns = warm_p50,
                            .reads_per_lookup = 1,
                            .bytes_per_lookup = block};
    return t;
}

static void add(tune_report *r, tune_trial t) {
    sp_error err = {0};
    assert_int_equal(tune_report_add(r, &t, &err), 0);
}

/* Within tolerance the smaller file wins over the faster one. */
static void test_rule_prefers_compact_within_tolerance(void **state) {
    (void)state;
    tune_report r;
    tune_report_init(&r);
    add(&r, trial(4096, 4096, 200000, 105000, 1000));  /* 5% slower, smallest */
    add(&r, trial(8192, 4096, 210000, 100000, 1200));  /* fastest */
    add(&r, trial(65536, 4096, 150000, 130000, 5000)); /* smallest of all, but 30% slower */
    sp_error err = {0};
    assert_int_equal(tune_recommend(&r, 10, &err), 0);
    assert_int_equal(r.best, 0);
    assert_non_null(strstr(r.reason, "within 10% of the best"));
    assert_non_null(strstr(r.reason, "most compact"));
    /* With no tolerance only the fastest counts. */
    assert_int_equal(tune_recommend(&r, 0, &err), 0);
    assert_int_equal(r.best, 1);
    /* With a wide one, the 30% slower but smallest file wins. */
    assert_int_equal(tune_recommend(&r, 50, &err), 0);
    assert_int_equal(r.best, 2);
    tune_report_destroy(&r);
}

/* Equal files: the smaller block, then the smaller cluster. */
static void test_rule_tie_breaks(void **state) {
    (void)state;
    tune_report r;
    tune_report_init(&r);
    add(&r, trial(16384, 65536, 300000, 100000, 1000));
    add(&r, trial(8192, 65536, 300000, 101000, 1000));
    add(&r, trial(8192, 4096, 300000, 102000, 1000));
    sp_error err = {0};
    assert_int_equal(tune_recommend(&r, 10, &err), 0);
    assert_int_equal(r.trials[r.best].block_size, 8192);
    assert_int_equal(r.trials[r.best].cluster_size, 4096);
    assert_non_null(strstr(r.reason, "smallest block"));
    tune_report_destroy(&r);
}

/* Without cold figures the warm p50 decides. */
static void test_rule_uses_warm_without_cold(void **state) {
    (void)state;
    tune_report r;
    tune_report_init(&r);
    tune_trial a = trial(4096, 4096, 200000, 0, 3000), b = trial(8192, 4096, 250000, 0, 1000);
    a.have_cold = b.have_cold = false;
    add(&r, a);
    add(&r, b);
    sp_error err = {0};
    assert_int_equal(tune_recommend(&r, 10, &err), 0);
    assert_int_equal(r.best, 1);
    assert_non_null(strstr(r.reason, "warm p50"));
    char *snippet = tune_config_snippet(&r);
    assert_non_null(strstr(snippet, "lowest warm lookup latency"));
    free(snippet);
    tune_report_destroy(&r);
}

static void test_rule_refuses_problems_and_nothing(void **state) {
    (void)state;
    tune_report r;
    tune_report_init(&r);
    sp_error err = {0};
    assert_int_equal(tune_recommend(&r, 10, &err), -1);
    tune_trial t = trial(4096, 4096, 200000, 100000, 1000);
    t.verify_problems = 2;
    add(&r, t);
    sp_error err2 = {0};
    assert_int_equal(tune_recommend(&r, 10, &err2), -1);
    assert_non_null(strstr(err2.msg, "verify problems"));
    tune_report_destroy(&r);
}

/* The snippet is a config file: the config library reads back the sizes. */
static void test_snippet_parses_as_config(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    char *ini = path_in(dir, "tuned.ini");
    tune_report r;
    tune_report_init(&r);
    /* A long path with a line break, and a long reason: the snippet must
     * still be lines the config reader takes. */
    char input[600];
    memset(input, 'x', sizeof input);
    memcpy(input, "/dumps/with a\nline break/", 25);
    input[sizeof input - 1] = 0;
    r.input = strdup(input);
    r.sample_limit = 1 << 20;
    r.sample_pages = 42;
    add(&r, trial(4096, 4096, 200000, 300000, 1000));
    add(&r, trial(16384, 65536, 400000, 100000, 2000));
    sp_error err = {0};
    assert_int_equal(tune_recommend(&r, 10, &err), 0);
    assert_int_equal(tune_write_config(&r, ini, &err), 0);
    sp_config cfg;
    config_init(&cfg);
    if (config_load_file(&cfg, ini, &err))
        fail_msg("snippet does not parse: %s", err.msg);
    char *text = slurp(ini);
    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1)
        assert_true(nl - line <= 80);
    free(text);
    assert_int_equal(cfg.sst.block_size, 16384);
    assert_int_equal(cfg.sst.cluster_size, 65536);
    assert_int_equal(cfg.origin[CONFIG_SST_BLOCK_SIZE], CONFIG_FROM_FILE);
    config_destroy(&cfg);
    unlink(ini);
    rmdir(dir);
    free(ini);
    free(dir);
    tune_report_destroy(&r);
}

static void test_json_and_svg(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    char *svg = path_in(dir, "t.svg");
    tune_report r;
    tune_report_init(&r);
    r.input = strdup("a<&>\"b.xml");
    r.lookups = 100;
    uint32_t blocks[] = {4096, 8192, 65536}, clusters[] = {4096, 65536};
    for (int c = 0; c < 2; c++)
        for (int b = 0; b < 3; b++)
            add(&r, trial(blocks[b], clusters[c], 100000 + 1000 * (uint64_t)b,
                          50000 + 1000 * (uint64_t)b, 1000 + 100 * (uint64_t)b));
    sp_error err = {0};
    assert_int_equal(tune_recommend(&r, 10, &err), 0);
    json_t *j = tune_report_to_json(&r);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "trials")), 6);
    json_t *rec = json_object_get(j, "recommendation");
    assert_int_equal(json_integer_value(json_object_get(rec, "block_size")),
                     r.trials[r.best].block_size);
    json_decref(j);
    assert_int_equal(tune_write_svg(&r, svg, &err), 0);
    char *text = slurp(svg);
    assert_true(!strncmp(text, "<?xml", 5));
    assert_non_null(strstr(text, "</svg>\n"));
    assert_non_null(strstr(text, "a&lt;&amp;&gt;&quot;b.xml"));
    /* One cold and one warm line per cluster size. */
    size_t lines = 0;
    for (const char *p = text; (p = strstr(p, "<polyline")); p++)
        lines++;
    assert_int_equal(lines, 4);
    free(text);
    unlink(svg);
    rmdir(dir);
    free(svg);
    free(dir);
    tune_report_destroy(&r);
}

/* A compressed trial: zstd at level with a dictionary of dict bytes. */
static tune_trial zstd_trial(uint64_t file_size, uint64_t cold_p50, int level, uint32_t dict) {
    tune_trial t = trial(8192, 4096, file_size, cold_p50, 1500);
    t.level = level;
    t.dictionary_size = dict;
    return t;
}

/* Compression is a choice like the sizes: a smaller compressed file within
 * the tolerance wins, equal ones go to the lower level and the smaller
 * dictionary, and the snippet, JSON, table and chart carry it. */
static void test_rule_and_report_with_compression(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    char *ini = path_in(dir, "tuned.ini"), *svg = path_in(dir, "t.svg");
    tune_report r;
    tune_report_init(&r);
    r.input = strdup("d.xml");
    add(&r, trial(8192, 4096, 300000, 100000, 1000));
    add(&r, zstd_trial(120000, 104000, 9, 16384));
    add(&r, zstd_trial(120000, 105000, 3, 16384));
    add(&r, zstd_trial(120000, 103000, 3, 0));
    add(&r, zstd_trial(100000, 150000, 19, 16384)); /* smallest, but too slow */
    sp_error err = {0};
    assert_int_equal(tune_recommend(&r, 10, &err), 0);
    assert_int_equal(r.best, 3);
    assert_non_null(strstr(r.reason, "block 8K / cluster 4K / zstd-3 no dict"));
    /* Without tolerance the uncompressed, fastest trial. */
    assert_int_equal(tune_recommend(&r, 0, &err), 0);
    assert_int_equal(r.best, 0);
    assert_non_null(strstr(r.reason, "/ no compression"));
    r.trials[3].dictionary_size = 4096;
    assert_int_equal(tune_recommend(&r, 10, &err), 0);
    assert_int_equal(r.best, 3);
    assert_int_equal(tune_write_config(&r, ini, &err), 0);
    sp_config cfg;
    config_init(&cfg);
    if (config_load_file(&cfg, ini, &err))
        fail_msg("snippet does not parse: %s", err.msg);
    assert_true(cfg.sst.compress);
    assert_int_equal(cfg.sst.compression_level, 3);
    assert_int_equal(cfg.sst.dictionary_size, 4096);
    config_destroy(&cfg);
    json_t *j = tune_report_to_json(&r);
    json_t *rec = json_object_get(j, "recommendation"), *trials = json_object_get(j, "trials");
    assert_string_equal(json_string_value(json_object_get(rec, "compression")), "zstd");
    assert_int_equal(json_integer_value(json_object_get(rec, "compression_level")), 3);
    assert_int_equal(json_integer_value(json_object_get(rec, "dictionary_size")), 4096);
    json_t *plain = json_array_get(trials, 0);
    assert_string_equal(json_string_value(json_object_get(plain, "compression")), "none");
    assert_true(json_is_null(json_object_get(plain, "compression_level")));
    assert_true(json_is_null(json_object_get(plain, "dictionary_size")));
    json_decref(j);
    /* The chart: a line per cluster size through the uncompressed trial
     * only; the four compressed trials a cold and a warm square each. */
    assert_int_equal(tune_write_svg(&r, svg, &err), 0);
    char *text = slurp(svg);
    size_t squares = 0;
    for (const char *p = text; (p = strstr(p, "class=\"compressed\"")); p++)
        squares++;
    assert_int_equal(squares, 8);
    assert_non_null(strstr(text, "level 3, dictionary 4K"));
    assert_non_null(strstr(text, "3: zstd-3 dict 4K"));
    free(text);
    unlink(svg);
    unlink(ini);
    rmdir(dir);
    free(svg);
    free(ini);
    free(dir);
    tune_report_destroy(&r);
}

static const char head[] =
    "<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.11/\" version=\"0.11\">\n"
    "  <siteinfo><sitename>T</sitename></siteinfo>\n";

static void write_dump(const char *path, int pages) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(head, f);
    for (int i = 0; i < pages; i++)
        fprintf(f,
                "  <page>\n    <title>Page %d</title>\n    <ns>0</ns>\n    <id>%d</id>\n"
                "    <revision><id>%d</id><text bytes=\"20\">text &lt;/page&gt; of page %d"
                "</text></revision>\n  </page>\n",
                i, i + 1, i + 100, i);
    fputs("</mediawiki>\n", f);
    fclose(f);
}

/* The sample ends right after a whole </page>, closed; escaped text is not a tag. */
/* The default dictionary sizes include the build's default, so that what
 * a build does unless told otherwise is among the trials, and none. */
static void test_default_dictionaries_include_the_build_default(void **state) {
    (void)state;
    tune_options o;
    tune_options_init(&o);
    bool none = false, build_default = false;
    for (size_t i = 0; i < o.n_dictionary_sizes; i++) {
        none |= o.dictionary_sizes[i] == 0;
        build_default |= o.dictionary_sizes[i] == SST_DEFAULT_DICTIONARY_SIZE;
    }
    assert_true(none);
    assert_true(build_default);
}

static void test_sample_cut_at_page(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    char *dump = path_in(dir, "dump.xml"), *out = path_in(dir, "sample.xml");
    write_dump(dump, 50);
    char *full = slurp(dump);
    /* A limit in the middle of page 10: pages 0..9 are whole. */
    const char *p = full;
    for (int i = 0; i < 10; i++)
        p = strstr(p, "</page>") + 7;
    size_t cut = (size_t)(p - full);
    tune_sample_stats st;
    sp_error err = {0};
    assert_int_equal(tune_write_sample(dump, cut + 30, out, &st, &err), 0);
    assert_false(st.whole);
    assert_int_equal(st.pages, 10);
    char *sample = slurp(out);
    assert_int_equal(strlen(sample), cut + strlen("\n</mediawiki>\n"));
    assert_int_equal(st.xml_bytes, strlen(sample));
    assert_memory_equal(sample, full, cut);
    assert_string_equal(sample + cut, "\n</mediawiki>\n");
    free(sample);
    unlink(out);

    /* A limit beyond the end: the whole dump, unchanged. */
    assert_int_equal(tune_write_sample(dump, 1 << 20, out, &st, &err), 0);
    assert_true(st.whole);
    assert_int_equal(st.pages, 50);
    sample = slurp(out);
    assert_string_equal(sample, full);
    free(sample);
    unlink(out);

    /* Too small to hold a page: an error naming the input, and no file left. */
    sp_error err2 = {0};
    assert_int_equal(tune_write_sample(dump, 100, out, &st, &err2), -1);
    assert_non_null(strstr(err2.msg, "dump.xml"));
    assert_int_equal(access(out, F_OK), -1);
    free(full);
    unlink(dump);
    rmdir(dir);
    free(dump);
    free(out);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_prefers_compact_within_tolerance),
        cmocka_unit_test(test_rule_tie_breaks),
        cmocka_unit_test(test_rule_uses_warm_without_cold),
        cmocka_unit_test(test_rule_refuses_problems_and_nothing),
        cmocka_unit_test(test_snippet_parses_as_config),
        cmocka_unit_test(test_json_and_svg),
        cmocka_unit_test(test_rule_and_report_with_compression),
        cmocka_unit_test(test_default_dictionaries_include_the_build_default),
        cmocka_unit_test(test_sample_cut_at_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
