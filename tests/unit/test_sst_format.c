/*
 * test_sst_format.c: the files table_writer makes, read back by a second
 * reader written here from FORMAT.md alone (raw bytes, xxhash, libzstd,
 * nothing from stages/sst), so the written spec and the code cannot drift
 * apart. It checks every region's alignment, padding and checksum, decodes
 * every record of version 1 and version 2 tables (version 2's first layout
 * too), and pins the worked examples of FORMAT.md byte for byte.
 */
#include "stages/sst/table_reader.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <xxhash.h>
#define ZSTD_STATIC_LINKING_ONLY /* the magicless frame format */
#include <zstd.h>

#include <cmocka.h>

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static const uint8_t *varint(const uint8_t *p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        assert_true(p < end);
        uint8_t b = *p++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return p;
    }
    fail_msg("varint too long");
    return NULL;
}

static void all_zero(const uint8_t *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i])
            fail_msg("padding byte %llu is %u, not zero", (unsigned long long)i, p[i]);
}

/* A version 2 block unpacked (FORMAT.md, "Version 2"): its groups'
 * entries back to back into plain, restart g at group g's first entry. */
typedef struct unpacked {
    uint8_t plain[16 * 65536];
    uint32_t restarts[65536 / 4];
    uint32_t len, nrec, nres;
} unpacked;

static void spec_unpack(const uint8_t *blk, uint32_t bs, ZSTD_DDict *dict, unpacked *u) {
    uint32_t dir_len = (uint32_t)le(blk + bs - 20, 4);
    u->nrec = (uint32_t)le(blk + bs - 16, 4);
    u->nres = (uint32_t)le(blk + bs - 12, 4);
    assert_int_equal(u->nres, (u->nrec + 15) / 16);
    const uint8_t *d = blk + bs - 20 - dir_len, *dend = blk + bs - 20;
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    assert_false(ZSTD_isError(ZSTD_DCtx_setParameter(dc, ZSTD_d_format, ZSTD_f_zstd1_magicless)));
    assert_false(ZSTD_isError(ZSTD_DCtx_refDDict(dc, dict)));
    uint64_t frames = 0;
    u->len = 0;
    for (uint32_t g = 0; g < u->nres; g++) {
        uint64_t flen, plen, klen;
        d = varint(d, dend, &flen);
        d = varint(d, dend, &plen);
        d = varint(d, dend, &klen);
        assert_true(flen >= 1 && plen >= 1 && klen >= 1 && klen <= SP_MAX_KEY_BYTES);
        assert_true(u->len + plen <= sizeof u->plain);
        size_t got = ZSTD_decompressDCtx(dc, u->plain + u->len, plen, blk + frames, flen);
        assert_int_equal(got, plen);
        /* the group's first entry: shared 0, the directory's key */
        uint64_t shared, unshared, vlen;
        const uint8_t *e = u->plain + u->len, *eend = e + plen;
        e = varint(varint(varint(e, eend, &shared), eend, &unshared), eend, &vlen);
        assert_int_equal(shared, 0);
        assert_int_equal(unshared, klen);
        assert_memory_equal(e, d, klen);
        d += klen;
        u->restarts[g] = u->len;
        u->len += (uint32_t)plen;
        frames += flen;
    }
    ZSTD_freeDCtx(dc);
    assert_ptr_equal(d, dend);
    assert_true(frames <= bs - 20 - dir_len);
    all_zero(blk + frames, bs - 20 - dir_len - frames);
}

/* A version 2 table's filter (FORMAT.md, "The filter") of the records s:
 * the writers' size and k, and exactly the bits of s's keys set. */
static void spec_filter(const uint8_t *filter, uint64_t flen, uint64_t k, const trecs *s) {
    assert_int_equal(flen, 64 * ((10 * s->n + 511) / 512));
    assert_int_equal(k, s->n ? 6 : 0);
    uint8_t *want = calloc(1, flen + 1);
    for (size_t i = 0; i < s->n; i++) {
        uint64_t h = XXH3_64bits(s->r[i].key, s->r[i].klen);
        uint64_t h1 = h & 0xffffffffu, h2 = h >> 32, step = (h1 >> 16) | 1;
        uint8_t *line = want + 64 * ((h2 * (flen / 64)) >> 32);
        for (uint64_t j = 0; j < k; j++) {
            uint64_t b = (h1 + j * step) % 512;
            line[b / 8] |= (uint8_t)(1u << (b % 8));
        }
    }
    assert_memory_equal(filter, want, flen);
    free(want);
}

