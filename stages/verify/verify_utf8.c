/*
 * verify_utf8.c: UTF-8 validation, 32 bytes at a time with AVX2; see
 * verify_utf8.h.
 *
 * Each byte is classified with three 16-entry table lookups (by the high
 * and low nibble of the byte before it, and by its own high nibble), whose
 * AND is non-zero exactly where the pair of bytes breaks one of the rules of
 * Unicode's table 3-7: a continuation byte without a lead, a lead without
 * enough continuation bytes, an overlong form, a surrogate, or a code point
 * above U+10FFFF. Third and fourth bytes of a character are found from the
 * bytes two and three places back. Blocks of ASCII only skip the tables. A
 * character may straddle two blocks: the previous block's bytes take part
 * in the lookups, and a block that ends inside a character is an error if
 * the next block is all ASCII or there is none.
 */
#include "stages/verify/verify_utf8.h"

#include "stages/common/utf8.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TOO_SHORT (1 << 0)      /* a lead byte not followed by a continuation */
#define TOO_LONG (1 << 1)       /* a continuation byte after ASCII */
#define OVERLONG_3 (1 << 2)     /* E0 80..9F */
#define TOO_LARGE (1 << 3)      /* F4 90..BF, F5.. 90..BF */
#define SURROGATE (1 << 4)      /* ED A0..BF */
#define OVERLONG_2 (1 << 5)     /* C0..C1 */
#define TOO_LARGE_1000 (1 << 6) /* F5.. 80..8F */
#define OVERLONG_4 (1 << 6)     /* F0 80..8F */
#define TWO_CONTS (1 << 7)      /* a continuation after a continuation */
#define CARRY (TOO_SHORT | TOO_LONG | TWO_CONTS)

__attribute__((target("avx2"))) static inline __m256i lookup16(const char t[16], __m256i idx) {
    __m128i t128 = _mm_loadu_si128((const __m128i *)t);
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(t128), idx);
}

/* The bytes of the 64-byte sequence prev:input, n places before input's. */
#define PREV(input, prev, n)                                                                       \
    _mm256_alignr_epi8(input, _mm256_permute2x128_si256(prev, input, 0x21), 16 - (n))

__attribute__((target("avx2"))) static inline __m256i high_nibble(__m256i v) {
    return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
}

/* Non-zero where a character is broken, given the previous block. */
__attribute__((target("avx2"))) static inline __m256i block_errors(__m256i input, __m256i prev) {
    static const char byte1_high[16] = {
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TOO_SHORT | OVERLONG_2,
        TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE,
        (char)(TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4)};
    static const char byte1_low[16] = {(char)(CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4),
                                       (char)(CARRY | OVERLONG_2),
                                       (char)CARRY,
                                       (char)CARRY,
                                       (char)(CARRY | TOO_LARGE),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                                       (char)(CARRY | TOO_LARGE | TOO_LARGE_1000)};
    static const char byte2_high[16] = {
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4),
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE),
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE),
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE),
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT};
    __m256i prev1 = PREV(input, prev, 1);
    __m256i special = _mm256_and_si256(
        _mm256_and_si256(lookup16(byte1_high, high_nibble(prev1)),
                         lookup16(byte1_low, _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)))),
        lookup16(byte2_high, high_nibble(input)));
    /* Third bytes follow E0..EF two places back, fourth bytes F0..F7 three
     * places back: there two continuations in a row are required. */
    __m256i third = _mm256_subs_epu8(PREV(input, prev, 2), _mm256_set1_epi8((char)(0xE0 - 0x80)));
    __m256i fourth = _mm256_subs_epu8(PREV(input, prev, 3), _mm256_set1_epi8((char)(0xF0 - 0x80)));
    __m256i must_cont =
        _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
    return _mm256_xor_si256(must_cont, special);
}

/* Non-zero when the block ends inside a character. */
__attribute__((target("avx2"))) static inline __m256i ends_incomplete(__m256i input) {
    const __m256i max = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
    return _mm256_subs_epu8(input, max);
}

/* Whether s[0..n), n < 32, is all ASCII. */
static inline bool ascii(const uint8_t *s, size_t n) {
    uint64_t high = 0, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        high |= w;
    }
    for (; i < n; i++)
        high |= s[i];
    return (high & 0x8080808080808080ull) == 0;
}

__attribute__((target("avx2"))) static bool valid_avx2(const uint8_t *s, size_t len) {
    __m256i prev = _mm256_setzero_si256(), incomplete = prev, error = prev;
    uint8_t tail[32];
    for (size_t i = 0; i < len; i += 32) {
        __m256i input;
        if (len - i >= 32) {
            input = _mm256_loadu_si256((const __m256i *)(s + i));
        } else if (ascii(s + i, len - i)) {
            /* Most keys and the ends of most values: no copy to pad them. */
            error = _mm256_or_si256(error, incomplete);
            incomplete = _mm256_setzero_si256();
            break;
        } else {
            /* Zero padding is ASCII: a character cut by the end is then
             * followed by a byte that is no continuation. */
            memset(tail, 0, sizeof tail);
            memcpy(tail, s + i, len - i);
            input = _mm256_loadu_si256((const __m256i *)tail);
        }
        if (_mm256_movemask_epi8(input) == 0) {
            error = _mm256_or_si256(error, incomplete);
            incomplete = _mm256_setzero_si256();
        } else {
            error = _mm256_or_si256(error, block_errors(input, prev));
            incomplete = ends_incomplete(input);
        }
        prev = input;
    }
    error = _mm256_or_si256(error, incomplete);
    return _mm256_testz_si256(error, error);
}

int verify_utf8_fast(const uint8_t *s, size_t len) {
    return __builtin_cpu_supports("avx2") ? valid_avx2(s, len) : -1;
}

#else

int verify_utf8_fast(const uint8_t *s, size_t len) {
    (void)s;
    (void)len;
    return -1;
}

#endif

bool verify_utf8_valid(const uint8_t *s, size_t len, size_t *bad) {
    return verify_utf8_fast(s, len) == 1 || sp_utf8_valid(s, len, bad);
}
