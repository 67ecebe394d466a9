/*
 * wg_incr.h: daily increments ("adds/changes" dumps) of a dump wikigen
 * made, in the layout Wikimedia publishes them.
 *
 * Wikimedia's other/incr/WIKI/YYYYMMDD/WIKI-YYYYMMDD-pages-meta-hist-incr.xml.bz2
 * holds every revision made that day: existing pages edited, new pages,
 * several revisions of a page in order, pages of every namespace. An
 * increment here is the same: for each day after the base dump's date,
 * edit_per_million of the base's pages (their titles, drawn anew each day)
 * with 1 to 4 new revisions each, and new_pages pages with titles the base
 * does not have. The base is named by the options it was made with (size,
 * seed, duplicates): titles are pure functions of those (wg_titles.h), so
 * nothing of the base is read. The same options always give the same
 * bytes; day D's content depends only on the base and D.
 */
#ifndef WIKIGEN_WG_INCR_H
#define WIKIGEN_WG_INCR_H

#include "data/wg_dump.h"
#include "data/wg_sink.h"
#include "stages/common/error.h"

#include <stdint.h>

typedef struct wg_incr_options {
    uint32_t base_date; /* YYYYMMDD of the base dump */
    unsigned days;      /* increments for the days after it */
    uint32_t edit_per_million;
    uint64_t new_pages; /* per day */
    const char *wiki;   /* file name prefix, e.g. "enwiki" */
    const char *dir;    /* where the files go */
} wg_incr_options;

/* Parses YYYYMMDD (a real calendar date from 1970 to 9999). */
int wg_incr_parse_date(const char *s, uint32_t *date);

/* Writes the increments of the dump base would make; *files counts them. */
int wg_incr_write(const wg_incr_options *io, const wg_dump_options *base, wg_format format,
                  unsigned threads, unsigned *files, sp_error *err);

#endif
