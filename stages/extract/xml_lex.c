/*
 * xml_lex.c: the XML lexing rules text_skip.c and page_split.c share; see
 * xml_lex.h.
 *
 * A comment ends at the first "-->" and a CDATA section at the first
 * "]]>": counting the closing characters just before each '>' (at most
 * two matter, so "--->" and "]]]>" end them too, as libxml2 reads them).
 * A processing instruction ends at the first "?>".
 */
#include "stages/extract/xml_lex.h"

#include <string.h>
#include <strings.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

void xml_lex_bang(xml_lex_skip *s) {
    *s = (xml_lex_skip){0};
}

void xml_lex_pi(xml_lex_skip *s) {
    *s = (xml_lex_skip){.pi = true, .inside = true};
}

xml_lex_step xml_lex_skip_byte(xml_lex_skip *s, uint8_t c) {
    if (s->pi) {
        if (c == '>' && s->run)
            return XML_LEX_DONE;
        s->run = c == '?';
        return XML_LEX_MORE;
    }
    if (!s->inside) {
        if (!s->opener)
            s->opener = c == '-' ? "--" : c == '[' ? "[CDATA[" : NULL;
        if (!s->opener || c != (uint8_t)s->opener[s->matched])
            return XML_LEX_DOUBT;
        if (!s->opener[++s->matched]) {
            s->inside = true;
            s->run = 0;
        }
        return XML_LEX_MORE;
    }
    uint8_t closer = s->opener[0] == '-' ? '-' : ']';
    if (c == '>' && s->run == 2)
        return XML_LEX_DONE;
    s->run = c != closer ? 0 : s->run < 2 ? s->run + 1 : 2;
    return XML_LEX_MORE;
}

static bool named(const char *p, size_t n, const char *want) {
    return n == strlen(want) && !strncasecmp(p, want, n);
}

bool xml_lex_decl_ok(const char *decl, size_t len, bool ascii_too) {
    const char *end = decl + len;
    const char *p = memmem(decl, len, "encoding", 8);
    if (!p)
        return true;
    for (p += 8; p < end && xml_lex_space((uint8_t)*p); p++)
        ;
    if (p < end && *p == '=')
        for (p++; p < end && xml_lex_space((uint8_t)*p); p++)
            ;
    const char *close =
        p < end && (*p == '"' || *p == '\'') ? memchr(p + 1, *p, (size_t)(end - p - 1)) : NULL;
    if (!close)
        return false;
    size_t n = (size_t)(close - p - 1);
    return named(p + 1, n, "UTF-8") || named(p + 1, n, "UTF8") ||
           (ascii_too && named(p + 1, n, "US-ASCII"));
}

/* 64 bytes a round, compared sixteen at a time, the matches summed in byte
 * counters (63 rounds of 4 at most before they are added up), where memchr
 * paid a call per line (a short-page dump has one every 46 bytes: issue
 * 16). */
uint64_t xml_lex_lines(const uint8_t *p, size_t n) {
    uint64_t lines = 0;
    size_t i = 0;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n');
    while (n - i >= 64) {
        size_t rounds = (n - i) / 64 < 63 ? (n - i) / 64 : 63;
        __m128i acc = _mm_setzero_si128();
        for (size_t r = 0; r < rounds; r++, i += 64)
            for (size_t k = 0; k < 64; k += 16)
                acc = _mm_sub_epi8(
                    acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i + k)), nl));
        __m128i sums = _mm_sad_epu8(acc, _mm_setzero_si128());
        lines += (uint64_t)_mm_cvtsi128_si32(sums) +
                 (uint64_t)_mm_cvtsi128_si32(_mm_unpackhi_epi64(sums, sums));
    }
#endif
    for (; i < n; i++)
        lines += p[i] == '\n';
    return lines;
}
