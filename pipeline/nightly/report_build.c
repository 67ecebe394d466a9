/*
 * report_build.c: report.html, one nightly build for people: whether it
 * was published (and if not, where and why it failed, first and in red),
 * its inputs, how long each stage took (a bar chart), what the table holds,
 * what verify found, the lookup latency chart and the configuration it ran
 * with. Read from the build's manifest.json alone; see report.h.
 */
#include "pipeline/nightly/report.h"

#include "config/keys.h"
#include "pipeline/nightly/report_html.h"
#include "stages/common/report.h"
#include "stages/common/size.h"
#include "stages/common/svg.h"
#include "stages/profile/profile.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Verify's problems shown at most; the rest are counted. */
#define MAX_PROBLEMS_SHOWN 100

/* One row "<th>name</th><td>value</td>", the value from the manifest. */
static void row(FILE *o, const char *name, const char *field, const json_t *v, const char *human) {
    char buf[64];
    fputs("<tr><th>", o);
    html_text(o, name);
    fputs("</th><td>", o);
    if (!v || json_is_null(v)) {
        fputs("<span class=\"muted\">none</span>", o);
    } else {
        html_field(o, field, html_json_text(v, buf, sizeof buf));
        if (human) {
            fputs(" <span class=\"muted\">(", o);
            html_text(o, human);
            fputs(")</span>", o);
        }
    }
    fputs("</td></tr>\n", o);
}

static void row_bytes(FILE *o, const char *name, const char *field, const json_t *v) {
    char h[32];
    row(o, name, field, v,
        json_is_number(v) ? sp_format_bytes(json_number_value(v), h, sizeof h) : NULL);
}

static void section(FILE *o, const char *id, const char *title) {
    fprintf(o, "<h2 id=\"%s\">", id);
    html_text(o, title);
    fputs("</h2>\n", o);
}

static void status_block(FILE *o, const json_t *m) {
    const char *status = html_str(m, "status");
    bool ok = status && !strcmp(status, "published");
    fprintf(o, "<p>Status: <span class=\"%s\" data-field=\"status\">", ok ? "ok" : "failed");
    html_text(o, status ? status : "unknown");
    fputs("</span>", o);
    char buf[32];
    fputs(", exit code ", o);
    html_field(o, "exit_code", html_json_text(json_object_get(m, "exit_code"), buf, sizeof buf));
    if (!ok && html_str(m, "failed_stage")) {
        fputs(", failed in stage ", o);
        html_field(o, "failed_stage", html_str(m, "failed_stage"));
    }
    fputs("</p>\n", o);
    if (!ok && html_str(m, "error")) {
        fputs("<p class=\"error\">", o);
        html_field(o, "error", html_str(m, "error"));
        fputs("</p>\n", o);
    }
}

static void run_section(FILE *o, const json_t *m) {
    section(o, "run", "Run");
    char h[32];
    json_t *wall = json_object_get(m, "wall_seconds");
    fputs("<table>\n", o);
    row(o, "started", "started_at", json_object_get(m, "started_at"), NULL);
    row(o, "finished", "finished_at", json_object_get(m, "finished_at"), NULL);
    row(o, "run time (s)", "wall_seconds", wall,
        json_is_number(wall) ? html_seconds(json_number_value(wall), h, sizeof h) : NULL);
    row(o, "host", "host", json_object_get(m, "host"), NULL);
    row(o, "pid", "pid", json_object_get(m, "pid"), NULL);
    row_bytes(o, "peak memory (bytes)", "peak_rss_bytes", json_object_get(m, "peak_rss_bytes"));
    row(o, "directory", "build_dir", json_object_get(m, "build_dir"), NULL);
    fputs("</table>\n", o);
}

/* Any JSON value as a small table (objects) or list (arrays) of text:
 * for the parts of a manifest this page has no fixed layout for, such as
 * the incremental nightly's base, increments and gaps. */
