/*
 * search_page.h: the search page's fixed text, compiled from
 * search_page.html at build time (pipeline/cmake/embed-page.cmake): its
 * start (the head, style, the body's opening) and its end (the script,
 * the closing tags). serve_search.c writes the rest between them.
 */
#ifndef SSTPIPE_SERVE_SEARCH_PAGE_H
#define SSTPIPE_SERVE_SEARCH_PAGE_H

extern const char serve_search_page_head[];
extern const char serve_search_page_tail[];

#endif