/* Reads file f of n bytes following FORMAT.md; its records must be s. */
static void spec_read(const uint8_t *f, uint64_t n, const trecs *s, uint32_t bs, uint32_t cs) {
    /* footer */
    const uint8_t *ft = f + n - 128;
    assert_memory_equal(ft + 120, "SSTPIPE1", 8);
    uint64_t index_offset = le(ft, 8), index_length = le(ft + 8, 8);
    uint64_t index_region = le(ft + 16, 8), blocks = le(ft + 24, 8), records = le(ft + 32, 8);
    uint64_t key_bytes = le(ft + 40, 8), value_bytes = le(ft + 48, 8), file_size = le(ft + 56, 8);
    uint64_t index_sum = le(ft + 64, 8);
    assert_int_equal(le(ft + 72, 4), bs);
    assert_int_equal(le(ft + 76, 4), cs);
    assert_int_equal(le(ft + 84, 4), 16); /* restart interval */
    uint64_t version = le(ft + 88, 4);
    assert_true(version == 1 || version == 2);
    assert_int_equal(le(ft + 92, 4), 1); /* XXH3-64 */
    uint64_t data_region = le(ft + 96, 8);
    /* Version 1 (and version 2's first layout, told by its footer
     * checksum) pads every region to the cluster size, its footer region a
     * cluster; version 2 pads nothing after its blocks, its footer region
     * the footer alone. */
    uint64_t a = cs, fr = cs;
    if (version == 2 && le(ft + 112, 8) == XXH3_64bits(ft, 112)) {
        a = 1;
        fr = 128;
    }
    assert_int_equal(le(ft + 112, 8), XXH3_64bits(f + n - fr, fr - 16));
    all_zero(f + n - fr, fr - 128);

    /* regions: data | index | (version 2: meta |) footer, tiling the file */
    assert_int_equal(file_size, n);
    assert_int_equal(n % a, 0);
    assert_int_equal(data_region, (blocks * bs + a - 1) / a * a);
    assert_int_equal(index_offset, data_region);
    assert_int_equal(index_region, (index_length + a - 1) / a * a);
    uint64_t meta_offset = index_offset + index_region, meta_region = n - fr - meta_offset;
    ZSTD_DDict *dict = NULL;
    uint64_t plain_bytes = 0;
    if (version == 1) {
        assert_int_equal(le(ft + 104, 8), 0); /* reserved */
        assert_int_equal(meta_region, 0);
    } else {
        const uint8_t *m = f + meta_offset;
        assert_true(meta_region >= 24);
        assert_int_equal(le(ft + 104, 8), XXH3_64bits(m, meta_region));
        assert_int_equal(le(m, 4), 1); /* zstd */
        uint64_t dlen = le(m + 4, 4), flen = le(m + 8, 4), hashes = le(m + 12, 4);
        assert_int_equal(flen == 0, hashes == 0);
        uint64_t used = 24 + dlen + flen;
        assert_int_equal(meta_region, (used + a - 1) / a * a);
        all_zero(m + used, meta_region - used);
        if (dlen)
            assert_non_null(dict = ZSTD_createDDict(m + 24, dlen));
        plain_bytes = le(m + 16, 8);
        spec_filter(m + 24 + dlen, flen, hashes, s);
    }
    all_zero(f + blocks * bs, data_region - blocks * bs);
    all_zero(f + index_offset + index_length, index_region - index_length);
    assert_int_equal(XXH3_64bits(f + index_offset, index_region), index_sum);

    /* index, then each block it names */
    const uint8_t *ip = f + index_offset, *iend = ip + index_length;
    size_t k = 0;
    uint64_t kb = 0, vb = 0;
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t klen, off;
        ip = varint(ip, iend, &klen);
        const uint8_t *first = ip;
        ip = varint(ip + klen, iend, &off);
        assert_int_equal(off, b * bs);
        assert_true(k < s->n);
        assert_int_equal(klen, s->r[k].klen);
        assert_memory_equal(first, s->r[k].key, klen);

        const uint8_t *blk = f + off;
        assert_int_equal(le(blk + bs - 8, 8), XXH3_64bits(blk, bs - 8));
        uint32_t entries_len, nrec, nres;
        const uint8_t *entries;
        uint8_t restarts[4 * (65536 / 4)];
        static unpacked u;
        if (version == 1) {
            entries = blk;
            entries_len = (uint32_t)le(blk + bs - 20, 4);
            nrec = (uint32_t)le(blk + bs - 16, 4);
            nres = (uint32_t)le(blk + bs - 12, 4);
            assert_int_equal(nres, (nrec + 15) / 16);
            memcpy(restarts, blk + bs - 20 - 4 * nres, 4 * nres);
            all_zero(blk + entries_len, bs - 20 - 4 * nres - entries_len);
        } else {
            spec_unpack(blk, bs, dict, &u);
            entries = u.plain;
            entries_len = u.len;
            nrec = u.nrec;
            nres = u.nres;
            for (uint32_t g = 0; g < nres; g++)
                for (int j = 0; j < 4; j++)
                    restarts[4 * g + j] = (uint8_t)(u.restarts[g] >> (8 * j));
            plain_bytes -= entries_len;
        }
        const uint8_t *blk0 = entries;
        const uint8_t *p = entries, *end = entries + entries_len;
        uint8_t key[SP_MAX_KEY_BYTES];
        uint64_t key_len = 0;
        for (uint32_t i = 0; i < nrec; i++, k++) {
            if (i % 16 == 0)
                assert_int_equal(le(restarts + 4 * (i / 16), 4), p - blk0);
            uint64_t shared, unshared, vlen;
            p = varint(p, end, &shared);
            p = varint(p, end, &unshared);
            p = varint(p, end, &vlen);
            if (i % 16 == 0)
                assert_int_equal(shared, 0);
            assert_true(shared <= key_len && shared + unshared <= SP_MAX_KEY_BYTES);
            memcpy(key + shared, p, unshared);
            key_len = shared + unshared;
            p += unshared;
            assert_true(k < s->n);
            assert_int_equal(key_len, s->r[k].klen);
            assert_memory_equal(key, s->r[k].key, key_len);
            assert_int_equal(vlen, s->r[k].vlen);
            if (vlen)
                assert_memory_equal(p, s->r[k].val, vlen);
            p += vlen;
            kb += key_len;
            vb += vlen;
        }
        assert_ptr_equal(p, end);
    }
    assert_ptr_equal(ip, iend);
    assert_int_equal(plain_bytes, 0);
    ZSTD_freeDDict(dict);
    assert_int_equal(k, s->n);
    assert_int_equal(records, s->n);
    assert_int_equal(key_bytes, kb);
    assert_int_equal(value_bytes, vb);
}

