/*
 * block_entry.h: decoding one entry of a data block (FORMAT.md, "Data
 * blocks"), private to stages/sst. Shared by the block walk and search
 * (block.c) and the record directory (block_dir.c), so that both check
 * every decoded length against the block in the same way.
 */
#ifndef SSTPIPE_SST_BLOCK_ENTRY_H
#define SSTPIPE_SST_BLOCK_ENTRY_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sst/block.h"
#include "stages/sst/coding.h"

#include <stdint.h>

typedef struct entry {
    uint32_t shared, unshared, value_len;
    const uint8_t *suffix; /* unshared key bytes; the value follows them */
    uint32_t next;         /* offset of the following entry */
} entry;

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

#endif