static void any_value(FILE *o, const json_t *v) {
    char buf[64];
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        fputs("<table>", o);
        json_object_foreach((json_t *)v, k, x) {
            fputs("<tr><th>", o);
            html_text(o, k);
            fputs("</th><td>", o);
            any_value(o, x);
            fputs("</td></tr>", o);
        }
        fputs("</table>", o);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        if (!json_array_size(v)) {
            fputs("<span class=\"muted\">none</span>", o);
            return;
        }
        fputs("<ol>", o);
        json_array_foreach((json_t *)v, i, x) {
            fputs("<li>", o);
            any_value(o, x);
            fputs("</li>", o);
        }
        fputs("</ol>", o);
    } else if (json_is_null(v)) {
        fputs("<span class=\"muted\">none</span>", o);
    } else {
        html_text(o, html_json_text(v, buf, sizeof buf));
    }
}

/* What an incremental nightly records ("incremental" in the manifest),
 * shown in this order when there; anything else it holds follows. */
static const char *const INCREMENTAL[] = {"base", "increments", "gaps", "skipped", "merge"};

static void input_section(FILE *o, const json_t *m) {
    section(o, "input", "Input");
    json_t *in = json_object_get(m, "input");
    if (!json_is_object(in)) {
        fputs("<p class=\"muted\">No input was found.</p>\n", o);
    } else {
        fputs("<table>\n", o);
        row(o, "dump", "input.path", json_object_get(in, "path"), NULL);
        row_bytes(o, "size (bytes)", "input.size", json_object_get(in, "size"));
        row(o, "dated (mtime)", "input.mtime", json_object_get(in, "mtime"), NULL);
        row(o, "XXH3-64", "input.xxh3_64", json_object_get(in, "xxh3_64"), NULL);
        row(o, "compressed", "input.compressed", json_object_get(in, "compressed"), NULL);
        fputs("</table>\n", o);
    }
    json_t *inc = json_object_get(m, "incremental");
    if (!json_is_object(inc))
        return;
    fputs("<h3>Incremental</h3>\n<table>\n", o);
    for (size_t i = 0; i < sizeof INCREMENTAL / sizeof *INCREMENTAL; i++) {
        json_t *v = json_object_get(inc, INCREMENTAL[i]);
        if (!v)
            continue;
        fprintf(o, "<tr><th>%s</th><td data-field=\"incremental.%s\">", INCREMENTAL[i],
                INCREMENTAL[i]);
        any_value(o, v);
        fputs("</td></tr>\n", o);
    }
    const char *k;
    json_t *v;
    json_object_foreach(inc, k, v) {
        bool known = false;
        for (size_t i = 0; i < sizeof INCREMENTAL / sizeof *INCREMENTAL; i++)
            known |= !strcmp(k, INCREMENTAL[i]);
        if (known)
            continue;
        fputs("<tr><th>", o);
        html_text(o, k);
        fputs("</th><td>", o);
        any_value(o, v);
        fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
}

/* Stage s's figure col as a person reads it: times and sizes in their
 * unit to 3 digits, the rate of the larger of the bytes in and out; no
 * bytes is "-", not a size or rate of 0. */
static void stage_figure(const json_t *s, const char *col, char *buf, size_t cap) {
    double wall = json_number_value(json_object_get(s, "wall_seconds"));
    double in = json_number_value(json_object_get(s, "bytes_in"));
    double out = json_number_value(json_object_get(s, "bytes_out"));
    double v = json_number_value(json_object_get(s, col));
    double rate = wall > 0 ? fmax(in, out) / 1e6 / wall : 0;
    if (strstr(col, "_seconds"))
        sp_format_seconds(v, buf, cap);
    else if (!strncmp(col, "bytes_", 6) && v > 0)
        sp_format_bytes(v, buf, cap);
    else if (!strncmp(col, "records_", 8))
        snprintf(buf, cap, "%.0f", v);
    else if (!strcmp(col, "mb_per_s") && rate > 0)
        snprintf(buf, cap, "%.*f", rate >= 99.95 ? 0 : rate >= 9.995 ? 1 : 2, rate);
    else
        snprintf(buf, cap, "-");
}

static void stages_section(FILE *o, const json_t *m) {
    section(o, "stages", "Stages");
    json_t *st = json_object_get(m, "stages");
    size_t n = json_array_size(st);
    if (!n) {
        fputs("<p class=\"muted\">No stage ran.</p>\n", o);
        return;
    }
    sp_svg_bar *bars = calloc(n, sizeof *bars);
    char(*texts)[48] = calloc(n, sizeof *texts);
    if (bars && texts) {
        for (size_t i = 0; i < n; i++) {
            json_t *s = json_array_get(st, i);
            double w = json_number_value(json_object_get(s, "wall_seconds"));
            bars[i].label = html_str(s, "name") ? html_str(s, "name") : "?";
            bars[i].value = w > 0 ? w : 0;
            char wall[24], cpu[24];
            snprintf(texts[i], sizeof texts[i], "%s wall, %s CPU",
                     sp_format_seconds(w, wall, sizeof wall),
                     sp_format_seconds(json_number_value(json_object_get(s, "cpu_seconds")), cpu,
                                       sizeof cpu));
            bars[i].value_text = texts[i];
        }
        fputs("<figure>\n", o);
        sp_svg_bars(o, "wall time per stage", bars, n, false);
        fputs("</figure>\n", o);
    }
    free(bars);
    free(texts);
    static const char *const cols[] = {"wall_seconds", "cpu_seconds", "bytes_in", "bytes_out",
                                       "records_in",   "records_out", "mb_per_s"};
    fputs("<table>\n<tr><th>stage</th><th>wall</th><th>CPU</th><th>bytes in</th>"
          "<th>bytes out</th><th>records in</th><th>records out</th><th>MB/s</th></tr>\n",
          o);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(st, i);
        const char *name = html_str(s, "name");
        fputs("<tr><th>", o);
        html_text(o, name);
        fputs("</th>", o);
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
            char field[96], buf[64];
            snprintf(field, sizeof field, "stages.%s.%s", name ? name : "?", cols[c]);
            fputs("<td class=\"n\">", o);
            json_t *v = json_object_get(s, cols[c]);
            if (json_is_null(v) || !v) {
                fputs("<span class=\"muted\">-</span>", o);
            } else {
                const char *exact = html_json_text(v, buf, sizeof buf);
                char human[48];
                stage_figure(s, cols[c], human, sizeof human);
                html_figure(o, field, exact, human);
            }
            fputs("</td>", o);
        }
        fputs("</tr>\n", o);
    }
    fputs("</table>\n<p class=\"muted\">MB/s: the larger of the bytes in and out over the wall "
          "time; - where a stage moved no bytes of its own (the write stage takes its records "
          "from the sort in memory).</p>\n",
          o);
}

