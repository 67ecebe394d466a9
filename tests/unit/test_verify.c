/*
 * test_verify.c: verify_file on clean tables of many shapes (never a false
 * positive) and on damaged ones: every single byte of a small table flipped
 * in turn, a dense random sample of a larger one, truncations, appended
 * bytes, and files whose checksums all match but whose contents break the
 * format's rules (blocks swapped, a value over the bound, invalid UTF-8).
 */
#include "stages/common/error.h"
#include "stages/common/title_lists.h"
#include "stages/common/title_rules.h"
#include "stages/common/utf8.h"
#include "stages/sst/coding.h"
#include "stages/sst/format.h"
#include "stages/sst/table_reader.h"
#include "stages/sst/table_writer.h"
#include "stages/sst/title_index.h"
#include "stages/verify/verify.h"
#include "stages/verify/verify_utf8.h"
#include "test_sst_util.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <setjmp.h>

#include <cmocka.h>

static char dir[64];

static const char *tmp_path(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A value of up to max bytes: ASCII text with two-byte and three-byte
 * characters mixed in, never split. */
static size_t make_value(uint8_t *buf, size_t max) {
    size_t len = max ? (size_t)(rnd() % (max + 1)) : 0, n = 0;
    while (n < len) {
        uint64_t r = rnd() % 10;
        if (r == 0 && n + 2 <= len) {
            buf[n++] = 0xC3;
            buf[n++] = 0xA9; /* é */
        } else if (r == 1 && n + 3 <= len) {
            buf[n++] = 0xE2;
            buf[n++] = 0x82;
            buf[n++] = 0xAC; /* € */
        } else {
            buf[n++] = (uint8_t)('a' + rnd() % 26);
        }
    }
    return n;
}

/* A value of up to max bytes of words from a small vocabulary, with
 * UTF-8 among them: text, for which a compressed table's dictionary pays
 * and is stored (the writer leaves out one that does not). */
static size_t make_words(uint8_t *buf, size_t max) {
    static const char *const words[] = {"the ",  "village ", "church ", "ciems ", "baznīca ",
                                        "1905 ", "été ",     "€ ",      "[[",     "]]\n"};
    size_t len = max ? (size_t)(rnd() % (max + 1)) : 0, n = 0;
    while (n < len) {
        const char *w = words[rnd() % (sizeof words / sizeof words[0])];
        size_t wl = strlen(w);
        if (n + wl > len)
            break;
        memcpy(buf + n, w, wl);
        n += wl;
    }
    return n;
}

typedef struct shape {
    uint32_t block_size, cluster_size, max_value;
    unsigned records;
    uint64_t seed;
} shape;

/* Writes a table of the given shape; returns its stats. Keys are
 * "key NNNNNN" with some Unicode ones ("ключ NNNNNN") sorting after them;
 * a compressed table's values are words (make_words). */
static table_stats write_table_as(const char *path, const shape *s, bool compress) {
    table_options opts;
    table_options_init(&opts);
    opts.block_size = s->block_size;
    opts.cluster_size = s->cluster_size;
    opts.max_value_bytes = s->max_value;
    opts.compress = compress; /* format version 2, with a dictionary */
    opts.dictionary_size = 4096;
    sp_error err = {0};
    table_writer *w = table_writer_init(path, &opts, &err);
    assert_non_null(w);
    rng_state = s->seed * 2654435761u + 1;
    uint8_t *val = malloc(s->max_value + 1);
    for (unsigned i = 0; i < s->records; i++) {
        char key[64];
        if (i < s->records * 3 / 4)
            snprintf(key, sizeof key, "key %06u", i);
        else
            snprintf(key, sizeof key, "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87 %06u", i);
        sp_record rec = {.key = (const uint8_t *)key,
                         .key_len = (uint32_t)strlen(key),
                         .value = val,
                         .value_len = compress ? make_words(val, s->max_value)
                                               : make_value(val, s->max_value),
                         .value_fd = -1};
        assert_int_equal(table_writer_add(w, &rec, &err), 0);
    }
    free(val);
    assert_int_equal(table_writer_finish(w, &err), 0);
    table_stats st = *table_writer_stats(w);
    table_writer_destroy(w);
    return st;
}

/* A version 1 table of the given shape. */
static table_stats write_table(const char *path, const shape *s) {
    return write_table_as(path, s, false);
}

static uint8_t *slurp(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    *len = (size_t)st.st_size;
    uint8_t *b = malloc(*len + 1);
    assert_int_equal(pread(fd, b, *len, 0), (ssize_t)*len);
    close(fd);
    return b;
}

static void spill(const char *path, const uint8_t *b, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b, len), (ssize_t)len);
    close(fd);
}

/* Runs verify_file; returns its result, the report left in rep. Under the
 * sanitizers, where every allocation of the read buffer (and its shadow)
 * is dear and the sweeps make thousands, with the smallest buffer verify
 * takes, a block's: a table that fits in it is read the same way. */
static int run_verify(const char *path, verify_report *rep) {
    sp_error err = {0};
    verify_options o;
    verify_options_init(&o);
#ifdef __SANITIZE_ADDRESS__
    o.read_size = SST_MAX_BLOCK_SIZE;
#endif
    verify_report_init(rep, &o);
    return verify_file(path, rep, &err);
}

static bool has_problem(const verify_report *rep, const char *needle) {
    for (size_t i = 0; i < rep->n_problems; i++)
        if (strstr(rep->problems[i].what, needle))
            return true;
    return false;
}

/* ---------------------------------------------------------------- clean */

static void test_clean_shapes(void **state) {
    (void)state;
    static const uint32_t blocks[] = {512, 1024, 4096, 65536};
    static const uint32_t clusters[] = {512, 4096, 65536};
    static const unsigned counts[] = {0, 1, 17, 600};
    for (size_t b = 0; b < 4; b++)
        for (size_t c = 0; c < 3; c++)
            for (size_t n = 0; n < 4; n++) {
                shape s = {blocks[b], clusters[c], blocks[b] <= 1024 ? 150 : 1024, counts[n],
                           b * 100 + c * 10 + n};
                const char *path = tmp_path("clean.sst");
                table_stats st = write_table(path, &s);
                verify_report rep;
                assert_int_equal(run_verify(path, &rep), 0);
                if (rep.problem_count)
                    fprintf(stderr, "bs %u cs %u n %u: %s\n", s.block_size, s.cluster_size,
                            s.records, rep.problems[0].what);
                assert_int_equal(rep.problem_count, 0);
                assert_int_equal(rep.records, st.records);
                assert_int_equal(rep.blocks, st.data_blocks);
                assert_int_equal(rep.bytes, st.file_size);
                verify_report_destroy(&rep);
            }
}

