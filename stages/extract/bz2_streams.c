/*
 * bz2_streams.c: finding stream starts in a multistream bzip2 file; see
 * bz2_streams.h.
 *
 * The file is read in windows that overlap by a stream header and a magic,
 * so a start straddling two windows is seen whole in the second. Every
 * magic bz2_find_mark reports is a candidate; only one that sits on a byte
 * boundary right after "BZh1".."BZh9" is a stream start (a block magic
 * inside a stream is preceded by the previous block's bits).
 */
#include "stages/extract/bz2_streams.h"

#include "stages/extract/bz2_scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW ((size_t)1 << 20)
/* "BZh" + level, then the magic. */
#define HEAD_BYTES 4
#define OVERLAP (HEAD_BYTES + BZ2_MAGIC_BITS / 8)

/* Up to n bytes at off, fewer only at the end of the file. */
static ssize_t read_at(int fd, uint8_t *buf, size_t n, uint64_t off, const char *name,
                       sp_error *err) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return sp_errorf_errno(err, "%s: read failed near byte %llu", name,
                                   (unsigned long long)(off + got));
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int is_stream_head(const uint8_t *p) {
    return p[0] == 'B' && p[1] == 'Z' && p[2] == 'h' && p[3] >= '1' && p[3] <= '9';
}

int bz2_stream_find(int fd, const char *name, uint64_t from, uint64_t end, uint64_t *at,
                    sp_error *err) {
    uint8_t *win = calloc(1, WINDOW + BZ2_SLACK);
    if (!win)
        return sp_errorf(err, "%s: out of memory", name);
    int rc = 0;
    for (uint64_t pos = from; pos < end && rc == 0;) {
        size_t want = end - pos + OVERLAP < WINDOW ? (size_t)(end - pos + OVERLAP) : WINDOW;
        memset(win, 0, WINDOW + BZ2_SLACK);
        ssize_t n = read_at(fd, win, want, pos, name, err);
        if (n < 0) {
            rc = -1;
            break;
        }
        uint64_t bit = HEAD_BYTES * 8, mark_at;
        while (bz2_find_mark(win, bit, 8 * (uint64_t)n, &mark_at) != BZ2_MARK_NONE) {
            uint64_t byte = mark_at / 8;
            if (mark_at % 8 == 0 && is_stream_head(win + byte - HEAD_BYTES) &&
                pos + byte - HEAD_BYTES < end) {
                *at = pos + byte - HEAD_BYTES;
                rc = 1;
                break;
            }
            bit = mark_at + 1;
        }
        if ((size_t)n < WINDOW) /* the end of the file or of the range */
            break;
        pos += WINDOW - OVERLAP;
    }
    free(win);
    return rc;
}
