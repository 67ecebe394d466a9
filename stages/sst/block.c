/*
 * block.c: building one data block in memory, and checking, walking and
 * searching one that was read back; see block.h and FORMAT.md.
 *
 * The reader treats a block as untrusted even after its checksum matched (a
 * buggy writer also produces matching checksums): every length is checked
 * against the block's bounds before it is used.
 */
#include "stages/sst/block.h"

#include "stages/common/key.h"
#include "stages/sst/block_entry.h"
#include "stages/sst/coding.h"
#include "stages/sst/format.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
/* XXH3 through libxxhash's run-time dispatch: its AVX2 or AVX-512 code where
 * the CPU has it, where the plain entry point is the SSE2 of Debian's
 * baseline; the same hashes at a higher rate on 8 KiB blocks (the check
 * every reader makes of every block, and most of verify's work). */
#include <xxh_x86dispatch.h>
#endif

/* ---------------------------------------------------------------- builder */

struct block_builder {
    uint32_t block_size;
    uint8_t *buf;
    uint32_t entries_len;
    uint32_t n_records;
    uint32_t n_restarts;
    uint32_t *restarts; /* room for every restart a block_size block can hold */
    uint32_t last_len;
    uint8_t last_key[SP_MAX_KEY_BYTES];
};

block_builder *block_builder_init(uint32_t block_size) {
    block_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->block_size = block_size;
    /* The smallest entry is 4 bytes (three 1-byte varints, one key byte). */
    size_t max_restarts = block_size / 4 / SST_RESTART_INTERVAL + 1;
    b->restarts = malloc(max_restarts * sizeof *b->restarts);
    if (posix_memalign((void **)&b->buf, 4096, block_size) != 0)
        b->buf = NULL;
    if (!b->restarts || !b->buf) {
        block_builder_destroy(b);
        return NULL;
    }
    return b;
}

/* Entry bytes of the next record, and its shared prefix length. */
static size_t entry_bytes(const block_builder *b, const uint8_t *key, size_t klen, size_t vlen,
                          size_t *shared) {
    *shared = b->n_records % SST_RESTART_INTERVAL == 0
                  ? 0
                  : entry_shared_prefix(b->last_key, b->last_len, key, klen);
    size_t unshared = klen - *shared;
    return sst_varint_len(*shared) + sst_varint_len(unshared) + sst_varint_len(vlen) + unshared +
           vlen;
}

bool block_builder_add(block_builder *b, const uint8_t *key, size_t klen, const uint8_t *val,
                       size_t vlen) {
    /* The shared prefix is found once, for the size and for the entry: the
     * table writer's path, once per record. */
    size_t shared;
    size_t restarts = b->n_restarts + (b->n_records % SST_RESTART_INTERVAL == 0);
    uint64_t need = (uint64_t)b->entries_len + entry_bytes(b, key, klen, vlen, &shared) +
                    4 * restarts + SST_BLOCK_TRAILER_FIXED;
    if (need > b->block_size)
        return false;
    if (b->n_records % SST_RESTART_INTERVAL == 0)
        b->restarts[b->n_restarts++] = b->entries_len;
    uint8_t *p = b->buf + b->entries_len;
    p += sst_put_varint(p, shared);
    p += sst_put_varint(p, klen - shared);
    p += sst_put_varint(p, vlen);
    memcpy(p, key + shared, klen - shared);
    p += klen - shared;
    memcpy(p, val, vlen);
    p += vlen;
    b->entries_len = (uint32_t)(p - b->buf);
    b->n_records++;
    memcpy(b->last_key + shared, key + shared, klen - shared);
    b->last_len = (uint32_t)klen;
    return true;
}

bool block_builder_empty(const block_builder *b) {
    return b->n_records == 0;
}

