/*
 * filter.c: the blocked Bloom filter of format version 2; see filter.h and
 * FORMAT.md ("The filter"), which this follows bit for bit.
 *
 * The line is chosen by the hash's high 32 bits (multiplied by the lines'
 * count, the product's high half: no division), the bits in it by the low
 * 32 bits: the first bit at their low 9 bits, then steps of an odd number
 * from their bits 16..24, so that a key's bits in the line are distinct
 * and the line and the bits come from different bits of the hash.
 */
#include "stages/sst/filter.h"

#include <xxhash.h>

uint64_t sst_filter_hash(const uint8_t *key, size_t klen) {
    return XXH3_64bits(key, klen);
}

uint64_t sst_filter_length(uint64_t n) {
    uint64_t line_bits = 8u * SST_FILTER_LINE_BYTES;
    uint64_t lines = (n * SST_FILTER_BITS_PER_KEY + line_bits - 1) / line_bits;
    return lines * SST_FILTER_LINE_BYTES;
}

/* The line of hash h in a filter of `length` bytes, and its bits' start and step. */
static const uint8_t *line_of(const uint8_t *bytes, uint64_t length, uint64_t h, uint32_t *start,
                              uint32_t *step) {
    uint64_t lines = length / SST_FILTER_LINE_BYTES;
    uint64_t line = ((h >> 32) * lines) >> 32;
    uint32_t lo = (uint32_t)h;
    *start = lo;
    *step = (lo >> 16) | 1;
    return bytes + line * SST_FILTER_LINE_BYTES;
}

#define LINE_MASK (8u * SST_FILTER_LINE_BYTES - 1)

void sst_filter_build(uint8_t *out, uint64_t length, uint32_t hashes, const uint64_t *h,
                      uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint32_t bit, step;
        uint8_t *line = (uint8_t *)line_of(out, length, h[i], &bit, &step);
        for (uint32_t j = 0; j < hashes; j++, bit += step)
            line[(bit & LINE_MASK) / 8] |= (uint8_t)(1u << (bit % 8));
    }
}

bool sst_filter_may_hold(const sst_filter *f, uint64_t h, uint64_t *first_clear) {
    uint32_t bit, step;
    const uint8_t *line = line_of(f->bytes, f->length, h, &bit, &step);
    for (uint32_t j = 0; j < f->hashes; j++, bit += step) {
        uint32_t b = bit & LINE_MASK;
        if (!(line[b / 8] >> (b % 8) & 1)) {
            if (first_clear)
                *first_clear = (uint64_t)(line - f->bytes) + b / 8;
            return false;
        }
    }
    return true;
}
