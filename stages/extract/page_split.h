/*
 * page_split.h: finds where a MediaWiki dump can be cut into pieces that
 * parse independently (parse_pool.h parses them on every core).
 *
 * A cut point is a start tag directly inside the root element (in a dump:
 * each <page>, and <siteinfo>). There the parser's state is always the
 * same: depth 1, no page open, only the root's namespaces declared. So a
 * piece starting there, read after the root start tag (the "head"), yields
 * the same pages and the same first error as the whole document would.
 *
 * The scanner knows just enough XML to tell markup from text: start and
 * end tags (quoted attribute values may hold '>'), comments, CDATA sections
 * and processing instructions. Wherever it is unsure (a DOCTYPE, '<' inside
 * a tag, an encoding other than UTF-8 or US-ASCII, a head longer than
 * PAGE_SPLIT_HEAD_MAX) it stops offering cut points: what follows is then
 * parsed as one piece, exactly as the single-threaded path would. Bytes
 * before the point of doubt were scanned correctly if they are well formed,
 * and if they are not, the parser fails inside them with its own message.
 *
 * Bytes may arrive in any pieces; the scanner carries its state.
 */
#ifndef SSTPIPE_EXTRACT_PAGE_SPLIT_H
#define SSTPIPE_EXTRACT_PAGE_SPLIT_H

#include "stages/common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest head (XML declaration plus root start tag) kept. Real dumps'
 * are about 300 bytes. */
#define PAGE_SPLIT_HEAD_MAX 4096

typedef struct page_split page_split;

page_split *page_split_init(sp_error *err);
/* A scanner for the document from offset start, a cut point (or the
 * space before one): there, after the head, directly inside the root. */
page_split *page_split_init_fragment(uint64_t start, sp_error *err);
void page_split_destroy(page_split *s);

/* Scans the next n bytes of the document. */
void page_split_scan(page_split *s, const uint8_t *buf, size_t n);

/* Offset in the document of the latest cut point scanned so far; 0 when
 * there is none yet (offset 0 is never one: the head comes first). */
uint64_t page_split_last(const page_split *s);

/* True when the bytes scanned so far end directly inside the root, outside
 * any markup: where they stop, the document could be cut (a chunk ending
 * there and one starting there parse as the whole would). */
bool page_split_between_pages(const page_split *s);

/* The head for wiki_parser_init_fragment (line breaks made spaces), once
 * the root start tag has been scanned; NULL before that. */
const uint8_t *page_split_head(const page_split *s, size_t *len);

/* The document line (1-based) of the root start tag's '<', once it has been
 * scanned: libxml2 names an element by the line it opened on, and a
 * fragment's parser reads the root from the head, on its own line 1. */
long page_split_root_line(const page_split *s);

#endif
