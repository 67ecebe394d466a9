/*
 * test_sstpipe_set.c: libsstpipe on table sets (sstpipe.h "Table sets"):
 * random record sets split into sets of several shapes (one shard; many;
 * empty shards; split points that are prefixes of keys, or keys
 * themselves) answer exactly as the one table of the same records: every
 * key and misses around each, a full scan, and prefix and from scans that
 * cross shard boundaries; sstpipe_info sums, the block numbering across
 * shards, and the shard calls; batched lookups (sstpipe_get_many) across
 * the shards answer as single ones, mapped and with direct I/O. And every check at open refuses its
 * defect, naming the manifest and shard: a key below or above its shard's
 * range, counts or options that disagree with the manifest, a damaged last
 * block; a damaged middle block is an error at lookup naming the shard
 * file, never data.
 */
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_set.h"
#include "test_sst_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test_get_many.h"

#define OPTS_FMT                                                                                   \
    "{\"format_version\": 1, \"block_size\": %u, \"cluster_size\": 512, "                          \
    "\"max_value_bytes\": %u, \"restart_interval\": 16, \"checksum\": \"xxh3-64\"}"

static char *dir;

static int setup(void **state) {
    (void)state;
    return (dir = test_dir_make("sstpipe-set")) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(dir);
}

typedef struct split {
    const uint8_t *k;
    size_t len;
} split;

/* Writes recs as a set under dir/name with shards cut at the n-1 splits
 * (increasing), through the writer the cluster build uses. */
static char *make_set(const char *name, const trecs *recs, const split *splits, size_t n,
                      uint32_t bs, uint32_t vmax) {
    char *sd = t_path(dir, name);
    mkdir(sd, 0755);
    table_set_shard *sh = calloc(n, sizeof *sh);
    char(*sums)[TABLE_SET_CHECKSUM_HEX] = calloc(n, sizeof *sums);
    char(*names)[32] = calloc(n, sizeof *names);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        table_set_shard *s = &sh[i];
        if (i > 0)
            *s = (table_set_shard){
                .has_lo = true, .lo = splits[i - 1].k, .lo_len = splits[i - 1].len};
        if (i + 1 < n) {
            s->has_hi = true;
            s->hi = splits[i].k;
            s->hi_len = splits[i].len;
        }
        snprintf(names[i], 32, "s%zu.sst", i);
        s->file = names[i];
        trecs part = {0};
        while (at < recs->n && table_set_shard_holds(s, recs->r[at].key, recs->r[at].klen)) {
            t_add(&part, recs->r[at].key, recs->r[at].klen, recs->r[at].val, recs->r[at].vlen);
            at++;
        }
        char *p = t_path(sd, names[i]);
        table_stats st = {0};
        sp_error err = {0};
        if (t_write(p, bs, 512, vmax, &part, &st, &err))
            fail_msg("%s", err.msg);
        s->records = st.records;
        s->bytes = st.file_size;
        assert_int_equal(table_set_file_checksum(p, sums[i], &err), 0);
        s->checksum = sums[i];
        free(p);
        t_free(&part);
    }
    assert_int_equal(at, recs->n);
    char opts[256];
    snprintf(opts, sizeof opts, OPTS_FMT, bs, vmax);
    sp_error err = {0};
    if (table_set_write_manifest(sd, sh, n, opts, "[]", &err))
        fail_msg("%s", err.msg);
    free(sh);
    free(sums);
    free(names);
    return sd;
}

/* Both give the same records from it, in the same order. */
static void same_scan(sstpipe_table *a, sstpipe_table *b, const void *from, size_t flen,
                      const void *prefix, size_t plen) {
    sstpipe_iter *x = sstpipe_iter_new(a, from, flen, prefix, plen);
    sstpipe_iter *y = sstpipe_iter_new(b, from, flen, prefix, plen);
    for (;;) {
        const void *k1, *v1, *k2, *v2;
        size_t kl1, vl1, kl2, vl2;
        char *e = NULL;
        int r1 = sstpipe_iter_next(x, &k1, &kl1, &v1, &vl1, &e);
        int r2 = sstpipe_iter_next(y, &k2, &kl2, &v2, &vl2, &e);
        if (e)
            fail_msg("%s", e);
        assert_int_equal(r1, r2);
        if (r1 == 0)
            break;
        assert_int_equal(kl1, kl2);
        assert_memory_equal(k1, k2, kl1);
        assert_int_equal(vl1, vl2);
        if (vl1)
            assert_memory_equal(v1, v2, vl1);
    }
    sstpipe_iter_free(x);
    sstpipe_iter_free(y);
}