static void test_files_follow_the_spec(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *path = t_path(dir, "t.sst");
    const uint32_t sizes[][2] = {{1024, 512},  {2048, 4096},  {4096, 512},
                                 {8192, 4096}, {8192, 65536}, {65536, 4096}};
    const size_t counts[] = {0, 1, 17, 2500};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        for (size_t j = 0; j < sizeof counts / sizeof counts[0]; j++) {
            uint32_t bs = sizes[c][0], cs = sizes[c][1];
            uint32_t mvb = bs == 1024 ? 675 : 1024;
            trecs s = t_random(c * 10 + j, counts[j], mvb);
            sp_error err = {0};
            assert_int_equal(t_write(path, bs, cs, mvb, &s, NULL, &err), 0);
            size_t n;
            uint8_t *f = t_read_file(path, &n);
            spec_read(f, n, &s, bs, cs);
            free(f);
            t_free(&s);
        }
    }
    free(path);
    test_dir_remove(dir);
}

/* compression off (the default options) writes version 1 as before
 * version 2 existed: the bytes of a table written by main at 55a60af. */
static void test_version1_bytes_unchanged(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *path = t_path(dir, "t.sst");
    trecs s = t_random(42, 3000, 1024);
    table_options o;
    table_options_init(&o);
    sp_error err = {0};
    assert_int_equal(t_write_opts(path, &o, &s, NULL, &err), 0);
    size_t n;
    uint8_t *f = t_read_file(path, &n);
    assert_int_equal(n, 2117632);
    assert_int_equal(XXH3_64bits(f, n), 0x9fd29644881b0263ull);
    free(f);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
}

/* Version 2 tables, of values that do not compress and of values that do
 * (with a dictionary trained on them), read by the same second reader. */
