/*
 * site_rules.c: the dump's <siteinfo> read by the dump parser itself
 * (wikixml.h), so its entities and encodings are read as the pages' are;
 * see site_rules.h.
 */
#include "stages/extract/site_rules.h"

#include "stages/extract/source.h"
#include "stages/extract/wikixml.h"

#include <stdlib.h>
#include <string.h>

/* A page before </siteinfo> ends the search: there is none to read. */
static int stop_at_page(void *ctx, const wiki_page *page, sp_error *err) {
    (void)page;
    *(bool *)ctx = true;
    return sp_errorf(err, "a page before <siteinfo>");
}

int site_rules_read(const char *path, sp_title_rules *rules, sp_error *err) {
    sp_title_rules_init(rules);
    if (!strcmp(path, "-"))
        return 0;
    extract_options filter;
    extract_options_init(&filter);
    source *src = source_open(path, err);
    if (!src)
        return -1;
    text_buffer *text = text_buffer_init(1, 4096, NULL, err);
    bool paged = false;
    wiki_parser *p = text ? wiki_parser_init(path, &filter, text, stop_at_page, &paged, err) : NULL;
    enum { CHUNK = 64 * 1024 };
    char *buf = malloc(CHUNK);
    int rc = p && buf ? 0 : -1;
    if (p && !buf)
        sp_errorf(err, "%s: out of memory", path);
    if (p)
        wiki_parser_read_site(p, rules);
    for (size_t seen = 0; !rc && !wiki_parser_site_done(p) && seen < SITE_RULES_HEAD_MAX;) {
        ssize_t n = source_read(src, buf, CHUNK, err);
        if (n <= 0) {
            rc = (int)n;
            break;
        }
        seen += (size_t)n;
        sp_error why = {0};
        if (wiki_parser_feed(p, buf, (size_t)n, &why)) {
            if (!paged) {
                *err = why;
                rc = -1;
            }
            break;
        }
    }
    /* What was read stands, whether or not the head went on. */
    free(buf);
    if (p)
        wiki_parser_destroy(p);
    if (text)
        text_buffer_destroy(text);
    source_close(src);
    return rc;
}
