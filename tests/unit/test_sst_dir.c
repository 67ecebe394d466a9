/*
 * test_sst_dir.c: a block's record directory (block_dir.h) answers every
 * lookup exactly as block_find does on the same block: random blocks whose
 * keys share long common prefixes, runs of keys equal in the 8 bytes after
 * them, keys that differ only by trailing zero bytes (which the zero-padded
 * prefixes cannot tell apart), probes that are prefixes, extensions and
 * neighbours of the keys; and a block that walks badly gives no directory.
 */
#include "stages/sst/block.h"
#include "stages/sst/block_dir.h"
#include "stages/sst/format.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <cmocka.h>

static uint64_t rng;

static uint64_t next_rand(void) {
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct key {
    uint8_t b[SP_MAX_KEY_BYTES];
    uint32_t len;
} key;

static int key_cmp(const void *x, const void *y) {
    const key *a = x, *b = y;
    int c = memcmp(a->b, b->b, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len < b->len ? -1 : a->len > b->len);
}

/* Keys over a tiny alphabet that includes 0x00 and 0xFF, after a prefix
 * every key shares; half of them go on with up to 12 bytes that are the
 * same in all keys, so that many agree in the 8 bytes after the prefix. */
static size_t random_keys(key *keys, size_t n) {
    static const uint8_t alphabet[] = {0x00, 0x01, 'a', 'b', 0xFF};
    uint32_t common = (uint32_t)(next_rand() % 40);
    uint8_t prefix[40 + 12];
    for (uint32_t i = 0; i < common + 12; i++)
        prefix[i] = alphabet[next_rand() % sizeof alphabet];
    for (size_t k = 0; k < n; k++) {
        key *x = &keys[k];
        uint32_t same = common + (next_rand() % 2 ? (uint32_t)(next_rand() % 13) : 0);
        memcpy(x->b, prefix, same);
        x->len = same + 1 + (uint32_t)(next_rand() % 14);
        for (uint32_t i = same; i < x->len; i++)
            x->b[i] = alphabet[next_rand() % sizeof alphabet];
    }
    qsort(keys, n, sizeof *keys, key_cmp);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (u == 0 || key_cmp(&keys[u - 1], &keys[k]) != 0)
            keys[u++] = keys[k];
    return u;
}

static void expect_same(const block_view *v, const block_dir *d, const uint8_t *probe,
                        uint32_t len) {
    const void *v1 = NULL, *v2 = NULL;
    size_t l1 = 0, l2 = 0;
    sp_error e1 = {0}, e2 = {0};
    int r1 = block_find(v, probe, len, &v1, &l1, "blk", &e1);
    int r2 = block_dir_find(d, v->data, probe, len, &v2, &l2, "blk", &e2);
    assert_int_equal(r1, r2);
    assert_true(r1 >= 0);
    if (r1 == 1) {
        assert_ptr_equal(v1, v2);
        assert_int_equal(l1, l2);
    }
}

static void test_directory_agrees_with_block_find(void **state) {
    (void)state;
    const uint32_t bs = 4096;
    key *keys = malloc(200 * sizeof *keys);
    uint8_t val[64];
    memset(val, 'v', sizeof val);
    rng = 42;
    size_t found = 0;
    for (int round = 0; round < 400; round++) {
        size_t n = random_keys(keys, 1 + next_rand() % 120);
        block_builder *b = block_builder_init(bs);
        size_t used = 0;
        for (; used < n; used++) {
            uint32_t vlen = (uint32_t)(next_rand() % sizeof val);
            if (!block_builder_add(b, keys[used].b, keys[used].len, val, vlen))
                break;
        }
        block_view v;
        sp_error err = {0};
        assert_int_equal(block_open(&v, block_builder_finish(b), bs, "blk", &err), 0);
        block_dir *d = block_dir_build(&v, "blk", &err);
        assert_non_null(d);
        assert_true(block_dir_bytes(d) >= used * 12);
        for (size_t k = 0; k < n; k++) {
            key p = keys[k];
            expect_same(&v, d, p.b, p.len);
            found += k < used;
            /* Its neighbours: with a zero byte appended (a prefix tie),
             * shortened, and with the last byte one up and one down. */
            p.b[p.len] = 0;
            expect_same(&v, d, p.b, p.len + 1);
            if (p.len > 1)
                expect_same(&v, d, p.b, p.len - 1);
            p.b[p.len - 1]++;
            expect_same(&v, d, p.b, p.len);
            p.b[p.len - 1] -= 2;
            expect_same(&v, d, p.b, p.len);
        }
        for (int k = 0; k < 50; k++) {
            key p;
            random_keys(&p, 1);
            expect_same(&v, d, p.b, p.len);
        }
        expect_same(&v, d, (const uint8_t *)"", 0);
        expect_same(&v, d, (const uint8_t *)"\xff\xff\xff\xff", 4);
        block_dir_destroy(d);
        block_builder_destroy(b);
    }
    assert_true(found > 10000);
    free(keys);
}

static void reseal(uint8_t *blk, uint32_t bs) {
    uint64_t h = XXH3_64bits(blk, bs - 8);
    for (int i = 0; i < 8; i++)
        blk[bs - 8 + i] = (uint8_t)(h >> (8 * i));
}

/* Checksums that match over a bad walk (what a buggy writer makes): the
 * directory is refused with the error the walk gives. */
static void test_bad_walk_gives_no_directory(void **state) {
    (void)state;
    const uint32_t bs = 1024;
    block_builder *b = block_builder_init(bs);
    const char *keys[] = {"apple", "apricot", "banana", "cherry"};
    for (int i = 0; i < 4; i++)
        block_builder_add(b, (const uint8_t *)keys[i], strlen(keys[i]), (const uint8_t *)"v", 1);
    uint8_t *blk = malloc(bs);
    memcpy(blk, block_builder_finish(b), bs);
    block_builder_destroy(b);
    /* "banana" (shared 0, entry at byte 18) becomes "aanana": out of order. */
    uint8_t *bad = malloc(bs);
    memcpy(bad, blk, bs);
    assert_memory_equal(bad + 18 + 3, "banana", 6);
    bad[18 + 3] = 'a';
    reseal(bad, bs);
    block_view v;
    sp_error err = {0};
    assert_int_equal(block_open(&v, bad, bs, "blk", &err), 0);
    assert_null(block_dir_build(&v, "blk", &err));
    assert_non_null(strstr(err.msg, "blk: keys out of order at record 2"));
    /* A trailer claiming more records than the entries hold. */
    memcpy(bad, blk, bs);
    bad[bs - 16] = 200;
    reseal(bad, bs);
    sp_error_clear(&err);
    assert_int_equal(block_open(&v, bad, bs, "blk", &err), 0);
    assert_null(block_dir_build(&v, "blk", &err));
    assert_non_null(strstr(err.msg, "corrupt entry"));
    free(bad);
    free(blk);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directory_agrees_with_block_find),
        cmocka_unit_test(test_bad_walk_gives_no_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