static void test_compressed_files_follow_the_spec(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *path = t_path(dir, "t.sst");
    const uint32_t sizes[][2] = {{1024, 512}, {4096, 512}, {8192, 4096}, {65536, 4096}};
    const size_t counts[] = {0, 1, 17, 2500};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        for (size_t j = 0; j < sizeof counts / sizeof counts[0]; j++) {
            for (int wordy = 0; wordy < 2; wordy++) {
                uint32_t bs = sizes[c][0], cs = sizes[c][1];
                uint32_t mvb = bs == 1024 ? 200 : 1024;
                trecs s = wordy ? t_wordy(c * 10 + j, counts[j], mvb)
                                : t_random(c * 10 + j, counts[j], mvb);
                table_options o = {.block_size = bs,
                                   .cluster_size = cs,
                                   .max_value_bytes = mvb,
                                   .compress = true,
                                   .compression_level = 3,
                                   .dictionary_size = 4096};
                sp_error err = {0};
                table_stats st = {0};
                assert_int_equal(t_write_opts(path, &o, &s, &st, &err), 0);
                size_t n;
                uint8_t *f = t_read_file(path, &n);
                spec_read(f, n, &s, bs, cs);
                /* Written in the packed layout: the footer's checksum is its own. */
                assert_int_equal(le(f + n - 16, 8), XXH3_64bits(f + n - 128, 112));
                /* Text with a dictionary takes fewer blocks than its bytes. */
                if (wordy && counts[j] == 2500)
                    assert_true(st.data_blocks * bs * 2 < st.value_bytes + st.key_bytes);
                /* And laid out as version 2's first layout, still by the spec. */
                size_t first_n;
                uint8_t *first = t_first_layout(f, n, cs, &first_n);
                spec_read(first, first_n, &s, bs, cs);
                free(first);
                free(f);
                t_free(&s);
            }
        }
    }
    free(path);
    test_dir_remove(dir);
}

/* The entry of key k (klen) after key prev (plen) into e: its bytes. */
static size_t spec_entry(uint8_t *e, const uint8_t *prev, size_t plen, const uint8_t *k,
                         size_t klen, const uint8_t *v, size_t vlen) {
    size_t shared = 0, n = 0;
    while (shared < plen && shared < klen && prev[shared] == k[shared])
        shared++;
    uint64_t f[3] = {shared, klen - shared, vlen};
    for (int i = 0; i < 3; i++) {
        for (; f[i] >= 0x80; f[i] >>= 7)
            e[n++] = (uint8_t)(f[i] | 0x80);
        e[n++] = (uint8_t)f[i];
    }
    memcpy(e + n, k + shared, klen - shared);
    memcpy(e + n + klen - shared, v, vlen);
    return n + klen - shared + vlen;
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

/* A version 2 block ends only where the next record would not fit: that
 * record added to the block's last group (or, when it has 16 records, as
 * a group of its own) compresses, as the writer compresses, to more than
 * the block holds with its directory entry at its longest (two 5-byte
 * varints and the first key) and the trailer. So the writer's few trial
 * compressions a block fill each block as far as one per record would.
 * Level 2: below the levels whose search the writer deepens past zstd's
 * own parameters, so that a plain CDict of the level compresses as it does. */
static void test_compressed_blocks_are_full(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *path = t_path(dir, "t.sst");
    const uint32_t bs = 8192;
    trecs s = t_wordy(78, 2500, 1024);
    table_options o = {.block_size = bs,
                       .cluster_size = 4096,
                       .max_value_bytes = 1024,
                       .compress = true,
                       .compression_level = 2,
                       .dictionary_size = 4096};
    sp_error err = {0};
    assert_int_equal(t_write_opts(path, &o, &s, NULL, &err), 0);
    size_t n;
    uint8_t *f = t_read_file(path, &n);
    const uint8_t *ft = f + n - 128, *m = f + le(ft, 8) + le(ft + 16, 8);
    uint64_t blocks = le(ft + 24, 8);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CDict *cd = ZSTD_createCDict(m + 24, le(m + 4, 4), 2);
    ZSTD_DDict *dd = ZSTD_createDDict(m + 24, le(m + 4, 4));
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_format, ZSTD_f_zstd1_magicless)) ||
                 ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)) ||
                 ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_dictIDFlag, 0)) ||
                 ZSTD_isError(ZSTD_CCtx_refCDict(cc, cd)));
    static unpacked u;
    static uint8_t plain[16 * 8192 + 2048], frame[ZSTD_COMPRESSBOUND(16 * 8192 + 2048)];
    size_t k = 0;
    assert_true(blocks > 10);
    for (uint64_t b = 0; b + 1 < blocks; b++) {
        const uint8_t *blk = f + b * bs;
        spec_unpack(blk, bs, dd, &u);
        k += u.nrec;
        uint32_t dir_len = (uint32_t)le(blk + bs - 20, 4), last = u.nres - 1;
        /* the last group's directory entry and frame */
        const uint8_t *d = blk + bs - 20 - dir_len, *dend = blk + bs - 20;
        uint64_t frames = 0, flen = 0, plen = 0, klen = 0, last_dir = 0;
        for (uint32_t g = 0; g <= last; g++) {
            const uint8_t *at = d;
            d = varint(varint(varint(d, dend, &flen), dend, &plen), dend, &klen) + klen;
            frames += flen;
            last_dir = (uint64_t)(d - at);
        }
        const trec *r = s.r;
        size_t next = k, len;
        uint64_t need;
        if (u.nrec % 16) { /* the next record joins the last group */
            memcpy(plain, u.plain + u.restarts[last], plen);
            len = plen + spec_entry(plain + plen, r[next - 1].key, r[next - 1].klen, r[next].key,
                                    r[next].klen, r[next].val, r[next].vlen);
            need = frames - flen + dir_len - last_dir + varint_len(klen) + klen;
        } else { /* it starts a group */
            len = spec_entry(plain, NULL, 0, r[next].key, r[next].klen, r[next].val, r[next].vlen);
            need = frames + dir_len + varint_len(r[next].klen) + r[next].klen;
        }
        size_t z = ZSTD_compress2(cc, frame, sizeof frame, plain, len);
        assert_false(ZSTD_isError(z));
        assert_true(need + z + 10 + 20 > bs);
    }
    ZSTD_freeCCtx(cc);
    ZSTD_freeCDict(cd);
    ZSTD_freeDDict(dd);
    free(f);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
}

