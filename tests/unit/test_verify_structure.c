/*
 * test_verify_structure.c: the one check of a table's structure
 * (stages/sst/table_check.h) as its two users run it. Each rule of the
 * footer, the regions and the index is broken alone in a good table, the
 * checksums resealed where the rule is not a checksum's, so that only that
 * rule can catch it; then sst_reader_open (stop mode, what every opener
 * runs) must refuse the file and verify (collect mode) must report it, with
 * the same words at the same byte: open's error is exactly the line verify
 * prints for one of its problems. A rule dropped from the check is missed
 * by both, and this test fails.
 */
#include "stages/sst/coding.h"
#include "stages/sst/format.h"
#include "stages/sst/table_reader.h"
#include "stages/verify/verify.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <xxhash.h>

#include <cmocka.h>

#define BS 1024u
#define CS 4096u
#define MVB 400u

typedef t_good fixture;

/* The file being damaged, with its footer's fields at hand. */
typedef struct table {
    uint8_t *b;
    size_t n;
    uint8_t *foot; /* the 128-byte footer */
    uint64_t data_blocks, index_offset, index_length, index_region;
    uint64_t entry[3]; /* index offsets of the first three entries */
    uint64_t last;     /* and of the last */
} table;

static int setup(void **state) {
    fixture *f = t_good_make(BS, CS, MVB);
    *state = f;
    /* The cases need data padding and at least three blocks. */
    return !f || f->st.data_blocks < 3 || f->st.data_blocks * BS % CS == 0 ? -1 : 0;
}

static int teardown(void **state) {
    t_good_free(*state);
    return 0;
}

static table load(const fixture *f) {
    table t = {.b = malloc(f->n), .n = f->n};
    memcpy(t.b, f->good, f->n);
    t.foot = t.b + t.n - SST_FOOTER_BYTES;
    t.index_offset = sst_get_u64(t.foot + 0);
    t.index_length = sst_get_u64(t.foot + 8);
    t.index_region = sst_get_u64(t.foot + 16);
    t.data_blocks = sst_get_u64(t.foot + 24);
    const uint8_t *idx = t.b + t.index_offset, *p = idx, *end = idx + t.index_length;
    for (uint64_t i = 0; i < t.data_blocks; i++) {
        if (i < 3)
            t.entry[i] = (uint64_t)(p - idx);
        t.last = (uint64_t)(p - idx);
        uint32_t klen = 0;
        uint64_t off;
        p = sst_get_varint32(p, end, &klen);
        p = sst_get_varint(p + klen, end, SST_VARINT64_MAX, &off);
        assert_non_null(p);
    }
    return t;
}

/* The index checksum in the footer, then the footer checksum, made to
 * match the bytes again. */
static void reseal(table *t) {
    sst_put_u64(t->foot + 64, XXH3_64bits(t->b + t->index_offset, t->index_region));
    sst_put_u64(t->foot + SST_FOOTER_CHECKSUM,
                XXH3_64bits(t->b + t->n - CS, CS - (SST_FOOTER_BYTES - SST_FOOTER_CHECKSUM)));
}

/* Open must fail with "PATH: byte at: ..." naming needle, and verify must
 * report the very same words at the same byte. */
static void both_catch(fixture *f, table *t, uint64_t at, const char *needle) {
    assert_int_equal(t_write_file(f->bad, t->b, t->n), 0);
    sp_error err = {0};
    sst_reader *r = sst_reader_open(f->bad, &err);
    if (r) {
        sst_reader_close(r);
        fail_msg("opened a table that breaks the rule '%s'", needle);
    }
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s: byte %llu: ", f->bad, (unsigned long long)at);
    if (strncmp(err.msg, prefix, strlen(prefix)) != 0 || !strstr(err.msg, needle))
        fail_msg("open said '%s', not '%s...%s'", err.msg, prefix, needle);
    const char *what = err.msg + strlen(prefix);

    verify_options o;
    verify_options_init(&o);
    verify_report rep;
    verify_report_init(&rep, &o);
    sp_error verr = {0};
    assert_int_equal(verify_file(f->bad, &rep, &verr), 0);
    bool found = false;
    for (size_t i = 0; i < rep.n_problems && !found; i++)
        found = rep.problems[i].offset == at && strcmp(rep.problems[i].what, what) == 0;
    if (!found) {
        for (size_t i = 0; i < rep.n_problems; i++)
            fprintf(stderr, "verify: byte %llu: %s\n", (unsigned long long)rep.problems[i].offset,
                    rep.problems[i].what);
        fail_msg("verify did not report '%s' at byte %llu", what, (unsigned long long)at);
    }
    verify_report_destroy(&rep);
    free(t->b);
}

static void test_good_table_passes_both(void **state) {
    fixture *f = *state;
    sp_error err = {0};
    sst_reader *r = sst_reader_open(f->path, &err);
    assert_non_null(r);
    sst_reader_close(r);
    verify_report rep;
    verify_report_init(&rep, NULL);
    assert_int_equal(verify_file(f->path, &rep, &err), 0);
    /* The random records are not text: their UTF-8 is all verify finds. */
    assert_int_equal(rep.n_problems, rep.problem_count);
    for (size_t i = 0; i < rep.n_problems; i++)
        assert_non_null(strstr(rep.problems[i].what, "is not valid UTF-8"));
    verify_report_destroy(&rep);
}