static void test_read_size_smaller_than_a_block(void **state) {
    (void)state;
    shape s = {65536, 4096, 1024, 900, 7};
    const char *path = tmp_path("readsize.sst");
    table_stats st = write_table(path, &s);
    verify_options o;
    verify_options_init(&o);
    o.read_size = 4096;
    verify_report rep;
    verify_report_init(&rep, &o);
    sp_error err = {0};
    assert_int_equal(verify_file(path, &rep, &err), 0);
    assert_int_equal(rep.problem_count, 0);
    assert_int_equal(rep.records, st.records);
    verify_report_destroy(&rep);
}

/* ---------------------------------------------------------------- sweeps */

/* The every-byte sweeps flip every byte in the plain build. Under the
 * sanitizers, which look for memory errors on the paths a flip sends verify
 * down (and where fuzz_sst feeds the reader arbitrary bytes), they flip
 * every fifth byte, a step prime to the widths of the format's fields, so
 * that each byte lane of each field is still hit; the sanitizers make each
 * verify call many times dearer, most of it in the allocator's mappings of
 * verify's buffers, which each call makes afresh. */
#ifdef __SANITIZE_ADDRESS__
enum { SWEEP_STEP = 5 };
#else
enum { SWEEP_STEP = 1 };
#endif

/* The positions from first to len, SWEEP_STEP apart, into pos; their count. */
static size_t sweep_positions(size_t *pos, size_t len, size_t first) {
    size_t n = 0;
    for (size_t i = first; i < len; i += SWEEP_STEP)
        pos[n++] = i;
    return n;
}

/* Flips the byte at each given position (XOR x) in turn and expects a
 * problem every time. */
static void sweep(const char *path, const uint8_t *orig, size_t len, const size_t *pos, size_t n,
                  uint8_t x) {
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    for (size_t k = 0; k < n; k++) {
        size_t i = pos[k];
        uint8_t b = orig[i] ^ x;
        assert_int_equal(pwrite(fd, &b, 1, (off_t)i), 1);
        verify_report rep;
        int rc = run_verify(path, &rep);
        if (rc != 0 || rep.problem_count == 0)
            fail_msg("flip of byte %zu (of %zu) by %02x: rc %d, %llu problems", i, len, x, rc,
                     (unsigned long long)rep.problem_count);
        verify_report_destroy(&rep);
        assert_int_equal(pwrite(fd, &orig[i], 1, (off_t)i), 1);
    }
    close(fd);
}

static void test_every_byte_of_a_small_table(void **state) {
    (void)state;
    shape s = {512, 512, 150, 40, 3};
    const char *path = tmp_path("sweep.sst");
    table_stats st = write_table(path, &s);
    assert_true(st.data_blocks >= 4);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    size_t *pos = calloc(len, sizeof *pos);
    size_t n = sweep_positions(pos, len, 0);
    sweep(path, orig, len, pos, n, 0x01);
    n = sweep_positions(pos, len, 1 % SWEEP_STEP);
    sweep(path, orig, len, pos, n, 0xFF);
    free(pos);
    free(orig);
}

/* Clusters larger than blocks: the data region ends in zero padding, and
 * the index and footer regions are mostly padding. */
static void test_every_byte_with_padded_regions(void **state) {
    (void)state;
    shape s = {1024, 2048, 200, 40, 4};
    const char *path = tmp_path("padded.sst");
    table_stats st = write_table(path, &s);
    while (st.data_blocks % 2 == 0) {
        s.records++;
        st = write_table(path, &s);
    }
    size_t len;
    uint8_t *orig = slurp(path, &len);
    uint64_t data_region =
        sst_get_u64(orig + len - SST_FOOTER_BYTES + SST_FOOTER_DATA_REGION_LENGTH);
    assert_true(data_region > st.data_blocks * 1024);
    size_t *pos = calloc(len, sizeof *pos);
    size_t n = sweep_positions(pos, len, 2 % SWEEP_STEP);
    sweep(path, orig, len, pos, n, 0x20);
    free(pos);
    free(orig);
}

static void test_every_byte_of_an_empty_table(void **state) {
    (void)state;
    shape s = {4096, 512, 1024, 0, 1};
    const char *path = tmp_path("empty.sst");
    write_table(path, &s);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    size_t *pos = calloc(len, sizeof *pos);
    size_t n = sweep_positions(pos, len, 0);
    sweep(path, orig, len, pos, n, 0x80);
    free(pos);
    free(orig);
}

/* The larger table's random flips: twenty groups, each with its own XOR
 * mask, of a hundred positions in the plain build; under the sanitizers,
 * where each flip re-reads the whole table at many times the cost and
 * nearly every flip sends verify down a data block's checksum path, which
 * the every-byte sweeps above take too, the first tenth of each group. */
#ifdef __SANITIZE_ADDRESS__
enum { RANDOM_FLIPS_A_GROUP = 10 };
#else
enum { RANDOM_FLIPS_A_GROUP = 100 };
#endif
static void test_random_bytes_of_a_larger_table(void **state) {
    (void)state;
    shape s = {4096, 4096, 1024, 3000, 11};
    const char *path = tmp_path("large.sst");
    table_stats st = write_table(path, &s);
    assert_true(st.file_size > 1000000);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    size_t pos[2000];
    rng_state = 99;
    for (size_t k = 0; k < 2000; k++)
        pos[k] = (size_t)(rnd() % len);
    for (size_t k = 0; k < 2000; k += 100)
        sweep(path, orig, len, pos + k, RANDOM_FLIPS_A_GROUP, (uint8_t)(1 + rnd() % 255));
    free(orig);
}

/* Version 2: clean tables verify clean, and each of 300 random flipped
 * bytes (in three groups with their own XOR masks) is a problem, wherever
 * it falls: a frame, a directory, the meta region's dictionary. */
