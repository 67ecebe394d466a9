/*
 * test_extract_bz2.c: unit tests of the parallel bz2 decoder behind
 * source.h (bz2_scan, bz2_reader) and of the zlib gzip path: output
 * byte-identical to what libbz2 compressed (generated files) or to what
 * single-threaded libbz2 decodes (the corpora) for 1, 2 and 4 threads on
 * generated files (many blocks at levels 1 and 9, many streams, one block,
 * empty streams, a block that expands past the per-block output buffer, a
 * block with a block magic inside its own header) and on the real corpora
 * ($SSTPIPE_CORPORA); every kind of damage reported with its offset.
 */
#include "stages/extract/bz2_scan.h"
#include "stages/extract/source.h"

#include <bzlib.h>
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "test_bytes.h"
#include "test_dir.h"

static char *tmpdir;
static const unsigned thread_counts[] = {1, 2, 4};

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Varied data: XML-like text, incompressible bytes, short repeats, and a
 * run long enough that one block decodes to more than the decoder's
 * per-block buffer. */
static void varied_data(bytes *b, size_t text_bytes) {
    static const char *words[] = {"the",  "page", "<title>",  "</text>",  "Wikipedia", "&amp;",
                                  "1984", "über", "[[link]]", "{{cite}}", "\n",        "  "};
    while (b->len < text_bytes / 2) {
        const char *w = words[rng() % (sizeof words / sizeof words[0])];
        bytes_add(b, w, strlen(w));
        bytes_add(b, " ", 1);
    }
    for (int i = 0; i < 1 << 18; i++) {
        uint64_t v = rng();
        bytes_add(b, &v, sizeof v);
    }
    size_t run = 10u << 20;
    uint8_t *zeros = calloc(1, run);
    assert_non_null(zeros);
    bytes_add(b, zeros, run);
    free(zeros);
    for (int i = 0; i < 20000; i++)
        bytes_add(b, "abcabcabd", 9);
    while (b->len < text_bytes + run) {
        const char *w = words[rng() % (sizeof words / sizeof words[0])];
        bytes_add(b, w, strlen(w));
    }
}

static void compress_stream(bytes *out, const uint8_t *p, size_t n, int level) {
    unsigned cap = (unsigned)(n + n / 50 + 1000);
    char *buf = malloc(cap);
    assert_non_null(buf);
    assert_int_equal(BZ2_bzBuffToBuffCompress(buf, &cap, (char *)p, (unsigned)n, level, 0, 0),
                     BZ_OK);
    bytes_add(out, buf, cap);
    free(buf);
}

/* Single-threaded libbz2, stream after stream: the reference output. */
static void libbz2_decode(const bytes *in, bytes *out) {
    bz_stream z;
    size_t pos = 0;
    char buf[1 << 16];
    while (pos < in->len) {
        memset(&z, 0, sizeof z);
        assert_int_equal(BZ2_bzDecompressInit(&z, 0, 0), BZ_OK);
        z.next_in = (char *)in->p + pos;
        z.avail_in = (unsigned)(in->len - pos);
        int rc;
        do {
            z.next_out = buf;
            z.avail_out = sizeof buf;
            rc = BZ2_bzDecompress(&z);
            assert_true(rc == BZ_OK || rc == BZ_STREAM_END);
            bytes_add(out, buf, sizeof buf - z.avail_out);
        } while (rc != BZ_STREAM_END);
        pos = in->len - z.avail_in;
        BZ2_bzDecompressEnd(&z);
    }
}

static void tmp_path(char *out, const char *name) {
    assert_true(snprintf(out, PATH_MAX, "%s/%s", tmpdir, name) < PATH_MAX);
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void read_file(const char *path, bytes *b) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;)
        bytes_add(b, buf, n);
    fclose(f);
}

/* Decodes path through source.h; returns 0, or -1 with the error in err. */
static int decode_file(const char *path, unsigned threads, bytes *out, sp_error *err) {
    source_options opts;
    source_options_init(&opts);
    opts.threads = threads;
    sp_error_clear(err);
    source *s = source_open_with(path, &opts, err);
    if (!s)
        return -1;
    uint8_t buf[100000]; /* not a divisor of block outputs */
    ssize_t n;
    while ((n = source_read(s, buf, sizeof buf, err)) > 0)
        bytes_add(out, buf, (size_t)n);
    if (n == 0) {
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        assert_int_equal(source_offset(s), (uint64_t)ftell(f));
        fclose(f);
    }
    source_close(s);
    return n < 0 ? -1 : 0;
}

