/*
 * coding.h: the byte encodings of the SSTable format (FORMAT.md): fixed-width
 * little-endian integers and LEB128 varints, shared by the block, index and
 * footer code, and the key order. Decoders take an end pointer and fail rather than read past
 * it, because they run on file contents.
 */
#ifndef SSTPIPE_SST_CODING_H
#define SSTPIPE_SST_CODING_H

#include <endian.h>
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
    uint64_t r;
    p = sst_get_varint(p, end, SST_VARINT32_MAX, &r);
    if (!p || r > UINT32_MAX)
        return NULL;
    *v = (uint32_t)r;
    return p;
}

/*
 * The first 8 bytes of a key as a big-endian integer, zero-padded, so that
 * comparing two of them agrees with the key order wherever they differ.
 * Zero padding keeps the order: a key that ends inside the 8 bytes is a
 * proper prefix of any key that differs from it there, so it sorts first;
 * equal prefixes are decided by the whole keys.
 */
static inline uint64_t sst_key_prefix8(const uint8_t *key, size_t len) {
    uint8_t b[8] = {0};
    memcpy(b, key, len < 8 ? len : 8);
    uint64_t p;
    memcpy(&p, b, 8);
    return be64toh(p);
}

/* Bytewise key order (memcmp, a proper prefix first): <0, 0, >0. */
static inline int sst_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

#endif