static void test_compressed_tables(void **state) {
    (void)state;
    const shape clean[] = {{1024, 512, 200, 0, 1},
                           {1024, 512, 200, 1, 2},
                           {4096, 512, 1024, 700, 3},
                           {8192, 4096, 1024, 3000, 4}};
    for (size_t k = 0; k < sizeof clean / sizeof clean[0]; k++) {
        const char *path = tmp_path("clean2.sst");
        table_stats st = write_table_as(path, &clean[k], true);
        verify_report rep;
        assert_int_equal(run_verify(path, &rep), 0);
        if (rep.problem_count)
            fail_msg("shape %zu: %s", k, rep.problems[0].what);
        assert_int_equal(rep.records, st.records);
        verify_report_destroy(&rep);
        /* Laid out as version 2's first layout (up to commit 9dbe327):
         * still clean, every byte still read. */
        size_t len, first_len;
        uint8_t *b = slurp(path, &len);
        uint8_t *first = t_first_layout(b, len, clean[k].cluster_size, &first_len);
        spill(path, first, first_len);
        assert_int_equal(run_verify(path, &rep), 0);
        if (rep.problem_count)
            fail_msg("shape %zu, first layout: %s", k, rep.problems[0].what);
        assert_int_equal(rep.records, st.records);
        assert_int_equal(rep.bytes, first_len);
        verify_report_destroy(&rep);
        free(first);
        free(b);
    }
    shape s = {4096, 4096, 1024, 3000, 12};
    const char *path = tmp_path("large2.sst");
    table_stats st = write_table_as(path, &s, true);
    assert_true(st.dictionary_bytes > 0);
    assert_true(st.plain_bytes > st.data_blocks * s.block_size);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    size_t pos[300];
    rng_state = 7;
    for (size_t k = 0; k < 300; k++)
        pos[k] = (size_t)(rnd() % len);
    for (size_t k = 0; k < 300; k += 100)
        sweep(path, orig, len, pos + k, RANDOM_FLIPS_A_GROUP, (uint8_t)(1 + rnd() % 255));
    free(orig);
}

static void test_truncated(void **state) {
    (void)state;
    shape s = {1024, 512, 200, 60, 5};
    const char *path = tmp_path("trunc.sst");
    write_table(path, &s);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    const size_t cuts[] = {len - 1,   len - 8, len - 16, len - 128, len - 129, len - 512,
                           len - 700, len / 2, 2048,     1500,      1024};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        spill(tmp_path("cut.sst"), orig, cuts[k]);
        verify_report rep;
        int rc = run_verify(tmp_path("cut.sst"), &rep);
        if (rc != 0 || rep.problem_count == 0)
            fail_msg("cut to %zu of %zu bytes: rc %d, %llu problems", cuts[k], len, rc,
                     (unsigned long long)rep.problem_count);
        verify_report_destroy(&rep);
    }
    /* Too little left to tell it is an SSTable: could not run. */
    spill(tmp_path("cut.sst"), orig, 100);
    verify_report rep;
    assert_int_equal(run_verify(tmp_path("cut.sst"), &rep), -1);
    assert_non_null(rep.error);
    verify_report_destroy(&rep);
    free(orig);
}

static void test_appended(void **state) {
    (void)state;
    shape s = {1024, 512, 200, 60, 6};
    const char *path = tmp_path("append.sst");
    write_table(path, &s);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    uint8_t *b = calloc(1, 2 * len);
    memcpy(b, orig, len);
    const size_t extra[] = {1, 7, 8, 100, 512, 4096};
    for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++) {
        for (size_t i = 0; i < extra[k]; i++)
            b[len + i] = (uint8_t)(i * 7 + k);
        spill(tmp_path("app.sst"), b, len + extra[k]);
        verify_report rep;
        assert_int_equal(run_verify(tmp_path("app.sst"), &rep), 0);
        assert_true(rep.problem_count > 0);
        assert_true(has_problem(&rep, "follow the footer"));
        verify_report_destroy(&rep);
    }
    /* The whole file appended to itself: the footer at the end is valid
     * but records half the size. */
    memcpy(b + len, orig, len);
    spill(tmp_path("app.sst"), b, 2 * len);
    verify_report rep;
    assert_int_equal(run_verify(tmp_path("app.sst"), &rep), 0);
    assert_true(rep.problem_count > 0);
    verify_report_destroy(&rep);
    free(b);
    free(orig);
}

/* ---------------------------------------------------------------- rules */

/* Rewrites the footer's checksum after an edit, so only the rule breaks:
 * over the footer region's fr bytes (a cluster; version 2: the footer). */
static void reseal_footer(uint8_t *b, size_t len, uint32_t fr) {
    uint64_t h = XXH3_64bits(b + len - fr, fr - (SST_FOOTER_BYTES - SST_FOOTER_CHECKSUM));
    sst_put_u64(b + len - SST_FOOTER_BYTES + SST_FOOTER_CHECKSUM, h);
}

static void test_swapped_blocks_keep_checksums_but_break_order(void **state) {
    (void)state;
    shape s = {1024, 512, 200, 60, 8};
    const char *path = tmp_path("swap.sst");
    write_table(path, &s);
    size_t len;
    uint8_t *b = slurp(path, &len);
    uint8_t tmp[1024];
    memcpy(tmp, b + 1024, 1024);
    memcpy(b + 1024, b + 2048, 1024);
    memcpy(b + 2048, tmp, 1024);
    spill(path, b, len);
    verify_report rep;
    assert_int_equal(run_verify(path, &rep), 0);
    assert_true(has_problem(&rep, "index entry 1"));
    assert_true(has_problem(&rep, "previous block"));
    bool block1 = false;
    for (size_t i = 0; i < rep.n_problems; i++)
        if (rep.problems[i].block == 1 && rep.problems[i].offset >= 1024 &&
            rep.problems[i].offset < 2048)
            block1 = true;
    assert_true(block1);
    verify_report_destroy(&rep);
    free(b);
}

/* A version 2 table whose filter lost bits under a checksum made anew
 * (a writer's bug, not the disk's): verify names each key the filter
 * rules out, at the filter's byte that lost its bit. */
static void test_damaged_filter(void **state) {
    (void)state;
    shape s = {4096, 512, 1024, 700, 3};
    const char *path = tmp_path("filter.sst");
    write_table_as(path, &s, true);
    size_t len;
    uint8_t *b = slurp(path, &len);
    sst_footer f;
    sst_footer_decode(b + len - SST_FOOTER_BYTES, &f);
    uint64_t meta = f.index_offset + f.index_region_length;
    uint64_t meta_len = len - SST_FOOTER_BYTES - meta;
    sst_meta m;
    sst_meta_decode(b + meta, &m);
    assert_true(m.filter_length > 0);
    uint64_t at = meta + SST_META_HEADER_BYTES + m.dictionary_length;
    while (b[at] == 0)
        at++;
    b[at] = 0;
    sst_put_u64(b + len - SST_FOOTER_BYTES + SST_FOOTER_RESERVED, XXH3_64bits(b + meta, meta_len));
    reseal_footer(b, len, SST_FOOTER_BYTES);
    spill(path, b, len);
    verify_report rep;
    assert_int_equal(run_verify(path, &rep), 0);
    assert_true(rep.problem_count > 0);
    for (size_t i = 0; i < rep.n_problems; i++) {
        assert_int_equal(rep.problems[i].offset, at);
        assert_non_null(strstr(rep.problems[i].what, "damaged filter"));
    }
    verify_report_destroy(&rep);
    free(b);
}

