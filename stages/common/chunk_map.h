/*
 * chunk_map.h: a span of a file in memory, mapped where it can be and read
 * where it cannot (or where the caller asks: no_map), for the readers that
 * walk a whole table front to back (verify's block check, merge's table
 * sources, which read: see stages/merge/table_source.c).
 *
 * A warm file is then checked where it lies in the page cache, without the
 * copy a read makes. The span is mapped and faulted in at once with
 * MADV_POPULATE_READ, which reports a failed read as an error where
 * touching the page would raise SIGBUS; a span that cannot be mapped or
 * populated (an I/O error, a kernel before 5.14) is read with pread into a
 * buffer instead, which gives its bytes or the read error to report.
 *
 * What a mapping does not cover: a file truncated in place (sstpipe only
 * ever replaces a table by rename, which leaves the mapped file whole)
 * while a populated span is in use makes the touch of a lost page fault
 * with SIGBUS, where a read would have come back short.
 */
#ifndef SSTPIPE_COMMON_CHUNK_MAP_H
#define SSTPIPE_COMMON_CHUNK_MAP_H

#include "stages/common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sp_chunk {
    /* Set by the caller before the first fill: every span is read into the
     * buffer, none mapped (merge: see stages/merge/table_source.c). */
    bool no_map;
    const uint8_t *data; /* the span's bytes, once filled */
    void *map;           /* the mapping, when mapped */
    size_t map_len;
    uint8_t *buf; /* the pread fallback's buffer, allocated on first need */
    size_t buf_cap;
} sp_chunk;

/* Fills c (zeroed, or filled before) with len bytes of fd at off, releasing
 * what it held; name is for errors. */
int sp_chunk_fill(sp_chunk *c, int fd, uint64_t off, size_t len, const char *name, sp_error *err);
/* Unmaps the span (the buffer is kept for the next fill). */
void sp_chunk_release(sp_chunk *c);
void sp_chunk_destroy(sp_chunk *c);

#endif
