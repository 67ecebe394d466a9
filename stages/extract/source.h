/*
 * source.h: the decompressed bytes of an input file.
 *
 * The parser only sees this small interface (open, read, offset, close), so
 * the decoder behind it can change without touching the parser. Today:
 * bz2 (single- and multistream) by a parallel libbz2 decoder
 * (bz2_reader.h), gzip by zlib (which, unlike libarchive, checks each
 * member's CRC and length), and xz, zst or plain data by libarchive; the
 * compression is recognised by content.
 * Errors name the file and the compressed byte offset reached, since that
 * is the only position a user can relate to the damaged file.
 */
#ifndef SSTPIPE_EXTRACT_SOURCE_H
#define SSTPIPE_EXTRACT_SOURCE_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct source source;

typedef struct source_options {
    /* Threads decoding bz2 in parallel; 0 (the default): one per online core. */
    unsigned threads;
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

/* Compressed bytes read from the file so far. */
uint64_t source_offset(const source *s);

/* The compression recognised: "bzip2", "gzip", "xz", "zstd", "none", ... */
const char *source_format(const source *s);

/* The file's name as errors print it ("stdin" for "-"). */
const char *source_name(const source *s);

void source_close(source *s);

#endif
