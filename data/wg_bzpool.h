/*
 * wg_bzpool.h: compresses independent bz2 streams on several threads and
 * writes them in order.
 *
 * bzip2 runs at about 12 MB/s a core, so a multistream dump of a few GiB
 * would otherwise take minutes to make. Each stream is compressed whole
 * (BZ2_bzBuffToBuffCompress, block size 9), which gives the same bytes as
 * streaming it through BZ2_bzCompress: the output does not depend on the
 * number of threads.
 */
#ifndef WIKIGEN_WG_BZPOOL_H
#define WIKIGEN_WG_BZPOOL_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>

typedef struct wg_bzpool wg_bzpool;

/* Writes to fd (name for errors) from threads >= 1 workers. */
int wg_bzpool_open(wg_bzpool **out, unsigned threads, int fd, const char *name, sp_error *err);
/* Appends to the stream being collected. */
int wg_bzpool_write(wg_bzpool *p, const void *buf, size_t n, sp_error *err);
/* Hands the collected stream (if any) to the workers. */
int wg_bzpool_end_stream(wg_bzpool *p, sp_error *err);
/* Ends the last stream and waits until every stream is written. */
int wg_bzpool_finish(wg_bzpool *p, sp_error *err);
/* Adds "id:title\n" to the stream being collected, for the index
 * (-multistream-index.txt: "offset:id:title" a page, offset the stream's
 * in the output), which the pool then keeps. */
int wg_bzpool_note(wg_bzpool *p, const void *line, size_t n, sp_error *err);
/* The index of the streams written so far, and its length. */
const char *wg_bzpool_index(const wg_bzpool *p, size_t *len);
uint64_t wg_bzpool_bytes_out(const wg_bzpool *p);
uint64_t wg_bzpool_streams(const wg_bzpool *p);
void wg_bzpool_destroy(wg_bzpool *p);

#endif
