/*
 * test_sst_table.c: table_writer and table_reader agree. Random record sets
 * across block and cluster sizes (every key found with its value, absent
 * keys not found, read with pread and through the mapping, with and without
 * record directories), the block boundary cases at table level, empty and
 * one-record tables, refused options and records, atomic output, and
 * byte-for-byte determinism.
 */
#include "stages/sst/table_reader.h"
#include "stages/sst/table_writer.h"
#include "test_sst_util.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    char *dir;
    char *path;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_dir_make("sst-test");
    if (!f->dir)
        return -1;
    f->path = t_path(f->dir, "t.sst");
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

static uint32_t max_value_for(uint32_t bs) {
    uint64_t m = sst_max_record_bytes(bs) - SP_MAX_KEY_BYTES;
    return m < 1024 ? (uint32_t)m : 1024;
}

/* Every block read back in order yields exactly the records of s. */
static void check_scan(sst_reader *r, const trecs *s) {
    const sst_footer *f = sst_reader_footer(r);
    uint8_t *buf = malloc(f->block_size);
    size_t k = 0;
    sp_error err = {0};
    for (uint64_t b = 0; b < f->data_blocks; b++) {
        block_view v;
        assert_int_equal(sst_reader_read_block(r, b, buf, &v, &err), 0);
        block_iter it;
        block_iter_init(&it, &v);
        int rc;
        while ((rc = block_iter_next(&it, "blk", &err)) == 1) {
            assert_true(k < s->n);
            assert_int_equal(it.key_len, s->r[k].klen);
            assert_memory_equal(it.key, s->r[k].key, it.key_len);
            assert_int_equal(it.value_len, s->r[k].vlen);
            if (it.value_len)
                assert_memory_equal(it.value, s->r[k].val, it.value_len);
            k++;
        }
        assert_int_equal(rc, 0);
    }
    assert_int_equal(k, s->n);
    free(buf);
}

static bool present(const trecs *s, const uint8_t *k, uint32_t klen) {
    trec probe = {.key = (uint8_t *)k, .klen = klen};
    return bsearch(&probe, s->r, s->n, sizeof *s->r, t_rec_cmp) != NULL;
}

/* Every key found with its value; keys before, after and between absent. */
static void check_lookups(sst_reader *r, const trecs *s) {
    sp_error err = {0};
    const void *v;
    size_t vlen;
    uint8_t probe[SP_MAX_KEY_BYTES + 1];
    for (size_t i = 0; i < s->n; i++) {
        assert_int_equal(sst_reader_get(r, s->r[i].key, s->r[i].klen, &v, &vlen, &err), 1);
        assert_int_equal(vlen, s->r[i].vlen);
        if (vlen)
            assert_memory_equal(v, s->r[i].val, vlen);
        /* Just after this key (and so just before the next one, across a
         * block boundary when this is a block's last key). */
        memcpy(probe, s->r[i].key, s->r[i].klen);
        probe[s->r[i].klen] = 0;
        if (!present(s, probe, s->r[i].klen + 1))
            assert_int_equal(sst_reader_get(r, probe, s->r[i].klen + 1, &v, &vlen, &err), 0);
        /* A proper prefix. */
        if (s->r[i].klen > 1 && !present(s, s->r[i].key, s->r[i].klen - 1))
            assert_int_equal(sst_reader_get(r, s->r[i].key, s->r[i].klen - 1, &v, &vlen, &err), 0);
    }
    assert_int_equal(sst_reader_get(r, (const uint8_t *)"\x01", 1, &v, &vlen, &err), 0);
    assert_int_equal(sst_reader_get(r, (const uint8_t *)"\xff\xff", 2, &v, &vlen, &err), 0);
    assert_int_equal(sst_reader_get(r, (const uint8_t *)"", 0, &v, &vlen, &err), 0);
    assert_false(err.set);
}