/* Writes data to a file and checks that every thread count decodes it to
 * exactly want, the bytes libbz2 compressed into it, or (want NULL) what
 * single-threaded libbz2 gives. */
static void check_decodes(const char *name, const bytes *data, const bytes *want) {
    char path[PATH_MAX];
    tmp_path(path, name);
    write_file(path, data->p, data->len);
    bytes ref = {0};
    if (want)
        ref = *want;
    else
        libbz2_decode(data, &ref);
    for (size_t i = 0; i < sizeof thread_counts / sizeof thread_counts[0]; i++) {
        bytes got = {0};
        sp_error err;
        if (decode_file(path, thread_counts[i], &got, &err))
            fail_msg("%s, %u threads: %s", name, thread_counts[i], err.msg);
        assert_int_equal(got.len, ref.len);
        assert_memory_equal(got.p, ref.p, ref.len);
        free(got.p);
    }
    if (!want)
        free(ref.p);
}

/* Decodes with every thread count, expecting an error containing `want`
 * whose offset lies in [lo, hi]. */
static void check_fails(const char *name, const bytes *data, const char *want, uint64_t lo,
                        uint64_t hi) {
    char path[PATH_MAX];
    tmp_path(path, name);
    write_file(path, data->p, data->len);
    for (size_t i = 0; i < sizeof thread_counts / sizeof thread_counts[0]; i++) {
        bytes got = {0};
        sp_error err;
        if (!decode_file(path, thread_counts[i], &got, &err))
            fail_msg("%s decoded, expected '%s'", name, want);
        free(got.p);
        if (!strstr(err.msg, want) || strncmp(err.msg, path, strlen(path)))
            fail_msg("%s: error '%s' lacks '%s'", name, err.msg, want);
        const char *at = strstr(err.msg, "compressed byte ");
        if (!at)
            fail_msg("no offset in '%s'", err.msg);
        unsigned long long off = strtoull(at + strlen("compressed byte "), NULL, 10);
        if (off < lo || off > hi)
            fail_msg("%s: offset %llu outside [%llu, %llu]: %s", name, off, (unsigned long long)lo,
                     (unsigned long long)hi, err.msg);
    }
}

/* Bit positions of every end-of-stream magic in a bz2 file. */
static size_t eos_marks(const bytes *b, uint64_t *at, size_t max) {
    bytes padded = {0};
    bytes_add(&padded, b->p, b->len);
    bytes_add(&padded, (uint8_t[BZ2_SLACK]){0}, BZ2_SLACK);
    size_t n = 0;
    uint64_t from = 0, bit;
    bz2_mark m;
    while ((m = bz2_find_mark(padded.p, from, 8 * (uint64_t)b->len, &bit)) != BZ2_MARK_NONE) {
        if (m == BZ2_MARK_EOS && n < max)
            at[n++] = bit;
        from = bit + 1;
    }
    free(padded.p);
    return n;
}

static int setup(void **state) {
    (void)state;
    tmpdir = test_dir_make("test_extract_bz2");
    return tmpdir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(tmpdir);
}

/* ------------------------------------------------------------ scanning */

static void test_find_mark_every_offset(void **state) {
    (void)state;
    for (unsigned k = 0; k < 80; k++) {
        for (int kind = 0; kind < 2; kind++) {
            uint8_t buf[32 + BZ2_SLACK] = {0};
            uint64_t magic = kind ? BZ2_EOS_MAGIC : BZ2_BLOCK_MAGIC;
            bz2_bits_put(buf, k, magic, BZ2_MAGIC_BITS);
            uint64_t at = 0;
            assert_int_equal(bz2_find_mark(buf, 0, 8 * 32, &at),
                             kind ? BZ2_MARK_EOS : BZ2_MARK_BLOCK);
            assert_int_equal(at, k);
            /* Past its start, or cut short by the end: not found. */
            assert_int_equal(bz2_find_mark(buf, k + 1, 8 * 32, &at), BZ2_MARK_NONE);
            assert_int_equal(bz2_find_mark(buf, 0, k + BZ2_MAGIC_BITS - 1, &at), BZ2_MARK_NONE);
            assert_int_equal(bz2_find_mark(buf, 0, k + BZ2_MAGIC_BITS, &at),
                             kind ? BZ2_MARK_EOS : BZ2_MARK_BLOCK);
        }
    }
}

static unsigned bit_at(const uint8_t *p, uint64_t bit) {
    return p[bit / 8] >> (7 - bit % 8) & 1;
}

