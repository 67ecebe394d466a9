/*
 * tune_svg.c: the tune chart: p50 lookup latency against block size, one
 * colour per cluster size through the uncompressed trials, cold solid and
 * warm dashed; each compressed trial (all at one block size) a grey
 * square labelled with its level and dictionary, cold filled and warm
 * hollow; the recommended trial ringed. Both axes are logarithmic: block sizes double, and
 * cold and warm latencies differ by orders of magnitude. Plain SVG text.
 */
#include "pipeline/tune/tune_report.h"

#include "stages/common/size.h"
#include "stages/common/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 900
#define H 540
#define X0 90.0 /* plot area */
#define X1 700.0
#define Y0 70.0
#define Y1 460.0

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
#define N_COLOURS (sizeof colours / sizeof colours[0])

typedef struct frame {
    double xlo, xhi; /* log2 of block size */
    double ylo, yhi; /* log10 of ns */
} frame;

static double x_of(const frame *f, uint32_t block) {
    return X0 + (log2(block) - f->xlo) / (f->xhi - f->xlo) * (X1 - X0);
}

static double y_of(const frame *f, double ns) {
    return Y1 - (log10(ns < 1 ? 1 : ns) - f->ylo) / (f->yhi - f->ylo) * (Y1 - Y0);
}

/* Distinct values of the trials' block or cluster sizes, ascending. */
static size_t distinct(const tune_report *r, bool cluster, uint32_t *out) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_trials; i++) {
        uint32_t v = cluster ? r->trials[i].cluster_size : r->trials[i].block_size;
        size_t j = 0;
        while (j < n && out[j] != v)
            j++;
        if (j < n)
            continue;
        for (j = n++; j > 0 && out[j - 1] > v; j--)
            out[j] = out[j - 1];
        out[j] = v;
    }
    return n;
}

static void set_frame(const tune_report *r, const uint32_t *blocks, size_t nb, frame *f) {
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < r->n_trials; i++) {
        const tune_trial *t = &r->trials[i];
        double v[4] = {(double)t->warm.p50_ns, (double)t->warm.p50_ns, (double)t->cold.p50_ns,
                       (double)t->cold.p50_ns};
        for (int k = 0; k < (t->have_cold ? 4 : 2); k++) {
            lo = fmin(lo, v[k] < 1 ? 1 : v[k]);
            hi = fmax(hi, v[k]);
        }
    }
    f->ylo = floor(log10(lo));
    f->yhi = ceil(log10(hi < 1 ? 1 : hi));
    if (f->yhi <= f->ylo)
        f->yhi = f->ylo + 1;
    /* Half a doubling of margin on each side, so end points are not on the frame. */
    f->xlo = log2(blocks[0]) - 0.5;
    f->xhi = log2(blocks[nb - 1]) + 0.5;
}

static void draw_axes(FILE *o, const frame *f, const uint32_t *blocks, size_t nb) {
    static const char *units[] = {"ns", "us", "ms", "s"};
    fprintf(o,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#333\"/>\n",
            X0, Y0, X1 - X0, Y1 - Y0);
    for (int d = (int)f->ylo; d <= (int)f->yhi; d++) {
        double y = y_of(f, pow(10, d));
        int u = d / 3 > 3 ? 3 : d / 3;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", X0,
                y, X1, y);
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f %s</text>\n", X0 - 6,
                y + 4, pow(10, d - 3 * u), units[u]);
    }
    for (size_t i = 0; i < nb; i++) {
        char s[32];
        double x = x_of(f, blocks[i]);
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x,
                Y0, x, Y1);
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, Y1 + 18,
                sp_format_size(blocks[i], s, sizeof s));
    }
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">block size</text>\n",
            (X0 + X1) / 2, Y1 + 42);
    fprintf(o,
            "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">"
            "p50 lookup latency</text>\n",
            (Y0 + Y1) / 2, (Y0 + Y1) / 2);
}

/* One line through the trials of a cluster size, in block order. */
static void draw_line(FILE *o, const tune_report *r, const frame *f, uint32_t cluster, bool cold,
                      const char *colour) {
    fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colour,
            cold ? "" : " stroke-dasharray=\"6 4\"");
    uint32_t last = 0;
    for (;;) {
        const tune_trial *next = NULL;
        for (size_t i = 0; i < r->n_trials; i++) {
            const tune_trial *t = &r->trials[i];
            if (t->level == 0 && t->cluster_size == cluster && t->block_size > last &&
                (!next || t->block_size < next->block_size))
                next = t;
        }
        if (!next)
            break;
        last = next->block_size;
        const tune_latency *l = cold ? &next->cold : &next->warm;
        fprintf(o, "%.1f,%.1f ", x_of(f, next->block_size), y_of(f, (double)l->p50_ns));
    }
    fputs("\"/>\n", o);
    for (size_t i = 0; i < r->n_trials; i++) {
        const tune_trial *t = &r->trials[i];
        if (t->level || t->cluster_size != cluster)
            continue;
        const tune_latency *l = cold ? &t->cold : &t->warm;
        fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
                x_of(f, t->block_size), y_of(f, (double)l->p50_ns), colour);
    }
}

