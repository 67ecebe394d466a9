/*
 * verify_utf8.c: UTF-8 validation, 32 bytes at a time with AVX2 or 64 with
 * AVX-512BW; see
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
 * the next block is all ASCII or there is none. Where the processor has
 * AVX-512BW the same method runs 64 bytes at a time (verify's warm check
 * spent a third of its CPU time here with AVX2).
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

/* The three tables of the lookups, by nibble (both widths use them). */
static const char byte1_high[16] = {TOO_LONG,
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

/* Non-zero where a character is broken, given the previous block. */
__attribute__((target("avx2"))) static inline __m256i block_errors(__m256i input, __m256i prev) {
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

/* ------------------------------------------------------------- AVX-512 */

/* The same method 64 bytes at a time (AVX-512BW): the tables are looked up
 * within each 128-bit lane as with AVX2, the bytes before each one are the
 * previous lane's (or the previous block's last lane's), and the tail is a
 * masked load that reads no byte past len and pads with zeros (ASCII). */

#define AVX512 __attribute__((target("avx512f,avx512bw")))

AVX512 static inline __m512i lookup16_512(const char t[16], __m512i idx) {
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t)), idx);
}

/* The bytes of the 128-byte sequence prev:input, n places before input's. */
#define PREV512(input, prev, n)                                                                    \
    _mm512_alignr_epi8(                                                                            \
        input,                                                                                     \
        _mm512_permutex2var_epi64(prev, _mm512_setr_epi64(6, 7, 8, 9, 10, 11, 12, 13), input),     \
        16 - (n))

AVX512 static inline __m512i high_nibble_512(__m512i v) {
    return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
}

AVX512 static inline __m512i block_errors_512(__m512i input, __m512i prev) {
    __m512i prev1 = PREV512(input, prev, 1);
    __m512i special = _mm512_and_si512(
        _mm512_and_si512(lookup16_512(byte1_high, high_nibble_512(prev1)),
                         lookup16_512(byte1_low, _mm512_and_si512(prev1, _mm512_set1_epi8(0x0F)))),
        lookup16_512(byte2_high, high_nibble_512(input)));
    __m512i third =
        _mm512_subs_epu8(PREV512(input, prev, 2), _mm512_set1_epi8((char)(0xE0 - 0x80)));
    __m512i fourth =
        _mm512_subs_epu8(PREV512(input, prev, 3), _mm512_set1_epi8((char)(0xF0 - 0x80)));
    __m512i must_cont =
        _mm512_and_si512(_mm512_or_si512(third, fourth), _mm512_set1_epi8((char)0x80));
    return _mm512_xor_si512(must_cont, special);
}

/* Non-zero when the block ends inside a character: its last three bytes
 * against the least lead that needs more bytes than are left. */
AVX512 static inline __m512i ends_incomplete_512(__m512i input) {
    static const uint8_t max[64] = {
        [0 ... 60] = 0xFF, [61] = 0xF0 - 1, [62] = 0xE0 - 1, [63] = 0xC0 - 1};
    return _mm512_subs_epu8(input, _mm512_loadu_si512((const void *)max));
}

AVX512 static bool valid_avx512(const uint8_t *s, size_t len) {
    __m512i prev = _mm512_setzero_si512(), incomplete = prev, error = prev;
    for (size_t i = 0; i < len; i += 64) {
        __m512i input = len - i >= 64 ? _mm512_loadu_si512((const void *)(s + i))
                                      : _mm512_maskz_loadu_epi8((1ull << (len - i)) - 1, s + i);
        if (_mm512_movepi8_mask(input) == 0) {
            error = _mm512_or_si512(error, incomplete);
            incomplete = _mm512_setzero_si512();
        } else {
            error = _mm512_or_si512(error, block_errors_512(input, prev));
            incomplete = ends_incomplete_512(input);
        }
        prev = input;
    }
    error = _mm512_or_si512(error, incomplete);
    return _mm512_test_epi8_mask(error, error) == 0;
}

int verify_utf8_avx2(const uint8_t *s, size_t len) {
    return __builtin_cpu_supports("avx2") ? valid_avx2(s, len) : -1;
}

int verify_utf8_avx512(const uint8_t *s, size_t len) {
    return __builtin_cpu_supports("avx512bw") ? valid_avx512(s, len) : -1;
}

/* The widest of the two the processor has, chosen once before main rather
 * than asked of the processor at every call (verify makes two a record). */
static bool (*widest)(const uint8_t *s, size_t len);

__attribute__((constructor)) static void pick_widest(void) {
    __builtin_cpu_init(); /* constructors may run before libgcc's own */
    if (__builtin_cpu_supports("avx512bw"))
        widest = valid_avx512;
    else if (__builtin_cpu_supports("avx2"))
        widest = valid_avx2;
}

int verify_utf8_fast(const uint8_t *s, size_t len) {
    return widest ? widest(s, len) : -1;
}

const char *verify_utf8_fast_path(void) {
    return widest == valid_avx512 ? "AVX-512BW" : widest == valid_avx2 ? "AVX2" : NULL;
}

#else

int verify_utf8_avx2(const uint8_t *s, size_t len) {
    (void)s;
    (void)len;
    return -1;
}

int verify_utf8_avx512(const uint8_t *s, size_t len) {
    (void)s;
    (void)len;
    return -1;
}

int verify_utf8_fast(const uint8_t *s, size_t len) {
    (void)s;
    (void)len;
    return -1;
}

const char *verify_utf8_fast_path(void) {
    return NULL;
}

#endif

bool verify_utf8_valid(const uint8_t *s, size_t len, size_t *bad) {
    return verify_utf8_fast(s, len) == 1 || sp_utf8_valid(s, len, bad);
}
