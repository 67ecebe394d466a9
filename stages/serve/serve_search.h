/*
 * serve_search.h: the search page `sstpipe serve` shows at /, so a person
 * with a browser can look titles up, with or without JavaScript:
 *
 *   GET /             the page: a box whose script (search_page.html)
 *                     suggests titles as one types, from /v1/suggest
 *   GET /?q=TEXT      the titles starting with TEXT (case and accents
 *                     ignored) as links, rendered by the server
 *   GET /?title=T     T's record as text, looked up as people type titles
 *                     (sstpipe_lookup), a redirect followed and named, a
 *                     record cut at the table's max_value_bytes marked
 *
 * A request refused is the page saying why: 400 (q or title empty, too
 * long, badly encoded or not UTF-8; both given; another parameter), 404 (no
 * such title, or a redirect to one; with the titles starting with it).
 * Every text from the table or the request is escaped (xml_escape.h). A
 * table without a title index still shows exact titles, and the page says
 * that suggestions need one. Serving a nightly directory, the page links
 * the nightly's reports (serve_pages.h).
 */
#ifndef SSTPIPE_SERVE_SERVE_SEARCH_H
#define SSTPIPE_SERVE_SERVE_SEARCH_H

#include "stages/sst/sstpipe.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The path of the page. */
#define SERVE_SEARCH_PATH "/"

/* The page's Content-Security-Policy: its inline style and script, and
 * requests to the server itself; nothing from anywhere else. */
#define SERVE_SEARCH_CSP                                                                           \
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "                  \
    "connect-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "                    \
    "frame-ancestors 'none'"

typedef enum serve_search_kind {
    SERVE_SEARCH_EMPTY,   /* the page alone */
    SERVE_SEARCH_QUERY,   /* ?q=: the titles starting with text */
    SERVE_SEARCH_TITLE,   /* ?title=: text's record */
    SERVE_SEARCH_REFUSED, /* a bad request: text says why */
} serve_search_kind;

typedef struct serve_search_request {
    serve_search_kind kind;
    const uint8_t *text; /* decoded, valid UTF-8 (the reason of a refusal) */
    size_t len;
    bool reports; /* serving a nightly directory: link its reports */
} serve_search_request;

/* The page for r into *body (malloc'd HTML, *len bytes); returns its
 * status: 200, 400 or 404; 500 with *msg set (the table's error, to
 * sstpipe_free) and no body; 503 with neither (out of memory). */
unsigned serve_search_page(sstpipe_table *t, const serve_search_request *r, char **body,
                           size_t *len, char **msg);

#endif
