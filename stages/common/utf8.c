/* utf8.c: UTF-8 cutting and validation; see utf8.h. */
#include "stages/common/utf8.h"

#include <string.h>

size_t sp_utf8_cut(const uint8_t *s, size_t len, size_t max) {
    if (len <= max)
        return len;
    size_t cut = max;
    /* Back off over continuation bytes (10xxxxxx): position cut must start a character. */
    while (cut > 0 && (s[cut] & 0xC0) == 0x80)
        cut--;
    return cut;
}

bool sp_utf8_valid(const uint8_t *s, size_t len, size_t *bad) {
    size_t i = 0;
    while (i < len) {
        /* Fast path: eight ASCII bytes at a time. */
        if (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            cp = c & 0x07;
        } else {
            goto invalid;
        }
        if (i + n > len)
            goto invalid;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                goto invalid;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            goto invalid;
        i += n;
    }
    return true;
invalid:
    if (bad)
        *bad = i;
    return false;
}