const uint8_t *block_builder_finish(block_builder *b) {
    uint32_t bs = b->block_size;
    uint32_t trailer = 4 * b->n_restarts + SST_BLOCK_TRAILER_FIXED;
    memset(b->buf + b->entries_len, 0, bs - trailer - b->entries_len);
    uint8_t *t = b->buf + bs - trailer;
    for (uint32_t i = 0; i < b->n_restarts; i++, t += 4)
        sst_put_u32(t, b->restarts[i]);
    sst_put_u32(t, b->entries_len);
    sst_put_u32(t + 4, b->n_records);
    sst_put_u32(t + 8, b->n_restarts);
    sst_put_u64(t + 12, XXH3_64bits(b->buf, bs - 8));
    return b->buf;
}

void block_builder_reset(block_builder *b) {
    b->entries_len = b->n_records = b->n_restarts = b->last_len = 0;
}

void block_builder_destroy(block_builder *b) {
    if (!b)
        return;
    free(b->buf);
    free(b->restarts);
    free(b);
}

/* ---------------------------------------------------------------- reader */

/* The trailer's counts against the block's size; fills v without the
 * restart array's order. */
static int open_trailer(block_view *v, const uint8_t *data, uint32_t block_size, const char *what,
                        sp_error *err) {
    const uint8_t *t = data + block_size - SST_BLOCK_TRAILER_FIXED;
    uint32_t entries_len = sst_get_u32(t), n_records = sst_get_u32(t + 4);
    uint32_t n_restarts = sst_get_u32(t + 8);
    if (n_records == 0 || n_restarts == 0 || n_restarts > n_records ||
        (uint64_t)4 * n_restarts + SST_BLOCK_TRAILER_FIXED > block_size ||
        entries_len > block_size - SST_BLOCK_TRAILER_FIXED - 4 * n_restarts)
        return sp_errorf(err, "%s: corrupt block trailer (entries_len %u, records %u, restarts %u)",
                         what, entries_len, n_records, n_restarts);
    *v = (block_view){.data = data,
                      .block_size = block_size,
                      .entries_len = entries_len,
                      .n_records = n_records,
                      .n_restarts = n_restarts,
                      .restarts = data + block_size - SST_BLOCK_TRAILER_FIXED - 4 * n_restarts};
    return 0;
}

int block_checksum(const uint8_t *data, uint32_t block_size, const char *what, sp_error *err) {
    uint64_t stored = sst_get_u64(data + block_size - 8);
    uint64_t computed = XXH3_64bits(data, block_size - 8);
    if (stored != computed)
        return sp_errorf(err, "%s: block checksum mismatch (stored %016llx, computed %016llx)",
                         what, (unsigned long long)stored, (unsigned long long)computed);
    return 0;
}

int block_open(block_view *v, const uint8_t *data, uint32_t block_size, const char *what,
               sp_error *err) {
    if (block_checksum(data, block_size, what, err))
        return -1;
    if (open_trailer(v, data, block_size, what, err))
        return -1;
    for (uint32_t i = 0; i < v->n_restarts; i++) {
        uint32_t r = sst_get_u32(v->restarts + 4 * i);
        if ((i == 0 && r != 0) || r >= v->entries_len ||
            (i > 0 && r <= sst_get_u32(v->restarts + 4 * (i - 1))))
            return sp_errorf(err, "%s: corrupt restart point %u (entry offset %u)", what, i, r);
    }
    return 0;
}

int block_reopen(block_view *v, const uint8_t *data, uint32_t block_size, const char *what,
                 sp_error *err) {
    return open_trailer(v, data, block_size, what, err);
}

static uint32_t restart_at(const block_view *v, uint32_t i) {
    return sst_get_u32(v->restarts + 4 * i);
}

void block_iter_init(block_iter *it, const block_view *v) {
    it->v = v;
    it->pos = 0;
    it->index = 0;
    it->key_len = 0;
    it->value = NULL;
    it->value_len = 0;
}

/* Whether e's key (the current key's first e->shared bytes, then e's
 * suffix) sorts after the current key. A writer stores the longest shared
 * prefix, so the keys differ at the suffix's first byte, which decides
 * without a call to memcmp; a shorter prefix, which the format allows, is
 * compared in full. */
static inline bool sorts_after(const block_iter *it, const entry *e) {
    uint32_t rest = it->key_len - e->shared;
    if (rest == 0)
        return true; /* the current key is a proper prefix: e's suffix is not empty */
    uint8_t a = e->suffix[0], b = it->key[e->shared];
    if (a != b)
        return a > b;
    return sp_key_cmp(e->suffix, e->unshared, it->key + e->shared, rest) > 0;
}

