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

typedef struct wg_dump_options {
    uint64_t size; /* target bytes of XML */
    uint64_t seed;
    uint32_t dup_per_million; /* pages that repeat an earlier title */
    unsigned pages_per_stream;
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
