/*
 * report_index.c: index.html, the history of a nightly output directory:
 * one row per kept build (published and failed), newest first, each
 * linking to its report.html, and trend charts over the same builds,
 * oldest to newest, so that a regression, or a night that failed or did
 * not move, stands out. See report.h.
 */
#include "pipeline/nightly/report.h"

#include "pipeline/nightly/report_html.h"
#include "stages/common/report.h"
#include "stages/common/size.h"
#include "stages/common/svg.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct build_row {
    const char *name; /* "builds/<name>" */
    json_t *m;        /* NULL when unreadable */
    sp_error error;   /* why, then */
    bool published;
    double records, size, build_s, p50_warm, p99_warm, p50_cold, p99_cold; /* NAN: none */
} build_row;

static double number_or_nan(const json_t *v) {
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The build's figures; the build time is the read, write and (an
 * incremental run's) merge stages'. */
static void row_figures(build_row *r) {
    r->records = r->size = r->build_s = NAN;
    r->p50_warm = r->p99_warm = r->p50_cold = r->p99_cold = NAN;
    if (!r->m)
        return;
    const char *st = html_str(r->m, "status");
    r->published = st && !strcmp(st, "published");
    json_t *t = json_object_get(r->m, "sstable");
    r->records = number_or_nan(json_object_get(t, "records"));
    r->size = number_or_nan(json_object_get(t, "file_size"));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(r->m, "stages"), i, s) {
        const char *n = html_str(s, "name");
        if (n && (!strcmp(n, "read") || !strcmp(n, "write") || !strcmp(n, "merge")))
            r->build_s = (isnan(r->build_s) ? 0 : r->build_s) +
                         json_number_value(json_object_get(s, "wall_seconds"));
    }
    json_t *p = json_object_get(r->m, "profile"), *lat = json_object_get(p, "latency_ns");
    if (!json_is_object(lat))
        return;
    bool cold = html_str(p, "mode") && !strcmp(html_str(p, "mode"), "cold");
    *(cold ? &r->p50_cold : &r->p50_warm) = number_or_nan(json_object_get(lat, "p50"));
    *(cold ? &r->p99_cold : &r->p99_warm) = number_or_nan(json_object_get(lat, "p99"));
}

static void cell_number(FILE *o, const char *field, const json_t *v, const char *human) {
    char buf[64];
    fputs("<td class=\"n\">", o);
    if (!json_is_number(v)) {
        fputs("<span class=\"muted\">-</span></td>", o);
        return;
    }
    html_field(o, field, html_json_text(v, buf, sizeof buf));
    if (human) {
        fputs("<br><span class=\"muted\">", o);
        html_text(o, human);
        fputs("</span>", o);
    }
    fputs("</td>", o);
}

/* A latency: the manifest's nanoseconds, and below them in the unit the
 * latency chart would read them in. */
static void cell_ns(FILE *o, const char *field, double ns) {
    char buf[32];
    fputs("<td class=\"n\">", o);
    if (isnan(ns)) {
        fputs("<span class=\"muted\">-</span>", o);
    } else {
        html_field(o, field, (snprintf(buf, sizeof buf, "%.0f", ns), buf));
        fputs("<br><span class=\"muted\">", o);
        html_text(o, sp_format_seconds(ns * 1e-9, buf, sizeof buf));
        fputs("</span>", o);
    }
    fputs("</td>", o);
}

