/*
 * coding.h: the byte encodings of the SSTable format (FORMAT.md): fixed-width
 * little-endian integers and LEB128 varints, shared by the block, index and
 * footer code (the key order is stages/common/key.h). Decoders take an end pointer and fail rather
 * than read past it, because they run on file contents.
 */
#ifndef SSTPIPE_SST_CODING_H
#define SSTPIPE_SST_CODING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Longest varint encodings of a 32-bit and a 64-bit value. */
#define SST_VARINT32_MAX 5
#define SST_VARINT64_MAX 10

static inline void sst_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void sst_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t sst_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t sst_get_u64(const uint8_t *p) {
    return (uint64_t)sst_get_u32(p) | (uint64_t)sst_get_u32(p + 4) << 32;
}

static inline unsigned sst_varint_len(uint64_t v) {
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Writes v at p; returns the bytes written (sst_varint_len(v)). */
static inline unsigned sst_put_varint(uint8_t *p, uint64_t v) {
    unsigned n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/*
 * Reads a varint of at most max_bytes bytes (SST_VARINT32_MAX or
 * SST_VARINT64_MAX) from [p, end); returns the position after it, or NULL
 * when it runs past end, is longer than max_bytes, or exceeds 64 bits.
 */
static inline const uint8_t *sst_get_varint(const uint8_t *p, const uint8_t *end,
                                            unsigned max_bytes, uint64_t *v) {
    /* Most lengths in a block (shared and unshared key bytes) take one byte. */
    if (p < end && *p < 0x80) {
        *v = *p;
        return p + 1;
    }
    uint64_t r = 0;
    for (unsigned i = 0; i < max_bytes && p < end; i++) {
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            return NULL;
        r |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return p;
        }
    }
    return NULL;
}

/* Reads a varint that must fit 32 bits. */
static inline const uint8_t *sst_get_varint32(const uint8_t *p, const uint8_t *end, uint32_t *v) {
    uint64_t r; /* one byte, the common case, without the loop: see sst_get_varint */
    p = sst_get_varint(p, end, SST_VARINT32_MAX, &r);
    if (!p || r > UINT32_MAX)
        return NULL;
    *v = (uint32_t)r;
    return p;
}

#endif