static void test_value_over_the_bound(void **state) {
    (void)state;
    shape s = {1024, 512, 200, 60, 9};
    const char *path = tmp_path("bound.sst");
    write_table(path, &s);
    size_t len;
    uint8_t *b = slurp(path, &len);
    sst_put_u32(b + len - SST_FOOTER_BYTES + SST_FOOTER_BLOCK_SIZE + 8, 20);
    reseal_footer(b, len, 512);
    spill(path, b, len);
    verify_report rep;
    assert_int_equal(run_verify(path, &rep), 0);
    assert_true(rep.problem_count > 0);
    assert_true(has_problem(&rep, "over the bound of 20"));
    assert_false(has_problem(&rep, "checksum"));
    verify_report_destroy(&rep);
    free(b);
}

static void test_invalid_utf8_and_counts(void **state) {
    (void)state;
    table_options opts;
    table_options_init(&opts);
    opts.block_size = 1024;
    opts.cluster_size = 512;
    opts.max_value_bytes = 100;
    sp_error err = {0};
    const char *path = tmp_path("utf8.sst");
    table_writer *w = table_writer_init(path, &opts, &err);
    assert_non_null(w);
    const char *keys[] = {"a", "b\xff", "c", "d"};
    const char *vals[] = {"ok", "ok", "bad \xc3(", "surrogate \xed\xa0\x80"};
    for (int i = 0; i < 4; i++) {
        sp_record r = {.key = (const uint8_t *)keys[i],
                       .key_len = (uint32_t)strlen(keys[i]),
                       .value = (const uint8_t *)vals[i],
                       .value_len = strlen(vals[i]),
                       .value_fd = -1};
        assert_int_equal(table_writer_add(w, &r, &err), 0);
    }
    assert_int_equal(table_writer_finish(w, &err), 0);
    table_writer_destroy(w);
    verify_report rep;
    assert_int_equal(run_verify(path, &rep), 0);
    assert_int_equal(rep.problem_count, 3);
    assert_true(has_problem(&rep, "key of record 1 is not valid UTF-8"));
    assert_true(has_problem(&rep, "value of record 2 is not valid UTF-8"));
    assert_true(has_problem(&rep, "value of record 3 is not valid UTF-8"));
    verify_report_destroy(&rep);

    /* A footer whose record count disagrees with the blocks. */
    size_t len;
    uint8_t *b = slurp(path, &len);
    sst_put_u64(b + len - SST_FOOTER_BYTES + 32, 5);
    reseal_footer(b, len, 512);
    spill(path, b, len);
    assert_int_equal(run_verify(path, &rep), 0);
    assert_int_equal(rep.problem_count, 4);
    assert_true(has_problem(&rep, "footer says 5 records; the blocks hold 4"));
    verify_report_destroy(&rep);
    free(b);
}

/* A title index's prefix lists (title_lists.h): a clean one has no
 * problem; each byte of a list flipped is one; a list whose checksums
 * match but whose titles are out of rank is named as such, and so is a
 * page record whose value holds more than its kind (layout 4). */
static void test_title_lists(void **state) {
    (void)state;
    const char *table = tmp_path("titled.sst");
    char titles[300];
    snprintf(titles, sizeof titles, "%s%s", table, SP_TITLES_SUFFIX);
    table_options opts;
    table_options_init(&opts);
    opts.block_size = 4096;
    opts.cluster_size = 512;
    opts.max_value_bytes = 16;
    sort_options so;
    sort_options_init(&so);
    so.memory = SORT_MIN_MEMORY;
    sp_title_rules rules;
    sp_title_rules_init(&rules);
    sp_error err = {0};
    title_index *x = title_index_init(table, &rules, &so, &opts, &err);
    table_writer *w = table_writer_init(table, &opts, &err);
    assert_true(x && w);
    sp_sink to = table_writer_sink(w), tee = title_index_tee(x, &to);
    for (int i = 0; i < SP_TITLE_LIST_FROM + 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "Ab %03d", i);
        sp_record r = {.key = (const uint8_t *)key,
                       .key_len = (uint32_t)strlen(key),
                       .value = (const uint8_t *)"x",
                       .value_len = 1,
                       .value_fd = -1};
        assert_int_equal(sp_sink_put(&tee, &r, &err), 0);
    }
    assert_int_equal(title_index_publish(x, w, table, &err), 0);
    title_index_destroy(x);
    table_writer_destroy(w);
    verify_report rep;
    assert_int_equal(run_verify(titles, &rep), 0);
    assert_int_equal(rep.problem_count, 0);
    verify_report_destroy(&rep);

    size_t len;
    uint8_t *b = slurp(titles, &len);
    static const char list[] = "aAb 000\0aAb 001";
    uint8_t *at = memmem(b, len, list, sizeof list - 1);
    assert_non_null(at);
    for (size_t i = 0; i < sizeof list - 1; i++) {
        at[i] ^= 0x20;
        spill(titles, b, len);
        assert_int_equal(run_verify(titles, &rep), 0);
        if (rep.problem_count == 0)
            fail_msg("byte %zu of a list flipped: no problem", i);
        verify_report_destroy(&rep);
        at[i] ^= 0x20;
    }
    free(b);

    /* The rules for the table, a page record, and a list out of rank. */
    sst_reader *t = sst_reader_open(table, &err);
    assert_non_null(t);
    rules.table = sst_reader_identity(t);
    sst_reader_close(t);
    size_t rules_len;
    uint8_t *text = sp_title_rules_encode(&rules, &rules_len);
    opts.max_value_bytes = 1024;
    w = table_writer_init(titles, &opts, &err);
    assert_true(text && w);
    static const char page[] = "ab 000\0\x01\x01", bad[] = "aAb 000\0aAb 1\0",
                      long_page[] = "ab 001\0\x01\x01";
    sp_record recs[] = {
        {.key = (const uint8_t *)SP_TITLES_RULES_KEY,
         .key_len = SP_TITLES_RULES_KEY_LEN,
         .value = text,
         .value_len = rules_len},
        {.key = (const uint8_t *)page,
         .key_len = sizeof page - 1,
         .value = (const uint8_t *)"a",
         .value_len = 1},
        {.key = (const uint8_t *)long_page,
         .key_len = sizeof long_page - 1,
         .value = (const uint8_t *)"rAb 000",
         .value_len = 7},
        {.key = (const uint8_t *)"ab" SP_TITLE_LIST_END,
         .key_len = 2 + SP_TITLE_LIST_END_LEN,
         .value = (const uint8_t *)bad,
         .value_len = sizeof bad - 1},
    };
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
        recs[i].value_fd = -1;
        assert_int_equal(table_writer_add(w, &recs[i], &err), 0);
    }
    assert_int_equal(table_writer_finish(w, &err), 0);
    table_writer_destroy(w);
    free(text);
    assert_int_equal(run_verify(titles, &rep), 0);
    assert_int_equal(rep.problem_count, 2);
    assert_true(has_problem(&rep, "a prefix list is not in rank order"));
    assert_true(has_problem(&rep, "a page record's value is not its kind alone"));
    verify_report_destroy(&rep);
}

