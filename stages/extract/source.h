/*
 * source.h: the decompressed bytes of an input file.
 *
 * The parser only sees this small interface (open, read, offset, close), so
 * the decoder behind it can change without touching the parser. Today:
 * bz2 (single- and multistream) by a parallel libbz2 decoder
 * (bz2_reader.h), gzip by zlib (which, unlike libarchive, checks each
 * member's CRC and length), and xz, zst or plain data by libarchive; the
 * compression is recognised by content. Or, when one is configured, an
 * external decompressor command (source_command.h) whatever the content.
 * Decoding runs on threads of its own (bz2_reader's workers, or one
 * source_queue.h thread), so it overlaps with the caller's parsing.
 * Errors name the file and the compressed byte offset reached, since that
 * is the only position a user can relate to the damaged file; with an
 * external decompressor that offset is unknown, and errors say so.
 */
#ifndef SSTPIPE_EXTRACT_SOURCE_H
#define SSTPIPE_EXTRACT_SOURCE_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct source source;

/*
 * A part of a file read as if it were the whole input: the compressed bytes
 * [start, start + length) of a regular file, with head and tail handed out
 * before and after their decompressed bytes. A cluster map task reads its
 * streams of a multistream dump this way, framed by the dump's header and
 * <siteinfo> (from the first stream) and a closing </mediawiki>, so the
 * parser sees a whole document. Offsets in messages stay the file's.
 */
typedef struct source_slice {
    uint64_t start, length;
    const void *head; /* may be NULL when head_len is 0 */
    size_t head_len;
    const void *tail;
    size_t tail_len;
} source_slice;

typedef struct source_options {
    /* Threads decompressing: bz2 decoding threads, or the {threads} of the
     * decompressor command; 0 (the default): one per online core. The
     * other built-in decoders use one thread. */
    unsigned threads;
    /* External decompressor, run by /bin/sh -c with the input as its stdin
     * and "{threads}" replaced; NULL or "" (the default): built-in decoders. */
    const char *decompressor;
    /* Directory for the decompressor's stderr scratch file (NULL: $TMPDIR
     * or /tmp). */
    const char *tmp_dir;
    /* Only this part of the file (a regular file, no decompressor command);
     * NULL: all of it. */
    const source_slice *slice;
} source_options;

void source_options_init(source_options *opts);

/* Opens path ("-" is stdin) with default options. Compression is
 * recognised by content. */
source *source_open(const char *path, sp_error *err);

/* Like source_open; opts may be NULL for the defaults. */
source *source_open_with(const char *path, const source_options *opts, sp_error *err);

/*
 * Reads decompressed bytes into buf, filling it unless the data ends first.
 * Returns the count, 0 at the end of the data, -1 on error (corrupt or
 * truncated data, read failure).
 */
ssize_t source_read(source *s, void *buf, size_t n, sp_error *err);

/* Compressed bytes read from the file so far. With a decompressor command:
 * the bytes it has read from the input (0 when the input is not a regular
 * file), a progress figure, not the position of the data handed out. */
uint64_t source_offset(const source *s);

/* The decompressed offset, among the bytes handed out so far, where the
 * latest compressed stream after the first begins: a multistream bz2
 * file's stream ends, where such dumps cut between pages (parse_pool.h
 * takes them as likely cut points). 0 for other inputs, or none yet. */
uint64_t source_stream_start(const source *s);

/* The compression recognised: "bzip2", "gzip", "xz", "zstd", "none", ...;
 * "external" with a decompressor command. */
const char *source_format(const source *s);

/* The file's name as errors print it ("stdin" for "-"). */
const char *source_name(const source *s);

void source_close(source *s);

#endif
