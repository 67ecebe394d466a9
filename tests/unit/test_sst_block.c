/*
 * test_sst_block.c: one data block, built and read back (block.h), and the
 * record-fits-a-block rule (format.h): exact fills, one byte too many,
 * restart boundaries, lookups of present and absent keys, and damaged
 * blocks that must be refused rather than read (keys out of order under a
 * matching checksum among them).
 */
#include "stages/sst/block.h"
#include "stages/sst/format.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <cmocka.h>

/* The entry size as FORMAT.md states it, computed independently. */
static size_t varint_len(uint64_t v) {
    size_t n = 1;
    for (; v >= 128; v >>= 7)
        n++;
    return n;
}

static size_t entry_size(size_t shared, size_t unshared, size_t vlen) {
    return varint_len(shared) + varint_len(unshared) + varint_len(vlen) + unshared + vlen;
}

static uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of a block holding these entries with n_restarts restarts. */
static size_t used_bytes(const block_view *v) {
    return v->entries_len + 4u * v->n_restarts + SST_BLOCK_TRAILER_FIXED;
}

static void test_fit_rule(void **state) {
    (void)state;
    sp_error err = {0};
    /* 512 - (4 restart + 20 trailer + 1 shared + 2 key_len + 1 value_len) - 320 = 164 would
     * leave no room for value_len's second byte; 163 fits with a 2-byte varint. */
    assert_int_equal(sst_max_record_bytes(512), SP_MAX_KEY_BYTES + 163);
    assert_int_equal(sst_max_record_bytes(1024), SP_MAX_KEY_BYTES + 675);
    assert_int_equal(sst_max_record_bytes(2048), SP_MAX_KEY_BYTES + 1699);
    assert_int_equal(sst_check_fit(512, 163, &err), 0);
    assert_int_not_equal(sst_check_fit(512, 164, &err), 0);
    assert_non_null(strstr(err.msg, "smallest block size that fits it is 1K"));
    sp_error_clear(&err);
    assert_int_equal(sst_check_fit(1024, 675, &err), 0);
    assert_int_not_equal(sst_check_fit(1024, 676, &err), 0);
    assert_non_null(strstr(err.msg, "block size 1K"));
    assert_non_null(strstr(err.msg, "smallest block size that fits it is 2K"));
    sp_error_clear(&err);
    /* The pipeline's default bound of 1 KiB needs 2K blocks. */
    assert_int_not_equal(sst_check_fit(1024, 1024, &err), 0);
    assert_non_null(strstr(err.msg, "2K"));
    sp_error_clear(&err);
    assert_int_equal(sst_check_fit(2048, 1024, &err), 0);
    assert_int_equal(sst_check_fit(8192, 1024, &err), 0);
    uint32_t max_at_1m = (uint32_t)(sst_max_record_bytes(SST_MAX_BLOCK_SIZE) - SP_MAX_KEY_BYTES);
    assert_int_equal(sst_check_fit(SST_MAX_BLOCK_SIZE, max_at_1m, &err), 0);
    assert_int_not_equal(sst_check_fit(SST_MAX_BLOCK_SIZE, max_at_1m + 1, &err), 0);
    assert_non_null(strstr(err.msg, "no block size"));
    /* Exactness at every block size: the bound fills an empty block to the byte. */
    for (uint32_t bs = SST_MIN_BLOCK_SIZE; bs <= SST_MAX_BLOCK_SIZE; bs *= 2) {
        size_t v = sst_max_record_bytes(bs) - SP_MAX_KEY_BYTES;
        assert_int_equal(entry_size(0, SP_MAX_KEY_BYTES, v) + 4 + SST_BLOCK_TRAILER_FIXED, bs);
    }
}

static void test_max_record_fills_block(void **state) {
    (void)state;
    block_builder *b = block_builder_init(1024);
    assert_non_null(b);
    uint8_t key[SP_MAX_KEY_BYTES], val[676];
    memset(key, 'k', sizeof key);
    memset(val, 'v', sizeof val);
    assert_false(block_builder_add(b, key, sizeof key, val, 676));
    assert_true(block_builder_add(b, key, sizeof key, val, 675));
    block_view v;
    sp_error err = {0};
    assert_int_equal(block_open(&v, block_builder_finish(b), 1024, "blk", &err), 0);
    assert_int_equal(used_bytes(&v), 1024);
    const void *got;
    size_t glen;
    assert_int_equal(block_find(&v, key, sizeof key, &got, &glen, "blk", &err), 1);
    assert_int_equal(glen, 675);
    assert_memory_equal(got, val, 675);
    block_builder_destroy(b);
}

