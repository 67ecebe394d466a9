/*
 * key.h: the key order every stage shares (bytewise, memcmp, a proper
 * prefix first) and its fast path, the first 8 bytes of a key as a
 * big-endian integer.
 *
 * The sort's chunk and merge, the SSTable's blocks and index and the table
 * merge all order keys with these, so the order a run is sorted in is the
 * order a table is searched in.
 */
#ifndef SSTPIPE_COMMON_KEY_H
#define SSTPIPE_COMMON_KEY_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The first 8 bytes of a key as a big-endian integer, zero-padded, so that
 * comparing two of them agrees with the key order wherever they differ.
 * Zero padding keeps the order: a key that ends inside the 8 bytes is a
 * proper prefix of any key that differs from it there, so it sorts first;
 * equal prefixes are decided by the whole keys (sp_key_cmp_tail).
 */
static inline uint64_t sp_key_prefix(const uint8_t *key, size_t len) {
    uint8_t b[8] = {0};
    memcpy(b, key, len < 8 ? len : 8);
    uint64_t p;
    memcpy(&p, b, 8);
    return be64toh(p);
}

/* Bytewise key order (memcmp, a proper prefix first): <0, 0, >0. */
static inline int sp_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

/* sp_key_cmp of two keys whose sp_key_prefix values are equal: only the
 * bytes after the 8th and the lengths can differ. */
static inline int sp_key_cmp_tail(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    size_t m = alen < blen ? alen : blen;
    if (m > 8) {
        int c = memcmp(a + 8, b + 8, m - 8);
        if (c)
            return c;
    }
    return (alen > blen) - (alen < blen);
}

#endif