static void test_random_sets_agree(void **state) {
    fixture *f = *state;
    const uint32_t sizes[][2] = {{1024, 512},   {1024, 4096},    {2048, 512},   {4096, 4096},
                                 {8192, 4096},  {8192, 512},     {16384, 1024}, {65536, 4096},
                                 {4096, 65536}, {1u << 20, 4096}};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        uint32_t bs = sizes[c][0], cs = sizes[c][1], mvb = max_value_for(bs);
        trecs s = t_random(1000 + c, 3000, mvb);
        table_stats st;
        sp_error err = {0};
        assert_int_equal(t_write(f->path, bs, cs, mvb, &s, &st, &err), 0);
        sst_reader *r = sst_reader_open(f->path, &err);
        if (!r)
            fail_msg("%s", err.msg);
        const sst_footer *ft = sst_reader_footer(r);
        uint64_t kb = 0, vb = 0;
        for (size_t i = 0; i < s.n; i++) {
            kb += s.r[i].klen;
            vb += s.r[i].vlen;
        }
        assert_int_equal(ft->records, s.n);
        assert_int_equal(st.records, s.n);
        assert_int_equal(ft->key_bytes, kb);
        assert_int_equal(ft->value_bytes, vb);
        assert_int_equal(st.key_bytes, kb);
        assert_int_equal(st.value_bytes, vb);
        assert_int_equal(ft->data_blocks, st.data_blocks);
        assert_int_equal(ft->file_size, st.file_size);
        assert_int_equal(ft->block_size, bs);
        assert_int_equal(ft->cluster_size, cs);
        assert_int_equal(ft->max_value_bytes, mvb);
        /* Greedy filling: a block holds at most what fits, so never fewer
         * blocks than the bytes need. */
        assert_true(ft->data_blocks * bs >= kb + vb);
        check_lookups(r, &s);
        check_scan(r, &s);
        sst_reader_close(r);
        /* Mapped: each block checked on its first lookup (the first pass),
         * then searched through its record directory (the second) or, with
         * no budget for directories, from its restart points. */
        for (int budget = 0; budget < 2; budget++) {
            r = sst_reader_open(f->path, &err);
            assert_non_null(r);
            assert_int_equal(sst_reader_map(r, budget ? SST_READER_DIR_BUDGET : 0, &err), 0);
            check_lookups(r, &s);
            check_lookups(r, &s);
            sst_reader_close(r);
        }
        t_free(&s);
    }
}

static void test_empty_table(void **state) {
    fixture *f = *state;
    trecs s = {0};
    table_stats st;
    sp_error err = {0};
    assert_int_equal(t_write(f->path, 8192, 4096, 1024, &s, &st, &err), 0);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.data_blocks, 0);
    assert_int_equal(st.file_size, 4096); /* the footer region alone */
    sst_reader *r = sst_reader_open(f->path, &err);
    assert_non_null(r);
    assert_int_equal(sst_reader_footer(r)->index_length, 0);
    assert_int_equal(sst_reader_find_block(r, (const uint8_t *)"a", 1), -1);
    const void *v;
    size_t vlen;
    assert_int_equal(sst_reader_get(r, (const uint8_t *)"a", 1, &v, &vlen, &err), 0);
    check_scan(r, &s);
    /* Nothing to map; lookups still answer. */
    assert_int_equal(sst_reader_map(r, SST_READER_DIR_BUDGET, &err), 0);
    assert_int_equal(sst_reader_get(r, (const uint8_t *)"a", 1, &v, &vlen, &err), 0);
    sst_reader_close(r);
}

typedef struct lookup_thread {
    sst_reader *r;
    const trecs *s;
    size_t start;
    size_t ok;
} lookup_thread;

static void *lookup_all(void *arg) {
    lookup_thread *t = arg;
    for (size_t k = 0; k < t->s->n; k++) {
        const trec *rec = &t->s->r[(t->start + k) % t->s->n];
        const void *v;
        size_t vlen;
        sp_error err = {0};
        if (sst_reader_get(t->r, rec->key, rec->klen, &v, &vlen, &err) == 1 && vlen == rec->vlen &&
            (vlen == 0 || memcmp(v, rec->val, vlen) == 0))
            t->ok++;
    }
    return NULL;
}

/* A mapped reader's lookups run in several threads at once, each block's
 * first check and directory raced for by all of them. */