/* The dictionary follows what it was trained on: a table smaller than its
 * sample trains on all of its values and stores a dictionary of at most a
 * fiftieth of them, however large [sst] dictionary_size allows, and one
 * that saves less than its own bytes (on values that do not compress) is
 * left out. */
static void test_dictionary_follows_its_sample(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *path = t_path(dir, "t.sst");
    for (int wordy = 0; wordy < 2; wordy++) {
        trecs s = wordy ? t_wordy(3, 1000, 1024) : t_random(3, 1000, 1024);
        table_options o = {.block_size = 8192,
                           .cluster_size = 4096,
                           .max_value_bytes = 1024,
                           .compress = true,
                           .compression_level = 3,
                           .dictionary_size = 1u << 20};
        sp_error err = {0};
        table_stats st = {0};
        assert_int_equal(t_write_opts(path, &o, &s, &st, &err), 0);
        if (wordy) {
            assert_true(st.dictionary_bytes > 0);
            assert_true(st.dictionary_bytes <= st.value_bytes / 50);
        } else {
            assert_int_equal(st.dictionary_bytes, 0);
        }
        size_t n;
        uint8_t *f = t_read_file(path, &n);
        spec_read(f, n, &s, 8192, 4096);
        free(f);
        t_free(&s);
    }
    free(path);
    test_dir_remove(dir);
}

/* A compressed table's bytes do not depend on the thread that packs its
 * blocks (table_options.background: a thread of the writer's own, fed
 * batches of records): the same records make the same file either way,
 * as build, merge and a one-shard cluster build rely on. The records run
 * well past the dictionary's sample, so that most are packed there. */
static void test_compressed_bytes_without_the_packing_thread(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *a = t_path(dir, "a.sst"), *b = t_path(dir, "b.sst");
    trecs s = t_wordy(77, 4000, 1024);
    table_options o = {.block_size = 8192,
                       .cluster_size = 4096,
                       .max_value_bytes = 1024,
                       .compress = true,
                       .compression_level = 3,
                       .dictionary_size = 4096};
    sp_error err = {0};
    assert_int_equal(t_write_opts(a, &o, &s, NULL, &err), 0);
    o.background = true;
    assert_int_equal(t_write_opts(b, &o, &s, NULL, &err), 0);
    size_t na, nb;
    uint8_t *fa = t_read_file(a, &na), *fb = t_read_file(b, &nb);
    assert_true(na == nb && memcmp(fa, fb, na) == 0);
    free(fa);
    free(fb);
    t_free(&s);
    free(a);
    free(b);
    test_dir_remove(dir);
}

