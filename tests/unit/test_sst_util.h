/*
 * test_sst_util.h: what the SSTable unit tests share: a scratch directory
 * (test_dir.h), reproducible random record sets, writing a table from one, and raw file
 * access for the tests that inspect or damage the bytes. Header-only so
 * each test_sst*.c stays one self-contained executable.
 */
#ifndef SSTPIPE_TEST_SST_UTIL_H
#define SSTPIPE_TEST_SST_UTIL_H

#include "stages/sst/coding.h"
#include "stages/sst/format.h"
#include "stages/sst/table_writer.h"
#include "test_dir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

typedef struct trec {
    uint8_t *key;
    uint32_t klen;
    uint8_t *val;
    uint32_t vlen;
} trec;

typedef struct trecs {
    trec *r;
    size_t n;
} trecs;

static inline uint64_t t_rand(uint64_t *s) {
    /* splitmix64: tiny, and the same sequence everywhere */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline int t_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen < blen ? -1 : alen > blen);
}

static inline int t_rec_cmp(const void *x, const void *y) {
    const trec *a = x, *b = y;
    return t_key_cmp(a->key, a->klen, b->key, b->klen);
}

/* Sorts by key and drops duplicates (keeping the first). */
static inline void t_sort(trecs *s) {
    if (s->n == 0)
        return;
    qsort(s->r, s->n, sizeof *s->r, t_rec_cmp);
    size_t o = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (o && t_rec_cmp(&s->r[o - 1], &s->r[i]) == 0) {
            free(s->r[i].key);
            free(s->r[i].val);
            continue;
        }
        s->r[o++] = s->r[i];
    }
    s->n = o;
}

static inline void t_add(trecs *s, const uint8_t *k, uint32_t klen, const uint8_t *v,
                         uint32_t vlen) {
    s->r = realloc(s->r, (s->n + 1) * sizeof *s->r);
    trec *r = &s->r[s->n++];
    r->key = malloc(klen + 1);
    r->val = malloc(vlen + 1);
    memcpy(r->key, k, klen);
    if (vlen)
        memcpy(r->val, v, vlen);
    r->klen = klen;
    r->vlen = vlen;
}

/*
 * About n random records, sorted and unique. Keys share prefixes (a pool
 * of 16) so prefix compression is exercised; key bytes are 0x02..0xFE so
 * that "\x01" sorts before every key and "\xFF" after; some keys are long
 * (up to SP_MAX_KEY_BYTES). Values are 0..max_value random bytes.
 */
static inline trecs t_random(uint64_t seed, size_t n, uint32_t max_value) {
    trecs s = {0};
    uint8_t k[SP_MAX_KEY_BYTES], *v = malloc(max_value + 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = t_rand(&seed);
        uint32_t plen = (uint32_t)(r % 16) * 3, klen;
        if (r % 97 == 0)
            klen = SP_MAX_KEY_BYTES;
        else if (r % 13 == 0)
            klen = 1 + (uint32_t)(t_rand(&seed) % SP_MAX_KEY_BYTES);
        else
            klen = plen + 1 + (uint32_t)(t_rand(&seed) % 24);
        for (uint32_t j = 0; j < klen; j++)
            k[j] = j < plen ? (uint8_t)('A' + (r % 16)) : (uint8_t)(2 + t_rand(&seed) % 253);
        uint32_t vlen = (uint32_t)(t_rand(&seed) % (max_value + 1));
        if (t_rand(&seed) % 4 == 0)
            vlen = max_value;
        for (uint32_t j = 0; j < vlen; j++)
            v[j] = (uint8_t)t_rand(&seed);
        t_add(&s, k, klen, v, vlen);
    }
    free(v);
    t_sort(&s);
    return s;
}

static inline void t_free(trecs *s) {
    for (size_t i = 0; i < s->n; i++) {
        free(s->r[i].key);
        free(s->r[i].val);
    }
    free(s->r);
    s->r = NULL;
    s->n = 0;
}

/* Writes s as a table with options o; returns 0 or -1 with err filled. */
static inline int t_write_opts(const char *path, const table_options *o, const trecs *s,
                               table_stats *stats, sp_error *err) {
    table_writer *w = table_writer_init(path, o, err);
    if (!w)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        sp_record rec = {.key = s->r[i].key,
                         .key_len = s->r[i].klen,
                         .value = s->r[i].val,
                         .value_len = s->r[i].vlen,
                         .value_fd = -1};
        if (table_writer_add(w, &rec, err)) {
            table_writer_destroy(w);
            return -1;
        }
    }
    int rc = table_writer_finish(w, err);
    if (!rc && stats)
        *stats = *table_writer_stats(w);
    table_writer_destroy(w);
    return rc;
}

/* Writes s as a version 1 table; returns 0 or -1 with err filled. */
static inline int t_write(const char *path, uint32_t bs, uint32_t cs, uint32_t max_value,
                          const trecs *s, table_stats *stats, sp_error *err) {
    table_options o = {.block_size = bs, .cluster_size = cs, .max_value_bytes = max_value};
    return t_write_opts(path, &o, s, stats, err);
}

