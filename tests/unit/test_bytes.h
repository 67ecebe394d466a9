/*
 * test_bytes.h: a growable byte buffer for the unit tests that build
 * inputs and collect outputs (the bz2 tests). Header-only so each test
 * stays one self-contained executable; include after cmocka.h, whose
 * assert_non_null it uses.
 */
#ifndef SSTPIPE_TEST_BYTES_H
#define SSTPIPE_TEST_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct bytes {
    uint8_t *p;
    size_t len, cap;
} bytes;

static inline void bytes_add(bytes *b, const void *p, size_t n) {
    if (!n)
        return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

#endif
