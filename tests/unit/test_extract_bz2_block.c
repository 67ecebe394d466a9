/*
 * test_extract_bz2_block.c: unit tests of the table-driven bzip2 block
 * decoder (bz2_block.h) against libbz2: streams that libbz2 compresses at
 * levels 1, 5 and 9 (real dump text from $SSTPIPE_CORPORA, random bytes,
 * long runs, runs of exactly 4/5/259 bytes, one byte, all 256 values) are
 * cut into blocks with bz2_find_mark, each block is decoded alone from a
 * buffer ending BZ2_SLACK bytes past it (so ASan sees any over-read) and
 * run-length decoded in small and large output steps; the bytes must be
 * the input's and the CRCs the stored ones. Damaged blocks (every single
 * bit flipped, truncated, extended, randomised, too big for the level) must
 * be refused or fail their CRC.
 */
#include "stages/extract/bz2_block.h"

#include <bzlib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_bytes.h"

/* ------------------------------------------------------------ helpers */

static void bytes_fill(bytes *b, uint8_t c, size_t n) {
    uint8_t run[4096];
    memset(run, c, sizeof run);
    for (size_t k; n > 0; n -= k)
        bytes_add(b, run, k = n < sizeof run ? n : sizeof run);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static bytes compress(const bytes *in, int level) {
    unsigned cap = (unsigned)(in->len + in->len / 50 + 1000);
    bytes out = {.p = malloc(cap), .cap = cap};
    assert_non_null(out.p);
    assert_int_equal(BZ2_bzBuffToBuffCompress((char *)out.p, &cap, (char *)in->p, (unsigned)in->len,
                                              level, 0, 0),
                     BZ_OK);
    out.len = cap;
    return out;
}

/* The block bits [bit, end_bit) of a stream, alone in a buffer that ends
 * BZ2_SLACK bytes after the block's last byte; *shift is where they start. */
static uint8_t *cut_block(const bytes *z, uint64_t bit, uint64_t end_bit, uint64_t *shift) {
    size_t first = bit / 8, len = end_bit / 8 + 1 - first;
    uint8_t *p = calloc(1, len + BZ2_SLACK);
    assert_non_null(p);
    size_t have = z->len - first < len + BZ2_SLACK ? z->len - first : len + BZ2_SLACK;
    memcpy(p, z->p + first, have);
    *shift = 8 * first;
    return p;
}

/* Run-length decodes pre in output steps of `step` bytes onto out and
 * returns the CRC; *complete (when not NULL) says whether pre ended
 * properly. */
static uint32_t unrle_all_ends(const uint8_t *pre, size_t len, size_t step, bytes *out,
                               bool *complete) {
    uint8_t *buf = malloc(step);
    assert_non_null(buf);
    bz2_unrle u;
    bz2_unrle_init(&u, pre, len);
    while (!bz2_unrle_done(&u)) {
        size_t n = bz2_unrle_run(&u, buf, step);
        assert_true(n == step || bz2_unrle_done(&u));
        bytes_add(out, buf, n);
    }
    assert_int_equal(bz2_unrle_run(&u, buf, step), 0);
    free(buf);
    if (complete)
        *complete = bz2_unrle_complete(&u);
    else
        assert_true(bz2_unrle_complete(&u));
    return bz2_unrle_crc(&u);
}

static uint32_t unrle_all(const uint8_t *pre, size_t len, size_t step, bytes *out) {
    return unrle_all_ends(pre, len, step, out, NULL);
}

typedef struct block_span {
    uint64_t bit, end_bit;
} block_span;

/* The blocks of a one-stream file; *n_out of them. */
static block_span *find_blocks(const bytes *z, size_t *n_out) {
    size_t n = 0, cap = 16;
    block_span *spans = malloc(cap * sizeof *spans);
    assert_non_null(spans);
    uint64_t at, next, end = 8 * (uint64_t)z->len;
    bz2_mark m = bz2_find_mark(z->p, 32, end, &at);
    while (m == BZ2_MARK_BLOCK) {
        m = bz2_find_mark(z->p, at + BZ2_MAGIC_BITS, end, &next);
        assert_int_not_equal(m, BZ2_MARK_NONE);
        if (n == cap)
            spans = realloc(spans, (cap *= 2) * sizeof *spans);
        assert_non_null(spans);
        spans[n++] = (block_span){at, next};
        at = next;
    }
    assert_int_equal(m, BZ2_MARK_EOS);
    *n_out = n;
    return spans;
}

/* Compresses data at level, decodes every block alone and run-length
 * decodes it in output steps of each of steps[0..nsteps), and checks the
 * bytes and every block CRC for each step, and the stream CRC. */
static void check_roundtrip_steps(const bytes *data, int level, const size_t *steps,
                                  size_t nsteps) {
    bz2_block *b = bz2_block_new();
    assert_non_null(b);
    uint8_t *pre = malloc(BZ2_BLOCK_MAX(level));
    assert_non_null(pre);
    bytes z = compress(data, level);
    size_t nblocks;
    block_span *spans = find_blocks(&z, &nblocks);
    assert_true(nblocks >= 1);
    bytes *out = calloc(nsteps, sizeof *out);
    assert_non_null(out);
    uint32_t combined = 0;
    for (size_t i = 0; i < nblocks; i++) {
        uint64_t shift;
        uint8_t *buf = cut_block(&z, spans[i].bit, spans[i].end_bit, &shift);
        size_t pre_len = 0;
        uint32_t stored = 0;
        assert_int_equal(bz2_block_decode(b, buf, spans[i].bit - shift, spans[i].end_bit - shift,
                                          level, pre, &pre_len, &stored),
                         BZ2_BLOCK_OK);
        assert_true(pre_len >= 1 && pre_len <= BZ2_BLOCK_MAX(level));
        for (size_t s = 0; s < nsteps; s++)
            assert_int_equal(unrle_all(pre, pre_len, steps[s], &out[s]), stored);
        combined = (combined << 1 | combined >> 31) ^ stored;
        free(buf);
    }
    /* The stream CRC follows the end-of-stream magic. */
    uint64_t eos = spans[nblocks - 1].end_bit + BZ2_MAGIC_BITS;
    assert_int_equal(bz2_bits_get(z.p, eos, 32), combined);
    for (size_t s = 0; s < nsteps; s++) {
        assert_int_equal(out[s].len, data->len);
        assert_memory_equal(out[s].p, data->p, data->len);
        free(out[s].p);
    }
    free(out);
    free(spans);
    free(z.p);
    free(pre);
    bz2_block_free(b);
}

static void check_roundtrip(const bytes *data, int level, size_t step) {
    check_roundtrip_steps(data, level, &step, 1);
}

/* Every level, and output steps of 1, 7, 4096 and 4 MiB bytes: the block
 * is compressed and decoded once a level, its run-length stage run once a
 * step. */
static void check_all_levels(const bytes *data) {
    static const int levels[] = {1, 5, 9};
    static const size_t steps[] = {4096, 1 << 22, 1, 7};
    /* Byte-at-a-time output only over small inputs: it is slow. */
    size_t nsteps = data->len > (1u << 20) ? 2 : 4;
    for (size_t l = 0; l < 3; l++)
        check_roundtrip_steps(data, levels[l], steps, nsteps);
}

/* ------------------------------------------------------------ data */

/* Decompressed text of a corpus file (at most max bytes), or false when the
 * corpora are missing. */
static bool corpus_text(const char *name, size_t max, bytes *out) {
    const char *dir = getenv("SSTPIPE_CORPORA");
    if (!dir)
        return false;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    int err;
    BZFILE *bz = BZ2_bzReadOpen(&err, f, 0, 0, NULL, 0);
    assert_int_equal(err, BZ_OK);
    uint8_t buf[65536];
    while (out->len < max) {
        int n = BZ2_bzRead(&err, bz, buf, sizeof buf);
        assert_true(err == BZ_OK || err == BZ_STREAM_END);
        bytes_add(out, buf, out->len + (size_t)n > max ? max - out->len : (size_t)n);
        if (err == BZ_STREAM_END)
            break;
    }
    BZ2_bzReadClose(&err, bz);
    fclose(f);
    return true;
}

static void test_corpus_text(void **state) {
    (void)state;
    bytes text = {0};
    /* A missing corpus is a failure, not a skip that would count as a pass. */
    if (!corpus_text("enwiki-206pages.xml.bz2", 2500000, &text))
        fail_msg("enwiki-206pages.xml.bz2 not found under $SSTPIPE_CORPORA");
    assert_int_equal(text.len, 2500000);
    check_all_levels(&text);
    free(text.p);
    bytes simple = {0};
    assert_true(corpus_text("simplewiki-7pages.xml.bz2", SIZE_MAX, &simple));
    check_all_levels(&simple);
    free(simple.p);
}

static void test_random_bytes(void **state) {
    (void)state;
    bytes d = {0};
    for (int i = 0; i < 300000 / 8; i++) {
        uint64_t v = rng();
        bytes_add(&d, &v, sizeof v);
    }
    check_all_levels(&d);
    /* Few distinct values: many runs of RUNA/RUNB and short MTF indexes. */
    d.len = 0;
    for (int i = 0; i < 500000; i++)
        bytes_fill(&d, (uint8_t)('a' + (rng() % 3 ? 0 : rng() % 4)), 1);
    check_all_levels(&d);
    free(d.p);
}

static void test_long_run(void **state) {
    (void)state;
    bytes d = {0};
    bytes_fill(&d, 'x', 1u << 20);
    check_all_levels(&d);
    /* A run long enough that one block expands to over 40 MB. */
    bytes_fill(&d, 0, 44u << 20);
    check_roundtrip(&d, 9, 1 << 22);
    free(d.p);
}

static void test_exact_runs(void **state) {
    (void)state;
    /* Runs of 4 (count byte 0), 5 (1), 259 (255, the most one count
     * holds), 260 (a new run starts) and a trailing run of 4. */
    bytes d = {0};
    static const size_t runs[] = {1, 2, 3, 4, 5, 259, 260, 4, 3, 518, 4};
    for (int rep = 0; rep < 3; rep++)
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
            bytes_fill(&d, (uint8_t)('A' + i % 5), runs[i]);
    check_all_levels(&d);
    free(d.p);
}

static void test_tiny_inputs(void **state) {
    (void)state;
    bytes d = {0};
    bytes_fill(&d, 'q', 1);
    check_all_levels(&d);
    d.len = 0;
    for (int c = 0; c < 256; c++)
        bytes_fill(&d, (uint8_t)c, 1);
    check_all_levels(&d);
    for (int c = 255; c >= 0; c--)
        bytes_fill(&d, (uint8_t)c, (size_t)c % 7 + 1);
    check_all_levels(&d);
    /* Periodic: the BWT's rows form several cycles. */
    d.len = 0;
    for (int i = 0; i < 1000; i++)
        bytes_add(&d, "ab", 2);
    check_all_levels(&d);
    free(d.p);
}

/* Trailing runs of exactly 4 with no count byte (written, but reported as
 * incomplete), and count bytes split across output steps, in pre bytes
 * made up directly. */
static void test_unrle_edges(void **state) {
    (void)state;
    static const struct {
        const char *pre;
        size_t len;
        const char *want;
        bool complete;
    } cases[] = {
        {"aaaa", 4, "aaaa", false},
        {"aaaa\0", 5, "aaaa", true},
        {"aaaa\2b", 6, "aaaaaab", true},
        {"aaaa\1aaaa", 9, "aaaaaaaaa", false},
        {"aaaa\1aaaa\0", 10, "aaaaaaaaa", true},
        {"aaab", 4, "aaab", true},
        {"", 0, "", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t step = 1; step <= 8; step++) {
            bytes out = {0};
            bool complete;
            unrle_all_ends((const uint8_t *)cases[i].pre, cases[i].len, step, &out, &complete);
            assert_int_equal(complete, cases[i].complete);
            assert_int_equal(out.len, strlen(cases[i].want));
            if (out.len)
                assert_memory_equal(out.p, cases[i].want, out.len);
            free(out.p);
        }
    }
    /* The CRC of "123456789" (CRC-32/BZIP2 check value) and of nothing. */
    bytes out = {0};
    assert_int_equal(unrle_all((const uint8_t *)"123456789", 9, 4, &out), 0xFC891918u);
    assert_int_equal(unrle_all(NULL, 0, 4, &out), 0);
    free(out.p);
}

/* ------------------------------------------------------------ damage */

typedef struct one_block {
    bytes data, z;
    block_span span;
} one_block;

static one_block one_block_make(size_t text_len, int level) {
    one_block o = {0};
    static const char *words[] = {"page ", "title ", "&amp; ", "[[a]] ", "zzzz", "\n"};
    while (o.data.len < text_len) {
        const char *w = words[rng() % 6];
        bytes_add(&o.data, w, strlen(w));
    }
    o.z = compress(&o.data, level);
    size_t n;
    block_span *s = find_blocks(&o.z, &n);
    assert_int_equal(n, 1);
    o.span = s[0];
    free(s);
    return o;
}

/* Decodes bits [bit, end_bit) of p (with BZ2_SLACK readable bytes past
 * end_bit / 8) and reports whether it gave want's bytes with a CRC that
 * matches the stored one. */
static bz2_block_status decode_check(bz2_block *b, const uint8_t *p, uint64_t bit, uint64_t end_bit,
                                     int level, const bytes *want, bool *good) {
    uint8_t *pre = malloc(BZ2_BLOCK_MAX(level));
    assert_non_null(pre);
    size_t pre_len = 0;
    uint32_t stored = 0;
    bz2_block_status st = bz2_block_decode(b, p, bit, end_bit, level, pre, &pre_len, &stored);
    *good = false;
    if (st == BZ2_BLOCK_OK) {
        assert_true(pre_len <= BZ2_BLOCK_MAX(level));
        bytes out = {0};
        uint32_t crc = unrle_all(pre, pre_len, 1 << 16, &out);
        *good = crc == stored && out.len == want->len && !memcmp(out.p, want->p, out.len);
        /* A CRC that matches the stored one on other bytes would be a
         * collision, not a decoder property. */
        if (crc == stored)
            assert_true(*good);
        free(out.p);
    }
    free(pre);
    return st;
}

static void test_bit_flips(void **state) {
    (void)state;
    bz2_block *b = bz2_block_new();
    assert_non_null(b);
    one_block o = one_block_make(3000, 1);
    uint64_t shift;
    uint8_t *buf = cut_block(&o.z, o.span.bit, o.span.end_bit, &shift);
    uint64_t bit = o.span.bit - shift, end = o.span.end_bit - shift;
    bool good;
    assert_int_equal(decode_check(b, buf, bit, end, 1, &o.data, &good), BZ2_BLOCK_OK);
    assert_true(good);
    /* Every single-bit flip is refused or fails its CRC, except the
     * randomised bit and a few in the code lengths of a table that no
     * selector picks (which libbz2 ignores as well). */
    size_t refused = 0, crc_failed = 0, unchanged = 0;
    for (uint64_t i = bit; i < end; i++) {
        buf[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
        bz2_block_status st = decode_check(b, buf, bit, end, 1, &o.data, &good);
        buf[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
        if (i == bit + 80) {
            assert_int_equal(st, BZ2_BLOCK_RANDOMISED);
            continue;
        }
        if (good)
            unchanged++;
        else if (st == BZ2_BLOCK_BAD)
            refused++;
        else
            crc_failed++;
    }
    assert_true(refused > 0 && crc_failed > 0);
    assert_true(unchanged < (end - bit) / 50);

    /* Ending anywhere else: too early, or with extra bits after the end. */
    for (uint64_t e = bit; e < end + 64; e += e + 200 < end ? 37 : 1) {
        if (e == end)
            continue;
        uint8_t *p = cut_block(&o.z, o.span.bit, o.span.bit + (e - bit), &shift);
        assert_int_equal(decode_check(b, p, bit, e, 1, &o.data, &good), BZ2_BLOCK_BAD);
        free(p);
    }
    /* Bad levels. */
    assert_int_equal(decode_check(b, buf, bit, end, 0, &o.data, &good), BZ2_BLOCK_BAD);
    assert_int_equal(decode_check(b, buf, bit, end, 10, &o.data, &good), BZ2_BLOCK_BAD);
    free(buf);
    free(o.data.p);
    free(o.z.p);
    bz2_block_free(b);
}

static void test_random_damage(void **state) {
    (void)state;
    bz2_block *b = bz2_block_new();
    assert_non_null(b);
    one_block o = one_block_make(600000, 9);
    uint64_t shift;
    uint8_t *buf = cut_block(&o.z, o.span.bit, o.span.end_bit, &shift);
    uint64_t bit = o.span.bit - shift, end = o.span.end_bit - shift;
    bool good;
    for (int i = 0; i < 300; i++) {
        /* A few random bits at once, anywhere but the randomised bit. */
        uint64_t at[3];
        for (int k = 0; k < 3; k++) {
            do
                at[k] = bit + rng() % (end - bit);
            while (at[k] == bit + 80);
            buf[at[k] / 8] ^= (uint8_t)(0x80 >> (at[k] % 8));
        }
        decode_check(b, buf, bit, end, 9, &o.data, &good);
        for (int k = 2; k >= 0; k--)
            buf[at[k] / 8] ^= (uint8_t)(0x80 >> (at[k] % 8));
        assert_false(good);
    }
    /* Too many bytes for a smaller level. */
    assert_int_equal(decode_check(b, buf, bit, end, 5, &o.data, &good), BZ2_BLOCK_BAD);
    assert_int_equal(decode_check(b, buf, bit, end, 9, &o.data, &good), BZ2_BLOCK_OK);
    assert_true(good);
    /* Garbage instead of a block. */
    for (uint64_t i = bit + 48; i < end; i++)
        if (rng() & 1)
            buf[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
    assert_int_not_equal(decode_check(b, buf, bit, end, 9, &o.data, &good), BZ2_BLOCK_OK);
    free(buf);
    free(o.data.p);
    free(o.z.p);
    bz2_block_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_text), cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_long_run),    cmocka_unit_test(test_exact_runs),
        cmocka_unit_test(test_tiny_inputs), cmocka_unit_test(test_unrle_edges),
        cmocka_unit_test(test_bit_flips),   cmocka_unit_test(test_random_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
