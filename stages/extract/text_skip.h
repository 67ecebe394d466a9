/*
 * text_skip.h: drops page text that the value cap would throw away, before
 * the XML parser has to read it.
 *
 * With a value cap, extract keeps only the first value_cap bytes of each
 * page's text, yet most of a dump's bytes are text past that point, and
 * parsing them was most of the build's CPU. This filter sits between the
 * decompressor and the parser. In the content of every element whose local
 * name is "text", once value_cap decoded bytes have certainly gone by, it
 * drops bytes up to the next '<' but keeps every line break, so the parser
 * sees the same document with line breaks where text past the cap was: the
 * same records, and the same line numbers in any later error.
 *
 * Dropped bytes are checked as the parser would check them (UTF-8, XML
 * characters, references, "]]>"). At the first doubt the filter stops
 * dropping in that element and passes the rest of it untouched, so bad input
 * still fails in the parser, with the same message at the same line.
 * Documents in an encoding other than UTF-8 pass untouched.
 *
 * Chunks may split the document anywhere; the filter carries its state.
 *
 * With an aside (text_skip_set_aside), a text element whose content is
 * plainly well-formed (every byte checked as above, no markup in it, its
 * end tag right after it and all of it in one run) has its content, up to
 * where dropping began, decoded into the aside, and the parser gets only
 * its line breaks (text_aside.h).
 *
 * Elements the parser does not read (wiki_name_read: <id>, <timestamp>,
 * <comment>, ...) that are plainly well-formed, "<name>", checked
 * character data, "</name>", and stand where the parser keeps no text, are
 * dropped whole, their line breaks kept.
 */
#ifndef SSTPIPE_EXTRACT_TEXT_SKIP_H
#define SSTPIPE_EXTRACT_TEXT_SKIP_H

#include "stages/common/error.h"
#include "stages/extract/text_aside.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of output that text_skip_run and text_skip_finish may write beyond
 * the input they are given: bytes held back from earlier chunks. */
#define TEXT_SKIP_SLACK 32

typedef struct text_skip text_skip;

/* value_cap: bytes of each text element's content that must reach the
 * parser (> 0). */
text_skip *text_skip_init(uint64_t value_cap, sp_error *err);

/* For a piece of a UTF-8 document that starts outside markup and outside
 * any text element (parse_pool.h's chunks, which start at a start tag). */
text_skip *text_skip_init_fragment(uint64_t value_cap, sp_error *err);

/* Sets content aside into `aside` from now on (NULL: no more); the parser
 * fed this filter's output takes it from there (wiki_parser_set_aside). */
void text_skip_set_aside(text_skip *t, text_aside *aside);

/*
 * Filters the next n bytes of the document into out, which has room for
 * n + TEXT_SKIP_SLACK bytes. Returns the bytes written. Never fails: input
 * the filter does not understand is passed on for the parser to judge.
 */
size_t text_skip_run(text_skip *t, const void *in, size_t n, uint8_t *out);

/* At the end of the document: writes the bytes still held back (at most
 * TEXT_SKIP_SLACK) into out and returns their count. */
size_t text_skip_finish(text_skip *t, uint8_t *out);

/*
 * For a fragment's filter: true when the bytes filtered so far end directly
 * inside the root element (the fragment starts at depth 1), outside any
 * markup, and the lexer followed every byte with no doubt: where they stop,
 * the document could be cut (page_split_between_pages). It answers so only
 * where page_split's scanner, fed the same bytes, would too: markup the
 * two lexers read differently (quotes or '<' in a tag, a tag with no name)
 * and the root's end make it false for the rest of the fragment, as do
 * doubtful constructs (a DOCTYPE). So parse_pool checks a chunk's end in
 * the pass that filters it rather than in a scan of its own (issue 16).
 */
bool text_skip_between_pages(const text_skip *t);

void text_skip_destroy(text_skip *t);

#endif
