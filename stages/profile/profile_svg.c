/*
 * profile_svg.c: a picture of a profile's latency distribution: histogram
 * bars (left axis: lookups per bin) and the CDF (right axis: percent of
 * lookups at or under a latency) over one log-scaled time axis, with p50,
 * p90, p99 and p99.9 marked. Plain SVG text, no library: the picture is a
 * few hundred elements, drawn from a profile_chart (a histogram and a
 * sampled CDF) so that the same picture can be drawn again later from the
 * JSON report, inline in a nightly report page.
 */
#include "stages/profile/profile.h"

#include "stages/common/svg.h"
#include "stages/profile/profile_fmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 900
#define H 520
#define X0 90.0 /* plot area */
#define X1 820.0
#define Y0 130.0 /* the percentiles' labels are above it, one row each */
#define Y1 430.0
#define MARK_ROW 16.0
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

static axis chart_axis(const profile_chart *c) {
    axis a = {floor(log10(c->min_ns ? (double)c->min_ns : 1)),
              ceil(log10(c->max_ns ? (double)c->max_ns : 1))};
    if (a.hi <= a.lo)
        a.hi = a.lo + 1;
    return a;
}

void profile_chart_from_result(const profile_result *r, profile_chart *c) {
    memset(c, 0, sizeof *c);
    c->path = r->path;
    c->lookups = r->lookups;
    c->cold = r->opts.cold;
    c->threads = r->opts.threads;
    c->queue_depth = r->opts.queue_depth;
    c->avg_ns = r->avg_ns;
    c->min_ns = r->min_ns;
    c->p50_ns = r->p50_ns;
    c->p90_ns = r->p90_ns;
    c->p99_ns = r->p99_ns;
    c->p999_ns = r->p999_ns;
    c->max_ns = r->max_ns;
    const uint64_t *lat = r->latencies_ns;
    uint64_t n = r->latencies_ns ? r->lookups : 0;
    axis a = chart_axis(c);
    for (uint64_t i = 0; i < n; i++) {
        double l = log10(lat[i] ? (double)lat[i] : 1);
        int b = (int)((l - a.lo) / (a.hi - a.lo) * PROFILE_CHART_BINS);
        c->bins[b < 0 ? 0 : b >= PROFILE_CHART_BINS ? PROFILE_CHART_BINS - 1 : b]++;
    }
    c->n_cdf = n < PROFILE_CHART_CDF ? n : PROFILE_CHART_CDF;
    for (uint64_t k = 0; k < c->n_cdf; k++)
        c->cdf_ns[k] = lat[c->n_cdf > 1 ? k * (n - 1) / (c->n_cdf - 1) : 0];
}

static int get_u64(const json_t *o, const char *name, uint64_t *out, sp_error *err) {
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return sp_errorf(err, "profile: \"%s\" is missing or not a count", name);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int get_counts(const json_t *o, const char *name, uint64_t *out, size_t cap, uint64_t *n,
                      sp_error *err) {
    json_t *a = json_object_get(o, name);
    if (!json_is_array(a) || json_array_size(a) > cap)
        return sp_errorf(err, "profile: latency_chart \"%s\" is missing or longer than %zu", name,
                         cap);
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return sp_errorf(err, "profile: latency_chart \"%s\"[%zu] is not a count", name, i);
        out[i] = (uint64_t)json_integer_value(v);
    }
    *n = json_array_size(a);
    return 0;
}

int profile_chart_from_json(const json_t *p, profile_chart *c, sp_error *err) {
    memset(c, 0, sizeof *c);
    json_t *lat = json_object_get(p, "latency_ns"), *ch = json_object_get(p, "latency_chart");
    if (!json_is_object(lat) || !json_is_object(ch))
        return sp_errorf(err, "profile: no \"latency_ns\" or \"latency_chart\"");
    c->path = json_string_value(json_object_get(p, "file"));
    c->cold = json_is_string(json_object_get(p, "mode")) &&
              !strcmp(json_string_value(json_object_get(p, "mode")), "cold");
    uint64_t th = 0, qd = 0, bins = 0;
    if (!c->path)
        return sp_errorf(err, "profile: \"file\" is missing");
    if (get_u64(p, "lookups", &c->lookups, err) || get_u64(p, "threads", &th, err) ||
        get_u64(p, "queue_depth", &qd, err) || get_u64(lat, "min", &c->min_ns, err) ||
        get_u64(lat, "p50", &c->p50_ns, err) || get_u64(lat, "p90", &c->p90_ns, err) ||
        get_u64(lat, "p99", &c->p99_ns, err) || get_u64(lat, "p99_9", &c->p999_ns, err) ||
        get_u64(lat, "max", &c->max_ns, err) ||
        get_counts(ch, "bins", c->bins, PROFILE_CHART_BINS, &bins, err) ||
        get_counts(ch, "cdf_ns", c->cdf_ns, PROFILE_CHART_CDF, &c->n_cdf, err))
        return -1;
    c->threads = (unsigned)th;
    c->queue_depth = (unsigned)qd;
    c->avg_ns = json_number_value(json_object_get(lat, "avg"));
    if (bins != PROFILE_CHART_BINS || !c->lookups ||
        c->n_cdf != (c->lookups < PROFILE_CHART_CDF ? c->lookups : PROFILE_CHART_CDF))
        return sp_errorf(err, "profile: latency_chart does not match %llu lookups",
                         (unsigned long long)c->lookups);
    return 0;
}

