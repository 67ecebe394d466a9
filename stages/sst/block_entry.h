/*
 * block_entry.h: decoding one entry of a data block (FORMAT.md, "Data
 * blocks"), private to stages/sst. Shared by the block walk and search
 * (block.c), the record directory (block_dir.c) and version 2's groups
 * (block_packed.c), so that all check every decoded length against the
 * block in the same way, and look a key up with the same walk; and the
 * shared prefix every writer of entries stores.
 */
#ifndef SSTPIPE_SST_BLOCK_ENTRY_H
#define SSTPIPE_SST_BLOCK_ENTRY_H

#include "stages/common/error.h"
#include "stages/common/key.h"
#include "stages/common/record.h"
#include "stages/sst/block.h"
#include "stages/sst/coding.h"

#include <stdint.h>
#include <string.h>

typedef struct entry {
    uint32_t shared, unshared, value_len;
    const uint8_t *suffix; /* unshared key bytes; the value follows them */
    uint32_t next;         /* offset of the following entry */
} entry;

/* The bytes key b shares with key a from their start: what a writer
 * stores as an entry's shared prefix (the longest). */
static inline size_t entry_shared_prefix(const uint8_t *a, size_t alen, const uint8_t *b,
                                         size_t blen) {
    size_t n = alen < blen ? alen : blen, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Decodes the entry at pos, after a key of prev_len bytes; only v->data and
 * v->entries_len are used. */
static inline int decode_entry(const block_view *v, uint32_t pos, uint32_t prev_len, entry *e,
                               const char *what, sp_error *err) {
    const uint8_t *p = v->data + pos, *end = v->data + v->entries_len;
    if (pos >= v->entries_len || !(p = sst_get_varint32(p, end, &e->shared)) ||
        !(p = sst_get_varint32(p, end, &e->unshared)) ||
        !(p = sst_get_varint32(p, end, &e->value_len)) || e->shared > prev_len ||
        e->unshared == 0 || e->unshared > SP_MAX_KEY_BYTES - e->shared ||
        (uint64_t)e->unshared + e->value_len > (uint64_t)(end - p)) {
        /* -1 spelt out: the compiler then sees *e is set whenever 0 is returned. */
        sp_errorf(err, "%s: corrupt entry at byte %u of the block", what, pos);
        return -1;
    }
    e->suffix = p;
    e->next = (uint32_t)(p + e->unshared + e->value_len - v->data);
    return 0;
}

/*
 * Looks for key in the entries from pos up to end. cur holds the key before
 * pos (cur_len bytes; room for SP_MAX_KEY_BYTES) and follows the walk. 1
 * with the value when found; 0 at the first greater key or at end; -1 for a
 * malformed entry.
 */
static inline int scan_entries(const block_view *v, uint32_t pos, uint32_t end, uint8_t *cur,
                               uint32_t cur_len, const uint8_t *key, size_t klen,
                               const void **value, size_t *vlen, const char *what, sp_error *err) {
    while (pos < end) {
        entry e;
        if (decode_entry(v, pos, cur_len, &e, what, err))
            return -1;
        memcpy(cur + e.shared, e.suffix, e.unshared);
        cur_len = e.shared + e.unshared;
        int c = sp_key_cmp(cur, cur_len, key, klen);
        if (c == 0) {
            *value = e.suffix + e.unshared;
            *vlen = e.value_len;
            return 1;
        }
        if (c > 0)
            return 0;
        pos = e.next;
    }
    return 0;
}

#endif
