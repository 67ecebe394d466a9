/* hex.c: lowercase hex encoding of keys; see hex.h. */
#include "stages/common/hex.h"

#include <stdlib.h>

static const char digit[] = "0123456789abcdef";

void sp_hex_write(const void *bytes, size_t n, char *out) {
    const uint8_t *b = bytes;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digit[b[i] >> 4];
        out[2 * i + 1] = digit[b[i] & 15];
    }
    out[2 * n] = '\0';
}

char *sp_hex_encode(const void *bytes, size_t n) {
    char *s = malloc(2 * n + 1);
    if (s)
        sp_hex_write(bytes, n, s);
    return s;
}

/* A lowercase hex digit's value, or -1. */
static int value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

size_t sp_hex_decode(const char *digits, size_t ndigits, uint8_t *out) {
    for (size_t i = 0; i + 1 < ndigits; i += 2) {
        int hi = value(digits[i]), lo = value(digits[i + 1]);
        if (hi < 0)
            return i;
        if (lo < 0)
            return i + 1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return ndigits;
}