/* Where trial i is drawn across: at its block size; the compressed trials,
 * which share one block size, spread side by side around it, in run order,
 * so that their squares do not hide one another. */
static double trial_x(const tune_report *r, const frame *f, size_t i) {
    double x = x_of(f, r->trials[i].block_size);
    if (!r->trials[i].level)
        return x;
    size_t n = 0, rank = 0;
    for (size_t j = 0; j < r->n_trials; j++)
        if (r->trials[j].level) {
            if (j < i)
                rank++;
            n++;
        }
    return x + ((double)rank - (double)(n - 1) / 2) * 14;
}

/* The compressed trials: a square each, numbered, and the numbers named
 * below the legend from legend_y on. */
static void draw_compressed(FILE *o, const tune_report *r, const frame *f, bool cold,
                            double legend_y) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_trials; i++) {
        const tune_trial *t = &r->trials[i];
        if (!t->level)
            continue;
        n++;
        char name[48];
        double x = trial_x(r, f, i);
        for (int k = cold ? 0 : 1; k < 2; k++) {
            double y = y_of(f, (double)(k == 0 ? t->cold.p50_ns : t->warm.p50_ns));
            fprintf(o,
                    "<rect class=\"compressed\" x=\"%.1f\" y=\"%.1f\" width=\"7\" "
                    "height=\"7\" fill=\"%s\" stroke=\"#555\"/>\n",
                    x - 3.5, y - 3.5, k == 0 ? "#555" : "none");
            sp_svg_textf(o, x, y - 7, "font-size=\"10\" fill=\"#555\" text-anchor=\"middle\"",
                         "%zu", n);
        }
        sp_svg_textf(o, X1 + 20, legend_y + 16.0 * (double)n, "font-size=\"12\" fill=\"#555\"",
                     "%zu: %s", n, tune_compression_name(t, name, sizeof name));
    }
}

static int draw(FILE *o, const void *arg) {
    const tune_report *r = arg;
    uint32_t *blocks = calloc(r->n_trials, sizeof *blocks);
    uint32_t *clusters = calloc(r->n_trials, sizeof *clusters);
    if (!blocks || !clusters) {
        free(blocks);
        free(clusters);
        return -1;
    }
    size_t nb = distinct(r, false, blocks), nc = distinct(r, true, clusters);
    bool cold = r->trials[0].have_cold;
    frame f;
    set_frame(r, blocks, nb, &f);
    sp_svg_begin(o, W, H, true, "tune: p50 lookup latency per block size");
    sp_svg_textf(o, X0, 30, "font-size=\"16\"", "sstpipe tune: %s", r->input ? r->input : "");
    sp_svg_textf(o, X0, 50, "fill=\"#555\"",
                 "p50 lookup latency per block size, %llu lookups per profile; %s",
                 (unsigned long long)r->lookups,
                 cold ? "solid: cold (O_DIRECT), dashed: warm (page cache)"
                      : "dashed: warm (page cache); no cold figures");
    draw_axes(o, &f, blocks, nb);
    for (size_t c = 0; c < nc; c++) {
        const char *colour = colours[c % N_COLOURS];
        if (cold)
            draw_line(o, r, &f, clusters[c], true, colour);
        draw_line(o, r, &f, clusters[c], false, colour);
        char s[32];
        double y = Y0 + 10 + 22.0 * (double)c;
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"/>\n<text x=\"%.1f\" y=\"%.1f\">cluster %s</text>\n",
                X1 + 20, y, X1 + 50, y, colour, X1 + 56, y + 4,
                sp_format_size(clusters[c], s, sizeof s));
    }
    /* Below the cluster sizes' legend: the recommendation in three lines,
     * then the compressed trials' numbers. */
    double below = Y0 + 10 + 22.0 * (double)nc + 12;
    draw_compressed(o, r, &f, cold, below + 40);
    if (r->n_trials) {
        const tune_trial *b = &r->trials[r->best];
        double x = trial_x(r, &f, r->best);
        double y = y_of(&f, (double)(cold ? b->cold.p50_ns : b->warm.p50_ns));
        char bs[32], cs[32];
        fprintf(o,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"9\" fill=\"none\" stroke=\"black\" "
                "stroke-width=\"2\"/>\n",
                x, y);
        sp_svg_textf(o, X1 + 20, below, "", "recommended: block %s,",
                     sp_format_size(b->block_size, bs, sizeof bs));
        sp_svg_textf(o, X1 + 20, below + 16, "", "cluster %s, %s",
                     sp_format_size(b->cluster_size, cs, sizeof cs),
                     b->level ? "zstd" : "no compression");
        if (b->level)
            sp_svg_textf(o, X1 + 20, below + 32, "", "level %d, dictionary %s", b->level,
                         sp_format_size(b->dictionary_size, bs, sizeof bs));
    }
    sp_svg_end(o);
    free(blocks);
    free(clusters);
    return 0;
}

int tune_write_svg(const tune_report *r, const char *path, sp_error *err) {
    if (r->n_trials == 0)
        return sp_errorf(err, "%s: no trials to draw", path);
    return sp_svg_write_file(path, draw, r, err);
}