/* Fills a block with records "key0000".. then one sized to take exactly the
 * remaining space; a value one byte longer must not fit. */
static void test_exact_fill_and_one_byte_more(void **state) {
    (void)state;
    const uint32_t bs = 4096;
    block_builder *b = block_builder_init(bs);
    uint8_t val[2048];
    memset(val, 'x', sizeof val);
    char key[16], prev[16] = "";
    size_t used = SST_BLOCK_TRAILER_FIXED, n = 0, restarts = 0;
    for (; n < 40; n++) {
        snprintf(key, sizeof key, "key%04zu", n);
        size_t shared = 0;
        if (n % 16 != 0)
            while (key[shared] == prev[shared])
                shared++;
        else
            restarts++;
        used += entry_size(shared, strlen(key) - shared, 50) + (n % 16 == 0 ? 4 : 0);
        assert_true(block_builder_add(b, (uint8_t *)key, strlen(key), val, 50));
        strcpy(prev, key);
    }
    /* Record 40 is not a restart (40 % 16 != 0) and shares "key00" with "key0039". */
    const char *last = "key0040";
    size_t room = bs - used, vlen = 0;
    while (entry_size(5, 2, vlen + 1) <= room)
        vlen++;
    assert_int_equal(entry_size(5, 2, vlen), room);
    assert_false(block_builder_add(b, (const uint8_t *)last, 7, val, vlen + 1));
    assert_true(block_builder_add(b, (const uint8_t *)last, 7, val, vlen));
    block_view v;
    sp_error err = {0};
    assert_int_equal(block_open(&v, block_builder_finish(b), bs, "blk", &err), 0);
    assert_int_equal(used_bytes(&v), bs);
    assert_int_equal(v.n_records, 41);
    assert_int_equal(v.n_restarts, restarts);
    const void *got;
    size_t glen;
    assert_int_equal(block_find(&v, (const uint8_t *)last, 7, &got, &glen, "blk", &err), 1);
    assert_int_equal(glen, vlen);
    block_builder_destroy(b);
}

/* Builds a block of n records key_0000.. and checks every lookup and walk. */
static void check_block_of(uint32_t n) {
    const uint32_t bs = 65536;
    block_builder *b = block_builder_init(bs);
    char key[32], val[32];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "key_%04u", i * 2);
        snprintf(val, sizeof val, "value %u", i);
        assert_true(block_builder_add(b, (uint8_t *)key, strlen(key), (uint8_t *)val, strlen(val)));
    }
    block_view v;
    sp_error err = {0};
    assert_int_equal(block_open(&v, block_builder_finish(b), bs, "blk", &err), 0);
    assert_int_equal(v.n_records, n);
    assert_int_equal(v.n_restarts, (n + 15) / 16);
    for (uint32_t r = 0; r < v.n_restarts; r++)
        assert_int_equal(v.data[u32_at(v.restarts + 4 * r)], 0); /* shared = 0 */
    block_iter it;
    block_iter_init(&it, &v);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(block_iter_next(&it, "blk", &err), 1);
        snprintf(key, sizeof key, "key_%04u", i * 2);
        snprintf(val, sizeof val, "value %u", i);
        assert_int_equal(it.key_len, strlen(key));
        assert_memory_equal(it.key, key, it.key_len);
        assert_int_equal(it.value_len, strlen(val));
        assert_memory_equal(it.value, val, it.value_len);
    }
    assert_int_equal(block_iter_next(&it, "blk", &err), 0);
    const void *got;
    size_t glen;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "key_%04u", i * 2);
        snprintf(val, sizeof val, "value %u", i);
        assert_int_equal(block_find(&v, (uint8_t *)key, strlen(key), &got, &glen, "blk", &err), 1);
        assert_int_equal(glen, strlen(val));
        assert_memory_equal(got, val, glen);
        /* absent: between this key and the next, and a proper prefix */
        snprintf(key, sizeof key, "key_%04u", i * 2 + 1);
        assert_int_equal(block_find(&v, (uint8_t *)key, strlen(key), &got, &glen, "blk", &err), 0);
        assert_int_equal(block_find(&v, (uint8_t *)key, 7, &got, &glen, "blk", &err), 0);
    }
    assert_int_equal(block_find(&v, (const uint8_t *)"a", 1, &got, &glen, "blk", &err), 0);
    assert_int_equal(block_find(&v, (const uint8_t *)"key_", 4, &got, &glen, "blk", &err), 0);
    assert_int_equal(block_find(&v, (const uint8_t *)"z", 1, &got, &glen, "blk", &err), 0);
    assert_false(err.set);
    block_builder_destroy(b);
}

