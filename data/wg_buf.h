/*
 * wg_buf.h: the growable byte buffer wikigen builds text and XML in.
 *
 * Writers reserve once per sentence, row or element (WG_BUF_SLACK bytes
 * beyond what they ask for) and then append without checks, which keeps the
 * per-word path free of branches on capacity. The slack also lets a word be
 * copied as one fixed 24-byte block even when it is shorter.
 */
#ifndef WIKIGEN_WG_BUF_H
#define WIKIGEN_WG_BUF_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WG_BUF_SLACK (64u * 1024)

typedef struct wg_buf {
    char *p;
    size_t len, cap;
} wg_buf;

/* Ensures room for extra + WG_BUF_SLACK more bytes. */
static inline int wg_buf_reserve(wg_buf *b, size_t extra, sp_error *err) {
    size_t need = b->len + extra + WG_BUF_SLACK;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256 * 1024;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return sp_errorf(err, "wikigen: out of memory (buffer of %zu bytes)", cap);
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline void wg_buf_put(wg_buf *b, const void *s, size_t n) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static inline void wg_buf_lit(wg_buf *b, const char *s) {
    wg_buf_put(b, s, strlen(s));
}

/* Appends the decimal form of n. */
static inline void wg_buf_u64(wg_buf *b, uint64_t n) {
    char tmp[20];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    while (k)
        b->p[b->len++] = tmp[--k];
}

static inline void wg_buf_free(wg_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

#endif
