/*
 * fuzz_bz2_block.c: libFuzzer target for the bzip2 block decoder
 * (bz2_block.h), differential against libbz2.
 *
 * The first byte of an input picks the stream level (byte % 9 + 1) and how
 * many of the last byte's low bits are not part of the block
 * (byte / 9 % 8), so a block may end at any bit; the rest is the block,
 * from its magic on. The block is decoded from a buffer with exactly
 * BZ2_SLACK bytes after it, so any over-read is an ASan finding. Then
 * libbz2 decodes the same bits framed as a one-block stream ("BZh" + level,
 * the block, the end-of-stream magic, the block's stored CRC as the stream
 * CRC):
 * - when ours decodes the block, libbz2 must output exactly the same bytes
 *   (and then succeed exactly when our CRC matches the stored one);
 * - when ours refuses it, or its bytes end in a run of 4 with no count
 *   byte after it (bz2_unrle_complete; no bzip2 writes one), libbz2 must
 *   not decode the whole frame either.
 */
#include "fuzz_file.h"
#include "stages/extract/bz2_block.h"

#include <bzlib.h>
#include <stdlib.h>
#include <string.h>

/* The most output a block can have: 900000 bytes, each 4 + 255 at best. */
#define OUT_MAX ((size_t)BZ2_BLOCK_MAX(9) / 5 * 259 + 4)

typedef struct buffer {
    uint8_t *p;
    size_t len;
} buffer;

/* libbz2 over the framed block: its output (at most OUT_MAX + 1 bytes)
 * and whether it ended the stream having read all of the frame. One call
 * does it all: libbz2 returns early only when out of input or room. */
static bool libbz2_decode(const uint8_t *frame, size_t frame_len, buffer *out) {
    bz_stream z;
    memset(&z, 0, sizeof z);
    if (BZ2_bzDecompressInit(&z, 0, 0) != BZ_OK)
        fuzz_fail("BZ2_bzDecompressInit failed");
    z.next_in = (char *)frame;
    z.avail_in = (unsigned)frame_len;
    z.next_out = (char *)out->p;
    z.avail_out = (unsigned)(OUT_MAX + 1);
    int rc = BZ2_bzDecompress(&z);
    out->len = OUT_MAX + 1 - z.avail_out;
    BZ2_bzDecompressEnd(&z);
    return rc == BZ_STREAM_END && z.avail_in == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2)
        return 0;
    int level = data[0] % 9 + 1;
    uint64_t nbits = 8 * (uint64_t)(size - 1) - (data[0] / 9 % 8);
    data++, size--;

    /* Allocated once: outputs of up to 46 MB would dominate each run. */
    static bz2_block *b;
    static uint8_t *pre, *ours_buf, *theirs_buf;
    if (!b) {
        b = bz2_block_new();
        pre = malloc(BZ2_BLOCK_MAX(9));
        ours_buf = malloc(OUT_MAX);
        theirs_buf = malloc(OUT_MAX + 1);
        if (!b || !pre || !ours_buf || !theirs_buf)
            fuzz_fail("out of memory");
    }
    buffer ours = {.p = ours_buf}, theirs = {.p = theirs_buf};
    uint8_t *block = malloc(size + BZ2_SLACK);
    uint8_t *frame = calloc(1, size + 20 + BZ2_SLACK);
    if (!block || !frame)
        fuzz_fail("out of memory");
    memcpy(block, data, size);
    memset(block + size, 0, BZ2_SLACK);

    size_t pre_len = 0;
    uint32_t stored = 0, crc = 0;
    bool trailing_run = false;
    bz2_block_status st = bz2_block_decode(b, block, 0, nbits, level, pre, &pre_len, &stored);
    if (st == BZ2_BLOCK_OK) {
        if (pre_len > BZ2_BLOCK_MAX(level))
            fuzz_fail("%zu bytes from a level %d block", pre_len, level);
        bz2_unrle u;
        bz2_unrle_init(&u, pre, pre_len);
        /* Uneven steps, so runs and count bytes straddle them. */
        for (size_t step = 1; !bz2_unrle_done(&u); step = step * 3 + 1) {
            size_t room = OUT_MAX - ours.len;
            size_t n = bz2_unrle_run(&u, ours.p + ours.len, step < room ? step : room);
            /* Short only at the end (which may leave nothing but a
             * count byte of 0 for the last call). */
            if (n < step && n < room && !bz2_unrle_done(&u))
                fuzz_fail("run-length stage stalled at %zu bytes", ours.len);
            ours.len += n;
        }
        crc = bz2_unrle_crc(&u);
        trailing_run = !bz2_unrle_complete(&u);
    }

    memcpy(frame, "BZh", 3);
    frame[3] = (uint8_t)('0' + level);
    bz2_bits_copy(frame, 32, block, 0, nbits);
    bz2_bits_put(frame, 32 + nbits, BZ2_EOS_MAGIC, BZ2_MAGIC_BITS);
    bz2_bits_put(frame, 32 + nbits + BZ2_MAGIC_BITS, nbits >= 80 ? bz2_bits_get(block, 48, 32) : 0,
                 32);
    bool their_ok = libbz2_decode(frame, (32 + nbits + BZ2_MAGIC_BITS + 32 + 7) / 8, &theirs);

    if (st == BZ2_BLOCK_OK && trailing_run) {
        /* A block ending in 4 equal bytes and no count byte: libbz2 1.0.8
         * reads a count past the block and fails; the caller of ours
         * refuses it too. */
        if (their_ok)
            fuzz_fail("libbz2 decoded a block ending in a run of 4");
    } else if (st == BZ2_BLOCK_OK) {
        if (theirs.len != ours.len || memcmp(theirs.p, ours.p, ours.len) != 0)
            fuzz_fail("block decoded to %zu bytes, libbz2 gave %zu different ones", ours.len,
                      theirs.len);
        if (their_ok != (crc == stored))
            fuzz_fail("CRC %08x vs stored %08x, but libbz2 %s", crc, stored,
                      their_ok ? "succeeded" : "failed");
    } else if (st == BZ2_BLOCK_BAD && their_ok) {
        fuzz_fail("block refused, libbz2 decoded it to %zu bytes", theirs.len);
    }

    free(frame);
    free(block);
    return 0;
}
