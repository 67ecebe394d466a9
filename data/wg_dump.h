/*
 * wg_dump.h: writes one whole synthetic MediaWiki export (schema 0.11) of
 * about the requested size into a sink.
 *
 * The header and <siteinfo>, every page_per_stream pages, and the closing
 * </mediawiki> are separated by wg_sink_end_stream, which is how the
 * multistream layout of the public dumps comes out.
 */
#ifndef WIKIGEN_WG_DUMP_H
#define WIKIGEN_WG_DUMP_H

#include "data/wg_sink.h"
#include "stages/common/error.h"

#include <stdint.h>

/* Instead of pages 0, 1, 2, ... until the size is reached: exactly the
 * pages numbered here, their titles those of the dump made with
 * title_seed and title_size, each with min_revisions..max_revisions
 * revisions timed within [time_from, time_from + time_span) (an
 * increment: wg_incr.h). */
typedef struct wg_page_list {
    const uint64_t *numbers;
    size_t n;
    uint64_t title_seed, title_size;
    unsigned min_revisions, max_revisions;
    uint64_t time_from, time_span; /* seconds since 1970 */
} wg_page_list;

/* The shape of the pages. */
typedef enum wg_profile {
    WG_PROFILE_ENWIKI,     /* long articles, over half the pages redirects: ~4 KB a page */
    WG_PROFILE_WIKTIONARY, /* short entries, few redirects: ~1.1 KB of XML a page, as in
                              Wiktionary, Wikiquote or Wikisource dumps */
} wg_profile;

typedef struct wg_dump_options {
    wg_profile profile;
    uint64_t size; /* target bytes of XML */
    uint64_t seed;
    uint32_t dup_per_million; /* pages that repeat an earlier title */
    unsigned pages_per_stream;
    const wg_page_list *pages; /* NULL: a whole dump of about size bytes */
} wg_dump_options;

typedef struct wg_dump_stats {
    uint64_t xml_bytes;
    uint64_t pages;
    uint64_t redirects;
    uint64_t duplicates;
    uint64_t revisions;
} wg_dump_stats;

int wg_dump_write(const wg_dump_options *o, wg_sink *sink, wg_dump_stats *stats, sp_error *err);

#endif
