/*
 * test_sst_format.c: the files table_writer makes, read back by a second
 * reader written here from FORMAT.md alone (raw bytes, xxhash, nothing from
 * stages/sst), so the written spec and the code cannot drift apart. It
 * checks every region's alignment, padding and checksum, decodes every
 * record, and pins the worked example of FORMAT.md byte for byte.
 */
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <xxhash.h>

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
    assert_int_equal(le(ft + 88, 4), 1);  /* format version */
    assert_int_equal(le(ft + 92, 4), 1);  /* XXH3-64 */
    uint64_t data_region = le(ft + 96, 8);
    assert_int_equal(le(ft + 104, 8), 0); /* reserved */
    assert_int_equal(le(ft + 112, 8), XXH3_64bits(f + n - cs, cs - 16));
    all_zero(f + n - cs, cs - 128);

    /* regions: data | index | footer, each cluster-aligned, tiling the file */
    assert_int_equal(file_size, n);
    assert_int_equal(n % cs, 0);
    assert_int_equal(data_region, (blocks * bs + cs - 1) / cs * cs);
    assert_int_equal(index_offset, data_region);
    assert_int_equal(index_region, (index_length + cs - 1) / cs * cs);
    assert_int_equal(index_offset + index_region + cs, n);
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
        uint32_t entries_len = (uint32_t)le(blk + bs - 20, 4);
        uint32_t nrec = (uint32_t)le(blk + bs - 16, 4), nres = (uint32_t)le(blk + bs - 12, 4);
        assert_int_equal(nres, (nrec + 15) / 16);
        const uint8_t *restarts = blk + bs - 20 - 4 * nres;
        all_zero(blk + entries_len, (uint64_t)(restarts - blk) - entries_len);
        const uint8_t *p = blk, *end = blk + entries_len;
        uint8_t key[SP_MAX_KEY_BYTES];
        uint64_t key_len = 0;
        for (uint32_t i = 0; i < nrec; i++, k++) {
            if (i % 16 == 0)
                assert_int_equal(le(restarts + 4 * (i / 16), 4), p - blk);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_follow_the_spec),
        cmocka_unit_test(test_worked_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