static void table_section(FILE *o, const json_t *m) {
    section(o, "table", "Table");
    json_t *t = json_object_get(m, "sstable"), *c = json_object_get(m, "counts");
    if (json_is_object(t)) {
        fputs("<table>\n", o);
        row(o, "file", "sstable.file", json_object_get(t, "file"), NULL);
        row(o, "records", "sstable.records", json_object_get(t, "records"), NULL);
        row_bytes(o, "file size (bytes)", "sstable.file_size", json_object_get(t, "file_size"));
        row(o, "data blocks", "sstable.data_blocks", json_object_get(t, "data_blocks"), NULL);
        row_bytes(o, "key bytes", "sstable.key_bytes", json_object_get(t, "key_bytes"));
        row_bytes(o, "value bytes", "sstable.value_bytes", json_object_get(t, "value_bytes"));
        double size = json_number_value(json_object_get(t, "file_size"));
        double kv = json_number_value(json_object_get(t, "key_bytes")) +
                    json_number_value(json_object_get(t, "value_bytes"));
        char pct[32];
        snprintf(pct, sizeof pct, "%.1f%%", size > 0 ? 100 * kv / size : 0.0);
        json_t *compact = json_real(size > 0 ? kv / size : 0);
        row(o, "compactness (key + value bytes / file size)", "compactness", compact, pct);
        json_decref(compact);
        row(o, "bytes per record (file size / records)", "sstable.bytes_per_record",
            json_object_get(t, "bytes_per_record"), NULL);
        row(o, "compression ratio (value bytes / data blocks' bytes)", "sstable.compression_ratio",
            json_object_get(t, "compression_ratio"), NULL);
        row_bytes(o, "block size", "sstable.block_size", json_object_get(t, "block_size"));
        row_bytes(o, "cluster size", "sstable.cluster_size", json_object_get(t, "cluster_size"));
        row_bytes(o, "values cut at", "sstable.max_value_bytes",
                  json_object_get(t, "max_value_bytes"));
        fputs("</table>\n", o);
    } else {
        fputs("<p class=\"muted\">No table was written.</p>\n", o);
    }
    if (json_is_object(c)) {
        fputs("<h3>Records</h3>\n<table>\n", o);
        row(o, "pages read", "counts.pages", json_object_get(c, "pages"), NULL);
        row(o, "records extracted", "counts.records_extracted",
            json_object_get(c, "records_extracted"), NULL);
        row(o, "values truncated", "counts.truncated", json_object_get(c, "truncated"), NULL);
        row(o, "duplicates replaced", "counts.duplicates_replaced",
            json_object_get(c, "duplicates_replaced"), NULL);
        row(o, "redirects skipped", "counts.skipped_redirects",
            json_object_get(c, "skipped_redirects"), NULL);
        row(o, "pages of other namespaces skipped", "counts.skipped_namespace",
            json_object_get(c, "skipped_namespace"), NULL);
        row(o, "records written", "counts.records_written", json_object_get(c, "records_written"),
            NULL);
        row_bytes(o, "XML bytes (decompressed)", "counts.xml_bytes",
                  json_object_get(c, "xml_bytes"));
        fputs("</table>\n", o);
    }
}

