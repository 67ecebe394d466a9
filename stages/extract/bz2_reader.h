/*
 * bz2_reader.h: a parallel bzip2 decoder, behind source.h.
 *
 * One thread decodes one block after another, which makes bz2 dumps the
 * slowest part of a build. Blocks are independent, though: a scanner thread
 * cuts the compressed bits at the block magics (found at any bit offset,
 * across stream boundaries) and worker threads decode them with
 * bz2_block.h's decoder (libbz2 for the obsolete randomised blocks), while
 * the reader hands the output out strictly in order. Every block CRC and
 * every stream CRC is checked. A fixed number of blocks is in flight, so
 * memory does not grow with the input.
 */
#ifndef SSTPIPE_EXTRACT_BZ2_READER_H
#define SSTPIPE_EXTRACT_BZ2_READER_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct bz2_reader bz2_reader;

/* Part of a file: the streams from base on, limit bytes after the head
 * (a cluster map task's slice, source.h). */
typedef struct bz2_reader_range {
    uint64_t
        base; /* the file offset of head[0]; offsets and messages count from the file's start */
    uint64_t limit; /* bytes of fd read after head at most */
} bz2_reader_range;

/*
 * Starts decoding fd, whose first head_len bytes (starting "BZh1".."BZh9")
 * the caller already read into head to recognise the format. range is NULL
 * for the whole file. threads is the number of decoding threads (0: one per
 * online core). name is the file's name for errors. The reader does not
 * close fd.
 */
bz2_reader *bz2_reader_open(int fd, const char *name, const uint8_t *head, size_t head_len,
                            const bz2_reader_range *range, unsigned threads, sp_error *err);

/* Like source_read: fills buf unless the data ends (0) or is bad (-1). */
ssize_t bz2_reader_read(bz2_reader *r, void *buf, size_t n, sp_error *err);

/* The compressed bytes behind the output handed out so far (the file size
 * once the end was reached). */
uint64_t bz2_reader_offset(const bz2_reader *r);

/* Where in the output handed out so far the latest stream after the first
 * begins (a multistream file's stream ends, which such dumps put between
 * pages); 0 while there is none. */
uint64_t bz2_reader_stream_start(const bz2_reader *r);

/* Stops the threads and frees everything; fine at any point. */
void bz2_reader_close(bz2_reader *r);

#endif