static void test_many_problems_each_located(void **state) {
    (void)state;
    shape s = {1024, 512, 200, 60, 10};
    const char *path = tmp_path("many.sst");
    table_stats st = write_table(path, &s);
    assert_true(st.data_blocks >= 5);
    size_t len;
    uint8_t *b = slurp(path, &len);
    b[0 * 1024 + 10] ^= 1;
    b[2 * 1024 + 500] ^= 1;
    b[4 * 1024 + 3] ^= 1;
    spill(path, b, len);
    verify_report rep;
    assert_int_equal(run_verify(path, &rep), 0);
    int found = 0;
    for (size_t i = 0; i < rep.n_problems; i++) {
        const verify_problem *p = &rep.problems[i];
        if (strstr(p->what, "checksum mismatch") &&
            (p->block == 0 || p->block == 2 || p->block == 4)) {
            assert_int_equal(p->offset, (uint64_t)p->block * 1024);
            found++;
        }
    }
    assert_int_equal(found, 3);
    /* The blocks that could not be read leave the footer sums unchecked,
     * but every other block was still walked. */
    assert_int_equal(rep.blocks, st.data_blocks - 3);
    verify_report_destroy(&rep);
    free(b);
}

/* ---------------------------------------------------------------- in parallel */

/* Runs verify_file with a given read size, problem limit and number of
 * threads (0: the default for each). */
static int run_verify_threads(const char *path, size_t read_size, size_t max_problems,
                              unsigned threads, verify_report *rep) {
    verify_options o;
    verify_options_init(&o);
    if (read_size)
        o.read_size = read_size;
    if (max_problems)
        o.max_problems = max_problems;
    o.threads = threads;
    verify_report_init(rep, &o);
    sp_error err = {0};
    return verify_file(path, rep, &err);
}

static int run_verify_with(const char *path, size_t read_size, size_t max_problems,
                           verify_report *rep) {
    return run_verify_threads(path, read_size, max_problems, 0, rep);
}

/* A table of 4 KiB blocks over several 1 MiB chunks (256 blocks each, as
 * verify reads with a read size under 1 MiB), each read and checked in
 * pieces of 256 KiB (64 blocks). */
static table_stats write_chunked_table(const char *path) {
    shape s = {4096, 4096, 1024, 5000, 21};
    table_stats st = write_table(path, &s);
    assert_true(st.data_blocks > 520);
    return st;
}

/* Swapping two neighbouring blocks keeps every checksum and breaks exactly
 * three rules, wherever the pair falls: across the two halves of a chunk,
 * across two chunks, or inside a half. The report must be the same as one
 * front-to-back walk gives, problems in the same order. */
static void test_report_independent_of_how_blocks_are_split(void **state) {
    (void)state;
    const char *path = tmp_path("chunked.sst");
    table_stats st = write_chunked_table(path);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    uint8_t *b = malloc(len);
    const uint64_t at[] = {
        0, 60, 126, 127, 128, 254, 255, 256, 383, 384, 511, 512, st.data_blocks - 2};
    const size_t read_sizes[] = {4096, 0};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        uint64_t p = at[k];
        memcpy(b, orig, len);
        memcpy(b + p * 4096, orig + (p + 1) * 4096, 4096);
        memcpy(b + (p + 1) * 4096, orig + p * 4096, 4096);
        spill(tmp_path("swapped.sst"), b, len);
        for (size_t r = 0; r < 2; r++) {
            verify_report rep;
            assert_int_equal(run_verify_with(tmp_path("swapped.sst"), read_sizes[r], 0, &rep), 0);
            char want[3][128];
            snprintf(want[0], sizeof want[0], "index entry %llu's key differs",
                     (unsigned long long)p);
            snprintf(want[1], sizeof want[1], "first key does not sort after the previous block");
            snprintf(want[2], sizeof want[2], "index entry %llu's key differs",
                     (unsigned long long)(p + 1));
            const int64_t blocks[3] = {(int64_t)p, (int64_t)p + 1, (int64_t)p + 1};
            if (rep.problem_count != 3)
                fail_msg("swap at %llu, read size %zu: %llu problems", (unsigned long long)p,
                         read_sizes[r], (unsigned long long)rep.problem_count);
            /* In file order; the last two share an offset, so either order. */
            for (int i = 0; i < 3; i++) {
                int j = i == 0 || strstr(rep.problems[i].what, want[i]) ? i : 3 - i;
                assert_non_null(strstr(rep.problems[i].what, want[j]));
                assert_int_equal(rep.problems[i].block, blocks[j]);
                assert_int_equal(rep.problems[i].offset, (uint64_t)blocks[j] * 4096);
            }
            assert_int_equal(rep.blocks, st.data_blocks);
            assert_int_equal(rep.records, st.records);
            assert_int_equal(rep.bytes, st.file_size);
            verify_report_destroy(&rep);
        }
    }
    free(b);
    free(orig);
}

/* More problems than the report keeps, spread over every half and chunk:
 * all are counted, and the ones kept are the first in file order. */
static void test_problem_limit_across_halves(void **state) {
    (void)state;
    const char *path = tmp_path("chunked.sst");
    table_stats st = write_chunked_table(path);
    size_t len;
    uint8_t *b = slurp(path, &len);
    uint64_t flipped = 0;
    for (uint64_t i = 3; i < st.data_blocks; i += 7, flipped++)
        b[i * 4096 + 100] ^= 0x04;
    spill(tmp_path("flipped.sst"), b, len);
    const size_t limits[] = {5, 100, 1000};
    for (size_t l = 0; l < 3; l++) {
        for (size_t r = 0; r < 2; r++) {
            verify_report rep;
            assert_int_equal(
                run_verify_with(tmp_path("flipped.sst"), r ? 0 : 4096, limits[l], &rep), 0);
            assert_int_equal(rep.problem_count, flipped);
            size_t kept = flipped < limits[l] ? flipped : limits[l];
            assert_int_equal(rep.n_problems, kept);
            for (size_t i = 0; i < kept; i++) {
                assert_int_equal(rep.problems[i].block, (int64_t)(3 + 7 * i));
                assert_non_null(strstr(rep.problems[i].what, "block checksum mismatch"));
            }
            assert_int_equal(rep.blocks, st.data_blocks - flipped);
            verify_report_destroy(&rep);
        }
    }
    free(b);
}