static void verify_section(FILE *o, const json_t *m) {
    section(o, "verify", "Verify");
    /* The manifest holds one file's report; verify.json wraps it in "files". */
    json_t *f = json_object_get(m, "verify");
    if (!json_is_object(f)) {
        fputs("<p class=\"muted\">Verify did not run.</p>\n", o);
        return;
    }
    char buf[64];
    bool ok = json_is_true(json_object_get(f, "ok"));
    fprintf(o, "<p>Result: <span class=\"%s\" data-field=\"verify.ok\">%s</span>, ",
            ok ? "ok" : "failed", ok ? "clean" : "problems found");
    html_field(o, "verify.problem_count",
               html_json_text(json_object_get(f, "problem_count"), buf, sizeof buf));
    fputs(" problem(s); ", o);
    html_field(o, "verify.records", html_json_text(json_object_get(f, "records"), buf, sizeof buf));
    fputs(" records in ", o);
    html_field(o, "verify.blocks", html_json_text(json_object_get(f, "blocks"), buf, sizeof buf));
    fputs(" blocks checked.</p>\n", o);
    if (html_str(f, "error")) {
        fputs("<p class=\"error\">", o);
        html_text(o, html_str(f, "error"));
        fputs("</p>\n", o);
    }
    json_t *ps = json_object_get(f, "problems");
    size_t n = json_array_size(ps);
    if (!n)
        return;
    fputs("<table data-field=\"verify.problems\">\n<tr><th>problem</th><th>block</th>"
          "<th>byte offset</th></tr>\n",
          o);
    for (size_t i = 0; i < n && i < MAX_PROBLEMS_SHOWN; i++) {
        json_t *p = json_array_get(ps, i);
        fputs("<tr><td>", o);
        html_text(o, html_str(p, "what"));
        fputs("</td><td class=\"n\">", o);
        html_text(o, html_json_text(json_object_get(p, "block"), buf, sizeof buf));
        fputs("</td><td class=\"n\">", o);
        html_text(o, html_json_text(json_object_get(p, "offset"), buf, sizeof buf));
        fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
    if (n > MAX_PROBLEMS_SHOWN)
        fprintf(o, "<p>... and %zu more in verify.json.</p>\n", n - MAX_PROBLEMS_SHOWN);
}

static void profile_section(FILE *o, const json_t *m) {
    section(o, "profile", "Lookup latency");
    json_t *p = json_object_get(m, "profile");
    if (!json_is_object(p)) {
        fputs("<p class=\"muted\">Not profiled.</p>\n", o);
        return;
    }
    if (html_str(p, "error")) {
        fputs("<p class=\"error\">Profiling failed: ", o);
        html_field(o, "profile.error", html_str(p, "error"));
        fputs("</p>\n", o);
        return;
    }
    json_t *lat = json_object_get(p, "latency_ns");
    static const char *const keys[] = {"min", "avg", "p50", "p90", "p99", "p99_9", "max"};
    static const char *const heads[] = {"min", "avg", "p50", "p90", "p99", "p99.9", "max"};
    char buf[64], human[32];
    fputs("<p>", o);
    html_field(o, "profile.lookups",
               html_json_text(json_object_get(p, "lookups"), buf, sizeof buf));
    fputs(" lookups, ", o);
    html_field(o, "profile.mode", html_str(p, "mode"));
    fputs(", ", o);
    html_field(o, "profile.threads",
               html_json_text(json_object_get(p, "threads"), buf, sizeof buf));
    fputs(" thread(s), queue depth ", o);
    html_field(o, "profile.queue_depth",
               html_json_text(json_object_get(p, "queue_depth"), buf, sizeof buf));
    fputs(".</p>\n<table>\n<tr>", o);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        fprintf(o, "<th>%s</th>", heads[i]);
    fputs("</tr>\n<tr>", o);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char field[48];
        snprintf(field, sizeof field, "profile.latency_ns.%s", keys[i]);
        fputs("<td class=\"n\">", o);
        json_t *v = json_object_get(lat, keys[i]);
        if (json_is_number(v))
            html_figure(o, field, html_json_text(v, buf, sizeof buf),
                        sp_format_seconds(json_number_value(v) * 1e-9, human, sizeof human));
        else
            html_field(o, field, html_json_text(v, buf, sizeof buf));
        fputs("</td>", o);
    }
    fputs("</tr>\n</table>\n", o);
    profile_chart *c = malloc(sizeof *c);
    sp_error err = {0};
    if (c && profile_chart_from_json(p, c, &err) == 0) {
        /* The table of this directory, not where it was while profiled. */
        const char *file = html_str(json_object_get(m, "sstable"), "file");
        if (file)
            c->path = file;
        fputs("<figure>\n", o);
        profile_chart_draw(c, o, false);
        fputs("</figure>\n", o);
    } else {
        fputs("<p class=\"muted\">No latency chart: ", o);
        html_text(o, c ? err.msg : "out of memory");
        fputs("</p>\n", o);
    }
    free(c);
}