static inline uint8_t *t_read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static inline int t_write_file(const char *path, const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(b, 1, n, f) == n ? 0 : -1;
    return fclose(f) || rc ? -1 : 0;
}

/*
 * A version 2 table of f's n bytes (written now, its tail packed) laid out
 * as version 2's first layout (FORMAT.md), as sstpipe up to commit 9dbe327
 * wrote it: every region padded to the cluster size cs, the footer region
 * a cluster, each checksum over its padded region. The copy is malloc'd,
 * *len its size.
 */
static inline uint8_t *t_first_layout(const uint8_t *f, size_t n, uint32_t cs, size_t *len) {
    const uint8_t *ft = f + n - SST_FOOTER_BYTES;
    uint64_t io = sst_get_u64(ft), il = sst_get_u64(ft + 8), blocks = sst_get_u64(ft + 24);
    uint64_t data = blocks * sst_get_u32(ft + SST_FOOTER_BLOCK_SIZE);
    uint64_t meta = n - SST_FOOTER_BYTES - io - il;
    uint64_t dr = sst_align_up(data, cs), ir = sst_align_up(il, cs), mr = sst_align_up(meta, cs);
    *len = (size_t)(dr + ir + mr + cs);
    uint8_t *o = calloc(1, *len);
    memcpy(o, f, (size_t)data);
    memcpy(o + dr, f + io, (size_t)il);
    memcpy(o + dr + ir, f + io + il, (size_t)meta);
    uint8_t *oft = o + *len - SST_FOOTER_BYTES;
    memcpy(oft, ft, SST_FOOTER_BYTES);
    sst_put_u64(oft, dr);
    sst_put_u64(oft + 16, ir);
    sst_put_u64(oft + 56, *len);
    sst_put_u64(oft + 64, XXH3_64bits(o + dr, (size_t)ir));
    sst_put_u64(oft + SST_FOOTER_DATA_REGION_LENGTH, dr);
    sst_put_u64(oft + SST_FOOTER_RESERVED, XXH3_64bits(o + dr + ir, (size_t)mr));
    sst_put_u64(oft + SST_FOOTER_CHECKSUM, XXH3_64bits(o + *len - cs, cs - 16));
    return o;
}

static inline char *t_path(const char *dir, const char *name) {
    char *p = malloc(4200);
    snprintf(p, 4200, "%s/%s", dir, name);
    return p;
}

/* n records of t_random's keys with values of words from a small
 * vocabulary, which compress (and train a dictionary) as text does. */
static inline trecs t_wordy(uint64_t seed, size_t n, uint32_t max_value) {
    static const char *const words[] = {"the ",    "river ", "of ",  "Latgale ", "village ",
                                        "church ", "and ",   "was ", "built ",   "in ",
                                        "1905 ",   "{{",     "}}",   "[[",       "]]\n"};
    trecs s = t_random(seed, n, 0);
    uint8_t *v = malloc(max_value + 1);
    for (size_t i = 0; i < s.n; i++) {
        uint32_t want = (uint32_t)(t_rand(&seed) % (max_value + 1)), vlen = 0;
        while (vlen < want) {
            const char *w = words[t_rand(&seed) % (sizeof words / sizeof words[0])];
            size_t wl = strlen(w);
            if (vlen + wl > want)
                wl = want - vlen;
            memcpy(v + vlen, w, wl);
            vlen += (uint32_t)wl;
        }
        free(s.r[i].val);
        s.r[i].val = malloc(vlen + 1);
        memcpy(s.r[i].val, v, vlen);
        s.r[i].vlen = vlen;
    }
    free(v);
    return s;
}

/* The good table of the tests that damage copies of it: t_random(5, 300,
 * max_value) written with block size bs and cluster size cs as good.sst in
 * a scratch directory, its bytes in good, and bad.sst beside it for the
 * damaged copies. NULL when it cannot be written. */
typedef struct t_good {
    char *dir, *path, *bad;
    trecs s;
    table_stats st;
    uint8_t *good;
    size_t n;
} t_good;

static inline void t_good_free(t_good *g) {
    if (!g)
        return;
    t_free(&g->s);
    free(g->good);
    test_dir_remove(g->dir);
    free(g->path);
    free(g->bad);
    free(g);
}

static inline t_good *t_good_make(uint32_t bs, uint32_t cs, uint32_t max_value) {
    t_good *g = calloc(1, sizeof *g);
    g->dir = test_dir_make("sst-damage");
    g->path = t_path(g->dir, "good.sst");
    g->bad = t_path(g->dir, "bad.sst");
    g->s = t_random(5, 300, max_value);
    sp_error err = {0};
    if (t_write(g->path, bs, cs, max_value, &g->s, &g->st, &err) ||
        !(g->good = t_read_file(g->path, &g->n))) {
        t_good_free(g);
        return NULL;
    }
    return g;
}

#endif
