/* svg.c: the SVG chart writer; see svg.h. */
#include "stages/common/svg.h"

#include "stages/common/report.h"
#include "stages/common/xml_escape.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void sp_svg_begin(FILE *o, int w, int h, bool standalone, const char *label) {
    if (standalone)
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", o);
    fprintf(o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" style=\"font-family:sans-serif;font-size:12px\" role=\"img\"",
            w, h, w, h);
    if (label) {
        fputs(" aria-label=\"", o);
        sp_xml_escape(o, label);
        fputc('"', o);
    }
    fprintf(o, ">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w, h);
}

void sp_svg_end(FILE *o) {
    fputs("</svg>\n", o);
}

int sp_svg_write_file(const char *path, int (*draw)(FILE *o, const void *arg), const void *arg,
                      sp_error *err) {
    /* Drawn in memory first: a chart that could not be drawn whole leaves
     * no file behind, and the file is written in one piece. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return sp_errorf_errno(err, "%s: cannot build the chart", path);
    int drawn = draw(mem, arg);
    if (fclose(mem) != 0 || drawn) {
        free(text);
        return sp_errorf(err, "%s: cannot build the chart (out of memory)", path);
    }
    int rc = sp_report_write_text(path, text, len, err);
    free(text);
    return rc;
}

void sp_svg_text(FILE *o, double x, double y, const char *attrs, const char *text) {
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\"%s%s>", x, y, *attrs ? " " : "", attrs);
    sp_xml_escape(o, text);
    fputs("</text>\n", o);
}

void sp_svg_textf(FILE *o, double x, double y, const char *attrs, const char *fmt, ...) {
    char *buf = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&buf, fmt, ap);
    va_end(ap);
    sp_svg_text(o, x, y, attrs, n < 0 ? "" : buf);
    if (n >= 0)
        free(buf);
}

#define BAR_W 720
#define BAR_LABEL 130.0 /* bars start here */
#define BAR_END 560.0   /* the longest bar ends here; its figure follows */
#define BAR_ROW 26.0
#define BAR_TOP 36.0

void sp_svg_bars(FILE *o, const char *title, const sp_svg_bar *bars, size_t n, bool standalone) {
    int h = (int)(BAR_TOP + BAR_ROW * (double)n + 12);
    sp_svg_begin(o, BAR_W, h, standalone, title);
    sp_svg_text(o, 10, 20, "font-size=\"14\"", title);
    double top = 0;
    for (size_t i = 0; i < n; i++)
        top = fmax(top, bars[i].value);
    for (size_t i = 0; i < n; i++) {
        double y = BAR_TOP + BAR_ROW * (double)i;
        double w = top > 0 ? (BAR_END - BAR_LABEL) * bars[i].value / top : 0;
        sp_svg_text(o, BAR_LABEL - 8, y + 14, "text-anchor=\"end\"", bars[i].label);
        fprintf(o,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#7aa6d6\"/>\n",
                BAR_LABEL, y + 2, w < 1 ? 1 : w, BAR_ROW - 8);
        sp_svg_text(o, BAR_LABEL + (w < 1 ? 1 : w) + 6, y + 14, "", bars[i].value_text);
    }
    sp_svg_end(o);
}

#define TREND_W 720
#define TREND_H 290
#define TX0 80.0 /* plot area */
#define TX1 560.0
#define TY0 40.0
#define TY1 220.0
/* Date labels shown at most: two lines of up to 10 characters fit this
 * many side by side under the plot. */
#define TREND_XLABELS 6

static double trend_x(size_t i, size_t n) {
    return n > 1 ? TX0 + (TX1 - TX0) * (double)i / (double)(n - 1) : (TX0 + TX1) / 2;
}

typedef struct unit {
    double scale; /* of the base unit (a count, a byte, a second) */
    const char *name;
} unit;

static const unit COUNT_UNITS[] = {{1, ""}, {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {0, NULL}};
static const unit BYTE_UNITS[] = {{1, " bytes"},
                                  {1024.0, " KiB"},
                                  {1024.0 * 1024, " MiB"},
                                  {1024.0 * 1024 * 1024, " GiB"},
                                  {1024.0 * 1024 * 1024 * 1024, " TiB"},
                                  {0, NULL}};
static const unit TIME_UNITS[] = {{1e-9, " ns"}, {1e-6, " us"}, {1e-3, " ms"}, {1, " s"},
                                  {60, " min"},  {3600, " h"},  {0, NULL}};

static sp_svg_axis axis_in_unit(double top, sp_svg_quantity q) {
    const unit *units = q == SP_SVG_BYTES     ? BYTE_UNITS
                        : q == SP_SVG_SECONDS ? TIME_UNITS
                                              : COUNT_UNITS;
    const unit *in = q == SP_SVG_SECONDS ? &TIME_UNITS[3] : &units[0];
    for (const unit *u = units; top > 0 && u->name; u++)
        if (top >= u->scale || u == units)
            in = u;
    sp_svg_axis a = {.scale = in->scale, .unit = in->name};
    double t = top / in->scale;
    /* About four intervals, each 1, 2 or 5 times a power of ten. */
    double raw = t > 0 ? t / 4 : 1, mag = pow(10, floor(log10(raw))), r = raw / mag;
    a.step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
    /* A count or a byte is whole: no tick between two. */
    if (in->scale == 1 && q != SP_SVG_SECONDS && a.step < 1)
        a.step = 1;
    a.intervals = t > 0 ? (int)ceil(t / a.step - 1e-9) : 1;
    a.decimals = a.step >= 1 ? 0 : (int)ceil(-log10(a.step) - 1e-9);
    a.next_scale = in[1].name ? in[1].scale : 0;
    return a;
}

sp_svg_axis sp_svg_axis_for(double top, sp_svg_quantity q) {
    /* When the last tick reaches the next unit (1000 ms), the axis in that
     * unit (0.5 s, 1 s). */
    sp_svg_axis a = axis_in_unit(top, q);
    return a.next_scale && sp_svg_axis_top(&a) >= a.next_scale
               ? axis_in_unit(sp_svg_axis_top(&a), q)
               : a;
}

double sp_svg_axis_top(const sp_svg_axis *a) {
    return a->step * a->intervals * a->scale;
}

const char *sp_svg_axis_label(const sp_svg_axis *a, int k, char *buf, size_t cap) {
    snprintf(buf, cap, "%.*f%s", a->decimals, a->step * k, a->unit);
    return buf;
}

void sp_svg_trend(FILE *o, const char *title, const char *const *xlabels, size_t n,
                  const sp_svg_series *series, size_t n_series, sp_svg_quantity quantity,
                  bool standalone) {
    sp_svg_begin(o, TREND_W, TREND_H, standalone, title);
    sp_svg_text(o, 10, 20, "font-size=\"14\"", title);
    double top = 0;
    for (size_t s = 0; s < n_series; s++)
        for (size_t i = 0; i < n; i++)
            if (!isnan(series[s].y[i]))
                top = fmax(top, series[s].y[i]);
    sp_svg_axis a = sp_svg_axis_for(top, quantity);
    double axis_top = sp_svg_axis_top(&a);
    char label[48];
    fprintf(o,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#333\"/>\n",
            TX0, TY0, TX1 - TX0, TY1 - TY0);
    for (int k = 0; k <= a.intervals; k++) {
        double y = TY1 - (TY1 - TY0) * k / a.intervals;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", TX0,
                y, TX1, y);
        sp_svg_text(o, TX0 - 6, y + 4, "text-anchor=\"end\" class=\"tick-y\"",
                    sp_svg_axis_label(&a, k, label, sizeof label));
    }
    /* At most TREND_XLABELS date labels, evenly spaced, so they never
     * overlap; each of one or two lines. */
    size_t step = n > TREND_XLABELS ? (n + TREND_XLABELS - 1) / TREND_XLABELS : 1;
    for (size_t i = 0; i < n; i += step) {
        const char *nl = strchr(xlabels[i], '\n');
        fprintf(o,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"tick-x\">"
                "<tspan x=\"%.1f\">",
                trend_x(i, n), TY1 + 16, trend_x(i, n));
        char *first = strndup(xlabels[i], nl ? (size_t)(nl - xlabels[i]) : strlen(xlabels[i]));
        sp_xml_escape(o, first ? first : "");
        free(first);
        if (nl) {
            fprintf(o, "</tspan><tspan x=\"%.1f\" dy=\"14\">", trend_x(i, n));
            sp_xml_escape(o, nl + 1);
        }
        fputs("</tspan></text>\n", o);
    }
    size_t shown = 0;
    for (size_t s = 0; s < n_series; s++) {
        const sp_svg_series *se = &series[s];
        /* A missing value breaks the line: one polyline per unbroken run. */
        bool open = false, any = false;
        for (size_t i = 0; i < n; i++) {
            if (isnan(se->y[i])) {
                if (open)
                    fputs("\"/>\n", o);
                open = false;
                continue;
            }
            if (!open)
                fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                        se->colour);
            open = any = true;
            fprintf(o, "%.1f,%.1f ", trend_x(i, n), TY1 - (TY1 - TY0) * se->y[i] / axis_top);
        }
        if (open)
            fputs("\"/>\n", o);
        for (size_t i = 0; i < n; i++)
            if (!isnan(se->y[i]))
                fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", trend_x(i, n),
                        TY1 - (TY1 - TY0) * se->y[i] / axis_top, se->colour);
        /* A series with no value is not in the legend: nothing shows it. */
        if (!any)
            continue;
        double ly = TY0 + 8 + 20.0 * (double)shown++;
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"/>\n",
                TX1 + 16, ly, TX1 + 40, ly, se->colour);
        sp_svg_text(o, TX1 + 46, ly + 4, "class=\"legend\"", se->name);
    }
    if (!shown)
        sp_svg_text(o, (TX0 + TX1) / 2, (TY0 + TY1) / 2, "text-anchor=\"middle\" fill=\"#666\"",
                    "no data");
    sp_svg_end(o);
}
