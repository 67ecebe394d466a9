/*
 * source_queue.h: decompression on its own thread, ahead of the parser.
 *
 * zstd, xz, gzip and an external decompressor's pipe are read on one thread
 * each; run on the parser's thread they would take turns with parsing. A
 * producer thread calls a fill function into a few buffers, and
 * source_read drains them in order. Each buffer carries the compressed
 * offset reached and, at the end, the end of data or the error, so that
 * stats and errors are the same as when decoding inline. Memory is
 * SOURCE_QUEUE_BUFS buffers, whatever the input.
 */
#ifndef SSTPIPE_EXTRACT_SOURCE_QUEUE_H
#define SSTPIPE_EXTRACT_SOURCE_QUEUE_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The parser takes 1 MiB per read (extract.c); the queue holds 1.5 MiB of
 * output ahead of it, one such read plus slack for an uneven decoder, in
 * buffers small enough that the whole ring stays at 1.5 MiB (the extract
 * stage's memory bound is tested). */
#define SOURCE_QUEUE_BUF ((size_t)512 << 10)
#define SOURCE_QUEUE_BUFS 3

typedef struct source_queue source_queue;

/*
 * Runs on the producer thread: puts up to n decoded bytes into buf and
 * returns the count (0 at the end of the data, -1 with err set) and, in
 * *offset, the compressed bytes consumed so far.
 */
typedef ssize_t (*source_fill_fn)(void *ctx, uint8_t *buf, size_t n, uint64_t *offset,
                                  sp_error *err);

/* Starts the producer thread; name is the input's name for errors. */
source_queue *source_queue_start(source_fill_fn fill, void *ctx, const char *name, sp_error *err);

/* Like source_read: fills buf unless the data ends (0) or is bad (-1).
 * The bytes decoded before an error are handed out before it; after it,
 * every call fails the same way. */
ssize_t source_queue_read(source_queue *q, void *buf, size_t n, sp_error *err);

/* The compressed offset behind the bytes handed out so far. */
uint64_t source_queue_offset(const source_queue *q);

/*
 * Stops the producer and frees everything; fine at any point. A fill call
 * in progress runs to its end, so the caller first makes sure a blocked
 * one returns (source.c wakes its poll and kills an external command).
 */
void source_queue_stop(source_queue *q);

#endif
