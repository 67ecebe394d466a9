/*
 * bz2_scan.c: magic search and bit copies for the parallel bz2 decoder; see
 * bz2_scan.h.
 *
 * The search must keep far ahead of the decoders (it sees every compressed
 * byte, they see each block once), so it does not test every bit. A magic
 * starting at bit s (0..7) of byte i always covers all 16 bits of bytes
 * i+1 and i+2, and those bits are one of only 8 values per magic: one
 * table lookup per byte rejects almost every position, and only the
 * survivors (about 1 in 4000 bytes of compressed data) get a full compare.
 */
#include "stages/extract/bz2_scan.h"

#include <pthread.h>

#define MASK48 ((1ULL << BZ2_MAGIC_BITS) - 1)

/* For the 16-bit value of bytes i+1..i+2: bit s set when the block magic
 * may start at bit s of byte i, bit 8+s for the end-of-stream magic. */
static uint16_t candidates[1 << 16];
static pthread_once_t candidates_once = PTHREAD_ONCE_INIT;

static void candidates_fill(void) {
    for (unsigned s = 0; s < 8; s++) {
        candidates[(BZ2_BLOCK_MAGIC >> (24 + s)) & 0xffff] |= (uint16_t)(1u << s);
        candidates[(BZ2_EOS_MAGIC >> (24 + s)) & 0xffff] |= (uint16_t)(1u << (8 + s));
    }
}

static uint64_t load_be64(const uint8_t *p) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

static void store_be64(uint8_t *p, uint64_t v) {
    v = __builtin_bswap64(v);
    __builtin_memcpy(p, &v, 8);
}

bz2_mark bz2_find_mark(const uint8_t *buf, uint64_t from_bit, uint64_t end_bit, uint64_t *at) {
    pthread_once(&candidates_once, candidates_fill);
    if (end_bit < from_bit + BZ2_MAGIC_BITS)
        return BZ2_MARK_NONE;
    uint64_t last_bit = end_bit - BZ2_MAGIC_BITS;
    for (uint64_t i = from_bit / 8, last = last_bit / 8; i <= last; i++) {
        unsigned m = candidates[(unsigned)buf[i + 1] << 8 | buf[i + 2]];
        if (!m)
            continue;
        uint64_t w = load_be64(buf + i);
        for (unsigned s = 0; s < 8; s++) {
            uint64_t bit = 8 * i + s;
            if (!(m & (0x101u << s)) || bit < from_bit || bit > last_bit)
                continue;
            uint64_t v = (w >> (16 - s)) & MASK48;
            if (v == BZ2_BLOCK_MAGIC || v == BZ2_EOS_MAGIC) {
                *at = bit;
                return v == BZ2_BLOCK_MAGIC ? BZ2_MARK_BLOCK : BZ2_MARK_EOS;
            }
        }
    }
    return BZ2_MARK_NONE;
}

uint64_t bz2_bits_get(const uint8_t *buf, uint64_t bit, unsigned n) {
    return (load_be64(buf + bit / 8) << (bit & 7)) >> (64 - n);
}

void bz2_bits_put(uint8_t *dst, uint64_t dst_bit, uint64_t value, unsigned n) {
    uint8_t *d = dst + dst_bit / 8;
    store_be64(d, load_be64(d) | ((value << (64 - n)) >> (dst_bit & 7)));
}

void bz2_bits_copy(uint8_t *dst, uint64_t dst_bit, const uint8_t *src, uint64_t src_bit,
                   uint64_t n) {
    /* 56 bits at a time: with up to 7 bits of misalignment on either side
     * they still fit one 64-bit load and one 64-bit store. */
    while (n) {
        unsigned k = n < 56 ? (unsigned)n : 56;
        bz2_bits_put(dst, dst_bit, bz2_bits_get(src, src_bit, k), k);
        dst_bit += k;
        src_bit += k;
        n -= k;
    }
}
