/*
 * wg_titles.h: the title, namespace and duplicate status of page number i,
 * each a pure function of (seed, i).
 *
 * Pure functions let a redirect or a link name a page written much later (or
 * earlier) without keeping every title in memory, which a 100 GB dump could
 * not afford. Titles are unique by construction, not by a lookup table: i is
 * scrambled by a bijection on [0, 2^bits) and the result spelled in
 * bijective base-WG_TITLE_WORDS digits, one title token per digit; the
 * tokens, namespace prefix and "(qualifier)" can be read back from the text,
 * so two page numbers never give the same title. The only repeats are the
 * deliberate duplicates: page i (when wg_title_is_dup) reuses the title of an
 * earlier page, as real dumps do when a title is written again.
 */
#ifndef WIKIGEN_WG_TITLES_H
#define WIKIGEN_WG_TITLES_H

#include "data/wg_vocab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for the longest title wg_title writes, plus its terminating NUL. */
#define WG_TITLE_CAP 256

typedef struct wg_namespace {
    int id;
    const char *name;   /* "" for the main namespace */
    uint32_t per_100k;  /* share of pages in it */
    unsigned len_shift; /* its texts are this many halvings shorter than articles */
} wg_namespace;

/* Every namespace the siteinfo lists; pages are drawn from those with a share. */
extern const wg_namespace wg_namespaces[];
extern const size_t wg_namespace_count;

typedef struct wg_titles {
    const wg_vocab *vocab;
    uint64_t seed;
    unsigned bits;
    uint64_t mask;
    uint32_t dup_per_million;
} wg_titles;

/* max_pages bounds the page numbers that will be asked for. */
void wg_titles_init(wg_titles *t, const wg_vocab *v, uint64_t seed, uint64_t max_pages,
                    uint32_t dup_per_million);

/* The namespace of page i's own title (an index into wg_namespaces). */
size_t wg_title_namespace(const wg_titles *t, uint64_t i);

/* Writes page i's own title (namespace prefix included, not escaped, not
 * NUL-terminated) to out; returns its length. */
size_t wg_title(const wg_titles *t, uint64_t i, char *out);

/* Whether page i repeats an earlier title, and which page it repeats. */
bool wg_title_is_dup(const wg_titles *t, uint64_t i);
uint64_t wg_title_dup_source(const wg_titles *t, uint64_t i);

#endif