static void test_restart_boundaries(void **state) {
    (void)state;
    const uint32_t counts[] = {1, 2, 15, 16, 17, 31, 32, 33, 48, 49, 500};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        check_block_of(counts[i]);
}

static void test_reset_reuses_builder(void **state) {
    (void)state;
    block_builder *b = block_builder_init(1024);
    assert_true(block_builder_empty(b));
    block_builder_add(b, (const uint8_t *)"zzz", 3, (const uint8_t *)"long value here", 15);
    block_builder_finish(b);
    block_builder_reset(b);
    assert_true(block_builder_empty(b));
    block_builder_add(b, (const uint8_t *)"a", 1, (const uint8_t *)"1", 1);
    block_view v;
    sp_error err = {0};
    assert_int_equal(block_open(&v, block_builder_finish(b), 1024, "blk", &err), 0);
    assert_int_equal(v.n_records, 1);
    /* The earlier, longer record's bytes must be gone: padding is zeros. */
    for (uint32_t i = v.entries_len; i < 1024 - used_bytes(&v) + v.entries_len; i++)
        assert_int_equal(v.data[i], 0);
    block_builder_destroy(b);
}

static uint8_t *built_block(uint32_t bs) {
    block_builder *b = block_builder_init(bs);
    char key[16];
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "k%03d", i);
        block_builder_add(b, (uint8_t *)key, strlen(key), (const uint8_t *)"vv", 2);
    }
    uint8_t *copy = malloc(bs);
    memcpy(copy, block_builder_finish(b), bs);
    block_builder_destroy(b);
    return copy;
}

static void reseal(uint8_t *blk, uint32_t bs) {
    uint64_t h = XXH3_64bits(blk, bs - 8);
    for (int i = 0; i < 8; i++)
        blk[bs - 8 + i] = (uint8_t)(h >> (8 * i));
}

static void test_damaged_blocks_are_refused(void **state) {
    (void)state;
    const uint32_t bs = 1024;
    const uint32_t positions[] = {0, 1, 100, 500, bs - 21, bs - 9, bs - 8, bs - 1};
    block_view v;
    for (size_t i = 0; i < sizeof positions / sizeof positions[0]; i++) {
        uint8_t *blk = built_block(bs);
        blk[positions[i]] ^= 0x10;
        sp_error err = {0};
        assert_int_equal(block_open(&v, blk, bs, "t.sst: block 3 at byte 3072", &err), -1);
        assert_non_null(strstr(err.msg, "t.sst: block 3 at byte 3072: block checksum mismatch"));
        free(blk);
    }
    /* Checksums that match over bad structure (what a buggy writer makes). */
    uint8_t *blk = built_block(bs);
    sp_error err = {0};
    blk[bs - 16] = 0; /* n_records low byte: 40 -> 0 */
    reseal(blk, bs);
    assert_int_equal(block_open(&v, blk, bs, "blk", &err), -1);
    assert_non_null(strstr(err.msg, "corrupt block trailer"));
    free(blk);

    blk = built_block(bs);
    sp_error_clear(&err);
    blk[bs - 20 - 12 + 0] = 7; /* restart 0 must be offset 0 */
    reseal(blk, bs);
    assert_int_equal(block_open(&v, blk, bs, "blk", &err), -1);
    assert_non_null(strstr(err.msg, "restart point 0"));
    free(blk);

    blk = built_block(bs);
    sp_error_clear(&err);
    blk[1] = 0; /* first entry's unshared key length: 4 -> 0 */
    reseal(blk, bs);
    assert_int_equal(block_open(&v, blk, bs, "blk", &err), 0);
    block_iter it;
    block_iter_init(&it, &v);
    assert_int_equal(block_iter_next(&it, "blk", &err), -1);
    assert_non_null(strstr(err.msg, "corrupt entry at byte 0"));
    const void *got;
    size_t glen;
    assert_int_equal(block_find(&v, (const uint8_t *)"k000", 4, &got, &glen, "blk", &err), -1);
    free(blk);
}

