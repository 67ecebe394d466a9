/*
 * text_aside.h: page text that the text filter decodes itself and hands to
 * the parser beside the document, so that libxml2 need not read it.
 *
 * On short pages (Wiktionary's, about 1 KB of XML a page) the filter of
 * text past the value cap drops nothing, and libxml2 spent a third of a
 * build's CPU reading the text content byte by byte. The filter lexes and
 * checks every byte of that content anyway (text_skip.h); where an element
 * is plainly well-formed (nothing in it given up on, no markup inside, its
 * end tag right after), it decodes the content into an entry here and
 * passes the parser only the content's line breaks. The parser (wikixml.h)
 * counts the start tags whose local name is "text", as the filter does,
 * and takes the entry of the element it captures by that number.
 *
 * A FIFO in one growing buffer: the filter appends, the parser takes in
 * document order and the owner drops what was taken between feeds. Not
 * thread-safe: one filter and one parser on one thread at a time.
 */
#ifndef SSTPIPE_EXTRACT_TEXT_ASIDE_H
#define SSTPIPE_EXTRACT_TEXT_ASIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct text_aside text_aside;

/* NULL when out of memory. */
text_aside *text_aside_init(void);
void text_aside_destroy(text_aside *a);

/* Drops every entry. */
void text_aside_reset(text_aside *a);

/*
 * For the filter: room for up to max decoded bytes of the content of text
 * element number `index` (1 for the document's first). NULL when out of
 * memory: the filter then passes the content to the parser as it is. The
 * entry exists once text_aside_commit says how many bytes it holds.
 */
uint8_t *text_aside_begin(text_aside *a, uint64_t index, size_t max);
void text_aside_commit(text_aside *a, size_t len);

/* For the parser: whether an entry for text element `index` is next,
 * dropping the entries of earlier elements (text the parser does not
 * keep). */
bool text_aside_has(text_aside *a, uint64_t index);

/* Takes the next entry (text_aside_has said it is there): its bytes,
 * valid until the next call on a. */
const uint8_t *text_aside_take(text_aside *a, size_t *len);

/* Frees the room of the entries taken; between feeds of the parser. */
void text_aside_compact(text_aside *a);

#endif