/* Records in blocks [0, n) of a clean table. */
static uint64_t records_before(const char *path, uint64_t n) {
    sp_error err = {0};
    sst_reader *r = sst_reader_open(path, &err);
    assert_non_null(r);
    uint8_t *buf = malloc(sst_reader_footer(r)->block_size);
    uint64_t records = 0;
    for (uint64_t i = 0; i < n; i++) {
        block_view v;
        assert_int_equal(sst_reader_read_block(r, i, buf, &v, &err), 0);
        records += v.n_records;
    }
    free(buf);
    sst_reader_close(r);
    return records;
}

/* With no footer the walk ends at the first block that does not open,
 * whichever half it is in; nothing after it counts. */
static void test_footerless_walk_stops_in_either_half(void **state) {
    (void)state;
    char path[256]; /* tmp_path's buffers are reused */
    snprintf(path, sizeof path, "%s", tmp_path("chunked.sst"));
    table_stats st = write_chunked_table(path);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    uint8_t *b = malloc(len);
    const uint64_t stops[] = {1, 100, 127, 128, 200, 256, 300};
    size_t cut = (size_t)(st.data_blocks * 4096 + 1000); /* inside the padding or index */
    for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++) {
        memcpy(b, orig, len);
        b[stops[k] * 4096 + 10] ^= 0x01;
        spill(tmp_path("cut.sst"), b, cut);
        for (size_t read_size = 4096;; read_size = 0) {
            verify_report rep;
            assert_int_equal(run_verify_with(tmp_path("cut.sst"), read_size, 0, &rep), 0);
            assert_int_equal(rep.problem_count, 1);
            assert_true(has_problem(&rep, "no footer"));
            assert_int_equal(rep.blocks, stops[k]);
            assert_int_equal(rep.records, records_before(path, stops[k]));
            /* Bytes of the reads made: whole chunks, up to the one that stopped. */
            uint64_t per = read_size ? 256 : cut / 4096, upto = (stops[k] / per + 1) * per;
            uint64_t whole = cut / 4096;
            assert_int_equal(rep.bytes, (upto < whole ? upto : whole) * 4096);
            verify_report_destroy(&rep);
            if (!read_size)
                break;
        }
    }
    free(b);
    free(orig);
}

/* Fails unless two reports say the same: every count, and every problem
 * kept, in the same order. */
static void assert_same_report(const verify_report *a, const verify_report *b, const char *what) {
    if (a->problem_count != b->problem_count || a->n_problems != b->n_problems ||
        a->blocks != b->blocks || a->records != b->records || a->bytes != b->bytes)
        fail_msg("%s: %llu/%zu problems, %llu blocks, %llu records, %llu bytes against "
                 "%llu/%zu, %llu, %llu, %llu",
                 what, (unsigned long long)a->problem_count, a->n_problems,
                 (unsigned long long)a->blocks, (unsigned long long)a->records,
                 (unsigned long long)a->bytes, (unsigned long long)b->problem_count, b->n_problems,
                 (unsigned long long)b->blocks, (unsigned long long)b->records,
                 (unsigned long long)b->bytes);
    for (size_t i = 0; i < a->n_problems; i++) {
        const verify_problem *p = &a->problems[i], *q = &b->problems[i];
        if (p->block != q->block || p->offset != q->offset || strcmp(p->what, q->what) != 0)
            fail_msg("%s: problem %zu is block %lld at byte %llu: %s; against block %lld at "
                     "byte %llu: %s",
                     what, i, (long long)p->block, (unsigned long long)p->offset, p->what,
                     (long long)q->block, (unsigned long long)q->offset, q->what);
    }
}

/* A damaged table of many chunks (1 MiB each, 256 blocks) checked by 1 to
 * 16 threads, each taking many chunks: the report, and so its first error,
 * is the one thread's, whatever order the workers finish in. The damage
 * spans chunk boundaries: checksums broken in blocks near and far, two
 * neighbouring blocks swapped across a chunk's end (the order check that
 * reaches back into the chunk before). */
static void test_report_same_at_any_thread_count(void **state) {
    (void)state;
    shape s = {4096, 4096, 1500, 20000, 33};
    char path[256]; /* tmp_path's buffers are reused */
    snprintf(path, sizeof path, "%s", tmp_path("many-chunks.sst"));
    table_stats st = write_table(path, &s);
    assert_true(st.data_blocks > 12 * 256);
    size_t len;
    uint8_t *b = slurp(path, &len);
    const uint64_t flip[] = {3, 700, 1025, 2047, 3000};
    for (size_t k = 0; k < sizeof flip / sizeof flip[0]; k++)
        b[flip[k] * 4096 + 200] ^= 0x10;
    uint64_t p = 9 * 256 - 1; /* the last block of chunk 8 and the first of chunk 9 */
    uint8_t tmp[4096];
    memcpy(tmp, b + p * 4096, 4096);
    memcpy(b + p * 4096, b + (p + 1) * 4096, 4096);
    memcpy(b + (p + 1) * 4096, tmp, 4096);
    spill(tmp_path("many-damaged.sst"), b, len);
    const unsigned threads[] = {2, 3, 5, 16};
    const size_t limits[] = {1, 4, 1000};
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        verify_report one;
        assert_int_equal(run_verify_threads(tmp_path("many-damaged.sst"), 4096, limits[l], 1, &one),
                         0);
        assert_int_equal(one.problem_count, 5 + 3);
        assert_int_equal(one.problems[0].block, 3);
        assert_non_null(strstr(one.problems[0].what, "block checksum mismatch"));
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            for (int again = 0; again < 3; again++) {
                verify_report rep;
                assert_int_equal(run_verify_threads(tmp_path("many-damaged.sst"), 4096, limits[l],
                                                    threads[t], &rep),
                                 0);
                char what[64];
                snprintf(what, sizeof what, "%u threads, limit %zu", threads[t], limits[l]);
                assert_same_report(&rep, &one, what);
                verify_report_destroy(&rep);
            }
        }
        verify_report_destroy(&one);
    }
    /* With no footer the walk stops at the first block that does not open,
     * for any number of threads, though later chunks were checked too. */
    free(b);
    b = slurp(path, &len);
    b[2100 * 4096 + 10] ^= 0x01; /* in chunk 8 of 15 */
    size_t cut = (size_t)(st.data_blocks * 4096 + 1000);
    spill(tmp_path("many-cut.sst"), b, cut);
    verify_report one;
    assert_int_equal(run_verify_threads(tmp_path("many-cut.sst"), 4096, 0, 1, &one), 0);
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        verify_report rep;
        assert_int_equal(run_verify_threads(tmp_path("many-cut.sst"), 4096, 0, threads[t], &rep),
                         0);
        assert_int_equal(rep.blocks, 2100);
        assert_same_report(&rep, &one, "no footer");
        verify_report_destroy(&rep);
    }
    verify_report_destroy(&one);
    free(b);
}

