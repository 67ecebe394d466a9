/*
 * sstpipe_iter.h: libsstpipe's iterators (sstpipe_iter_new/next/free in
 * sstpipe.h) over a cursor (cursor.h): a plain table's or a table set's,
 * which sstpipe.c picks, or a title index's (sstpipe_titles.c). Private to
 * the library; the public contract is sstpipe.h.
 */
#ifndef SSTPIPE_SST_SSTPIPE_ITER_H
#define SSTPIPE_SST_SSTPIPE_ITER_H

#include "stages/sst/cursor.h"
#include "stages/sst/sstpipe_table.h"

#include <stddef.h>

/* An iterator over the records of c (which it then owns, and frees with
 * itself) >= from that start with prefix (either NULL or empty: no bound),
 * both copied; NULL when c is NULL or out of memory, c freed. */
sstpipe_iter *sstpipe_iter_over(sst_cursor *c, const void *from, size_t flen, const void *prefix,
                                size_t plen);

#endif
