/*
 * wikixml.h: a streaming parser for MediaWiki XML exports.
 *
 * Fed decompressed bytes in chunks of any size, it reports each <page> of
 * the <mediawiki> root when the page closes: title, namespace, redirect
 * flag, and the text of its last <revision> (held in a text_buffer, so a
 * huge page costs bounded memory). Elements are matched by local name, so
 * every export schema version's namespace is accepted; everything the
 * pipeline does not need (<siteinfo>, <upload>, <comment>, ...) is skipped.
 *
 * Parsing is safe against hostile input: a DOCTYPE (and with it every
 * entity declaration and external subset) is refused, nothing is loaded
 * from files or the network, and only the five predefined entities and
 * character references are expanded. Real dumps need nothing more.
 */
#ifndef SSTPIPE_EXTRACT_WIKIXML_H
#define SSTPIPE_EXTRACT_WIKIXML_H

#include "stages/common/error.h"
#include "stages/common/title_rules.h"
#include "stages/extract/extract.h"
#include "stages/extract/text_aside.h"
#include "stages/extract/text_buffer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a page yields no record. A namespace miss wins over a redirect. */
typedef enum wiki_skip {
    WIKI_KEEP,
    WIKI_SKIP_NAMESPACE,
    WIKI_SKIP_REDIRECT,
} wiki_skip;

typedef struct wiki_page {
    const uint8_t *title; /* UTF-8, entities resolved, 1..SP_MAX_KEY_BYTES bytes */
    uint32_t title_len;
    long ns;       /* <ns>, 0 when absent */
    bool redirect; /* carries <redirect/> */
    wiki_skip skip;
    long line;         /* line of the <page> start tag */
    text_buffer *text; /* last revision's text; empty for skipped pages */
} wiki_page;

typedef int (*wiki_page_fn)(void *ctx, const wiki_page *page, sp_error *err);

/* Whether the parser looks at elements of local name name[0..len) at all
 * (mediawiki, page, title, ns, redirect, revision, text): the text filter
 * drops plain elements of the other names whole (text_skip.h). */
bool wiki_name_read(const char *name, size_t len);

/* Whether the parser keeps character data directly inside elements of that
 * local name (title, ns, text): the filter adds line breaks only where
 * nothing is kept. */
bool wiki_name_captured(const char *name, size_t len);

typedef struct wiki_parser wiki_parser;

/*
 * name: the input's name for errors. filter: namespaces/skip_redirects
 * decide wiki_page.skip (text of pages already known to be skipped is not
 * buffered). text: where revision text goes. on_page: called at each
 * </page>.
 */
wiki_parser *wiki_parser_init(const char *name, const extract_options *filter, text_buffer *text,
                              wiki_page_fn on_page, void *ctx, sp_error *err);
int wiki_parser_feed(wiki_parser *p, const void *buf, size_t n, sp_error *err);
/*
 * Reads the document's <siteinfo> title rules (its <case> and each
 * <namespace>'s key, case and name) into *rules, which is set to
 * MediaWiki's defaults now and must outlive the parse; to be called
 * before the first feed. wiki_parser_site_done says when </siteinfo> was
 * read. Without it <siteinfo> is skipped like everything else.
 */
void wiki_parser_read_site(wiki_parser *p, sp_title_rules *rules);
bool wiki_parser_site_done(const wiki_parser *p);
/*
 * When the bytes fed come from a text filter that sets text aside into
 * `aside` (text_skip_set_aside), from the same place in the document: to be
 * called before the first of them is fed. The text of the elements it set
 * aside is taken from there; the caller drops what was taken
 * (text_aside_compact) between feeds.
 */
void wiki_parser_set_aside(wiki_parser *p, text_aside *aside);
/*
 * Fragment mode, for parsing a dump in pieces (parse_pool.h): to be called
 * right after init. head is the document's XML declaration (if any) and
 * root start tag with every line break replaced by a space, so the fragment
 * is read with the root's namespaces and the document's encoding; the bytes
 * fed next are taken to start on document line line_base + 1, which every
 * error and wiki_page.line then names; root_line is the document line the
 * root start tag opened on, which an error naming the root's line (a tag
 * mismatch against it) then says. A fragment that is not the end of the
 * document is closed by feeding "</mediawiki>" before finish.
 */
int wiki_parser_init_fragment(wiki_parser *p, const void *head, size_t head_len, long root_line,
                              long line_base, sp_error *err);
/* Ends the document: an error unless </mediawiki> was reached. */
int wiki_parser_finish(wiki_parser *p, sp_error *err);
void wiki_parser_destroy(wiki_parser *p);

#endif