static void test_mapped_lookups_from_threads(void **state) {
    fixture *f = *state;
    trecs s = t_random(77, 4000, 200);
    table_stats st;
    sp_error err = {0};
    assert_int_equal(t_write(f->path, 1024, 512, 200, &s, &st, &err), 0);
    assert_true(st.data_blocks > 100);
    for (int budget = 0; budget < 2; budget++) {
        sst_reader *r = sst_reader_open(f->path, &err);
        assert_non_null(r);
        /* A budget that runs out part of the way: some blocks get a
         * directory, the others do not. */
        assert_int_equal(sst_reader_map(r, budget ? SST_READER_DIR_BUDGET : 20000, &err), 0);
        lookup_thread t[4];
        pthread_t tid[4];
        for (int k = 0; k < 4; k++) {
            t[k] = (lookup_thread){.r = r, .s = &s, .start = k * s.n / 4};
            assert_int_equal(pthread_create(&tid[k], NULL, lookup_all, &t[k]), 0);
        }
        for (int k = 0; k < 4; k++) {
            pthread_join(tid[k], NULL);
            assert_int_equal(t[k].ok, s.n);
        }
        check_lookups(r, &s);
        sst_reader_close(r);
    }
    t_free(&s);
}

static void test_one_record(void **state) {
    fixture *f = *state;
    trecs s = {0};
    t_add(&s, (const uint8_t *)"Alan Turing", 11, (const uint8_t *)"mathematician", 13);
    sp_error err = {0};
    table_stats st;
    assert_int_equal(t_write(f->path, 1024, 512, 100, &s, &st, &err), 0);
    assert_int_equal(st.data_blocks, 1);
    assert_int_equal(st.file_size, 1024 + 512 + 512); /* block, index region, footer region */
    sst_reader *r = sst_reader_open(f->path, &err);
    assert_non_null(r);
    check_lookups(r, &s);
    check_scan(r, &s);
    assert_int_equal(sst_reader_find_block(r, (const uint8_t *)"A", 1), -1);
    assert_int_equal(sst_reader_find_block(r, (const uint8_t *)"Z", 1), 0);
    sst_reader_close(r);
    t_free(&s);
}

/* Reads block b and returns its record count and used bytes. */
static void block_shape(sst_reader *r, uint64_t b, uint32_t *records, uint32_t *used,
                        uint8_t first[SP_MAX_KEY_BYTES], uint32_t *first_len) {
    const sst_footer *f = sst_reader_footer(r);
    uint8_t *buf = malloc(f->block_size);
    block_view v;
    sp_error err = {0};
    assert_int_equal(sst_reader_read_block(r, b, buf, &v, &err), 0);
    *records = v.n_records;
    *used = v.entries_len + 4 * v.n_restarts + SST_BLOCK_TRAILER_FIXED;
    block_iter it;
    block_iter_init(&it, &v);
    assert_int_equal(block_iter_next(&it, "blk", &err), 1);
    memcpy(first, it.key, it.key_len);
    *first_len = it.key_len;
    free(buf);
}

/*
 * Block 1024, values up to 675. "a" and "b" with 400-byte values take
 * 24 + 405 + 405 = 834 bytes (trailer with one restart, two entries); "c"
 * with a 185-byte value takes 1 + 1 + 2 + 1 + 185 = 190: exactly 1024.
 * With 186 bytes it must go to the next block.
 */
static void check_boundary(const char *path, uint32_t c_len, uint64_t blocks,
                           uint32_t block0_records, uint32_t block0_used,
                           const char *block1_first) {
    static uint8_t val[675];
    memset(val, 'v', sizeof val);
    trecs s = {0};
    t_add(&s, (const uint8_t *)"a", 1, val, 400);
    t_add(&s, (const uint8_t *)"b", 1, val, 400);
    t_add(&s, (const uint8_t *)"c", 1, val, c_len);
    t_add(&s, (const uint8_t *)"d", 1, val, 10);
    sp_error err = {0};
    table_stats st;
    assert_int_equal(t_write(path, 1024, 512, 675, &s, &st, &err), 0);
    assert_int_equal(st.data_blocks, blocks);
    sst_reader *r = sst_reader_open(path, &err);
    assert_non_null(r);
    uint32_t n, used, flen;
    uint8_t first[SP_MAX_KEY_BYTES];
    block_shape(r, 0, &n, &used, first, &flen);
    assert_int_equal(n, block0_records);
    assert_int_equal(used, block0_used);
    block_shape(r, 1, &n, &used, first, &flen);
    assert_int_equal(flen, 1);
    assert_memory_equal(first, block1_first, 1);
    check_lookups(r, &s);
    check_scan(r, &s);
    sst_reader_close(r);
    t_free(&s);
}

static void test_record_exactly_filling_a_block(void **state) {
    fixture *f = *state;
    check_boundary(f->path, 185, 2, 3, 1024, "d");
}

