/*
 * xml_lex.h: the pieces of XML lexing that the two byte scanners in front
 * of the parser share: text_skip.c (drops text past the value cap) and
 * page_split.c (finds cut points between pages).
 *
 * Both know just enough XML to tell markup from text, and both must agree
 * with libxml2 on where a comment, a CDATA section or a processing
 * instruction ends (their insides may hold '<' and '>' that are no tags),
 * and on which encodings an XML declaration may name for '<', '>' and
 * quotes to be found by their bytes. Those rules live here, once; what each
 * scanner does with tags (names, depth, the document's head) stays its own.
 */
#ifndef SSTPIPE_EXTRACT_XML_LEX_H
#define SSTPIPE_EXTRACT_XML_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A comment, CDATA section or processing instruction being skipped, from
 * the byte after its "<!" or "<?". */
typedef struct xml_lex_skip {
    const char *opener; /* "--" or "[CDATA[" while matching it after "<!" */
    size_t matched;
    bool pi;      /* a processing instruction */
    bool inside;  /* the opener is matched: in the comment or section */
    unsigned run; /* trailing '-' (comment) or ']' (CDATA); PI: last byte was '?' */
} xml_lex_skip;

typedef enum xml_lex_step {
    XML_LEX_MORE,  /* still inside */
    XML_LEX_DONE,  /* that byte was its closing '>' */
    XML_LEX_DOUBT, /* "<!" opening anything else (a DOCTYPE): stop following */
} xml_lex_step;

/* After "<!". */
void xml_lex_bang(xml_lex_skip *s);
/* After "<?". */
void xml_lex_pi(xml_lex_skip *s);
/* The next byte of what xml_lex_bang or xml_lex_pi began. */
xml_lex_step xml_lex_skip_byte(xml_lex_skip *s, uint8_t c);

/* XML white space. */
static inline bool xml_lex_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * The line breaks ('\n') in p[0..n): how the parse pool and the parser
 * (wikixml.c) turn a piece of the document into line numbers. The pool
 * counts every chunk's bytes on its worker, a pass the one-thread parse
 * does not make, so it is cheap (xml_lex.c).
 */
uint64_t xml_lex_lines(const uint8_t *p, size_t n);

/*
 * Whether the XML declaration decl[0..len) ("<?xml ... ?>") leaves the
 * document ASCII-compatible: it names no encoding, or UTF-8 (also spelt
 * UTF8), or, with ascii_too, US-ASCII; a value with no closing quote is
 * refused.
 */
bool xml_lex_decl_ok(const char *decl, size_t len, bool ascii_too);

#endif