static void write_row(FILE *o, const build_row *r) {
    fputs("<tr data-build=\"", o);
    html_text(o, r->name);
    fputs("\"><td class=\"when\"><a href=\"", o);
    html_url(o, r->name);
    fputs("/" REPORT_PAGE "\">", o);
    if (!r->m) {
        html_text(o, r->name);
        fputs("</a></td><td class=\"failed\" colspan=\"12\">manifest unreadable: ", o);
        html_text(o, r->error.msg);
        fputs("</td></tr>\n", o);
        return;
    }
    html_field(o, "started_at", html_str(r->m, "started_at"));
    const char *status = html_str(r->m, "status");
    bool ok = status && !strcmp(status, "published");
    fprintf(o, "</a></td><td class=\"%s\">", ok ? "ok" : "failed");
    html_field(o, "status", status ? status : "unknown");
    if (!ok && html_str(r->m, "failed_stage")) {
        fputs("<br>in ", o);
        html_text(o, html_str(r->m, "failed_stage"));
    }
    fputs("</td><td>", o);
    json_t *in = json_object_get(r->m, "input");
    const char *path = html_str(in, "path");
    if (path) {
        const char *slash = strrchr(path, '/');
        html_field(o, "input", slash ? slash + 1 : path);
    } else {
        fputs("<span class=\"muted\">none</span>", o);
    }
    json_t *incr = json_object_get(json_object_get(r->m, "incremental"), "increments");
    if (json_is_array(incr) && json_array_size(incr))
        fprintf(o, "<br>+ <span data-field=\"increments\">%zu</span> increment(s)",
                json_array_size(incr));
    fputs("</td>", o);
    json_t *t = json_object_get(r->m, "sstable");
    char h[32], b[32];
    cell_number(o, "records", json_object_get(t, "records"), NULL);
    json_t *size = json_object_get(t, "file_size");
    cell_number(o, "file_size", size,
                json_is_number(size) ? sp_format_bytes(json_number_value(size), h, sizeof h)
                                     : NULL);
    cell_number(o, "bytes_per_record", json_object_get(t, "bytes_per_record"), NULL);
    cell_number(o, "compression_ratio", json_object_get(t, "compression_ratio"), NULL);
    fputs("<td class=\"n\">", o);
    if (isnan(r->build_s))
        fputs("<span class=\"muted\">-</span>", o);
    else
        html_field(o, "build_seconds", (snprintf(b, sizeof b, "%.3f", r->build_s), b));
    fputs("</td>", o);
    cell_ns(o, "p50_warm_ns", r->p50_warm);
    cell_ns(o, "p99_warm_ns", r->p99_warm);
    cell_ns(o, "p50_cold_ns", r->p50_cold);
    cell_ns(o, "p99_cold_ns", r->p99_cold);
    fputs("</tr>\n", o);
}

/* The four trend charts, over rows[n-1] (oldest) .. rows[0]. */
static void trends(FILE *o, const build_row *rows, size_t n) {
    const char **labels = calloc(n, sizeof *labels);
    double *v = calloc(7 * n, sizeof *v);
    if (!labels || !v) {
        free(labels);
        free(v);
        fputs("<p class=\"muted\">No trend charts: out of memory.</p>\n", o);
        return;
    }
    double *rec = v, *size = v + n, *bs = v + 2 * n,
           *l[4] = {v + 3 * n, v + 4 * n, v + 5 * n, v + 6 * n};
    for (size_t i = 0; i < n; i++) {
        const build_row *r = &rows[n - 1 - i];
        /* A failed night is a gap in every line, so it stands out;
         * latencies in seconds, the charts' unit for time. */
        rec[i] = r->published ? r->records : NAN;
        size[i] = r->published ? r->size : NAN;
        bs[i] = r->published ? r->build_s : NAN;
        l[0][i] = r->published ? r->p50_warm * 1e-9 : NAN;
        l[1][i] = r->published ? r->p99_warm * 1e-9 : NAN;
        l[2][i] = r->published ? r->p50_cold * 1e-9 : NAN;
        l[3][i] = r->published ? r->p99_cold * 1e-9 : NAN;
    }
    /* "2026-01-31T02:00:07Z" as "2026-01-31\n02:00", or with the seconds
     * when two runs started in the same minute, and a run's number in its
     * second ("02:00:07 (2)") when they started in the same second, so no
     * two labels are alike; a build without a start time by its name. */
    char(*text)[32] = calloc(n, sizeof *text);
    if (!text) {
        free(labels);
        free(v);
        fputs("<p class=\"muted\">No trend charts: out of memory.</p>\n", o);
        return;
    }
    int time_len = 5;
    for (int pass = 0; pass < 2; pass++) {
        bool alike = false;
        for (size_t i = 0; i < n; i++) {
            const build_row *r = &rows[n - 1 - i];
            const char *at = r->m ? html_str(r->m, "started_at") : NULL;
            if (at && strlen(at) >= 19 && at[10] == 'T') {
                snprintf(text[i], sizeof text[i], "%.10s\n%.*s", at, time_len, at + 11);
                labels[i] = text[i];
            } else {
                labels[i] = r->name;
            }
            alike = alike || (i > 0 && !strcmp(labels[i], labels[i - 1]));
        }
        if (!alike)
            break;
        time_len = 8;
    }
    for (size_t i = 1, same = 1; i < n; i++) {
        same = labels[i] == text[i] && !strncmp(text[i], text[i - 1], 19) ? same + 1 : 1;
        if (same > 1) {
            size_t len = strlen(text[i]);
            snprintf(text[i] + len, sizeof text[i] - len, " (%zu)", same);
        }
    }
    sp_svg_series s_rec = {"records", rec, "#1f77b4"}, s_size = {"file size", size, "#2ca02c"},
                  s_bs = {"read + write", bs, "#9467bd"};
    sp_svg_series s_lat[4] = {{"p50 warm", l[0], "#1f77b4"},
                              {"p99 warm", l[1], "#aec7e8"},
                              {"p50 cold", l[2], "#d62728"},
                              {"p99 cold", l[3], "#ff9896"}};
    fputs("<figure>\n", o);
    sp_svg_trend(o, "records", labels, n, &s_rec, 1, SP_SVG_COUNT, false);
    fputs("</figure>\n<figure>\n", o);
    sp_svg_trend(o, "table size", labels, n, &s_size, 1, SP_SVG_BYTES, false);
    fputs("</figure>\n<figure>\n", o);
    sp_svg_trend(o, "build time", labels, n, &s_bs, 1, SP_SVG_SECONDS, false);
    fputs("</figure>\n<figure>\n", o);
    sp_svg_trend(o, "lookup latency", labels, n, s_lat, 4, SP_SVG_SECONDS, false);
    fputs("</figure>\n", o);
    free(text);
    free(labels);
    free(v);
}