/* The worked example of FORMAT.md: three records, block 1024, cluster 512. */
static void test_worked_example(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *path = t_path(dir, "example.sst");
    trecs s = {0};
    t_add(&s, (const uint8_t *)"Apple", 5, (const uint8_t *)"red", 3);
    t_add(&s, (const uint8_t *)"Apricot", 7, (const uint8_t *)"orange", 6);
    t_add(&s, (const uint8_t *)"Banana", 6, (const uint8_t *)"", 0);
    sp_error err = {0};
    assert_int_equal(t_write(path, 1024, 512, 100, &s, NULL, &err), 0);
    size_t n;
    uint8_t *f = t_read_file(path, &n);
    assert_int_equal(n, 2048);
    static const uint8_t entries[] = {
        0x00, 0x05, 0x03, 'A', 'p', 'p', 'l', 'e', 'r', 'e', 'd',                /* Apple */
        0x02, 0x05, 0x06, 'r', 'i', 'c', 'o', 't', 'o', 'r', 'a', 'n', 'g', 'e', /* Apricot */
        0x00, 0x06, 0x00, 'B', 'a', 'n', 'a', 'n', 'a',                          /* Banana */
    };
    assert_memory_equal(f, entries, sizeof entries);
    all_zero(f + sizeof entries, 1024 - 24 - sizeof entries);
    static const uint8_t trailer[] = {0, 0, 0, 0, 34, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0};
    assert_memory_equal(f + 1000, trailer, sizeof trailer);
    static const uint8_t index[] = {0x05, 'A', 'p', 'p', 'l', 'e', 0x00};
    assert_memory_equal(f + 1024, index, sizeof index);
    all_zero(f + 1024 + sizeof index, 512 - sizeof index);
    const uint8_t *ft = f + 2048 - 128;
    static const uint64_t u64s[] = {1024, 7, 512, 1, 3, 18, 9, 2048};
    for (int i = 0; i < 8; i++)
        assert_int_equal(le(ft + 8 * i, 8), u64s[i]);
    static const uint32_t u32s[] = {1024, 512, 100, 16, 1, 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(le(ft + 72 + 4 * i, 4), u32s[i]);
    assert_int_equal(le(ft + 96, 8), 1024);
    /* The checksums, as FORMAT.md gives them. */
    assert_int_equal(le(f + 1016, 8), 0x84505eaa68e9595bull);
    assert_int_equal(le(ft + 64, 8), 0x99e70c8dd75ff3b5ull);
    assert_int_equal(le(ft + 112, 8), 0xf3ceb22604729c07ull);
    spec_read(f, n, &s, 1024, 512);
    free(f);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
}

/* The version 2 worked example of FORMAT.md: the same records, block
 * 1024, cluster 512, zstd without a dictionary. */
static void test_worked_example_v2(void **state) {
    (void)state;
    char *dir = test_dir_make("sst-test"), *path = t_path(dir, "example.sst");
    trecs s = {0};
    t_add(&s, (const uint8_t *)"Apple", 5, (const uint8_t *)"red", 3);
    t_add(&s, (const uint8_t *)"Apricot", 7, (const uint8_t *)"orange", 6);
    t_add(&s, (const uint8_t *)"Banana", 6, (const uint8_t *)"", 0);
    table_options o = {.block_size = 1024,
                       .cluster_size = 512,
                       .max_value_bytes = 100,
                       .compress = true,
                       .compression_level = 3,
                       .dictionary_size = 0};
    sp_error err = {0};
    assert_int_equal(t_write_opts(path, &o, &s, NULL, &err), 0);
    size_t n;
    uint8_t *f = t_read_file(path, &n);
    assert_int_equal(n, 1247);
    static const uint8_t frame[] = {
        0x00, 0x00, 0x11, 0x01, 0x00,                                              /* headers */
        0x00, 0x05, 0x03, 'A',  'p',  'p', 'l', 'e', 'r', 'e', 'd',                /* Apple */
        0x02, 0x05, 0x06, 'r',  'i',  'c', 'o', 't', 'o', 'r', 'a', 'n', 'g', 'e', /* Apricot */
        0x00, 0x06, 0x00, 'B',  'a',  'n', 'a', 'n', 'a',                          /* Banana */
    };
    assert_memory_equal(f, frame, sizeof frame);
    all_zero(f + sizeof frame, 996 - sizeof frame);
    static const uint8_t tail[] = {0x27, 0x22, 0x05, 'A', 'p', 'p', 'l', 'e', 8, 0,
                                   0,    0,    3,    0,   0,   0,   1,   0,   0, 0};
    assert_memory_equal(f + 996, tail, sizeof tail);
    assert_int_equal(le(f + 1016, 8), 0xbded0c8a01c4775dull);
    static const uint8_t index[] = {0x05, 'A', 'p', 'p', 'l', 'e', 0x00};
    assert_memory_equal(f + 1024, index, sizeof index);
    static const uint8_t meta[] = {1, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 6, 0, 0, 0, 34};
    assert_memory_equal(f + 1031, meta, sizeof meta);
    all_zero(f + 1031 + sizeof meta, 24 - sizeof meta);
    /* The filter's set bytes as FORMAT.md lists them, then zeros. */
    static const uint8_t set[][2] = {{3, 0x10},  {9, 0x08},  {10, 0x04}, {11, 0x02}, {12, 0x81},
                                     {13, 0x40}, {18, 0x02}, {27, 0x08}, {28, 0x01}, {35, 0x01},
                                     {37, 0x80}, {47, 0x40}, {51, 0x04}, {57, 0x20}, {58, 0x80}};
    uint8_t filter[64] = {0};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        filter[set[i][0]] = set[i][1];
    assert_memory_equal(f + 1055, filter, sizeof filter);
    /* Apz's first bit, 503, is clear: absent with no block read. */
    assert_int_equal(XXH3_64bits("Apz", 3) % 512, 503);
    assert_int_equal(f[1055 + 503 / 8] >> (503 % 8) & 1, 0);
    const uint8_t *ft = f + n - 128;
    assert_int_equal(ft - f, 1119);
    static const uint64_t u64s[] = {1024, 7, 7, 1, 3, 18, 9, 1247};
    for (int i = 0; i < 8; i++)
        assert_int_equal(le(ft + 8 * i, 8), u64s[i]);
    static const uint32_t u32s[] = {1024, 512, 100, 16, 2, 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(le(ft + 72 + 4 * i, 4), u32s[i]);
    assert_int_equal(le(ft + 96, 8), 1024);
    assert_int_equal(le(ft + 64, 8), 0x2fbf08b31546f17bull);
    assert_int_equal(le(ft + 104, 8), 0xc5d954d7db863736ull);
    assert_int_equal(le(ft + 112, 8), 0x7dd679251673bddfull);
    spec_read(f, n, &s, 1024, 512);

    /* The same table in version 2's first layout, as sstpipe wrote it up
     * to commit 9dbe327 (its example's checksums, all three over padded
     * regions, say it is that file byte for byte), still reads: by the
     * spec, and by the library, from its index through its filter to its
     * one block. */
    size_t first_n;
    uint8_t *first = t_first_layout(f, n, 512, &first_n);
    assert_int_equal(first_n, 2560);
    const uint8_t *fft = first + first_n - 128;
    assert_int_equal(le(fft + 64, 8), 0x99e70c8dd75ff3b5ull);
    assert_int_equal(le(fft + 104, 8), 0xb68f533492ec09d3ull);
    assert_int_equal(le(fft + 112, 8), 0x944ba6c27339f016ull);
    spec_read(first, first_n, &s, 1024, 512);
    assert_int_equal(t_write_file(path, first, first_n), 0);
    sst_reader *r = sst_reader_open(path, &err);
    assert_non_null(r);
    const void *v;
    size_t vlen;
    assert_int_equal(sst_reader_get(r, "Apricot", 7, &v, &vlen, &err), 1);
    assert_int_equal(vlen, 6);
    assert_memory_equal(v, "orange", 6);
    assert_int_equal(sst_reader_get(r, "Apz", 3, &v, &vlen, &err), 0);
    sst_reader_close(r);
    free(first);
    free(f);
    t_free(&s);
    free(path);
    test_dir_remove(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_follow_the_spec),
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_compressed_files_follow_the_spec),
        cmocka_unit_test(test_compressed_bytes_without_the_packing_thread),
        cmocka_unit_test(test_compressed_blocks_are_full),
        cmocka_unit_test(test_dictionary_follows_its_sample),
        cmocka_unit_test(test_version1_bytes_unchanged),
        cmocka_unit_test(test_worked_example_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
