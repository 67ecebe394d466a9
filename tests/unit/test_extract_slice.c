/*
 * test_extract_slice.c: the two pieces a cluster map task reads its part of
 * a multistream dump with. bz2_stream_find (bz2_streams.h) finds exactly
 * the stream starts of a file of many bz2 streams, from any point, across
 * its 1 MiB read windows, and none where there is none (a single stream's
 * inner block magics are not starts). A source slice (source.h) of streams
 * [i, j) decompresses to head + those streams' bytes + tail, with 1 and 4
 * threads, and a corrupt byte inside it is reported at its offset in the
 * file, not in the slice.
 */
#include "stages/extract/bz2_streams.h"
#include "stages/extract/source.h"

#include <bzlib.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define STREAMS 24

static char path[PATH_MAX];
static uint8_t *plain[STREAMS]; /* each stream's decompressed bytes */
static size_t plain_len[STREAMS];
static uint64_t starts[STREAMS + 1]; /* starts[STREAMS]: the file size */

/* Text that compresses to a few hundred KB a stream for some (two level-9
 * blocks each, so a stream holds an inner block magic), a few bytes for
 * others, so windows and streams fall every way. */
static void make_text(uint8_t *p, size_t n, unsigned seed) {
    uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)('a' + (x >> 59) % 26);
    }
}

static int setup(void **state) {
    (void)state;
    snprintf(path, sizeof path, "/tmp/test_extract_slice.%d.bz2", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    uint64_t at = 0;
    for (unsigned i = 0; i < STREAMS; i++) {
        plain_len[i] = i % 3 == 0 ? 1000000 : 1000 + 977 * i;
        plain[i] = malloc(plain_len[i]);
        make_text(plain[i], plain_len[i], i);
        unsigned cap = (unsigned)(plain_len[i] + plain_len[i] / 100 + 600);
        char *z = malloc(cap);
        if (BZ2_bzBuffToBuffCompress(z, &cap, (char *)plain[i], (unsigned)plain_len[i], 9, 0, 0))
            return -1;
        fwrite(z, 1, cap, f);
        free(z);
        starts[i] = at;
        at += cap;
    }
    starts[STREAMS] = at;
    return fclose(f);
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    for (unsigned i = 0; i < STREAMS; i++)
        free(plain[i]);
    return 0;
}

static void test_finds_every_start(void **state) {
    (void)state;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    sp_error err = {0};
    uint64_t at, from = 0;
    /* Starts in several of bz2_stream_find's 1 MiB windows. */
    assert_true(starts[STREAMS] > (3u << 20));
    for (unsigned i = 0; i < STREAMS; i++) {
        assert_int_equal(bz2_stream_find(fd, path, from, starts[STREAMS], &at, &err), 1);
        assert_int_equal(at, starts[i]);
        from = at + 1;
    }
    assert_int_equal(bz2_stream_find(fd, path, from, starts[STREAMS], &at, &err), 0);
    /* From inside a stream: the next one; a range ending before it: none. */
    for (unsigned i = 1; i < STREAMS; i++) {
        uint64_t mid = starts[i - 1] + (starts[i] - starts[i - 1]) / 2;
        assert_int_equal(bz2_stream_find(fd, path, mid, starts[STREAMS], &at, &err), 1);
        assert_int_equal(at, starts[i]);
        assert_int_equal(bz2_stream_find(fd, path, mid, starts[i], &at, &err), 0);
    }
    close(fd);
}

/* Reads all of a slice. */
static uint8_t *read_slice(const source_slice *sl, unsigned threads, size_t *len, sp_error *err) {
    source *s = source_open_with(path, &(source_options){.threads = threads, .slice = sl}, err);
    if (!s)
        return NULL;
    size_t cap = 1 << 20, got = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (got == cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = source_read(s, buf + got, cap - got, err);
        if (r < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    source_close(s);
    *len = got;
    return buf;
}

static void test_slice_is_head_streams_tail(void **state) {
    (void)state;
    static const unsigned ranges[][2] = {{0, STREAMS}, {0, 1}, {3, 4}, {5, 11}, {20, STREAMS}};
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++)
        for (unsigned threads = 1; threads <= 4; threads += 3) {
            unsigned i = ranges[k][0], j = ranges[k][1];
            source_slice sl = {.start = starts[i],
                               .length = starts[j] - starts[i],
                               .head = "<head>",
                               .head_len = 6,
                               .tail = "</tail>",
                               .tail_len = 7};
            sp_error err = {0};
            size_t len;
            uint8_t *got = read_slice(&sl, threads, &len, &err);
            assert_non_null(got);
            size_t want = 6 + 7;
            for (unsigned s = i; s < j; s++)
                want += plain_len[s];
            assert_int_equal(len, want);
            assert_memory_equal(got, "<head>", 6);
            size_t at = 6;
            for (unsigned s = i; s < j; s++) {
                assert_memory_equal(got + at, plain[s], plain_len[s]);
                at += plain_len[s];
            }
            assert_memory_equal(got + at, "</tail>", 7);
            free(got);
        }
}

static void test_corruption_named_at_file_offset(void **state) {
    (void)state;
    /* Damage a byte in the middle of stream 9, read streams [9, 12). */
    uint64_t victim = starts[9] + (starts[10] - starts[9]) / 2;
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, (off_t)victim), 1);
    uint8_t bad = b ^ 0x5a;
    assert_int_equal(pwrite(fd, &bad, 1, (off_t)victim), 1);
    source_slice sl = {.start = starts[9], .length = starts[12] - starts[9]};
    sp_error err = {0};
    size_t len;
    uint8_t *got = read_slice(&sl, 2, &len, &err);
    assert_int_equal(pwrite(fd, &b, 1, (off_t)victim), 1);
    close(fd);
    assert_null(got);
    const char *p = strstr(err.msg, "near compressed byte ");
    assert_non_null(p);
    unsigned long long near = strtoull(p + strlen("near compressed byte "), NULL, 10);
    assert_true(near >= starts[9] && near <= starts[10]);
    /* A slice outside the file is refused up front. */
    sp_error err2 = {0};
    source_slice past = {.start = starts[STREAMS] - 10, .length = 20};
    assert_null(source_open_with(path, &(source_options){.slice = &past}, &err2));
    assert_non_null(strstr(err2.msg, "not part of this file"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finds_every_start),
        cmocka_unit_test(test_slice_is_head_streams_tail),
        cmocka_unit_test(test_corruption_named_at_file_offset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