static void test_one_byte_too_many_goes_to_next_block(void **state) {
    fixture *f = *state;
    check_boundary(f->path, 186, 2, 2, 834, "c");
}

/* Maximal keys with maximal values at the smallest block sizes that fit. */
static void test_max_key_and_value_at_smallest_block(void **state) {
    fixture *f = *state;
    const uint32_t cases[][2] = {{512, 163}, {1024, 675}, {2048, 1024}};
    for (size_t c = 0; c < 3; c++) {
        uint32_t bs = cases[c][0], mvb = cases[c][1];
        sp_error err = {0};
        assert_int_equal(sst_check_fit(bs / 2, mvb, &err), -1);
        trecs s = {0};
        uint8_t key[SP_MAX_KEY_BYTES], *val = malloc(mvb);
        for (int i = 0; i < 20; i++) {
            memset(key, 'T', sizeof key);
            key[0] = (uint8_t)('A' + i); /* no shared prefix: every entry is full size */
            memset(val, 'a' + i, mvb);
            t_add(&s, key, sizeof key, val, mvb);
        }
        free(val);
        table_stats st;
        assert_int_equal(t_write(f->path, bs, 4096, mvb, &s, &st, &err), 0);
        assert_int_equal(st.data_blocks, 20);
        sst_reader *r = sst_reader_open(f->path, &err);
        assert_non_null(r);
        uint32_t n, used, flen;
        uint8_t first[SP_MAX_KEY_BYTES];
        block_shape(r, 7, &n, &used, first, &flen);
        assert_int_equal(n, 1);
        if (bs == 1024)
            assert_int_equal(used, 1024);
        check_lookups(r, &s);
        sst_reader_close(r);
        t_free(&s);
    }
}

static table_writer *writer_for(const char *path, uint32_t bs, uint32_t cs, uint32_t mvb) {
    table_options o = {.block_size = bs, .cluster_size = cs, .max_value_bytes = mvb};
    sp_error err = {0};
    table_writer *w = table_writer_init(path, &o, &err);
    if (!w)
        fail_msg("%s", err.msg);
    return w;
}

static int add(table_writer *w, const char *k, const char *v, sp_error *err) {
    sp_record rec = {.key = (const uint8_t *)k,
                     .key_len = (uint32_t)strlen(k),
                     .value = (const uint8_t *)v,
                     .value_len = strlen(v),
                     .value_fd = -1};
    return table_writer_add(w, &rec, err);
}

static void test_key_order_violation(void **state) {
    fixture *f = *state;
    table_writer *w = writer_for(f->path, 8192, 4096, 1024);
    sp_error err = {0};
    assert_int_equal(add(w, "apple", "1", &err), 0);
    assert_int_equal(add(w, "banana", "2", &err), 0);
    assert_int_equal(add(w, "aardvark", "3", &err), -1);
    assert_non_null(strstr(err.msg, f->path));
    assert_non_null(strstr(err.msg, "record 3"));
    assert_non_null(strstr(err.msg, "\"aardvark\""));
    assert_non_null(strstr(err.msg, "\"banana\""));
    table_writer_destroy(w);
    assert_int_equal(test_dir_entries(f->dir), 0);

    w = writer_for(f->path, 8192, 4096, 1024);
    sp_error_clear(&err);
    assert_int_equal(add(w, "same", "1", &err), 0);
    assert_int_equal(add(w, "same", "2", &err), -1);
    assert_non_null(strstr(err.msg, "record 2"));
    table_writer_destroy(w);
    assert_int_equal(test_dir_entries(f->dir), 0);
}