/* ---------------------------------------------------------------- UTF-8 */

/* Inputs each fast path (AVX2, AVX-512) itself judged, valid and invalid. */
static uint64_t fast_valid[2], fast_invalid[2];

/* verify_utf8_valid against sp_utf8_valid, answer and offset; and each fast
 * path's own answer, which verify_utf8_valid's fallback would hide (and
 * verify_utf8_fast's choice of the widest would hide the AVX2 one). */
static void utf8_agree(const uint8_t *s, size_t len) {
    size_t bad1 = 12345, bad2 = 12345;
    bool ok1 = sp_utf8_valid(s, len, &bad1);
    bool ok2 = verify_utf8_valid(s, len, &bad2);
    if (ok1 != ok2 || (!ok1 && bad1 != bad2))
        fail_msg("%zu bytes: sp_utf8_valid %d (bad %zu), verify_utf8_valid %d (bad %zu)", len, ok1,
                 bad1, ok2, bad2);
    for (int w = 0; w < 2; w++) {
        int fast = w ? verify_utf8_avx512(s, len) : verify_utf8_avx2(s, len);
        if (fast < 0)
            continue;
        if (fast != ok1)
            fail_msg("%zu bytes: sp_utf8_valid %d (bad %zu), the %s path alone %d", len, ok1, bad1,
                     w ? "AVX-512" : "AVX2", fast);
        (fast ? fast_valid : fast_invalid)[w]++;
    }
}

/* Random text of at most cap bytes: ASCII with characters of every length,
 * one byte replaced at random in half of them. Its length. */
static size_t random_text(uint8_t *text, size_t cap) {
    static const char *const chars[] = {"a",
                                        "\xc3\xa9",
                                        "\xe2\x82\xac",
                                        "\xf0\x9f\x98\x80",
                                        "\xed\x9f\xbf",
                                        "\xef\xbf\xbd",
                                        "\xf4\x8f\xbf\xbf"};
    size_t n = 0, want = rnd() % cap;
    while (n + 4 <= want) {
        const char *ch = chars[rnd() % 7];
        memcpy(text + n, ch, strlen(ch));
        n += strlen(ch);
    }
    if (n && rnd() % 2)
        text[rnd() % n] = (uint8_t)rnd();
    return n;
}

/* Every pair of bytes drawn from all non-ASCII bytes and a few ASCII ones,
 * followed by a third byte from each edge of the classes UTF-8 tells apart
 * (and of every high nibble, which the fast paths' tables index), and
 * four-byte sequences of every lead from F0 with bytes from each range table
 * 3-7 tells apart, at places around a 32-byte and a 64-byte block boundary,
 * after ASCII and after two-byte characters; then long random mixes. A third
 * byte only ever follows a pair, so it matters by its class; every byte as
 * the first of a pair straddling a block boundary comes after ASCII at
 * places 31 and 63 (first byte) and 30 and 62 (second). */
#ifdef __SANITIZE_ADDRESS__
/* Under the sanitizers, which look for reads outside the buffer (a matter of
 * lengths and places, every one of which is kept), a fifth of the pairs and
 * a tenth of the random mixes: the plain build compares every answer. */
enum { UTF8_PAIR_STEP = 5, UTF8_RANDOM_ROUNDS = 30000 };
#else
enum { UTF8_PAIR_STEP = 1, UTF8_RANDOM_ROUNDS = 300000 };
#endif
static void test_fast_utf8_agrees_with_the_reference(void **state) {
    (void)state;
    uint8_t bytes[131];
    size_t nb = 0;
    bytes[nb++] = 0x00;
    bytes[nb++] = 'A';
    bytes[nb++] = 0x7F;
    for (unsigned b = 0x80; b <= 0xFF; b++)
        bytes[nb++] = (uint8_t)b;
    static const uint8_t cont[] = {'A',  0x7F, 0x80, 0x8F, 0x90, 0x9F,
                                   0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0};
    const size_t n_cont = sizeof cont;
    static const uint8_t third[] = {0x00, 'A',  0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                    0xAF, 0xB0, 0xBF, 0xC0, 0xC1, 0xC2, 0xCF, 0xD0,
                                    0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0,
                                    0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF};
    const size_t n_third = sizeof third;
    uint8_t buf[96];
    const size_t places[] = {0, 29, 30, 31, 32, 62, 63, 64};
    for (size_t pl = 0; pl < sizeof places / sizeof places[0]; pl++) {
        for (int fill = 0; fill < 2; fill++) {
            for (size_t i = 0; i < sizeof buf; i++)
                buf[i] = fill ? (i % 2 ? 0xA9 : 0xC3) : 'a'; /* "éé..." or "aa..." */
            /* After the é's, the test bytes start where a character would. */
            size_t at = fill ? places[pl] - places[pl] % 2 : places[pl];
            uint8_t saved[4];
            memcpy(saved, buf + at, 4);
            for (size_t i = 0; i < nb; i += UTF8_PAIR_STEP)
                for (size_t j = 0; j < nb; j += UTF8_PAIR_STEP)
                    for (size_t k = 0; k < n_third; k++) {
                        buf[at] = bytes[i];
                        buf[at + 1] = bytes[j];
                        buf[at + 2] = third[k];
                        for (size_t n = at + 1; n <= at + 3; n++)
                            utf8_agree(buf, n);
                        utf8_agree(buf, at + 3 + (k & 7));
                    }
            for (unsigned lead = 0xF0; lead <= 0xFF; lead++)
                for (size_t i = 0; i < n_cont; i++)
                    for (size_t j = 0; j < n_cont; j++)
                        for (size_t k = 0; k < n_cont; k++) {
                            buf[at] = (uint8_t)lead;
                            buf[at + 1] = cont[i];
                            buf[at + 2] = cont[j];
                            buf[at + 3] = cont[k];
                            utf8_agree(buf, at + 4);
                            utf8_agree(buf, at + 4 + (k & 7));
                        }
            memcpy(buf + at, saved, 4);
        }
    }
    /* Random text: ASCII with characters of every length, some cut or
     * corrupted, lengths across many blocks. */
    uint8_t text[600];
    rng_state = 7;
    for (int round = 0; round < UTF8_RANDOM_ROUNDS; round++) {
        size_t n = random_text(text, sizeof text);
        utf8_agree(text, n);
        if (n)
            utf8_agree(text, n - 1 - rnd() % (n < 3 ? n : 3));
    }
    if (verify_utf8_fast((const uint8_t *)"a", 1) < 0) {
        print_message("fast UTF-8 path NOT exercised: this processor has no AVX2; only the "
                      "fallback (sp_utf8_valid itself) was compared\n");
        skip();
    }
    for (int w = 0; w < 2; w++) {
        if ((w ? verify_utf8_avx512 : verify_utf8_avx2)((const uint8_t *)"a", 1) < 0)
            continue;
        print_message("%s UTF-8 path judged %llu valid and %llu invalid inputs itself\n",
                      w ? "AVX-512" : "AVX2", (unsigned long long)fast_valid[w],
                      (unsigned long long)fast_invalid[w]);
        assert_true(fast_valid[w] > 1000 && fast_invalid[w] > 1000);
    }
    /* Checked above where the processor has it; a skip, not a pass, where
     * it lacks it, as nothing checked the path verify would run there. */
    if (verify_utf8_avx512((const uint8_t *)"a", 1) < 0) {
        print_message("AVX-512 UTF-8 path NOT exercised: this processor has no AVX-512BW\n");
        skip();
    }
}