/* The key of config/keys.def named [sec] name, or -1 (a manifest written
 * by another version may hold keys this one does not know). */
static int find_key(const char *sec, const char *name) {
    for (int k = 0; k < CONFIG_KEY_COUNT; k++)
        if (!strcmp(config_keys[k].section, sec) && !strcmp(config_keys[k].name, name))
            return k;
    return -1;
}

/* Whether the manifest's [sec] keys hold a value other than the default:
 * [cluster] is shown only then, as only then was the build a cluster
 * build (config_cluster_set). */
static bool section_set(const json_t *keys, const sp_config *defaults) {
    const char *key;
    json_t *e;
    bool set = false;
    json_object_foreach((json_t *)keys, key, e) {
        int k = find_key("cluster", key);
        json_t *def = k >= 0 ? config_value_json(defaults, (config_key)k) : NULL;
        set = set || !def || !json_equal(def, json_object_get(e, "value"));
        json_decref(def);
    }
    return set;
}

static void config_section(FILE *o, const json_t *m) {
    section(o, "config", "Configuration");
    json_t *cfg = json_object_get(m, "config");
    if (!json_is_object(cfg)) {
        fputs("<p class=\"muted\">Not recorded.</p>\n", o);
        return;
    }
    sp_config defaults;
    config_init(&defaults);
    fputs("<table>\n<tr><th>key</th><th>value</th><th>from</th></tr>\n", o);
    const char *sec, *key;
    json_t *keys, *e;
    char buf[64], human[32];
    json_object_foreach(cfg, sec, keys) {
        if (!strcmp(sec, "cluster") && !section_set(keys, &defaults))
            continue;
        json_object_foreach(keys, key, e) {
            char field[160];
            snprintf(field, sizeof field, "config.%s.%s", sec, key);
            fputs("<tr><th>[", o);
            html_text(o, sec);
            fputs("] ", o);
            html_text(o, key);
            fputs("</th><td>", o);
            json_t *v = json_object_get(e, "value");
            int k = find_key(sec, key);
            const char *exact = html_json_text(v, buf, sizeof buf);
            /* A size as people write it in the file: 256 MiB, not 268435456. */
            if (k >= 0 && json_is_integer(v) &&
                (config_keys[k].type == KT_SIZE || config_keys[k].type == KT_POW2))
                html_figure(o, field, exact,
                            sp_format_bytes((double)json_integer_value(v), human, sizeof human));
            else
                html_field(o, field, exact);
            fputs("</td><td>", o);
            html_text(o, html_str(e, "origin"));
            fputs("</td></tr>\n", o);
        }
    }
    fputs("</table>\n", o);
    if (json_is_object(json_object_get(cfg, "cluster")) &&
        !section_set(json_object_get(cfg, "cluster"), &defaults))
        fputs("<p class=\"muted\">[cluster]: not set, a build in one process.</p>\n", o);
    config_destroy(&defaults);
}