static void test_bits_copy(void **state) {
    (void)state;
    uint8_t src[256 + BZ2_SLACK], dst[256 + BZ2_SLACK];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)rng();
    for (int trial = 0; trial < 2000; trial++) {
        uint64_t sbit = rng() % 800, dbit = rng() % 800, n = rng() % 1200;
        memset(dst, 0, sizeof dst);
        bz2_bits_copy(dst, dbit, src, sbit, n);
        for (uint64_t i = 0; i < 8 * 256; i++) {
            unsigned want = i >= dbit && i < dbit + n ? bit_at(src, sbit + i - dbit) : 0;
            if (bit_at(dst, i) != want)
                fail_msg("copy %llu bits %llu->%llu: bit %llu wrong", (unsigned long long)n,
                         (unsigned long long)sbit, (unsigned long long)dbit, (unsigned long long)i);
        }
    }
}

/* ------------------------------------------------------------ decoding */

static void test_single_stream_many_blocks(void **state) {
    (void)state;
    bytes data = {0};
    /* Over 6 MiB besides the long run: at level 1 some sixty blocks, round
     * the decoder's ring of slots (3 a thread) several times at 4 threads;
     * at level 9 blocks of the largest size. */
    varied_data(&data, 4u << 20);
    static const int levels[] = {1, 9};
    for (size_t i = 0; i < 2; i++) {
        bytes z = {0};
        compress_stream(&z, data.p, data.len, levels[i]);
        check_decodes(levels[i] == 1 ? "l1.bz2" : "l9.bz2", &z, &data);
        free(z.p);
    }
    free(data.p);
}

static void test_multistream(void **state) {
    (void)state;
    bytes data = {0};
    varied_data(&data, 2u << 20);
    /* Streams of every size from empty to several blocks, mixed levels. */
    bytes z = {0};
    size_t pos = 0;
    for (int i = 0; pos < data.len; i++) {
        size_t n = i % 7 == 3 ? 0 : rng() % (i % 5 == 0 ? 400000 : 60000);
        if (n > data.len - pos)
            n = data.len - pos;
        compress_stream(&z, data.p + pos, n, 1 + i % 9);
        pos += n;
    }
    check_decodes("multi.bz2", &z, &data);
    free(z.p);
    free(data.p);
}

static void test_one_block_and_empty(void **state) {
    (void)state;
    static const char text[] = "<mediawiki>one small block</mediawiki>\n";
    bytes z = {0}, want = {0};
    bytes_add(&want, text, sizeof text - 1);
    compress_stream(&z, (const uint8_t *)text, sizeof text - 1, 9);
    check_decodes("one.bz2", &z, &want);

    /* Empty streams around a real one change nothing. */
    bytes zz = {0};
    compress_stream(&zz, (const uint8_t *)"", 0, 9);
    bytes_add(&zz, z.p, z.len);
    compress_stream(&zz, (const uint8_t *)"", 0, 3);
    check_decodes("empties.bz2", &zz, &want);

    /* Nothing but an empty stream: empty input. */
    char path[PATH_MAX];
    tmp_path(path, "empty.bz2");
    bytes e = {0};
    compress_stream(&e, (const uint8_t *)"", 0, 9);
    write_file(path, e.p, e.len);
    bytes got = {0};
    sp_error err;
    assert_int_equal(decode_file(path, 2, &got, &err), -1);
    assert_non_null(strstr(err.msg, "empty.bz2: empty input (nothing after bzip2 decompression)"));
    free(e.p);
    free(zz.p);
    free(z.p);
    free(want.p);
}

static void test_corpora(void **state) {
    (void)state;
    const char *dir = getenv("SSTPIPE_CORPORA");
    if (!dir)
        fail_msg("SSTPIPE_CORPORA is not set");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".bz2"))
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        bytes z = {0};
        read_file(path, &z);
        check_decodes(e->d_name, &z, NULL);
        free(z.p);
        found++;
    }
    closedir(d);
    assert_true(found >= 2);
}

/* The bzip2 CRC (MSB-first CRC-32), as the block header stores it. */
static uint32_t bz_crc_update(uint32_t crc, uint8_t b) {
    crc ^= (uint32_t)b << 24;
    for (int i = 0; i < 8; i++)
        crc = crc & 0x80000000u ? crc << 1 ^ 0x04c11db7u : crc << 1;
    return crc;
}

static uint8_t pick(const uint8_t *set, size_t n, uint8_t prev) {
    uint8_t b;
    while ((b = set[rng() % n]) == prev)
        ;
    return b;
}

