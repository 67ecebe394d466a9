/*
 * report_html.h: what the report pages share (private to the report pages of pipeline/nightly):
 * the page frame with its inline style sheet, escaped text and links,
 * figures tagged for machines, reading a manifest and writing a page.
 *
 * Every figure a page shows that comes from the manifest is in an element
 * with data-field="NAME" holding the value exactly as the manifest has it
 * (a count as its digits, a time as the manifest's seconds to 6 digits; an empty
 * string is "(empty)" with data-empty), beside the rounded form people read;
 * where the element's text is that rounded form ("8.12 us", "256 MiB"), the
 * exact value is its data-value attribute. Tests and scripts read the
 * exact value from the DOM and compare it with the manifest.
 */
#ifndef SSTPIPE_REPORT_REPORT_HTML_H
#define SSTPIPE_REPORT_REPORT_HTML_H

#include "stages/common/error.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* <!DOCTYPE html> ... <body>, the title escaped. */
void html_begin(FILE *o, const char *title);
/* The footer and </body></html>: which sstpipe wrote the page, and
 * (built_by, when not NULL: a build's page) which one made the build, said
 * once when they are the same. */
void html_end(FILE *o, const char *built_by);
/* s escaped as text or attribute value; NULL writes nothing. */
void html_text(FILE *o, const char *s);
/* A relative URL path, each byte outside [A-Za-z0-9/._~-] percent-encoded. */
void html_url(FILE *o, const char *path);
/* <span data-field="field">text</span>, text escaped; an empty text is
 * shown as "(empty)" with a data-empty attribute. */
void html_field(FILE *o, const char *field, const char *text);
/* <span data-field="field" data-value="exact">human</span>: a figure shown
 * as a person reads it, with the manifest's value beside it for machines. */
void html_figure(FILE *o, const char *field, const char *exact, const char *human);
/* A JSON scalar as text: "" for null, true/false, integers whole, reals
 * to 6 significant digits (a time to the microsecond or better). */
const char *html_json_text(const json_t *v, char *buf, size_t cap);
/* The member name of o as text, or NULL when it is absent or not a string. */
const char *html_str(const json_t *o, const char *name);
/* Seconds for people: "0.42 s", "3 min 12 s". */
const char *html_seconds(double s, char *buf, size_t cap);

/* dir/manifest.json, parsed; -1 with an error naming the file and the
 * line and column of a syntax error. */
int report_load_manifest(const char *dir, json_t **m, sp_error *err);

#endif
