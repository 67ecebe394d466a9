/*
 * bz2_scan.h: finding bzip2 block boundaries and moving bit strings, for the
 * parallel bz2 decoder (bz2_reader.c).
 *
 * A bzip2 stream is a bit stream: "BZh" + level, then blocks that each start
 * with the 48-bit magic 0x314159265359 at whatever bit offset the previous
 * block ended, then the 48-bit end-of-stream magic 0x177245385090 and the
 * stream's 32-bit combined CRC, padded to a byte. Splitting a file into
 * blocks therefore means searching for the magics at every bit offset, and
 * re-framing a block as its own stream means copying bits between unaligned
 * positions. Bit 0 of a buffer is the most significant bit of its byte 0.
 */
#ifndef SSTPIPE_EXTRACT_BZ2_SCAN_H
#define SSTPIPE_EXTRACT_BZ2_SCAN_H

#include <stdint.h>

#define BZ2_BLOCK_MAGIC 0x314159265359ULL
#define BZ2_EOS_MAGIC 0x177245385090ULL
#define BZ2_MAGIC_BITS 48

/* Bytes every buffer passed here must have readable (and, for the
 * destination of a copy, writable) past the last byte holding its bits. */
#define BZ2_SLACK 16

typedef enum bz2_mark { BZ2_MARK_NONE, BZ2_MARK_BLOCK, BZ2_MARK_EOS } bz2_mark;

/*
 * Finds the first block or end-of-stream magic that starts at a bit in
 * [from_bit, end_bit) and lies wholly before end_bit. Returns its kind and
 * sets *at to its first bit, or returns BZ2_MARK_NONE.
 */
bz2_mark bz2_find_mark(const uint8_t *buf, uint64_t from_bit, uint64_t end_bit, uint64_t *at);

/* The n (1..57) bits at bit of buf, as the low bits of the result. */
uint64_t bz2_bits_get(const uint8_t *buf, uint64_t bit, unsigned n);

/*
 * ORs the n (1..56) low bits of value into dst at dst_bit. Like
 * bz2_bits_copy, it expects dst's bits from dst_bit on to be zero.
 */
void bz2_bits_put(uint8_t *dst, uint64_t dst_bit, uint64_t value, unsigned n);

/* ORs the n bits of src at src_bit into dst at dst_bit (see bz2_bits_put). */
void bz2_bits_copy(uint8_t *dst, uint64_t dst_bit, const uint8_t *src, uint64_t src_bit,
                   uint64_t n);

#endif