/*
 * A block whose header holds a block magic by construction: after the real
 * magic come the block CRC, the "randomised" bit (0), the 24-bit origPtr
 * and the 16-bit map of used byte ranges. A magic starting at CRC bit 22
 * needs the CRC's low 10 bits to be 0x0c5, origPtr 706866 and the ranges
 * 0,3,4,6,8,9,12 used and 1,2,5,7,10,11 unused. origPtr is the rank of the
 * block's first rotation, so a block that starts with the only 0x88 and
 * holds exactly 706866 smaller bytes has it; three trailing bytes tune the
 * CRC. No byte repeats its neighbour, so bzip2's run-length step leaves
 * the block as it is.
 */
static void test_false_magic_in_block(void **state) {
    (void)state;
    uint8_t less[72], more[39];
    size_t nl = 0, nm = 0;
    for (unsigned v = 0; v < 256; v++) {
        unsigned range = v >> 4;
        bool used = range == 0 || range == 3 || range == 4 || range == 6 || range == 8 ||
                    range == 9 || range == 12;
        if (used && v < 0x88)
            less[nl++] = (uint8_t)v;
        else if (used && v > 0x88)
            more[nm++] = (uint8_t)v;
    }
    assert_int_equal(nl, sizeof less);
    assert_int_equal(nm, sizeof more);
    const size_t n = 800000, smaller = 706866;
    uint8_t *d = malloc(n);
    assert_non_null(d);
    d[0] = 0x88;
    size_t left_less = smaller, left_more = n - 4 - smaller;
    for (size_t i = 1; i < n - 3; i++) {
        bool take_less = rng() % (left_less + left_more) < left_less;
        d[i] = take_less ? pick(less, nl, d[i - 1]) : pick(more, nm, d[i - 1]);
        *(take_less ? &left_less : &left_more) -= 1;
    }
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n - 3; i++)
        crc = bz_crc_update(crc, d[i]);
    bool tuned = false;
    for (size_t a = 0; a < nm && !tuned; a++)
        for (size_t b = 0; b < nm && !tuned; b++)
            for (size_t c = 0; c < nm && !tuned; c++) {
                if (more[a] == d[n - 4] || more[a] == more[b] || more[b] == more[c])
                    continue;
                uint32_t t =
                    ~bz_crc_update(bz_crc_update(bz_crc_update(crc, more[a]), more[b]), more[c]);
                if ((t & 0x3ff) == 0x0c5) {
                    d[n - 3] = more[a];
                    d[n - 2] = more[b];
                    d[n - 1] = more[c];
                    tuned = true;
                }
            }
    assert_true(tuned);
    bytes z = {0}, want = {0};
    compress_stream(&z, d, n, 9);
    bytes_add(&want, d, n);
    /* The construction worked: a second block magic 70 bits into the block. */
    bytes padded = {0};
    bytes_add(&padded, z.p, z.len);
    bytes_add(&padded, (uint8_t[BZ2_SLACK]){0}, BZ2_SLACK);
    uint64_t at;
    assert_int_equal(bz2_find_mark(padded.p, 33, 8 * (uint64_t)z.len, &at), BZ2_MARK_BLOCK);
    assert_int_equal(at, 32 + 70);
    check_decodes("falsemagic.bz2", &z, &want);

    /* Between other blocks and streams too. */
    bytes multi = {0}, want2 = {0};
    compress_stream(&multi, d + 1000, 300000, 1);
    bytes_add(&multi, z.p, z.len);
    compress_stream(&multi, d + 5000, 200000, 2);
    bytes_add(&want2, d + 1000, 300000);
    bytes_add(&want2, d, n);
    bytes_add(&want2, d + 5000, 200000);
    check_decodes("falsemagic2.bz2", &multi, &want2);
    free(want2.p);
    free(multi.p);
    free(padded.p);
    free(want.p);
    free(z.p);
    free(d);
}

/* ------------------------------------------------------------ damage */