/* An entry of a block made by hand: shared prefix length, suffix, value. */
typedef struct hand_entry {
    uint32_t shared;
    const char *suffix, *value;
} hand_entry;

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A block of these n entries (all lengths under 128: one-byte varints),
 * restart points at every SST_RESTART_INTERVAL-th, sealed: the bytes a
 * writer would make whatever the keys' order. */
static uint8_t *hand_block(uint32_t bs, const hand_entry *e, uint32_t n) {
    uint8_t *blk = calloc(1, bs);
    assert_non_null(blk);
    uint32_t pos = 0, n_restarts = 0, restarts[8];
    for (uint32_t i = 0; i < n; i++) {
        if (i % SST_RESTART_INTERVAL == 0)
            restarts[n_restarts++] = pos;
        uint32_t ul = (uint32_t)strlen(e[i].suffix), vl = (uint32_t)strlen(e[i].value);
        blk[pos++] = (uint8_t)e[i].shared;
        blk[pos++] = (uint8_t)ul;
        blk[pos++] = (uint8_t)vl;
        memcpy(blk + pos, e[i].suffix, ul);
        memcpy(blk + pos + ul, e[i].value, vl);
        pos += ul + vl;
    }
    uint8_t *t = blk + bs - SST_BLOCK_TRAILER_FIXED - 4 * n_restarts;
    for (uint32_t i = 0; i < n_restarts; i++, t += 4)
        put_u32(t, restarts[i]);
    put_u32(t, pos);
    put_u32(t + 4, n);
    put_u32(t + 8, n_restarts);
    reseal(blk, bs);
    return blk;
}

/* Walks a hand-made block: 0 when every record came back, else -1 with
 * the walk's error in err. */
static int walk(const uint8_t *blk, uint32_t bs, sp_error *err) {
    block_view v;
    assert_int_equal(block_open(&v, blk, bs, "blk", err), 0);
    block_iter it;
    block_iter_init(&it, &v);
    int rc;
    while ((rc = block_iter_next(&it, "blk", err)) == 1)
        ;
    return rc;
}

/* A block whose checksum matches but whose keys do not increase (what a
 * buggy writer makes) is refused by the walk every reader and merge make,
 * wherever the keys differ: at the first byte after the shared prefix
 * (where a writer's longest shared prefix makes keys differ), further on
 * (a shorter shared prefix, which the format allows), or nowhere. */
static void test_keys_out_of_order_are_refused(void **state) {
    (void)state;
    const uint32_t bs = 512;
    const hand_entry bad[][2] = {
        {{0, "b", "1"}, {0, "a", "2"}},    /* "b" then "a" */
        {{0, "ab", "1"}, {0, "aa", "2"}},  /* equal first bytes: "ab" then "aa" */
        {{0, "abc", "1"}, {2, "a", "2"}},  /* "abc" then "aba" */
        {{0, "ab", "1"}, {1, "b", "2"}},   /* "ab" twice */
        {{0, "abc", "1"}, {0, "ab", "2"}}, /* a proper prefix after its key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *blk = hand_block(bs, bad[i], 2);
        sp_error err = {0};
        assert_int_equal(walk(blk, bs, &err), -1);
        assert_non_null(strstr(err.msg, "keys out of order at record 1"));
        free(blk);
    }
    const hand_entry good[][2] = {
        {{0, "a", "1"}, {0, "b", "2"}},    /* "a" then "b" */
        {{0, "ab", "1"}, {2, "c", "2"}},   /* the key before is a proper prefix */
        {{0, "ab", "1"}, {0, "abc", "2"}}, /* the same, no prefix shared */
        {{0, "abc", "1"}, {1, "bd", "2"}}, /* "abc" then "abd", a shorter prefix */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint8_t *blk = hand_block(bs, good[i], 2);
        sp_error err = {0};
        assert_int_equal(walk(blk, bs, &err), 0);
        free(blk);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_rule),
        cmocka_unit_test(test_max_record_fills_block),
        cmocka_unit_test(test_exact_fill_and_one_byte_more),
        cmocka_unit_test(test_restart_boundaries),
        cmocka_unit_test(test_reset_reuses_builder),
        cmocka_unit_test(test_damaged_blocks_are_refused),
        cmocka_unit_test(test_keys_out_of_order_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