static void test_bad_records_refused(void **state) {
    fixture *f = *state;
    table_writer *w = writer_for(f->path, 8192, 4096, 10);
    sp_error err = {0};
    assert_int_equal(add(w, "", "x", &err), -1);
    assert_non_null(strstr(err.msg, "record 1: key of 0 bytes"));
    sp_error_clear(&err);
    char long_key[SP_MAX_KEY_BYTES + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[SP_MAX_KEY_BYTES + 1] = 0;
    assert_int_equal(add(w, long_key, "x", &err), -1);
    assert_non_null(strstr(err.msg, "key of 321 bytes"));
    sp_error_clear(&err);
    assert_int_equal(add(w, "k", "eleven char", &err), -1);
    assert_non_null(strstr(err.msg, "value of 11 bytes exceeds the bound of 10"));
    table_writer_destroy(w);
    assert_int_equal(test_dir_entries(f->dir), 0);
}

static void test_bad_options_refused_before_creating(void **state) {
    fixture *f = *state;
    const struct {
        uint32_t bs, cs, mvb;
        const char *msg;
    } cases[] = {
        {1000, 4096, 10, "block size 1000 must be a power of two from 512 to 1M"},
        {256, 4096, 10, "block size 256"},
        {2u << 20, 4096, 10, "block size 2097152"},
        {8192, 256, 10, "cluster size 256 must be a power of two from 512 to 1G"},
        {8192, 3000, 10, "cluster size 3000"},
        {8192, 1u << 31, 10, "cluster size 2147483648"},
        {1024, 4096, 1024, "the smallest block size that fits it is 2K"},
        {8192, 4096, 1u << 20, "no block size"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        table_options o = {.block_size = cases[i].bs,
                           .cluster_size = cases[i].cs,
                           .max_value_bytes = cases[i].mvb};
        sp_error err = {0};
        assert_null(table_writer_init(f->path, &o, &err));
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].msg);
        assert_int_equal(test_dir_entries(f->dir), 0);
    }
    table_options d;
    table_options_init(&d);
    assert_int_equal(d.block_size, 8192);
    assert_int_equal(d.cluster_size, 4096);
}

static void test_unfinished_writer_leaves_old_file(void **state) {
    fixture *f = *state;
    assert_int_equal(t_write_file(f->path, (const uint8_t *)"old", 3), 0);
    table_writer *w = writer_for(f->path, 1024, 512, 400);
    sp_error err = {0};
    char key[16];
    static char val[401];
    memset(val, 'v', 400);
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "k%04d", i);
        assert_int_equal(add(w, key, val, &err), 0);
    }
    /* The new table has no name until it is committed (O_TMPFILE). */
    assert_int_equal(test_dir_entries(f->dir), 1);
    table_writer_destroy(w);
    assert_int_equal(test_dir_entries(f->dir), 1);
    size_t n;
    uint8_t *b = t_read_file(f->path, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(b, "old", 3);
    free(b);
}

static void test_deterministic_bytes(void **state) {
    fixture *f = *state;
    trecs s = t_random(77, 2000, 1024);
    char *other = t_path(f->dir, "u.sst");
    sp_error err = {0};
    assert_int_equal(t_write(f->path, 4096, 4096, 1024, &s, NULL, &err), 0);
    assert_int_equal(t_write(other, 4096, 4096, 1024, &s, NULL, &err), 0);
    size_t n1, n2;
    uint8_t *a = t_read_file(f->path, &n1), *b = t_read_file(other, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
    free(other);
    t_free(&s);
}

static void test_sink_feeds_writer(void **state) {
    fixture *f = *state;
    table_writer *w = writer_for(f->path, 8192, 4096, 1024);
    sp_sink sink = table_writer_sink(w);
    sp_error err = {0};
    sp_record rec = {.key = (const uint8_t *)"k",
                     .key_len = 1,
                     .value = (const uint8_t *)"v",
                     .value_len = 1,
                     .value_fd = -1};
    assert_int_equal(sp_sink_put(&sink, &rec, &err), 0);
    assert_int_equal(table_writer_finish(w, &err), 0);
    assert_int_equal(table_writer_stats(w)->records, 1);
    table_writer_destroy(w);
    sst_reader *r = sst_reader_open(f->path, &err);
    const void *v;
    size_t vlen;
    assert_int_equal(sst_reader_get(r, (const uint8_t *)"k", 1, &v, &vlen, &err), 1);
    assert_int_equal(vlen, 1);
    assert_int_equal(((const uint8_t *)v)[0], 'v');
    sst_reader_close(r);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_random_sets_agree),
        T(test_empty_table),
        T(test_one_record),
        T(test_mapped_lookups_from_threads),
        T(test_record_exactly_filling_a_block),
        T(test_one_byte_too_many_goes_to_next_block),
        T(test_max_key_and_value_at_smallest_block),
        T(test_key_order_violation),
        T(test_bad_records_refused),
        T(test_bad_options_refused_before_creating),
        T(test_unfinished_writer_leaves_old_file),
        T(test_deterministic_bytes),
        T(test_sink_feeds_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