void report_build_page(const json_t *m, FILE *o) {
    const char *dir = html_str(m, "build_dir");
    char title[512];
    snprintf(title, sizeof title, "sstpipe nightly: %s (%s)", dir ? dir : "?",
             html_str(m, "status") ? html_str(m, "status") : "unknown");
    html_begin(o, title);
    /* The log sits beside the report in every build directory; a failed
     * run's says why. */
    fputs("<p><a href=\"../../index.html\">All builds</a> &middot; "
          "<a href=\"nightly.log\">Log (nightly.log)</a></p>\n<h1>Nightly build <code>",
          o);
    html_text(o, dir);
    fputs("</code></h1>\n", o);
    status_block(o, m);
    run_section(o, m);
    input_section(o, m);
    stages_section(o, m);
    table_section(o, m);
    verify_section(o, m);
    profile_section(o, m);
    config_section(o, m);
    html_end(o, html_str(m, "sstpipe_version"));
}

int report_write_build(const char *build_dir, sp_error *err) {
    json_t *m;
    if (report_load_manifest(build_dir, &m, err))
        return -1;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" REPORT_PAGE, build_dir);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        json_decref(m);
        return sp_errorf_errno(err, "%s: cannot build the page", path);
    }
    report_build_page(m, mem);
    json_decref(m);
    if (fclose(mem) != 0) {
        free(text);
        return sp_errorf(err, "%s: cannot build the page (out of memory)", path);
    }
    int rc = sp_report_write_text(path, text, len, err);
    free(text);
    return rc;
}