int block_iter_next(block_iter *it, const char *what, sp_error *err) {
    const block_view *v = it->v;
    if (it->index == v->n_records) {
        if (it->pos != v->entries_len)
            return sp_errorf(err, "%s: %u bytes of entries follow the last of %u records", what,
                             v->entries_len - it->pos, v->n_records);
        return 0;
    }
    entry e;
    if (decode_entry(v, it->pos, it->key_len, &e, what, err))
        return -1;
    /* Restart points are the entries at index 0, 16, 32, ..., which store
     * no shared prefix, so a walk checks the array against the entries. */
    uint32_t r = it->index / SST_RESTART_INTERVAL;
    if (it->index % SST_RESTART_INTERVAL == 0 &&
        (e.shared != 0 || r >= v->n_restarts || restart_at(v, r) != it->pos))
        return sp_errorf(err, "%s: restart points disagree with the entries at byte %u", what,
                         it->pos);
    if (it->index > 0 && !sorts_after(it, &e))
        return sp_errorf(err, "%s: keys out of order at record %u (byte %u of the block)", what,
                         it->index, it->pos);
    memcpy(it->key + e.shared, e.suffix, e.unshared);
    it->key_len = e.shared + e.unshared;
    it->value = e.suffix + e.unshared;
    it->value_len = e.value_len;
    it->pos = e.next;
    it->index++;
    if (it->index == v->n_records &&
        v->n_restarts != (v->n_records + SST_RESTART_INTERVAL - 1) / SST_RESTART_INTERVAL)
        return sp_errorf(err, "%s: %u restart points for %u records", what, v->n_restarts,
                         v->n_records);
    return 1;
}

/* The binary search of the restart points: *n is how many of them have a
 * key below key (or_equal: at or below), as restart keys increase. -1 with
 * err when a restart's entry does not decode. Inline, so that each caller's
 * comparison is a constant. */
static inline int restarts_below(const block_view *v, const uint8_t *key, size_t klen,
                                 bool or_equal, uint32_t *n, const char *what, sp_error *err) {
    uint32_t lo = 0, hi = v->n_restarts;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        entry e;
        if (decode_entry(v, restart_at(v, mid), 0, &e, what, err))
            return -1;
        int c = sp_key_cmp(e.suffix, e.unshared, key, klen);
        if (c < 0 || (or_equal && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    *n = lo;
    return 0;
}

int block_iter_seek(block_iter *it, const block_view *v, const uint8_t *key, size_t klen,
                    const char *what, sp_error *err) {
    /* The first restart whose key is >= key; the answer is in the run
     * before it (its first key is smaller) or is that restart's record. */
    uint32_t lo;
    if (restarts_below(v, key, klen, false, &lo, what, err))
        return -1;
    block_iter_init(it, v);
    if (lo > 0) {
        /* A walk from a restart point: the record there stores no shared
         * prefix, so the empty previous key is all it needs. */
        it->pos = restart_at(v, lo - 1);
        it->index = (lo - 1) * SST_RESTART_INTERVAL;
    }
    int rc;
    while ((rc = block_iter_next(it, what, err)) == 1)
        if (sp_key_cmp(it->key, it->key_len, key, klen) >= 0)
            return 1;
    return rc;
}

int block_find(const block_view *v, const uint8_t *key, size_t klen, const void **value,
               size_t *vlen, const char *what, sp_error *err) {
    /* The last restart whose key is <= key: the record, if present, is in
     * its run of entries. */
    uint32_t lo;
    if (restarts_below(v, key, klen, true, &lo, what, err))
        return -1;
    if (lo == 0)
        return 0;
    uint32_t end = lo < v->n_restarts ? restart_at(v, lo) : v->entries_len;
    uint8_t cur[SP_MAX_KEY_BYTES];
    return scan_entries(v, restart_at(v, lo - 1), end, cur, 0, key, klen, value, vlen, what, err);
}