static void page(FILE *o, const char *out_dir, build_row *rows, size_t n) {
    html_begin(o, "sstpipe nightly builds");
    fputs("<h1>Nightly builds</h1>\n<p>Output directory <code>", o);
    html_text(o, out_dir);
    fprintf(o, "</code>: <span data-field=\"builds\">%zu</span> build(s) kept, newest first.", n);
    if (n && rows[0].m) {
        fputs(" Last night: ", o);
        const char *st = html_str(rows[0].m, "status");
        bool ok = st && !strcmp(st, "published");
        fprintf(o, "<span class=\"%s\">", ok ? "ok" : "failed");
        html_text(o, st ? st : "unknown");
        fputs("</span>.", o);
    }
    fputs("</p>\n", o);
    if (!n) {
        fputs("<p class=\"muted\">No builds yet.</p>\n", o);
        html_end(o, NULL);
        return;
    }
    fputs("<table id=\"builds\">\n<tr><th>started (UTC)</th><th>status</th><th>input</th>"
          "<th>records</th><th>table bytes</th><th>bytes per record</th>"
          "<th>compression ratio</th><th>build time (s)</th><th>p50 warm (ns)</th>"
          "<th>p99 warm (ns)</th><th>p50 cold (ns)</th><th>p99 cold (ns)</th></tr>\n",
          o);
    for (size_t i = 0; i < n; i++)
        write_row(o, &rows[i]);
    fputs("</table>\n<p class=\"muted\">Build time: the read, write and merge stages. Latency: the "
          "nightly profile, warm or cold as [profile] cold says. Bytes per record and compression "
          "ratio as sstpipe info shows them.</p>\n<h2>Trends</h2>\n",
          o);
    trends(o, rows, n);
    html_end(o, NULL);
}

int report_write_index(const char *out_dir, size_t *n_builds, sp_error *err) {
    char **names;
    size_t n;
    if (report_list_builds(out_dir, &names, &n, err))
        return -1;
    build_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        report_list_free(names, n);
        return sp_errorf(err, "%s/" REPORT_INDEX ": out of memory", out_dir);
    }
    for (size_t i = 0; i < n; i++) {
        char dir[PATH_MAX];
        sp_error e = {0};
        snprintf(dir, sizeof dir, "%s/%s", out_dir, names[i]);
        rows[i].name = names[i];
        if (report_load_manifest(dir, &rows[i].m, &e))
            rows[i].error = e;
        row_figures(&rows[i]);
    }
    char *text = NULL;
    size_t len = 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" REPORT_INDEX, out_dir);
    FILE *mem = open_memstream(&text, &len);
    int rc;
    if (!mem) {
        rc = sp_errorf_errno(err, "%s: cannot build the page", path);
    } else {
        page(mem, out_dir, rows, n);
        rc = fclose(mem) ? sp_errorf(err, "%s: cannot build the page (out of memory)", path)
                         : sp_report_write_text(path, text, len, err);
    }
    free(text);
    for (size_t i = 0; i < n; i++)
        json_decref(rows[i].m);
    free(rows);
    report_list_free(names, n);
    if (rc == 0 && n_builds)
        *n_builds = n;
    return rc;
}
