/*
 * serve_search.c: the search page's server side; see serve_search.h.
 *
 * The page's fixed text (style, script) is search_page.html, compiled in;
 * this writes what lies between its start and its end: the form, and the
 * result of the request in #result, which the script also fetches and puts
 * in place when a title is chosen, so a record is rendered here alone.
 * Every text from a client or the table goes through sp_xml_escape_text;
 * a title in a link is percent-encoded first.
 */
#include "stages/serve/serve_search.h"

#include "stages/common/xml_escape.h"
#include "stages/serve/search_page.h"
#include "stages/serve/serve_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Titles listed for a query, or for a title not found. */
#define MATCHES 20

static void text(FILE *o, const void *s, size_t n) {
    sp_xml_escape_text(o, s, n);
}

/* A link to title's record. */
static void title_link(FILE *o, const char *title, size_t n) {
    char enc[3 * SSTPIPE_TITLE_MAX + 1];
    serve_percent_encode(title, n, enc);
    fprintf(o, "<a href=\"/?title=%s\">", enc);
    text(o, title, n);
    fputs("</a>", o);
}

static void no_index_note(FILE *o) {
    fputs("<p class=\"note\">This table has no title index, which suggestions need "
          "(a table built from a dump has one beside it, TABLE.titles): exact titles still "
          "work.</p>\n",
          o);
}

/* The titles starting with s (n bytes) as a list, or a sentence saying
 * there are none. -1 when no suggestion could be made (the text folds to
 * nothing, or a read failed). */
static int matches(FILE *o, sstpipe_table *t, const uint8_t *s, size_t n) {
    sstpipe_suggestion *found = calloc(MATCHES, sizeof *found);
    char *msg = NULL;
    int got = found ? sstpipe_suggest(t, s, n, MATCHES, found, &msg) : -1;
    sstpipe_free(msg);
    if (got > 0) {
        fputs("<ol class=\"matches\">\n", o);
        for (int i = 0; i < got; i++) {
            fputs("<li>", o);
            title_link(o, found[i].title, found[i].title_len);
            if (found[i].redirect)
                fputs("<span class=\"kind\">redirect</span>", o);
            fputs("</li>\n", o);
        }
        fputs("</ol>\n", o);
    } else if (got == 0) {
        fputs("<p>No title starts with &ldquo;", o);
        text(o, s, n);
        fputs("&rdquo;.</p>\n", o);
    }
    free(found);
    return got < 0 ? -1 : 0;
}

/* ?q=: its matches; without a title index, or for a text no suggestion
 * is made for, the title itself when it is one. */
static unsigned query(FILE *o, sstpipe_table *t, const uint8_t *q, size_t n,
                      sstpipe_lookup_result *res, char **msg) {
    fputs("<h2>Titles starting with &ldquo;", o);
    text(o, q, n);
    fputs("&rdquo;</h2>\n", o);
    bool titled = sstpipe_has_titles(t);
    if (titled && matches(o, t, q, n) == 0)
        return 200;
    int found = sstpipe_lookup(t, q, n, 0, res, msg);
    if (found < 0)
        return 500;
    if (found) {
        fputs("<ol class=\"matches\">\n<li>", o);
        title_link(o, (const char *)q, n);
        fputs("</li>\n</ol>\n", o);
    } else {
        fputs("<p>No page has that title.</p>\n", o);
    }
    if (!titled)
        no_index_note(o);
    return 200;
}

/* ?title=: the record, or why there is none and the titles starting with
 * what was asked. */
