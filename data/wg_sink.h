/*
 * wg_sink.h: where wikigen's XML goes: written as is, or compressed with
 * libbz2 (block size 9; one stream, or many streams as in the public
 * multistream dumps) or libzstd (level 3, streaming).
 *
 * The dump writer marks stream boundaries with wg_sink_end_stream; only the
 * multistream sink acts on them, closing the current bz2 stream so the next
 * bytes start a new one. Multistream output is compressed on `threads`
 * threads (wg_bzpool.h); the other formats are one stream, compressed as the
 * XML is written.
 */
#ifndef WIKIGEN_WG_SINK_H
#define WIKIGEN_WG_SINK_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>

typedef enum wg_format {
    WG_FORMAT_XML,
    WG_FORMAT_BZ2,
    WG_FORMAT_BZ2_MULTI,
    WG_FORMAT_ZST
} wg_format;

typedef struct wg_sink wg_sink;

/* Writes to fd; name is what errors call it. */
int wg_sink_open(wg_sink **out, wg_format format, unsigned threads, int fd, const char *name,
                 sp_error *err);
int wg_sink_write(wg_sink *s, const void *p, size_t n, sp_error *err);
int wg_sink_end_stream(wg_sink *s, sp_error *err);
/* A page of the stream being written, for the multistream index (a no-op
 * for the other formats): its id and title as the index lists them. */
int wg_sink_index_page(wg_sink *s, uint64_t id, const char *title, size_t len, sp_error *err);
/* The multistream index so far ("offset:id:title" a line), or NULL for the
 * other formats. */
const char *wg_sink_index(const wg_sink *s, size_t *len);
/* Ends the last stream and writes everything out. */
int wg_sink_finish(wg_sink *s, sp_error *err);
/* Bytes written to fd so far. */
uint64_t wg_sink_bytes_out(const wg_sink *s);
/* Number of compressed streams written so far (0 for plain XML). */
uint64_t wg_sink_streams(const wg_sink *s);
void wg_sink_destroy(wg_sink *s);

#endif
