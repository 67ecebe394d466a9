/*
 * profile_keys.c: drawing the key sequence; see profile_keys.h.
 *
 * Keys come from the blocks themselves, read through libsstpipe like any
 * other reader: a block's first key from the index, then the library's
 * iterator from it up to the next block's first key, every block checked
 * as it is read. A block's keys are kept once read, up to KEPT_BYTES in
 * all: when the keys drawn outnumber the blocks, a block is drawn many
 * times, and reading it again each time (the block and the start of the
 * next one, where the walk sees the block end) would be most of a profile's
 * CPU. Past that bound a block not kept is read at each draw, so memory
 * is the keys drawn and a fixed amount. Blocks are chosen uniformly and then
 * a record within the block, so every block (every aligned read a lookup
 * makes) is equally likely; records in blocks holding fewer records are
 * drawn more often than records in fuller blocks, which is the right
 * weighting for timing reads and is documented in stages/profile/README.md.
 */
#include "stages/profile/profile_keys.h"

#include "stages/common/key.h"
#include "stages/common/record.h"
#include "stages/sst/coding.h"
#include "stages/sst/sstpipe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The bytes of block keys kept for later draws of their block (see above):
 * every block of a table of a few hundred thousand records, a part of a
 * larger one. */
#define KEPT_BYTES (8u << 20)

/* Draws that may be rejected (a key of the maximal length cannot grow, a
 * successor may be the next key) before giving up on the file. */
#define MAX_REJECTS 10000

/* splitmix64: small, fast, and the same sequence everywhere for a seed. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rand_below(uint64_t *s, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = next_rand(s);
    while (x >= limit);
    return x % n;
}

static int grow(profile_keys *k, uint64_t *cap, uint64_t used, size_t need, sp_error *err) {
    if (used + need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap * 2 : 1 << 16;
    while (c < used + need)
        c *= 2;
    uint8_t *p = realloc(k->bytes, c);
    if (!p)
        return sp_errorf(err, "out of memory for %llu bytes of profile keys",
                         (unsigned long long)c);
    k->bytes = p;
    *cap = c;
    return 0;
}

/* The records of one block, read with the library's iterator: the keys
 * from the block's first (from the index) up to the next block's first. */
typedef struct block_keys {
    uint8_t *bytes;
    uint64_t cap;
    uint32_t *start; /* key i is bytes[start[i] .. start[i + 1]) */
    uint32_t n, start_cap;
} block_keys;

static int block_keys_add(block_keys *bk, const void *key, size_t klen, sp_error *err) {
    uint32_t used = bk->n ? bk->start[bk->n] : 0;
    if (bk->n + 2 > bk->start_cap) {
        uint32_t c = bk->start_cap ? 2 * bk->start_cap : 256;
        uint32_t *p = realloc(bk->start, c * sizeof *p);
        if (!p)
            return sp_errorf(err, "out of memory for the keys of a block");
        bk->start = p;
        bk->start_cap = c;
    }
    if (used + klen > bk->cap) {
        uint64_t c = bk->cap ? 2 * bk->cap : 1 << 16;
        while (c < used + klen)
            c *= 2;
        uint8_t *p = realloc(bk->bytes, c);
        if (!p)
            return sp_errorf(err, "out of memory for the keys of a block");
        bk->bytes = p;
        bk->cap = c;
    }
    memcpy(bk->bytes + used, key, klen);
    bk->start[bk->n] = used;
    bk->start[++bk->n] = used + (uint32_t)klen;
    return 0;
}

/* Block b's keys into bk: an iterator from its first key, stopped at the
 * next block's first. The iterator checks every block it reads. */
