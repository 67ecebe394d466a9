/*
 * bz2_block.h: a fast decoder for one bzip2 block, used by the parallel
 * reader (bz2_reader.c) in place of libbz2 for every ordinary block.
 *
 * libbz2 reads Huffman codes a bit at a time and walks the inverse
 * Burrows-Wheeler transform as a single chain of dependent loads, which
 * kept a bz2 build well behind `lbzip2 -dc` on the same cores. This
 * decoder reads codes through lookup tables and walks the inverse BWT as
 * 16 chains at once, from rows spread over the block, so 16 cache misses
 * are in flight instead of one.
 *
 * A block (see bz2_scan.h for where blocks sit in a stream) decodes in two
 * steps:
 * - bz2_block_decode: the block's bits to its bytes before bzip2's first
 *   run-length stage (at most level x 100000 bytes) and the CRC the block
 *   stores;
 * - bz2_unrle_*: those bytes to the block's output, resumable across output
 *   buffers (runs let one block expand to ~45 MB), computing the CRC the
 *   caller compares with the stored one.
 * Blocks with the obsolete "randomised" bit (written only by bzip2 0.9.0)
 * are refused with BZ2_BLOCK_RANDOMISED; the caller decodes those with
 * libbz2.
 */
#ifndef SSTPIPE_EXTRACT_BZ2_BLOCK_H
#define SSTPIPE_EXTRACT_BZ2_BLOCK_H

#include "stages/extract/bz2_scan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes a block of a stream of this level (1..9) holds before
 * the run-length stage. */
#define BZ2_BLOCK_MAX(level) ((size_t)(level)*100000)

typedef struct bz2_block bz2_block;

typedef enum bz2_block_status {
    BZ2_BLOCK_OK,
    BZ2_BLOCK_BAD,        /* malformed, or not ending exactly at end_bit */
    BZ2_BLOCK_RANDOMISED, /* well-formed header of a randomised block */
    BZ2_BLOCK_NOMEM,
} bz2_block_status;

/* Scratch for decoding blocks of any level, reused block after block by
 * one thread at a time. NULL when out of memory. */
bz2_block *bz2_block_new(void);
void bz2_block_free(bz2_block *b);

/*
 * Decodes the block whose 48-bit magic starts at bit `bit` of buf and whose
 * last bit is the one before end_bit (bits count from the most significant
 * bit of buf[0]); buf must be readable for BZ2_SLACK bytes past byte
 * end_bit / 8. level (1..9) is the stream's and bounds the block's size.
 * On BZ2_BLOCK_OK, pre holds *pre_len bytes (at most BZ2_BLOCK_MAX(level);
 * pre must have room for that many) and *crc is the block's stored CRC.
 */
bz2_block_status bz2_block_decode(bz2_block *b, const uint8_t *buf, uint64_t bit, uint64_t end_bit,
                                  int level, uint8_t *pre, size_t *pre_len, uint32_t *crc);

/* The run-length stage's state over one block's pre bytes. */
typedef struct bz2_unrle {
    const uint8_t *in;
    size_t len, pos;
    unsigned run;  /* equal bytes just written, up to 4 */
    int last;      /* the byte they equal; -1 before the first */
    size_t repeat; /* copies of last still to write */
    uint32_t crc;  /* of everything written so far, before finalising */
} bz2_unrle;

void bz2_unrle_init(bz2_unrle *u, const uint8_t *pre, size_t len);

/* Writes up to cap bytes of output to out; fewer only when the block ends. */
size_t bz2_unrle_run(bz2_unrle *u, uint8_t *out, size_t cap);

/* Whether every byte of the block has been written. */
bool bz2_unrle_done(const bz2_unrle *u);

/* Once done: whether the bytes ended properly, not in four equal bytes
 * without the count byte that must follow them. No bzip2 writes such a
 * block and libbz2 refuses one, so the caller does too. */
bool bz2_unrle_complete(const bz2_unrle *u);

/* The block CRC of everything written, to compare with the stored one once
 * done. */
uint32_t bz2_unrle_crc(const bz2_unrle *u);

#endif