/* One u32 or u64 field of the footer set to v, resealed. */
static void footer_field(fixture *f, unsigned at, unsigned width, uint64_t v, const char *needle) {
    table t = load(f);
    if (width == 4)
        sst_put_u32(t.foot + at, (uint32_t)v);
    else
        sst_put_u64(t.foot + at, v);
    reseal(&t);
    both_catch(f, &t, t.n - SST_FOOTER_BYTES + at, needle);
}

static void test_footer_rules(void **state) {
    fixture *f = *state;
    footer_field(f, SST_FOOTER_BLOCK_SIZE + 16, 4, 3, "format version 3 is not supported");
    footer_field(f, SST_FOOTER_RESERVED, 8, 1, "reserved bytes are not zero");
    footer_field(f, SST_FOOTER_BLOCK_SIZE + 4, 4, 1000, "cluster size 1000 is not a power of two");
    footer_field(f, 56, 8, f->n + CS, "(truncated or appended to)");
    footer_field(f, SST_FOOTER_BLOCK_SIZE + 20, 4, 2, "checksum type 2");
    footer_field(f, SST_FOOTER_BLOCK_SIZE + 12, 4, 8, "restart interval 8");
    footer_field(f, SST_FOOTER_BLOCK_SIZE, 4, 1000, "block size 1000 is not a power of two");
    footer_field(f, SST_FOOTER_BLOCK_SIZE + 8, 4, 100000, "value bound");
    footer_field(f, 32, 8, 0, "records in");

    table t = load(f);
    t.b[t.n - 1] ^= 0x01;
    both_catch(f, &t, t.n - SST_FOOTER_BYTES + SST_FOOTER_MAGIC, "not an sstpipe SSTable");
    t = load(f);
    t.b[t.n - CS] = 1;
    both_catch(f, &t, t.n - SST_FOOTER_BYTES + SST_FOOTER_CHECKSUM, "footer checksum mismatch");
    t = load(f);
    t.b[t.n - CS] = 1;
    reseal(&t);
    both_catch(f, &t, t.n - CS, "the footer region's padding is not zero");
}

static void test_region_rules(void **state) {
    fixture *f = *state;
    table t = load(f);
    footer_field(f, SST_FOOTER_DATA_REGION_LENGTH, 8, t.index_offset + CS, "footer data region");
    footer_field(f, SST_FOOTER_INDEX_OFFSET, 8, t.index_offset + CS, "footer index offset");
    footer_field(f, 16, 8, t.index_region + CS, "footer index region");
    free(t.b);
    /* Every field in agreement, but a region more than the file holds. */
    t = load(f);
    sst_put_u64(t.foot + 16, t.index_region + CS);
    sst_put_u64(t.foot + 8, t.index_region + CS);
    reseal(&t);
    both_catch(f, &t, t.n - SST_FOOTER_BYTES, "do not add up");

    t = load(f);
    t.b[t.data_blocks * BS + 5] = 1;
    both_catch(f, &t, t.data_blocks * BS + 5, "the data region's padding is not zero");
    t = load(f);
    t.b[t.index_offset + t.index_length + 3] = 1;
    both_catch(f, &t, t.index_offset, "index checksum mismatch");
    t = load(f);
    t.b[t.index_offset + t.index_length + 3] = 1;
    reseal(&t);
    both_catch(f, &t, t.index_offset + t.index_length + 3,
               "the index region's padding is not zero");
}

static void test_index_rules(void **state) {
    fixture *f = *state;
    table t = load(f);
    t.b[t.index_offset + t.entry[1]] = 0; /* key length 0 */
    reseal(&t);
    both_catch(f, &t, t.index_offset + t.entry[1], "corrupt index entry 1");

    t = load(f);
    uint8_t *e = t.b + t.index_offset + t.entry[1];
    uint32_t klen = 0;
    const uint8_t *k = sst_get_varint32(e, e + 5, &klen);
    uint8_t *off = (uint8_t *)k + klen; /* 1024: 80 08 */
    assert_int_equal(off[0], 0x80);
    assert_int_equal(off[1], 0x08);
    off[1] = 0x10;
    reseal(&t);
    both_catch(f, &t, t.index_offset + t.entry[1], "index entry 1 points at byte 2048, not 1024");

    t = load(f);
    e = t.b + t.index_offset + t.entry[2];
    k = sst_get_varint32(e, e + 5, &klen);
    *(uint8_t *)k = 0; /* before block 1's key, whose bytes are all 2 or more */
    reseal(&t);
    both_catch(f, &t, t.index_offset + t.entry[2], "index entry 2: first keys out of order");

    /* The last entry dropped: one block without its entry. */
    t = load(f);
    assert_true(sst_align_up(t.last, CS) == t.index_region);
    memset(t.b + t.index_offset + t.last, 0, t.index_length - t.last);
    sst_put_u64(t.foot + 8, t.last);
    reseal(&t);
    char want[100];
    snprintf(want, sizeof want, "index has %llu entries, the footer says %llu data blocks",
             (unsigned long long)(t.data_blocks - 1), (unsigned long long)t.data_blocks);
    both_catch(f, &t, t.index_offset + t.last, want);

    /* A byte past the last entry. */
    t = load(f);
    assert_true(t.index_length + 1 < t.index_region);
    sst_put_u64(t.foot + 8, t.index_length + 1);
    reseal(&t);
    both_catch(f, &t, t.index_offset + t.index_length, "1 bytes after the last index entry");
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_good_table_passes_both),
        T(test_footer_rules),
        T(test_region_rules),
        T(test_index_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
