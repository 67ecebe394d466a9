/*
 * test_sst_corrupt.c: damaged tables are refused, never misread. A flipped
 * byte in a data block makes lookups in that block fail with an error that
 * names the file, block and offset (other blocks still answer), whether the
 * block is read with pread or through the mapping; a flipped
 * byte anywhere else, a truncated file and one with bytes appended fail to
 * open.
 */
#include "stages/sst/table_reader.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define BS 1024u
#define CS 4096u
#define MVB 400u

typedef t_good fixture;

/* Where the index starts: after the data region, padded to a cluster. */
static uint64_t index_offset(const fixture *f) {
    return sst_align_up(f->st.data_blocks * BS, CS);
}

static int setup(void **state) {
    fixture *f = t_good_make(BS, CS, MVB);
    *state = f;
    /* The tests below need data padding (blocks not filling the last cluster). */
    return !f || f->st.data_blocks * BS % CS == 0 ? -1 : 0;
}

static int teardown(void **state) {
    t_good_free(*state);
    return 0;
}

/* Writes the good file with byte off flipped as bad.sst. */
static void write_flipped(fixture *f, uint64_t off) {
    uint8_t *b = malloc(f->n);
    memcpy(b, f->good, f->n);
    b[off] ^= 0x01;
    assert_int_equal(t_write_file(f->bad, b, f->n), 0);
    free(b);
}

static void expect_open_fails(fixture *f, const char *needle) {
    sp_error err = {0};
    sst_reader *r = sst_reader_open(f->bad, &err);
    if (r) {
        sst_reader_close(r);
        fail_msg("opened a damaged table");
    }
    assert_non_null(strstr(err.msg, f->bad));
    if (needle && !strstr(err.msg, needle))
        fail_msg("'%s' lacks '%s'", err.msg, needle);
}

/* How a reader reads its blocks: pread, or mapped with and without record
 * directories (each block then checked on its first lookup only). */
enum read_mode { READ_PREAD, READ_MAPPED, READ_MAPPED_NO_DIRS };

static void flipped_data_byte_fails_get(fixture *f, enum read_mode mode) {
    const uint64_t block = 2, in_block[] = {0, 7, 300, BS - 30, BS - 21, BS - 9, BS - 1};
    for (size_t p = 0; p < sizeof in_block / sizeof in_block[0]; p++) {
        write_flipped(f, block * BS + in_block[p]);
        sp_error err = {0};
        sst_reader *r = sst_reader_open(f->bad, &err);
        assert_non_null(r); /* blocks are checked when read, not at open */
        if (mode != READ_PREAD)
            assert_int_equal(
                sst_reader_map(r, mode == READ_MAPPED ? SST_READER_DIR_BUDGET : 0, &err), 0);
        /* Twice: a block that failed its check fails again, and the others,
         * checked once, still answer. */
        for (int pass = 0; pass < 2; pass++) {
            size_t in = 0, out = 0;
            for (size_t i = 0; i < f->s.n; i++) {
                const trec *t = &f->s.r[i];
                const void *v;
                size_t vlen;
                sp_error_clear(&err);
                int rc = sst_reader_get(r, t->key, t->klen, &v, &vlen, &err);
                if (sst_reader_find_block(r, t->key, t->klen) == (int64_t)block) {
                    assert_int_equal(rc, -1);
                    char want[200];
                    snprintf(want, sizeof want,
                             "bad.sst: block 2 at byte %llu: ", (unsigned long long)(block * BS));
                    assert_non_null(strstr(err.msg, want));
                    assert_non_null(strstr(err.msg, "checksum mismatch"));
                    in++;
                } else {
                    assert_int_equal(rc, 1);
                    assert_int_equal(vlen, t->vlen);
                    assert_memory_equal(v, t->val, vlen);
                    out++;
                }
            }
            assert_true(in > 0 && out > 0);
        }
        uint8_t *buf = malloc(BS);
        block_view bv;
        assert_int_equal(sst_reader_read_block(r, block, buf, &bv, &err), -1);
        free(buf);
        sst_reader_close(r);
    }
}

static void test_flipped_data_byte_fails_get(void **state) {
    flipped_data_byte_fails_get(*state, READ_PREAD);
}

static void test_flipped_data_byte_fails_mapped_get(void **state) {
    flipped_data_byte_fails_get(*state, READ_MAPPED);
    flipped_data_byte_fails_get(*state, READ_MAPPED_NO_DIRS);
}

static void test_flipped_padding_or_index_byte_fails_open(void **state) {
    fixture *f = *state;
    write_flipped(f, f->st.data_blocks * BS + 5); /* data region padding */
    expect_open_fails(f, "padding is not zero");
    write_flipped(f, index_offset(f)); /* first index entry */
    expect_open_fails(f, "index checksum mismatch");
    write_flipped(f, index_offset(f) + 3);
    expect_open_fails(f, "index checksum mismatch");
    write_flipped(f, f->n - CS - 1); /* index padding */
    expect_open_fails(f, "index checksum mismatch");
}

static void test_flipped_footer_byte_fails_open(void **state) {
    fixture *f = *state;
    write_flipped(f, f->n - CS); /* zeros before the footer */
    expect_open_fails(f, "footer checksum mismatch");
    for (uint64_t i = 0; i < 128; i++) {
        write_flipped(f, f->n - 128 + i);
        expect_open_fails(f, NULL);
    }
    write_flipped(f, f->n - 1);
    expect_open_fails(f, "not an sstpipe SSTable");
}

static void test_truncated_or_appended_fails_open(void **state) {
    fixture *f = *state;
    const size_t lengths[] = {0, 100, 600, f->n / 2, f->n - CS, f->n - 1};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        assert_int_equal(t_write_file(f->bad, f->good, lengths[i]), 0);
        expect_open_fails(f, NULL);
    }
    uint8_t *b = calloc(1, f->n + CS);
    memcpy(b, f->good, f->n);
    assert_int_equal(t_write_file(f->bad, b, f->n + 1), 0);
    expect_open_fails(f, "not an sstpipe SSTable");
    assert_int_equal(t_write_file(f->bad, b, f->n + CS), 0);
    expect_open_fails(f, NULL);
    /* The footer region again at the end: a valid-looking footer, wrong size. */
    memcpy(b + f->n, f->good + f->n - CS, CS);
    assert_int_equal(t_write_file(f->bad, b, f->n + CS), 0);
    expect_open_fails(f, "truncated or appended");
    free(b);
}

static void test_good_file_opens(void **state) {
    fixture *f = *state;
    assert_int_equal(t_write_file(f->bad, f->good, f->n), 0);
    sp_error err = {0};
    sst_reader *r = sst_reader_open(f->bad, &err);
    assert_non_null(r);
    assert_int_equal(sst_reader_footer(r)->records, f->s.n);
    sst_reader_close(r);
    sst_reader *none = sst_reader_open(f->dir, &err);
    assert_null(none);
    assert_non_null(strstr(err.msg, "not a regular file"));
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_good_file_opens),
        T(test_flipped_data_byte_fails_get),
        T(test_flipped_data_byte_fails_mapped_get),
        T(test_flipped_padding_or_index_byte_fails_open),
        T(test_flipped_footer_byte_fails_open),
        T(test_truncated_or_appended_fails_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
