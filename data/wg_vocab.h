/*
 * wg_vocab.h: the words wikigen writes: a frequency-ranked wikitext
 * vocabulary, a vocabulary of non-Latin and accented words, and the tokens
 * titles are spelled from.
 *
 * The tables are the same for every seed (built from a fixed internal seed),
 * so the seed only decides which words are drawn. Words sit in fixed 24-byte
 * slots so the hot loop copies one with a single unconditional copy; the
 * struct is public for that reason (the text generator reads it inline).
 *
 * Draws follow Zipf's law (frequency ~ 1/rank) without tables or floating
 * point: rank = 2^e - 1 + uniform(2^e) with e uniform, which puts the same
 * probability mass in every octave of ranks, as 1/rank does.
 */
#ifndef WIKIGEN_WG_VOCAB_H
#define WIKIGEN_WG_VOCAB_H

#include "stages/common/error.h"

#include <stddef.h>
#include <stdint.h>

#define WG_WORD_CAP 23

typedef struct wg_word {
    uint8_t len;
    char s[WG_WORD_CAP];
} wg_word;

#define WG_TEXT_OCTAVES 15
#define WG_FOREIGN_OCTAVES 12
#define WG_TITLE_WORDS 3000

typedef struct wg_vocab {
    wg_word *text;    /* 2^WG_TEXT_OCTAVES - 1 words, most frequent first */
    wg_word *foreign; /* 2^WG_FOREIGN_OCTAVES - 1 words in other scripts */
    /* Title tokens, distinct even ignoring ASCII case, none containing a
     * space, '(' , ')' or ':', so a title's token sequence can be read back
     * from its text (that is what makes generated titles unique). */
    wg_word *title;
} wg_vocab;

int wg_vocab_init(wg_vocab *v, sp_error *err);
void wg_vocab_destroy(wg_vocab *v);

/* A Zipf-distributed rank in [0, 2^octaves - 1) from 64 random bits. */
static inline uint32_t wg_zipf_rank(uint64_t r, unsigned octaves) {
    unsigned e = (unsigned)(((r & 0xffff) * octaves) >> 16);
    return (1u << e) - 1 + (uint32_t)((r >> 16) & ((1u << e) - 1));
}

/* Appends the UTF-8 encoding of code point cp to p; returns its length. */
size_t wg_utf8_put(char *p, uint32_t cp);

#endif