static void test_damage(void **state) {
    (void)state;
    bytes data = {0};
    varied_data(&data, 3u << 20);
    bytes z = {0};
    compress_stream(&z, data.p, data.len / 2, 1);
    size_t first_len = z.len;
    compress_stream(&z, data.p + data.len / 2, data.len - data.len / 2, 1);
    uint64_t eos[4];
    assert_int_equal(eos_marks(&z, eos, 4), 2);
    const char *bad = "corrupt or truncated bzip2 data near compressed byte ";

    /* One byte flipped inside a block: that block's start is reported. */
    bytes flip = {0};
    bytes_add(&flip, z.p, z.len);
    size_t at = first_len / 3;
    flip.p[at] ^= 0x55;
    check_fails("flip.bz2", &flip, bad, at > 2400000 ? at - 2400000 : 1, at);

    /* Cut in the middle of a block, and cut just before the end marker. */
    bytes cut = {0};
    bytes_add(&cut, z.p, z.len * 2 / 3);
    check_fails("cut.bz2", &cut, bad, 1, cut.len);
    cut.len = z.len - 11;
    check_fails("cut2.bz2", &cut, bad, 1, cut.len);

    /* A stream CRC that does not match its blocks. */
    bytes crc = {0};
    bytes_add(&crc, z.p, z.len);
    uint64_t crc_bit = eos[0] + BZ2_MAGIC_BITS + 5;
    crc.p[crc_bit / 8] ^= (uint8_t)(0x80 >> crc_bit % 8);
    check_fails("crc.bz2", &crc, "(stream CRC mismatch)", eos[0] / 8, eos[0] / 8);

    /* Garbage after the last stream: named at its first byte. */
    bytes garbage = {0};
    bytes_add(&garbage, z.p, z.len);
    bytes_add(&garbage, "not bzip2 at all\n", 17);
    check_fails("garbage.bz2", &garbage, "(garbage after the end of a stream)", z.len, z.len);
    /* Also when the garbage is a lone stream header. */
    garbage.len = z.len;
    bytes_add(&garbage, "BZh9", 4);
    check_fails("header.bz2", &garbage, bad, z.len, z.len + 4);

    /* A file that stops right after its header. */
    check_fails("short.bz2", &(bytes){.p = (uint8_t *)"BZh91AY&", .len = 8}, bad, 1, 8);
    free(garbage.p);
    free(crc.p);
    free(cut.p);
    free(flip.p);
    free(z.p);
    free(data.p);
}

/* ------------------------------------------------------------ gzip */

static void gzip_member(bytes *out, const uint8_t *p, size_t n, int level) {
    z_stream z = {0};
    assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, n);
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    z.next_in = (uint8_t *)p;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    bytes_add(out, buf, cap - z.avail_out);
    deflateEnd(&z);
    free(buf);
}

static void test_gzip(void **state) {
    (void)state;
    bytes data = {0};
    varied_data(&data, 1u << 20);
    bytes gz = {0};
    size_t third = data.len / 3;
    gzip_member(&gz, data.p, third, 6);
    gzip_member(&gz, data.p + third, third, 1);
    gzip_member(&gz, data.p + 2 * third, data.len - 2 * third, 9);
    char path[PATH_MAX];
    tmp_path(path, "multi.gz");
    write_file(path, gz.p, gz.len);
    bytes got = {0};
    sp_error err;
    if (decode_file(path, 0, &got, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(got.len, data.len);
    assert_memory_equal(got.p, data.p, data.len);
    free(got.p);
    got = (bytes){0};

    /* Stored (level 0) members: a flipped byte changes only the text, and
     * only the CRC can tell. */
    bytes stored = {0};
    gzip_member(&stored, data.p, third, 0);
    size_t first_len = stored.len;
    gzip_member(&stored, data.p + third, third, 0);
    stored.p[first_len / 2] ^= 0x01;
    tmp_path(path, "flip.gz");
    write_file(path, stored.p, stored.len);
    assert_int_equal(decode_file(path, 0, &got, &err), -1);
    if (!strstr(err.msg, "flip.gz: corrupt or truncated gzip data near compressed byte ") ||
        !strstr(err.msg, "(CRC mismatch)"))
        fail_msg("unexpected error '%s'", err.msg);
    unsigned long long off = strtoull(strstr(err.msg, "byte ") + 5, NULL, 10);
    assert_true(off > first_len / 2 && off <= first_len);

    /* Truncated, and followed by garbage. */
    tmp_path(path, "cut.gz");
    write_file(path, gz.p, gz.len - 3);
    assert_int_equal(decode_file(path, 0, &got, &err), -1);
    assert_non_null(strstr(err.msg, "cut.gz: corrupt or truncated gzip data near compressed byte"));
    bytes_add(&gz, "junk", 4);
    tmp_path(path, "junk.gz");
    write_file(path, gz.p, gz.len);
    assert_int_equal(decode_file(path, 0, &got, &err), -1);
    assert_non_null(
        strstr(err.msg, "junk.gz: corrupt or truncated gzip data near compressed byte"));
    free(got.p);
    free(stored.p);
    free(gz.p);
    free(data.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_mark_every_offset),
        cmocka_unit_test(test_bits_copy),
        cmocka_unit_test(test_single_stream_many_blocks),
        cmocka_unit_test(test_multistream),
        cmocka_unit_test(test_one_block_and_empty),
        cmocka_unit_test(test_corpora),
        cmocka_unit_test(test_false_magic_in_block),
        cmocka_unit_test(test_damage),
        cmocka_unit_test(test_gzip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
