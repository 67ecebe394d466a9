/*
 * wg_text.h: wikitext for one revision: articles, talk and user pages,
 * templates, categories, files, Lua modules and redirects.
 *
 * The text is raw wikitext (what the pipeline's value is made of); the dump
 * writer escapes it for XML. Markup is what real dumps are full of --
 * headings, [[links]] to other pages of the same dump, {{templates}}, bold,
 * tables, <ref> tags, &nbsp; entities -- so a parser meets every escape.
 * Some texts are set up to place a multi-byte character across byte 1024,
 * exactly where the pipeline's default cut falls.
 */
#ifndef WIKIGEN_WG_TEXT_H
#define WIKIGEN_WG_TEXT_H

#include "data/wg_buf.h"
#include "data/wg_rng.h"
#include "data/wg_titles.h"
#include "data/wg_vocab.h"
#include "stages/common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The byte offset the straddling characters are placed around. */
#define WG_CUT_BYTES 1024

typedef struct wg_text {
    const wg_vocab *vocab;
    const wg_titles *titles;
    wg_rng *rng;
    uint64_t link_span; /* links and redirects point at pages [0, link_span) */
    wg_buf buf;         /* the text last generated */
    /* Pending straddle: a character starting at cut_at crosses WG_CUT_BYTES. */
    bool cut_pending;
    size_t cut_at;
    uint32_t cut_cp;
    unsigned foreign_share; /* of 256 words, how many come from other scripts */
} wg_text;

void wg_text_init(wg_text *g, const wg_vocab *v, const wg_titles *t, wg_rng *rng,
                  uint64_t link_span);
void wg_text_destroy(wg_text *g);

/* Draws the length of a text for a page of namespace ns_index: heavy-tailed,
 * from tens of bytes to several MiB. */
size_t wg_text_length(wg_text *g, size_t ns_index);

/* Replaces g->buf with a text of about target bytes for a page of namespace
 * ns_index (into wg_namespaces) titled title. */
int wg_text_page(wg_text *g, size_t ns_index, const char *title, size_t title_len, size_t target,
                 sp_error *err);

/* Replaces g->buf with the text of a redirect to target. */
int wg_text_redirect(wg_text *g, const char *target, size_t target_len, sp_error *err);

/* Appends a short edit summary to b (raw; b needs WG_BUF_SLACK room). */
void wg_text_summary(wg_text *g, wg_buf *b);

#endif
