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

#define HIGH_BITS 0x8080808080808080ull

static inline bool cont(uint8_t b) {
    return (b & 0xC0) == 0x80;
}

/* The bytes at s[0..avail) that begin with lead byte s[0] >= 0x80 form one valid
 * character: its length, or 0. The ranges are Unicode's table 3-7 (well-formed
 * byte sequences), which excludes overlongs, surrogates and code points above
 * U+10FFFF by the second byte alone, without assembling the code point. */
static inline size_t multibyte(const uint8_t *s, size_t avail) {
    uint8_t c = s[0];
    if (c >= 0xC2 && c <= 0xDF)
        return avail >= 2 && cont(s[1]) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return avail >= 3 && s[1] >= lo && s[1] <= hi && cont(s[2]) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return avail >= 4 && s[1] >= lo && s[1] <= hi && cont(s[2]) && cont(s[3]) ? 4 : 0;
    }
    return 0;
}

bool sp_utf8_valid(const uint8_t *s, size_t len, size_t *bad) {
    size_t i = 0;
    for (;;) {
        /* ASCII, eight bytes at a time; the first non-ASCII byte of a word is
         * found from its high bits rather than by stepping byte by byte. */
        for (; i + 8 <= len; i += 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            uint64_t high = w & HIGH_BITS;
            if (high) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                high = __builtin_bswap64(high);
#endif
                i += (size_t)__builtin_ctzll(high) >> 3;
                break;
            }
        }
        while (i < len && s[i] < 0x80)
            i++;
        if (i == len)
            return true;
        /* Non-Latin text runs multi-byte characters back to back: stay here for them. */
        do {
            size_t n = multibyte(s + i, len - i);
            if (!n) {
                if (bad)
                    *bad = i;
                return false;
            }
            i += n;
        } while (i < len && s[i] >= 0x80);
    }
}
