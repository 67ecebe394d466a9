/* svg.c: the SVG chart writer; see svg.h. */
#include "stages/common/svg.h"

#include "stages/common/report.h"
#include "stages/common/xml_escape.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

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
#define TREND_H 280
#define TX0 80.0 /* plot area */
#define TX1 560.0
#define TY0 40.0
#define TY1 220.0

static double trend_x(size_t i, size_t n) {
    return n > 1 ? TX0 + (TX1 - TX0) * (double)i / (double)(n - 1) : (TX0 + TX1) / 2;
}

void sp_svg_trend(FILE *o, const char *title, const char *const *xlabels, size_t n,
                  const sp_svg_series *series, size_t n_series,
                  const char *(*format_y)(double v, char *buf, size_t cap), bool standalone) {
    sp_svg_begin(o, TREND_W, TREND_H, standalone, title);
    sp_svg_text(o, 10, 20, "font-size=\"14\"", title);
    double top = 0;
    for (size_t s = 0; s < n_series; s++)
        for (size_t i = 0; i < n; i++)
            if (!isnan(series[s].y[i]))
                top = fmax(top, series[s].y[i]);
    if (top <= 0)
        top = 1;
    fprintf(o,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#333\"/>\n",
            TX0, TY0, TX1 - TX0, TY1 - TY0);
    char buf[64];
    for (int k = 0; k <= 4; k++) {
        double y = TY1 - (TY1 - TY0) * k / 4;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", TX0,
                y, TX1, y);
        sp_svg_text(o, TX0 - 6, y + 4, "text-anchor=\"end\"",
                    format_y(top * k / 4, buf, sizeof buf));
    }
    /* At most about 12 date labels, evenly spaced, so they never overlap. */
    size_t step = n > 12 ? (n + 11) / 12 : 1;
    for (size_t i = 0; i < n; i += step)
        sp_svg_text(o, trend_x(i, n), TY1 + 16, "text-anchor=\"middle\"", xlabels[i]);
    for (size_t s = 0; s < n_series; s++) {
        const sp_svg_series *se = &series[s];
        /* A missing value breaks the line: one polyline per unbroken run. */
        bool open = false;
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
            open = true;
            fprintf(o, "%.1f,%.1f ", trend_x(i, n), TY1 - (TY1 - TY0) * se->y[i] / top);
        }
        if (open)
            fputs("\"/>\n", o);
        for (size_t i = 0; i < n; i++)
            if (!isnan(se->y[i]))
                fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", trend_x(i, n),
                        TY1 - (TY1 - TY0) * se->y[i] / top, se->colour);
        double ly = TY0 + 8 + 20.0 * (double)s;
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"/>\n",
                TX1 + 16, ly, TX1 + 40, ly, se->colour);
        sp_svg_text(o, TX1 + 46, ly + 4, "", se->name);
    }
    sp_svg_end(o);
}
