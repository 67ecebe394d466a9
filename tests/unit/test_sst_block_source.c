/*
 * test_sst_block_source.c: the block source (block_source.h) gives every
 * reader the bytes the file holds, whichever way it reads them: one pread
 * per block (one read call), a batch through io_uring in any order, a ring
 * kept full with tagged reads, and the sequential reader, whose reads grow
 * from one block to its bound and hold their blocks until another is asked
 * for. Its check names the block and its offset, and finds a flipped byte
 * by the checksum and a block the index does not name by its first key.
 */
#include "stages/sst/table_reader.h"
#include "stages/sst/table_writer.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define BS 1024u
#define CS 4096u

typedef struct fixture {
    char *dir;
    char *path;
    uint8_t *bytes; /* the file, as written */
    size_t len;
    sst_reader *r;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || !(f->dir = test_dir_make("sst-source")))
        return -1;
    f->path = t_path(f->dir, "t.sst");
    trecs s = t_random(7, 3000, 200);
    table_stats stats;
    sp_error err = {0};
    int rc = t_write(f->path, BS, CS, 200, &s, &stats, &err);
    t_free(&s);
    if (rc || !(f->bytes = t_read_file(f->path, &f->len)) ||
        !(f->r = sst_reader_open(f->path, &err)))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    sst_reader_close(f->r);
    test_dir_remove(f->dir);
    free(f->bytes);
    free(f->path);
    free(f);
    return 0;
}

static uint8_t *block_buf(size_t n) {
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 4096, n), 0);
    return p;
}

static void assert_block(const fixture *f, uint64_t i, const uint8_t *data) {
    assert_memory_equal(data, f->bytes + i * BS, BS);
}

/* Block i, read alone with one read call, and checked against the index. */
static void test_single_reads(void **state) {
    fixture *f = *state;
    const sst_blocks *b = sst_reader_blocks(f->r);
    assert_true(b->count > 20);
    uint8_t *buf = block_buf(BS);
    sp_error err = {0};
    for (uint64_t i = 0; i < b->count; i++) {
        uint32_t calls = 0;
        assert_int_equal(sst_blocks_read(b, i, buf, &calls, &err), 0);
        assert_int_equal(calls, 1);
        assert_block(f, i, buf);
        uint32_t flen = 0;
        const uint8_t *first = sst_reader_block_first_key(f->r, i, &flen);
        block_view v;
        assert_int_equal(sst_blocks_check(b, i, buf, first, flen, NULL, &v, &err), 0);
    }
    sp_error_clear(&err);
    assert_int_equal(sst_blocks_read(b, b->count, buf, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "does not exist"));
    free(buf);
}

/* Every block in one batch, last first: each lands in its own buffer. */
static void test_batch(void **state) {
    fixture *f = *state;
    const sst_blocks *b = sst_reader_blocks(f->r);
    size_t n = (size_t)b->count;
    uint8_t *bufs = block_buf(n * BS);
    sst_block_req *req = calloc(n, sizeof *req);
    for (size_t j = 0; j < n; j++)
        req[j] = (sst_block_req){.b = b, .i = n - 1 - j, .buf = bufs + j * BS};
    sp_error err = {0};
    assert_int_equal(sst_blocks_read_batch(req, n, &err), 0);
    for (size_t j = 0; j < n; j++)
        assert_block(f, n - 1 - j, bufs + j * BS);
    memset(bufs, 0, BS);
    assert_int_equal(sst_blocks_read_batch(req, 1, &err), 0);
    assert_block(f, n - 1, bufs);
    free(req);
    free(bufs);
}

/* A ring of depth 4 kept full: every tag comes back once, with its block. */
static void test_ring(void **state) {
    fixture *f = *state;
    const sst_blocks *b = sst_reader_blocks(f->r);
    sp_error err = {0};
    sst_block_ring *q = sst_block_ring_new(4, &err);
    if (!q)
        skip(); /* the kernel refuses io_uring here */
    size_t n = (size_t)b->count;
    uint8_t *bufs = block_buf(n * BS);
    bool *seen = calloc(n, sizeof *seen);
    size_t next = 0, done = 0;
    for (;;) {
        while (next < n && sst_block_ring_add(q, b, next, bufs + next * BS, next))
            next++;
        uint64_t tag;
        int res;
        int rc = sst_block_ring_next(q, &tag, &res, &err);
        assert_true(rc >= 0);
        if (rc == 0)
            break;
        assert_true(tag < n && !seen[tag]);
        seen[tag] = true;
        assert_int_equal(sst_blocks_read_result(b, tag, res, &err), 0);
        assert_block(f, tag, bufs + tag * BS);
        done++;
    }
    assert_int_equal(done, n);
    sp_error_clear(&err);
    assert_int_equal(sst_blocks_read_result(b, 5, 100, &err), -1);
    assert_non_null(strstr(err.msg, "short read of block 5"));
    sst_block_ring_free(q);
    free(seen);
    free(bufs);
}

/* The sequential reader: reads of 1, 2, 4, 8, 8, ... blocks (fewer at the
 * end), each block's bytes right, and a held block not read again. */
static void test_sequential(void **state) {
    fixture *f = *state;
    const sst_blocks *b = sst_reader_blocks(f->r);
    sst_block_seq s;
    sst_block_seq_init(&s, b, 1, 8);
    sp_error err = {0};
    uint64_t want_first = 0, want_n = 1;
    for (uint64_t i = 0; i < b->count; i++) {
        bool held = sst_block_seq_holds(&s, i);
        const uint8_t *data = sst_block_seq_at(&s, i, &err);
        assert_non_null(data);
        assert_block(f, i, data);
        if (!held) {
            if (want_n > b->count - i)
                want_n = b->count - i;
            assert_int_equal(i, want_first);
            assert_int_equal(s.first, i);
            assert_int_equal(s.n, want_n);
            want_first = i + want_n;
            want_n = want_n * 2 > 8 ? 8 : want_n * 2;
        }
    }
    /* Back to a block held: the same bytes, no read. */
    uint64_t first = s.first;
    assert_non_null(sst_block_seq_at(&s, first, &err));
    assert_int_equal(s.first, first);
    sst_block_seq_free(&s);
}

/* A flipped byte in block 2 is its checksum; a block under another's index
 * key is its first key; both name the block and its offset. */
static void test_check_names_the_block(void **state) {
    fixture *f = *state;
    const sst_blocks *b = sst_reader_blocks(f->r);
    uint8_t *buf = block_buf(BS);
    memcpy(buf, f->bytes + 2 * BS, BS);
    buf[20] ^= 0x04;
    uint32_t flen = 0;
    const uint8_t *first = sst_reader_block_first_key(f->r, 2, &flen);
    block_view v;
    sp_error err = {0};
    assert_int_equal(sst_blocks_check(b, 2, buf, first, flen, NULL, &v, &err), -1);
    assert_non_null(strstr(err.msg, f->path));
    assert_non_null(strstr(err.msg, "block 2 at byte 2048"));
    assert_non_null(strstr(err.msg, "checksum mismatch"));
    memcpy(buf, f->bytes + 3 * BS, BS);
    sp_error_clear(&err);
    assert_int_equal(sst_blocks_check(b, 2, buf, first, flen, NULL, &v, &err), -1);
    assert_non_null(strstr(err.msg, "block 2 at byte 2048: first key differs from the index"));
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_single_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sequential, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_names_the_block, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