static unsigned title(FILE *o, sstpipe_table *t, const uint8_t *s, size_t n,
                      sstpipe_lookup_result *res, char **msg) {
    int found = sstpipe_lookup(t, s, n, 0, res, msg);
    if (found < 0)
        return 500;
    if (!found) {
        fputs("<h2>Not found</h2>\n<p class=\"error\">", o);
        if (res->missing_target_len) {
            fputs("&ldquo;", o);
            text(o, res->redirect_from, res->redirect_from_len);
            fputs("&rdquo; redirects to &ldquo;", o);
            text(o, res->missing_target, res->missing_target_len);
            fputs("&rdquo;, which is not in the table.</p>\n", o);
        } else {
            fputs("No page is titled &ldquo;", o);
            text(o, s, n);
            fputs("&rdquo;.</p>\n", o);
        }
        if (!sstpipe_has_titles(t))
            no_index_note(o);
        else
            matches(o, t, s, n);
        return 404;
    }
    fputs("<h2 class=\"title\">", o);
    text(o, res->title, res->title_len);
    fputs("</h2>\n", o);
    if (res->redirect_from_len) {
        fputs("<p class=\"redirect\">Redirected from &ldquo;", o);
        text(o, res->redirect_from, res->redirect_from_len);
        fputs("&rdquo;</p>\n", o);
    }
    fputs("<pre class=\"record\">", o);
    text(o, res->value, res->vlen);
    fputs("</pre>\n", o);
    /* The truncate stage keeps the longest prefix of at most
     * max_value_bytes that ends on a character: a value cut is at most
     * three bytes shorter than that. */
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    if (info.max_value_bytes && res->vlen + 3 >= info.max_value_bytes)
        fprintf(o,
                "<p class=\"cut\">Cut at %u bytes: the table keeps the start of each page, "
                "this much at most.</p>\n",
                info.max_value_bytes);
    return 200;
}

unsigned serve_search_page(sstpipe_table *t, const serve_search_request *r, char **body,
                           size_t *len, char **msg) {
    *body = NULL;
    *len = 0;
    *msg = NULL;
    sstpipe_lookup_result *res = malloc(sizeof *res);
    FILE *o = res ? open_memstream(body, len) : NULL;
    if (!o) {
        free(res);
        return 503;
    }
    fputs(serve_search_page_head, o);
    fputs("<header><h1><a href=\"/\">sstpipe search</a></h1>", o);
    if (r->reports)
        fputs("<a href=\"/index.html\">Nightly reports</a>", o);
    /* The script asks for no suggestion a table without a title index
     * cannot make. */
    fprintf(o,
            "</header>\n<form action=\"/\" method=\"get\" role=\"search\" autocomplete=\"off\""
            "%s>\n",
            sstpipe_has_titles(t) ? "" : " data-titles=\"no\"");
    fputs("<input id=\"q\" name=\"q\" type=\"search\" placeholder=\"A title, or its start\" "
          "aria-label=\"Title\" aria-autocomplete=\"list\" aria-controls=\"live\" "
          "aria-expanded=\"false\" autofocus value=\"",
          o);
    if (r->kind == SERVE_SEARCH_QUERY)
        text(o, r->text, r->len);
    fputs("\">\n<ul id=\"live\" role=\"listbox\"></ul>\n</form>\n"
          "<p id=\"live-status\" class=\"note\" aria-live=\"polite\"></p>\n<main id=\"result\">\n",
          o);
    unsigned status = 200;
    switch (r->kind) {
    case SERVE_SEARCH_EMPTY:
        fputs("<p class=\"note\">Type the start of a title: suggestions ignore case and "
              "accents. Enter lists every match; a title shows its record.</p>\n",
              o);
        if (!sstpipe_has_titles(t))
            no_index_note(o);
        break;
    case SERVE_SEARCH_QUERY:
        status = query(o, t, r->text, r->len, res, msg);
        break;
    case SERVE_SEARCH_TITLE:
        status = title(o, t, r->text, r->len, res, msg);
        break;
    case SERVE_SEARCH_REFUSED:
        fputs("<h2>Cannot search</h2>\n<p class=\"error\">", o);
        text(o, r->text, r->len);
        fputs("</p>\n", o);
        status = 400;
        break;
    }
    fputs("</main>\n", o);
    fputs(serve_search_page_tail, o);
    free(res);
    if (fclose(o) || status == 500) {
        free(*body);
        *body = NULL;
        *len = 0;
        return status == 500 ? 500 : 503;
    }
    return status;
}