/* verify_utf8_fast runs the widest path the processor has, as the test
 * asks the processor itself (each path's answers are judged above, and
 * are the same whichever runs), and answers as that path does. */
static void test_fast_utf8_runs_the_widest_path(void **state) {
    (void)state;
    const char *want = NULL;
    int (*path)(const uint8_t *, size_t) = NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bw")) {
        want = "AVX-512BW";
        path = verify_utf8_avx512;
    } else if (__builtin_cpu_supports("avx2")) {
        want = "AVX2";
        path = verify_utf8_avx2;
    }
#endif
    const char *got = verify_utf8_fast_path();
    print_message("verify_utf8_fast runs the %s path; the processor's widest is %s\n",
                  got ? got : "no fast", want ? want : "none");
    if (!want || !got)
        assert_ptr_equal(got, want);
    else
        assert_string_equal(got, want);
    uint8_t text[600];
    rng_state = 11;
    for (int round = 0; round < 20000; round++) {
        size_t n = random_text(text, sizeof text);
        int fast = verify_utf8_fast(text, n);
        assert_int_equal(fast, path ? path(text, n) : -1);
        if (path)
            assert_int_equal(fast, sp_utf8_valid(text, n, NULL));
    }
    if (!want) {
        print_message("fast UTF-8 path NOT exercised: this processor has no AVX2\n");
        skip();
    }
}

/* ---------------------------------------------------------------- could not run */

static void test_not_an_sstable(void **state) {
    (void)state;
    verify_report rep;
    assert_int_equal(run_verify(tmp_path("does-not-exist.sst"), &rep), -1);
    assert_non_null(strstr(rep.error, "cannot open"));
    verify_report_destroy(&rep);

    uint8_t text[8192];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (uint8_t)("lorem ipsum dolor\n"[i % 18]);
    spill(tmp_path("text.txt"), text, sizeof text);
    assert_int_equal(run_verify(tmp_path("text.txt"), &rep), -1);
    assert_non_null(strstr(rep.error, "not an sstpipe SSTable"));
    verify_report_destroy(&rep);

    spill(tmp_path("zero.sst"), text, 0);
    assert_int_equal(run_verify(tmp_path("zero.sst"), &rep), -1);
    verify_report_destroy(&rep);

    assert_int_equal(run_verify(dir, &rep), -1);
    verify_report_destroy(&rep);
}

/* ---------------------------------------------------------------- reports */

static void test_json_report(void **state) {
    (void)state;
    shape s = {1024, 512, 200, 60, 12};
    const char *path = tmp_path("json.sst");
    table_stats st = write_table(path, &s);
    verify_report reps[2];
    assert_int_equal(run_verify(path, &reps[0]), 0);
    size_t len;
    uint8_t *b = slurp(path, &len);
    b[1024 + 5] ^= 0x40;
    spill(tmp_path("json-bad.sst"), b, len);
    free(b);
    assert_int_equal(run_verify(tmp_path("json-bad.sst"), &reps[1]), 0);
    sp_error err = {0};
    assert_int_equal(verify_write_json(reps, 2, tmp_path("report.json"), &err), 0);
    json_error_t jerr;
    json_t *root = json_load_file(tmp_path("report.json"), 0, &jerr);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "problems")), 1);
    json_t *f0 = json_array_get(json_object_get(root, "files"), 0);
    json_t *f1 = json_array_get(json_object_get(root, "files"), 1);
    assert_true(json_is_true(json_object_get(f0, "ok")));
    assert_int_equal(json_integer_value(json_object_get(f0, "records")), st.records);
    assert_int_equal(json_integer_value(json_object_get(f0, "bytes")), st.file_size);
    assert_true(json_is_false(json_object_get(f1, "ok")));
    json_t *p = json_array_get(json_object_get(f1, "problems"), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "block")), 1);
    assert_int_equal(json_integer_value(json_object_get(p, "offset")), 1024);
    json_decref(root);

    char *text = NULL;
    size_t tlen = 0;
    FILE *out = open_memstream(&text, &tlen);
    verify_report_print(&reps[1], out);
    fclose(out);
    assert_non_null(strstr(text, "block 1 at byte 1024: block checksum mismatch"));
    assert_non_null(strstr(text, " 1 problem\n"));
    free(text);
    verify_report_destroy(&reps[0]);
    verify_report_destroy(&reps[1]);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_verify.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_shapes),
        cmocka_unit_test(test_read_size_smaller_than_a_block),
        cmocka_unit_test(test_every_byte_of_a_small_table),
        cmocka_unit_test(test_every_byte_with_padded_regions),
        cmocka_unit_test(test_every_byte_of_an_empty_table),
        cmocka_unit_test(test_random_bytes_of_a_larger_table),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_compressed_tables),
        cmocka_unit_test(test_damaged_filter),
        cmocka_unit_test(test_appended),
        cmocka_unit_test(test_swapped_blocks_keep_checksums_but_break_order),
        cmocka_unit_test(test_value_over_the_bound),
        cmocka_unit_test(test_invalid_utf8_and_counts),
        cmocka_unit_test(test_many_problems_each_located),
        cmocka_unit_test(test_title_lists),
        cmocka_unit_test(test_report_independent_of_how_blocks_are_split),
        cmocka_unit_test(test_problem_limit_across_halves),
        cmocka_unit_test(test_footerless_walk_stops_in_either_half),
        cmocka_unit_test(test_report_same_at_any_thread_count),
        cmocka_unit_test(test_fast_utf8_agrees_with_the_reference),
        cmocka_unit_test(test_fast_utf8_runs_the_widest_path),
        cmocka_unit_test(test_not_an_sstable),
        cmocka_unit_test(test_json_report),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return failed;
}
