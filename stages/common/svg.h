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

/* What a trend chart's values are: its y axis is in one unit of the kind,
 * the one a person reads the largest value in (us, MiB, k), with round
 * ticks (1, 2 or 5 times a power of ten) labelled alike and each distinct. */
typedef enum sp_svg_quantity {
    SP_SVG_COUNT,   /* a count: 950, 1.5k, 2M */
    SP_SVG_BYTES,   /* bytes: KiB, MiB, ... */
    SP_SVG_SECONDS, /* seconds: ns, us, ms, s, min, h */
} sp_svg_quantity;

/* A y axis from 0: ticks 0, step, ..., intervals * step in one unit of the
 * quantity (scale base units each), labelled with decimals digits. */
typedef struct sp_svg_axis {
    double step, scale, next_scale; /* next_scale: the next larger unit's, or 0 */
    int intervals, decimals;
    const char *unit; /* " us", " KiB", "k", "" */
} sp_svg_axis;

/* The axis for values from 0 to top (base units). */
sp_svg_axis sp_svg_axis_for(double top, sp_svg_quantity q);
/* Its last tick, in base units: what the chart's top edge stands for. */
double sp_svg_axis_top(const sp_svg_axis *a);
/* Tick k's label: "0.5 s", "150 KiB". */
const char *sp_svg_axis_label(const sp_svg_axis *a, int k, char *buf, size_t cap);

/* A line chart of series over n points labelled xlabels (oldest first; a
 * '\n' in a label starts its second line), y from 0 to the round tick at
 * or above the largest value. Only series with a value have a legend
 * entry. */
void sp_svg_trend(FILE *o, const char *title, const char *const *xlabels, size_t n,
                  const sp_svg_series *series, size_t n_series, sp_svg_quantity quantity,
                  bool standalone);

#endif