static int read_block_keys(sstpipe_table *t, uint64_t b, block_keys *bk, sp_error *err) {
    bk->n = 0;
    size_t flen = 0, stop_len = 0;
    const void *first = sstpipe_block_first_key(t, b, &flen);
    const void *stop = sstpipe_block_first_key(t, b + 1, &stop_len);
    sstpipe_iter *it = sstpipe_iter_new(t, first, flen, NULL, 0);
    if (!it)
        return sp_errorf(err, "%s: out of memory for an iterator", sstpipe_path(t));
    const void *k, *v;
    size_t kl, vl;
    char *msg = NULL;
    int rc;
    while ((rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1 &&
           (!stop || sp_key_cmp(k, kl, stop, stop_len) < 0))
        if (block_keys_add(bk, k, kl, err)) {
            sstpipe_iter_free(it);
            return -1;
        }
    sstpipe_iter_free(it);
    if (rc < 0) {
        sp_errorf(err, "%s", msg ? msg : "out of memory");
        sstpipe_free(msg);
        return -1;
    }
    if (bk->n == 0)
        return sp_errorf(err, "%s: block %llu: no record from its first key on", sstpipe_path(t),
                         (unsigned long long)b);
    return 0;
}

/* The blocks' keys kept so far: block b's in kept[b] (n 0: not kept). */
typedef struct kept_blocks {
    block_keys *kept;
    uint64_t bytes;
} kept_blocks;

/* Block b's keys: kept ones, or read into scratch and kept, exactly sized,
 * while the bound allows. */
static const block_keys *block_keys_of(sstpipe_table *t, uint64_t b, kept_blocks *kb,
                                       block_keys *scratch, sp_error *err) {
    if (kb->kept[b].n)
        return &kb->kept[b];
    if (read_block_keys(t, b, scratch, err))
        return NULL;
    uint32_t n = scratch->n, used = scratch->start[n];
    uint64_t size = used + (uint64_t)(n + 1) * sizeof *scratch->start;
    if (kb->bytes + size > KEPT_BYTES)
        return scratch;
    block_keys *k = &kb->kept[b];
    k->bytes = malloc(used);
    k->start = malloc((n + 1) * sizeof *k->start);
    if (!k->bytes || !k->start) {
        sp_errorf(err, "out of memory for the keys of a block");
        return NULL; /* freed with the others, n still 0 */
    }
    memcpy(k->bytes, scratch->bytes, used);
    memcpy(k->start, scratch->start, (n + 1) * sizeof *k->start);
    k->n = n;
    kb->bytes += size;
    return k;
}

/* One record drawn uniformly from a uniformly drawn block: its key into
 * key/klen; with want_absent, the key with 0x00 appended, 0 returned when
 * that is not guaranteed absent (the caller draws again). */
static int draw_one(sstpipe_table *t, uint64_t blocks, kept_blocks *kb, block_keys *scratch,
                    uint64_t *rng, bool want_absent, uint8_t *key, uint32_t *klen, sp_error *err) {
    uint64_t b = rand_below(rng, blocks);
    const block_keys *bk = block_keys_of(t, b, kb, scratch, err);
    if (!bk)
        return -1;
    uint32_t j = (uint32_t)rand_below(rng, bk->n);
    *klen = bk->start[j + 1] - bk->start[j];
    memcpy(key, bk->bytes + bk->start[j], *klen);
    if (!want_absent)
        return 1;
    if (*klen == SP_MAX_KEY_BYTES)
        return 0;
    key[(*klen)++] = 0;
    /* The next key: later in this block, or the next block's first. */
    const void *next = NULL;
    size_t nlen = 0;
    if (j + 1 < bk->n) {
        next = bk->bytes + bk->start[j + 1];
        nlen = bk->start[j + 2] - bk->start[j + 1];
    } else {
        next = sstpipe_block_first_key(t, b + 1, &nlen);
    }
    return next && sp_key_cmp(next, nlen, key, *klen) == 0 ? 0 : 1;
}

int profile_keys_draw(sstpipe_table *t, uint64_t n, double misses_pct, uint64_t seed,
                      profile_keys *keys, sp_error *err) {
    memset(keys, 0, sizeof *keys);
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    if (info.data_blocks == 0)
        return sp_errorf(err, "%s: the table has no records to look up", sstpipe_path(t));
    keys->n = n;
    keys->start = malloc((n + 1) * sizeof *keys->start);
    keys->absent = calloc(n ? n : 1, sizeof *keys->absent);
    block_keys bk = {0};
    kept_blocks kb = {.kept = calloc(info.data_blocks, sizeof *kb.kept)};
    XXH3_state_t *h = XXH3_createState();
    if (!keys->start || !keys->absent || !kb.kept || !h) {
        XXH3_freeState(h);
        free(kb.kept);
        return sp_errorf(err, "out of memory for %llu profile keys", (unsigned long long)n);
    }
    XXH3_64bits_reset(h);
    uint64_t rng = seed, cap = 0, used = 0;
    uint64_t absent_left = (uint64_t)llround((double)n * misses_pct / 100.0);
    keys->n_absent = absent_left;
    unsigned rejects = 0;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0;) {
        /* Selection sampling: exactly n_absent of the n positions, each
         * set of positions equally likely. */
        bool absent = rand_below(&rng, n - i) < absent_left;
        uint8_t key[SP_MAX_KEY_BYTES + 1];
        uint32_t klen = 0;
        int got;
        do {
            got = draw_one(t, info.data_blocks, &kb, &bk, &rng, absent, key, &klen, err);
        } while (got == 0 && ++rejects < MAX_REJECTS);
        if (got <= 0) {
            rc = got < 0
                     ? -1
                     : sp_errorf(err, "%s: cannot find keys guaranteed absent", sstpipe_path(t));
            break;
        }
        if (grow(keys, &cap, used, klen, err)) {
            rc = -1;
            break;
        }
        memcpy(keys->bytes + used, key, klen);
        keys->start[i] = used;
        keys->absent[i] = absent;
        absent_left -= absent;
        uint8_t len_le[4];
        sst_put_u32(len_le, klen);
        XXH3_64bits_update(h, len_le, 4);
        XXH3_64bits_update(h, key, klen);
        used += klen;
        i++;
    }
    keys->start[n] = used;
    keys->hash = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    free(bk.bytes);
    free(bk.start);
    for (uint64_t b = 0; b < info.data_blocks; b++) {
        free(kb.kept[b].bytes);
        free(kb.kept[b].start);
    }
    free(kb.kept);
    return rc;
}

void profile_keys_destroy(profile_keys *keys) {
    free(keys->bytes);
    free(keys->start);
    free(keys->absent);
    memset(keys, 0, sizeof *keys);
}