static void same_get(sstpipe_table *a, sstpipe_table *b, const uint8_t *k, size_t klen) {
    const void *v1 = NULL, *v2 = NULL;
    size_t l1 = 0, l2 = 0;
    char *e = NULL;
    int r1 = sstpipe_get(a, k, klen, &v1, &l1, &e);
    int r2 = sstpipe_get(b, k, klen, &v2, &l2, &e);
    if (e)
        fail_msg("%s", e);
    assert_int_equal(r1, r2);
    if (r1 == 1) {
        assert_int_equal(l1, l2);
        if (l1)
            assert_memory_equal(v1, v2, l1);
    }
}

/* The set at sd reads as the table at one: every answer compared. */
static void same_as(const char *one_path, const char *sd, size_t nshards, const trecs *recs) {
    char *e = NULL;
    sstpipe_table *one = sstpipe_open(one_path, &e), *set = sstpipe_open(sd, &e);
    if (!one || !set)
        fail_msg("%s", e);
    assert_true(sstpipe_is_set(set));
    assert_false(sstpipe_is_set(one));
    assert_int_equal(sstpipe_shard_count(set), nshards);
    assert_int_equal(sstpipe_shard_count(one), 1);
    assert_ptr_equal(sstpipe_shard(one, 0), one);
    assert_null(sstpipe_shard(set, nshards));
    sstpipe_info a, b;
    sstpipe_info_get(one, &a);
    sstpipe_info_get(set, &b);
    assert_int_equal(a.records, b.records);
    assert_int_equal(a.key_bytes, b.key_bytes);
    assert_int_equal(a.value_bytes, b.value_bytes);
    assert_int_equal(a.block_size, b.block_size);
    assert_int_equal(a.max_value_bytes, b.max_value_bytes);
    uint64_t blocks = 0, records = 0;
    for (size_t i = 0; i < nshards; i++) {
        sstpipe_info f;
        sstpipe_info_get(sstpipe_shard(set, i), &f);
        /* Set block blocks+j is the shard's block j. */
        for (uint64_t j = 0; j < f.data_blocks; j++) {
            size_t l1, l2;
            const void *k1 = sstpipe_block_first_key(set, blocks + j, &l1);
            const void *k2 = sstpipe_block_first_key(sstpipe_shard(set, i), j, &l2);
            assert_non_null(k1);
            assert_int_equal(l1, l2);
            assert_memory_equal(k1, k2, l1);
        }
        blocks += f.data_blocks;
        records += f.records;
        const void *lo, *hi;
        size_t lol, hil;
        assert_int_equal(sstpipe_shard_range(set, i, &lo, &lol, &hi, &hil), 0);
        assert_true((lo == NULL) == (i == 0));
        assert_true((hi == NULL) == (i + 1 == nshards));
    }
    assert_int_equal(blocks, b.data_blocks);
    assert_int_equal(records, b.records);
    size_t dummy;
    assert_null(sstpipe_block_first_key(set, blocks, &dummy));
    const void *lo, *hi;
    size_t lol, hil;
    assert_int_equal(sstpipe_shard_range(set, nshards, &lo, &lol, &hi, &hil), -1);

    uint8_t probe[SP_MAX_KEY_BYTES + 1];
    for (size_t i = 0; i < recs->n; i++) {
        const trec *r = &recs->r[i];
        same_get(one, set, r->key, r->klen);
        memcpy(probe, r->key, r->klen);
        probe[r->klen] = 0;
        same_get(one, set, probe, r->klen + 1); /* just after: a miss */
        same_get(one, set, probe, r->klen - 1); /* a prefix: mostly a miss */
        if (i % 7 == 0) {
            /* Scans from the key, and of its prefixes of several lengths. */
            same_scan(one, set, r->key, r->klen, NULL, 0);
            for (size_t pl = 1; pl <= r->klen && pl <= 4; pl++)
                same_scan(one, set, NULL, 0, r->key, pl);
            same_scan(one, set, r->key, r->klen, r->key, 1);
        }
    }
    same_scan(one, set, NULL, 0, NULL, 0);
    same_scan(one, set, "\x01", 1, NULL, 0);
    same_scan(one, set, "\xff", 1, NULL, 0);
    same_scan(one, set, NULL, 0, "\xff", 1);
    get_many_as_get(set, recs, nshards);
    sstpipe_close(set);
    sstpipe_close(one);
}

