/*
 * block_dir.c: building and searching a block's record directory; see
 * block_dir.h.
 *
 * All keys of a block share the bytes its first and last keys share (they
 * are sorted); the directory keeps those bytes once and, per record, the 8
 * key bytes that follow them, which tell records apart far better than the
 * key's first 8 (in a block of "Category:" pages those are all equal).
 *
 * The search needs no key bytes from before the first entry it decodes: the
 * records whose 8 bytes equal the key's form one run, and the record before
 * the run differs from the run's first key within the common bytes plus 8,
 * so the first entry of the run shares no more than those with it. The
 * search already holds them: the common bytes, and the 8 it looked for.
 */
#include "stages/sst/block_dir.h"

#include "stages/common/key.h"
#include "stages/sst/block_entry.h"
#include "stages/sst/coding.h"

#include <stdlib.h>
#include <string.h>

struct block_dir {
    uint32_t n_records;
    uint32_t entries_len;
    uint32_t common_len; /* bytes every key of the block starts with */
    uint32_t *offset;    /* n_records entry offsets, after the prefixes */
    uint8_t *common;     /* those bytes, after the offsets */
    uint64_t prefix[];   /* n_records: sp_key_prefix of each key after them */
};

block_dir *block_dir_build(const block_view *v, const char *what, sp_error *err) {
    /* The prefixes depend on the common bytes, known only at the end of a
     * walk: a first walk checks every record and finds them, a second takes
     * the offsets and prefixes. */
    uint8_t first[SP_MAX_KEY_BYTES];
    uint32_t n = 0, first_len = 0;
    block_iter it;
    block_iter_init(&it, v);
    int rc;
    while ((rc = block_iter_next(&it, what, err)) == 1) {
        if (n++ == 0) {
            memcpy(first, it.key, it.key_len);
            first_len = it.key_len;
        }
    }
    if (rc < 0)
        return NULL;
    uint32_t common = 0;
    while (common < first_len && common < it.key_len && first[common] == it.key[common])
        common++;
    block_dir *d = malloc(sizeof *d + (size_t)n * (sizeof *d->prefix + sizeof *d->offset) + common);
    if (!d) {
        sp_errorf(err, "%s: out of memory for the directory of %u records", what, n);
        return NULL;
    }
    d->n_records = n;
    d->entries_len = v->entries_len;
    d->common_len = common;
    d->offset = (uint32_t *)(d->prefix + n);
    d->common = (uint8_t *)(d->offset + n);
    memcpy(d->common, first, common);
    block_iter_init(&it, v);
    for (uint32_t j = 0; j < n; j++) {
        d->offset[j] = it.pos;
        block_iter_next(&it, what, err); /* walked above without error */
        d->prefix[j] = sp_key_prefix(it.key + common, it.key_len - common);
    }
    return d;
}

size_t block_dir_bytes(const block_dir *d) {
    return sizeof *d + (size_t)d->n_records * (sizeof *d->prefix + sizeof *d->offset) +
           d->common_len;
}

void block_dir_destroy(block_dir *d) {
    free(d);
}

int block_dir_find(const block_dir *d, const uint8_t *data, const uint8_t *key, size_t klen,
                   const void **value, size_t *vlen, const char *what, sp_error *err) {
    /* Every key of the block starts with the common bytes. */
    uint32_t common = d->common_len;
    if (klen < common || memcmp(key, d->common, common) != 0)
        return 0;
    uint64_t want = sp_key_prefix(key + common, klen - common);
    /* The first record whose prefix is >= the key's. */
    uint32_t j = 0, len = d->n_records;
    while (len > 0) {
        uint32_t half = len / 2;
        if (d->prefix[j + half] < want) {
            j += half + 1;
            len -= half + 1;
        } else {
            len = half;
        }
    }
    if (j == d->n_records || d->prefix[j] != want)
        return 0;
    block_view v = {.data = data, .entries_len = d->entries_len};
    uint8_t cur[SP_MAX_KEY_BYTES + 8];
    uint64_t be = htobe64(want);
    memcpy(cur, d->common, common);
    memcpy(cur + common, &be, 8);
    /* From record j on, the walk stops at the first key past the wanted
     * one, which is at the latest the first with a greater prefix. */
    return scan_entries(&v, d->offset[j], d->entries_len, cur, common + 8, key, klen, value, vlen,
                        what, err);
}
