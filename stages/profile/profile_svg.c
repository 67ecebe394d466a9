/*
 * profile_svg.c: a picture of a profile's latency distribution: histogram
 * bars (left axis: lookups per bin) and the CDF (right axis: percent of
 * lookups at or under a latency) over one log-scaled time axis, with p50,
 * p90, p99 and p99.9 marked. Plain SVG text, no library: the picture is a
 * few hundred elements.
 */
#include "stages/profile/profile.h"

#include "stages/common/cli.h"
#include "stages/common/fileio.h"
#include "stages/common/xml_escape.h"
#include "stages/profile/profile_fmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 900
#define H 520
#define X0 90.0 /* plot area */
#define X1 820.0
#define Y0 70.0
#define Y1 430.0
#define BINS 60
#define CDF_POINTS 400

typedef struct axis {
    double lo, hi; /* log10 of ns at X0 and X1 */
} axis;

static double x_of(const axis *a, double ns) {
    double l = log10(ns < 1 ? 1 : ns);
    return X0 + (l - a->lo) / (a->hi - a->lo) * (X1 - X0);
}

/* "1 us", "10 us", "100 us", "1 ms": a decade of nanoseconds as a tick label. */
static const char *decade_label(int d, char *buf, size_t cap) {
    static const char *units[] = {"ns", "us", "ms", "s"};
    int u = d < 0 ? 0 : d / 3 > 3 ? 3 : d / 3;
    snprintf(buf, cap, "%.0f %s", pow(10, d - 3 * u), units[u]);
    return buf;
}

static void draw(const profile_result *r, FILE *o) {
    const uint64_t *lat = r->latencies_ns;
    uint64_t n = r->lookups;
    axis a = {floor(log10(r->min_ns ? (double)r->min_ns : 1)),
              ceil(log10(r->max_ns ? (double)r->max_ns : 1))};
    if (a.hi <= a.lo)
        a.hi = a.lo + 1;
    uint64_t bins[BINS] = {0}, top = 1;
    for (uint64_t i = 0; i < n; i++) {
        double l = log10(lat[i] ? (double)lat[i] : 1);
        int b = (int)((l - a.lo) / (a.hi - a.lo) * BINS);
        b = b < 0 ? 0 : b >= BINS ? BINS - 1 : b;
        if (++bins[b] > top)
            top = bins[b];
    }
    char t[32];
    fprintf(o,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
            W, H, W, H, W, H);
    fprintf(o,
            "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">"
            "sstpipe profile: ",
            W / 2);
    sp_xml_escape(o, r->path);
    fprintf(o,
            "</text>\n<text x=\"%d\" y=\"48\" text-anchor=\"middle\">%llu lookups, %s, "
            "threads %u, queue depth %u, avg %s</text>\n",
            W / 2, (unsigned long long)n, r->opts.cold ? "cold" : "warm", r->opts.threads,
            r->opts.queue_depth, profile_fmt_ns(r->avg_ns, t, sizeof t));
    /* histogram */
    fprintf(o, "<g fill=\"#7aa6d6\" stroke=\"none\">\n");
    for (int b = 0; b < BINS; b++) {
        if (!bins[b])
            continue;
        double bx0 = X0 + (X1 - X0) * b / BINS, bw = (X1 - X0) / BINS;
        double bh = (Y1 - Y0) * (double)bins[b] / (double)top;
        fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", bx0, Y1 - bh,
                bw - 1, bh);
    }
    fprintf(o, "</g>\n");
    /* CDF */
    fprintf(o, "<polyline fill=\"none\" stroke=\"#222\" stroke-width=\"2\" points=\"");
    uint64_t pts = n < CDF_POINTS ? n : CDF_POINTS;
    for (uint64_t k = 0; k < pts; k++) {
        uint64_t i = pts > 1 ? k * (n - 1) / (pts - 1) : 0;
        fprintf(o, "%.1f,%.1f ", x_of(&a, (double)lat[i]),
                Y1 - (Y1 - Y0) * (double)(i + 1) / (double)n);
    }
    fprintf(o, "\"/>\n");
    /* percentiles */
    const struct {
        const char *name;
        uint64_t ns;
    } marks[] = {{"p50", r->p50_ns}, {"p90", r->p90_ns}, {"p99", r->p99_ns}, {"p99.9", r->p999_ns}};
    /* Labels stacked one per row inside the plot, with a white halo so
     * neither the CDF nor each other hide them. */
    for (int m = 0; m < 4; m++) {
        double x = x_of(&a, (double)marks[m].ns);
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
                "stroke-dasharray=\"4,3\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c0392b\" stroke=\"white\" "
                "stroke-width=\"3\" paint-order=\"stroke\">%s %s</text>\n",
                x, Y0, x, Y1, x + 4, Y0 + 40 + 16.0 * m, marks[m].name,
                profile_fmt_ns((double)marks[m].ns, t, sizeof t));
    }
    /* axes */
    fprintf(o,
            "<g stroke=\"#000\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/></g>\n",
            X0, Y1, X1, Y1, X0, Y0, X0, Y1, X1, Y0, X1, Y1);
    for (double d = a.lo; d <= a.hi + 1e-9; d += 1) {
        double x = X0 + (d - a.lo) / (a.hi - a.lo) * (X1 - X0);
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#000\"/>"
                "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
                x, Y1, x, Y1 + 6, x, Y1 + 20, decade_label((int)d, t, sizeof t));
    }
    for (int k = 0; k <= 4; k++) {
        double y = Y1 - (Y1 - Y0) * k / 4;
        fprintf(o,
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%llu</text>"
                "<text x=\"%.0f\" y=\"%.1f\">%d%%</text>\n",
                X0 - 6, y + 4, (unsigned long long)(top * (uint64_t)k / 4), X1 + 6, y + 4, 25 * k);
    }
    fprintf(o,
            "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">lookup latency (log scale)</text>\n"
            "<text transform=\"translate(28 %.0f) rotate(-90)\" text-anchor=\"middle\">"
            "lookups per bin (bars)</text>\n"
            "<text transform=\"translate(%d %.0f) rotate(90)\" text-anchor=\"middle\">"
            "cumulative %% of lookups (line)</text>\n"
            "</svg>\n",
            (X0 + X1) / 2, H - 40, (Y0 + Y1) / 2, W - 30, (Y0 + Y1) / 2);
}

int profile_write_svg(const profile_result *r, const char *svg_path, sp_error *err) {
    if (!r->lookups || !r->latencies_ns)
        return sp_errorf(err, "%s: no lookups to draw", svg_path);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return sp_errorf_errno(err, "%s: cannot build the picture", svg_path);
    draw(r, mem);
    if (fclose(mem) != 0) {
        free(text);
        return sp_errorf(err, "%s: cannot build the picture (out of memory)", svg_path);
    }
    sp_output out;
    int rc = sp_output_open(&out, svg_path, err);
    if (rc == 0 && sp_write_all(out.fd, text, len, svg_path, err)) {
        sp_output_abort(&out);
        rc = -1;
    } else if (rc == 0) {
        rc = sp_output_commit(&out, err);
    }
    free(text);
    return rc;
}