static void test_shapes(void **state) {
    (void)state;
    trecs recs = t_random(42, 3000, 100);
    char *one = t_path(dir, "one.sst");
    sp_error err = {0};
    assert_int_equal(t_write(one, 1024, 512, 100, &recs, NULL, &err), 0);
    /* One shard. */
    char *sd = make_set("set1", &recs, NULL, 1, 1024, 100);
    same_as(one, sd, 1, &recs);
    free(sd);
    /* Split at keys of the table (a shard starts with its lo), at
     * prefixes of keys (the split falls inside a run of keys sharing it),
     * and with empty shards (two splits with no key between, and a shard
     * beyond the last key). */
    const trec *r = recs.r;
    size_t n = recs.n;
    uint8_t pre[3];
    memcpy(pre, r[n / 2].key, r[n / 2].klen < 3 ? r[n / 2].klen : 3);
    split s[] = {{r[n / 5].key, r[n / 5].klen},
                 {r[n / 5 + 1].key, r[n / 5 + 1].klen},
                 {pre, r[n / 2].klen < 3 ? r[n / 2].klen : 3},
                 {r[4 * n / 5].key, r[4 * n / 5].klen},
                 {(const uint8_t *)"\xfe\xfe\xfe\xfe\xfe\xfe\xfe\xfe\xfe\xfe\xfe\xfe", 12},
                 {(const uint8_t *)"\xff", 1}};
    sd = make_set("set7", &recs, s, 7, 1024, 100);
    same_as(one, sd, 7, &recs);
    free(sd);
    /* Many small shards: one every 100 keys. */
    split many[29];
    for (size_t i = 0; i < 29; i++)
        many[i] = (split){r[(i + 1) * 100].key, r[(i + 1) * 100].klen};
    sd = make_set("set30", &recs, many, 30, 1024, 100);
    same_as(one, sd, 30, &recs);
    /* Direct I/O works on a set too (where the file system has it). */
    sstpipe_options *o = sstpipe_options_new();
    sstpipe_options_set_direct_io(o, true);
    char *e = NULL;
    sstpipe_table *t = sstpipe_open_with(sd, o, &e);
    if (t) {
        const void *v;
        size_t vl;
        assert_int_equal(sstpipe_get(t, r[777].key, r[777].klen, &v, &vl, &e), 1);
        assert_int_equal(vl, r[777].vlen);
        get_many_as_get(t, &recs, 8);
        sstpipe_close(t);
    } else {
        assert_non_null(strstr(e, "O_DIRECT"));
        sstpipe_free(e);
    }
    sstpipe_options_free(o);
    free(sd);
    free(one);
    t_free(&recs);
}

static void refused_open(const char *sd, const char *want) {
    char *e = NULL;
    sstpipe_table *t = sstpipe_open(sd, &e);
    if (t) {
        sstpipe_close(t);
        fail_msg("a set with \"%s\" was opened", want);
    }
    if (!strstr(e, want) || !strstr(e, "tableset.json"))
        fail_msg("message \"%s\" does not name the manifest and say \"%s\"", e, want);
    sstpipe_free(e);
}

/* Rewrites the manifest's text: the first `from` replaced by `to`. */
static void edit_manifest(const char *sd, const char *from, const char *to) {
    char *p = t_path(sd, TABLE_SET_MANIFEST);
    size_t len;
    uint8_t *b = t_read_file(p, &len);
    char *text = calloc(1, len + strlen(to) + 1);
    char *at = strstr((char *)b, from);
    assert_non_null(at);
    size_t pre = (size_t)(at - (char *)b);
    memcpy(text, b, pre);
    strcpy(text + pre, to);
    memcpy(text + pre + strlen(to), at + strlen(from), len - pre - strlen(from));
    assert_int_equal(t_write_file(p, (uint8_t *)text, strlen(text)), 0);
    free(text);
    free(b);
    free(p);
}

