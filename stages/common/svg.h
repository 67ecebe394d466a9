/*
 * svg.h: the one SVG writer behind every chart sstpipe draws (profile's
 * latency distribution, tune's block-size chart, the nightly reports' bar
 * and trend charts).
 *
 * A chart is written as text to a FILE: sp_svg_begin opens the <svg> root
 * (with the XML declaration when the chart is a file of its own, without it
 * when it is inlined into an HTML page, where a declaration is not allowed)
 * and a white background; every piece of text goes through sp_svg_text,
 * which escapes it with the one XML escaper, so a title holding '<' or '&'
 * stays text whatever the chart is.
 *
 * The two charts the reports need come ready-made (sp_svg_bars,
 * sp_svg_trend), so that a report does not place shapes itself. A chart
 * that is a file of its own is written by sp_svg_write_file, whole or not
 * at all.
 */
#ifndef SSTPIPE_COMMON_SVG_H
#define SSTPIPE_COMMON_SVG_H

#include "stages/common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Opens the root element of a w x h chart; label (may be NULL) becomes its
 * accessible name (aria-label). standalone: a file of its own. */
void sp_svg_begin(FILE *o, int w, int h, bool standalone, const char *label);
void sp_svg_end(FILE *o);

/* Writes the chart that draw(o, arg) writes to o as the file at path,
 * atomically (sp_report_write_text); draw returns 0, or -1 when it ran out
 * of memory. */
int sp_svg_write_file(const char *path, int (*draw)(FILE *o, const void *arg), const void *arg,
                      sp_error *err);

/* <text x y attrs>text</text>, text escaped; attrs is markup ("" for none). */
void sp_svg_text(FILE *o, double x, double y, const char *attrs, const char *text);
void sp_svg_textf(FILE *o, double x, double y, const char *attrs, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* One bar of a horizontal bar chart: its label, its length and the text
 * written at its end (the figure as a person reads it). */
typedef struct sp_svg_bar {
    const char *label;
    double value; /* >= 0 */
    const char *value_text;
} sp_svg_bar;

/* Horizontal bars, one row each, scaled to the largest value. */
void sp_svg_bars(FILE *o, const char *title, const sp_svg_bar *bars, size_t n, bool standalone);

/* One line of a trend chart: n values, NAN where a point has no value (a
 * failed build has no records); colour like "#1f77b4". */
typedef struct sp_svg_series {
    const char *name;
    const double *y;
    const char *colour;
} sp_svg_series;

/* A line chart of series over n points labelled xlabels (oldest first),
 * y from 0 to the largest value; format_y writes an axis value as text. */
void sp_svg_trend(FILE *o, const char *title, const char *const *xlabels, size_t n,
                  const sp_svg_series *series, size_t n_series,
                  const char *(*format_y)(double v, char *buf, size_t cap), bool standalone);

#endif