void profile_chart_draw(const profile_chart *c, FILE *o, bool standalone) {
    uint64_t n = c->lookups;
    axis a = chart_axis(c);
    uint64_t top = 1;
    for (int b = 0; b < PROFILE_CHART_BINS; b++)
        if (c->bins[b] > top)
            top = c->bins[b];
    /* Bars up to the round tick at or above the fullest bin. */
    sp_svg_axis counts = sp_svg_axis_for((double)top, SP_SVG_COUNT);
    double count_top = sp_svg_axis_top(&counts);
    char t[32], label[64];
    snprintf(label, sizeof label, "latency of %llu lookups", (unsigned long long)n);
    sp_svg_begin(o, W, H, standalone, label);
    sp_svg_textf(o, W / 2, 28, "text-anchor=\"middle\" font-size=\"15\"", "sstpipe profile: %s",
                 c->path ? c->path : "");
    sp_svg_textf(o, W / 2, 48, "text-anchor=\"middle\"",
                 "%llu lookups, %s, threads %u, queue depth %u, avg %s", (unsigned long long)n,
                 c->cold ? "cold" : "warm", c->threads, c->queue_depth,
                 profile_fmt_ns(c->avg_ns, t, sizeof t));
    /* histogram */
    fprintf(o, "<g fill=\"#7aa6d6\" stroke=\"none\">\n");
    for (int b = 0; b < PROFILE_CHART_BINS; b++) {
        if (!c->bins[b])
            continue;
        double bx0 = X0 + (X1 - X0) * b / PROFILE_CHART_BINS, bw = (X1 - X0) / PROFILE_CHART_BINS;
        double bh = (Y1 - Y0) * (double)c->bins[b] / count_top;
        fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", bx0, Y1 - bh,
                bw - 1, bh);
    }
    fprintf(o, "</g>\n");
    /* CDF */
    fprintf(o, "<polyline fill=\"none\" stroke=\"#222\" stroke-width=\"2\" points=\"");
    uint64_t pts = c->n_cdf;
    for (uint64_t k = 0; k < pts; k++) {
        uint64_t i = pts > 1 ? k * (n - 1) / (pts - 1) : 0;
        fprintf(o, "%.1f,%.1f ", x_of(&a, (double)c->cdf_ns[k]),
                Y1 - (Y1 - Y0) * (double)(i + 1) / (double)n);
    }
    fprintf(o, "\"/>\n");
    /* percentiles */
    const struct {
        const char *name;
        uint64_t ns;
    } marks[] = {{"p50", c->p50_ns}, {"p90", c->p90_ns}, {"p99", c->p99_ns}, {"p99.9", c->p999_ns}};
    /* Labels stacked one per row above the plot, each at the top of its
     * line, so that no bar, line or other label hides one (a label near
     * the right edge ends at its line). */
    for (int m = 0; m < 4; m++) {
        double x = x_of(&a, (double)marks[m].ns), y = Y0 - 4 - MARK_ROW * (3 - m);
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
                "stroke-dasharray=\"4,3\"/>\n",
                x, y - MARK_ROW + 4, x, Y1);
        sp_svg_textf(o, x > X1 - 120 ? x - 4 : x + 4, y,
                     x > X1 - 120 ? "fill=\"#c0392b\" text-anchor=\"end\" class=\"mark\""
                                  : "fill=\"#c0392b\" class=\"mark\"",
                     "%s %s", marks[m].name, profile_fmt_ns((double)marks[m].ns, t, sizeof t));
    }
    /* axes */
    fprintf(o,
            "<g stroke=\"#000\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/></g>\n",
            X0, Y1, X1, Y1, X0, Y0, X0, Y1, X1, Y0, X1, Y1);
    for (double d = a.lo; d <= a.hi + 1e-9; d += 1) {
        double x = X0 + (d - a.lo) / (a.hi - a.lo) * (X1 - X0);
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#000\"/>\n", x,
                Y1, x, Y1 + 6);
        sp_svg_text(o, x, Y1 + 20, "text-anchor=\"middle\"", decade_label((int)d, t, sizeof t));
    }
    for (int k = 0; k <= counts.intervals; k++)
        sp_svg_text(o, X0 - 6, Y1 - (Y1 - Y0) * k / counts.intervals + 4,
                    "text-anchor=\"end\" class=\"tick-y\"",
                    sp_svg_axis_label(&counts, k, t, sizeof t));
    for (int k = 0; k <= 4; k++)
        sp_svg_textf(o, X1 + 6, Y1 - (Y1 - Y0) * k / 4 + 4, "", "%d%%", 25 * k);
    sp_svg_text(o, (X0 + X1) / 2, H - 40, "text-anchor=\"middle\"", "lookup latency (log scale)");
    fprintf(o,
            "<text transform=\"translate(28 %.0f) rotate(-90)\" text-anchor=\"middle\">"
            "lookups per bin (bars)</text>\n"
            "<text transform=\"translate(%d %.0f) rotate(90)\" text-anchor=\"middle\">"
            "cumulative %% of lookups (line)</text>\n",
            (Y0 + Y1) / 2, W - 30, (Y0 + Y1) / 2);
    sp_svg_end(o);
}

/* The chart of a result, for sp_svg_write_file. */
static int draw_result(FILE *o, const void *arg) {
    profile_chart *c = malloc(sizeof *c); /* 4 KiB: not on the stack */
    if (!c)
        return -1;
    profile_chart_from_result(arg, c);
    profile_chart_draw(c, o, true);
    free(c);
    return 0;
}

int profile_write_svg(const profile_result *r, const char *svg_path, sp_error *err) {
    if (!r->lookups || !r->latencies_ns)
        return sp_errorf(err, "%s: no lookups to draw", svg_path);
    return sp_svg_write_file(svg_path, draw_result, r, err);
}