static void test_refused(void **state) {
    (void)state;
    uint8_t k[4] = {'M', 'M', 'M', 'M'};
    trecs recs = {0};
    for (int i = 0; i < 400; i++) {
        k[1] = (uint8_t)('A' + i / 26 % 26);
        k[2] = (uint8_t)('A' + i % 26);
        k[3] = (uint8_t)('0' + i % 10);
        t_add(&recs, k, 4, (const uint8_t *)"value", 5);
    }
    t_sort(&recs);
    split s[] = {{(const uint8_t *)"MM", 2}}; /* shard 0: keys < "MM" */
    /* A key of shard 1 below its lo: its manifest claims lo "MN" (and so
     * shard 0's hi), but shard 1 holds keys from "MM" on. */
    char *sd = make_set("low", &recs, s, 2, 1024, 16);
    edit_manifest(sd, "\"4d4d\"", "\"4d4e\"");
    edit_manifest(sd, "\"4d4d\"", "\"4d4e\"");
    refused_open(sd, "shard 1 (s1.sst): its first key 4d4d41");
    refused_open(sd, "lies outside its range [4d4e, null)");
    free(sd);
    /* A key of shard 0 above its hi: lo/hi claim "ML", shard 0 holds "MA..". */
    split s2[] = {{(const uint8_t *)"MZ", 2}};
    sd = make_set("high", &recs, s2, 2, 1024, 16);
    edit_manifest(sd, "\"4d5a\"", "\"4d4c\"");
    edit_manifest(sd, "\"4d5a\"", "\"4d4c\"");
    refused_open(sd, "shard 0 (s0.sst): its last key");
    free(sd);
    /* Counts and options that are not the shard's. */
    sd = make_set("counts", &recs, s, 2, 1024, 16);
    edit_manifest(sd, "\"records\": 312", "\"records\": 313");
    refused_open(sd, "shard 0 (s0.sst): its footer says 312 records in");
    free(sd);
    sd = make_set("opts", &recs, s, 2, 1024, 16);
    edit_manifest(sd, "\"max_value_bytes\": 16", "\"max_value_bytes\": 17");
    refused_open(sd, "shard 0 (s0.sst): its options (block_size 1024, cluster_size 512, "
                     "max_value_bytes 16");
    /* A damaged last block of shard 0: refused at open (its last key is read). */
    char *p = t_path(sd, "s0.sst");
    edit_manifest(sd, "\"max_value_bytes\": 17", "\"max_value_bytes\": 16");
    size_t len;
    uint8_t *b = t_read_file(p, &len);
    sstpipe_table *t = sstpipe_open(p, NULL);
    sstpipe_info f;
    sstpipe_info_get(t, &f);
    sstpipe_close(t);
    assert_true(f.data_blocks >= 2);
    b[(f.data_blocks - 1) * f.block_size + 3] ^= 0x40;
    assert_int_equal(t_write_file(p, b, len), 0);
    refused_open(sd, "s0.sst: block");
    /* A damaged first block instead: open passes (its index is whole), and
     * a lookup there is an error naming the shard file, not data. */
    b[(f.data_blocks - 1) * f.block_size + 3] ^= 0x40;
    b[3] ^= 0x40;
    assert_int_equal(t_write_file(p, b, len), 0);
    char *e = NULL;
    t = sstpipe_open(sd, &e);
    if (!t)
        fail_msg("%s", e);
    const void *v;
    size_t vl;
    const trec *in1 = &recs.r[recs.n - 1]; /* "MP..": in shard 1 */
    assert_int_equal(sstpipe_get(t, recs.r[0].key, recs.r[0].klen, &v, &vl, &e), -1);
    assert_non_null(strstr(e, "s0.sst: block 0 at byte 0"));
    sstpipe_free(e);
    e = NULL;
    assert_int_equal(sstpipe_get(t, in1->key, in1->klen, &v, &vl, &e), 1);
    sstpipe_close(t);
    free(b);
    free(p);
    free(sd);
    t_free(&recs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
