/* report_html.c: the pages' shared frame and helpers; see report_html.h. */
#include "pipeline/nightly/report_html.h"

#include "stages/common/version.h"
#include "stages/common/xml_escape.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* Plain, readable, printable; no web font, no script, nothing fetched. */
static const char STYLE[] =
    "body{font-family:sans-serif;margin:1.5em auto;max-width:72em;padding:0 1em;color:#222}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}"
    "th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".ok{color:#1a7f37;font-weight:bold}.failed{color:#c0392b;font-weight:bold}"
    ".error{background:#fdecea;border:1px solid #c0392b;padding:.6em;white-space:pre-wrap}"
    ".muted{color:#666}code{font-size:.95em}svg{max-width:100%;height:auto}"
    "footer{margin-top:2em;color:#666;font-size:.9em}"
    /* A date and time is read whole: never broken across lines. */
    "td.when{white-space:nowrap}";

void html_begin(FILE *o, const char *title) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          o);
    html_text(o, title);
    fprintf(o, "</title>\n<style>%s</style>\n</head>\n<body>\n", STYLE);
}

void html_end(FILE *o, const char *built_by) {
    fputs("<footer>", o);
    if (built_by) {
        fputs("Built by sstpipe ", o);
        html_field(o, "sstpipe_version", built_by);
        fputs("; page", o);
    } else {
        fputs("Page", o);
    }
    /* Said once when the build's sstpipe wrote the page too. */
    if (built_by && !strcmp(built_by, sp_version())) {
        fputs(" written by the same from the manifest.</footer>\n</body>\n</html>\n", o);
        return;
    }
    fputs(" written by <span data-field=\"report_sstpipe_version\">sstpipe ", o);
    html_text(o, sp_version());
    fputs("</span> (<code>sstpipe report</code>) from the manifest.</footer>\n</body>\n</html>\n",
          o);
}

void html_text(FILE *o, const char *s) {
    if (s)
        sp_xml_escape(o, s);
}

void html_url(FILE *o, const char *path) {
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("/._~-", *p))
            fputc(*p, o);
        else
            fprintf(o, "%%%02X", *p);
    }
}

void html_field(FILE *o, const char *field, const char *text) {
    fputs("<span data-field=\"", o);
    html_text(o, field);
    /* An empty element would be dropped by validators and unseen by people. */
    if (!text || !*text) {
        fputs("\" data-empty=\"\" class=\"muted\">(empty)</span>", o);
        return;
    }
    fputs("\">", o);
    html_text(o, text);
    fputs("</span>", o);
}

void html_figure(FILE *o, const char *field, const char *exact, const char *human) {
    fputs("<span data-field=\"", o);
    html_text(o, field);
    fputs("\" data-value=\"", o);
    html_text(o, exact);
    fputs("\">", o);
    html_text(o, human);
    fputs("</span>", o);
}

const char *html_json_text(const json_t *v, char *buf, size_t cap) {
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, cap, "%.6g", json_real_value(v));
    else if (json_is_true(v))
        snprintf(buf, cap, "true");
    else if (json_is_false(v))
        snprintf(buf, cap, "false");
    else
        snprintf(buf, cap, "%s", "");
    return buf;
}

const char *html_str(const json_t *o, const char *name) {
    return json_string_value(json_object_get(o, name));
}

const char *html_seconds(double s, char *buf, size_t cap) {
    if (s < 60)
        snprintf(buf, cap, "%.*f s", s < 10 ? 2 : 1, s);
    else if (s < 3600)
        snprintf(buf, cap, "%d min %d s", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, cap, "%d h %d min", (int)(s / 3600), (int)fmod(s / 60, 60));
    return buf;
}

int report_load_manifest(const char *dir, json_t **m, sp_error *err) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    *m = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!*m)
        return je.line > 0
                   ? sp_errorf(err, "%s: line %d, column %d: %s", path, je.line, je.column, je.text)
                   : sp_errorf(err, "%s: %s", path, je.text);
    if (!json_is_object(*m)) {
        json_decref(*m);
        *m = NULL;
        return sp_errorf(err, "%s: not a JSON object", path);
    }
    return 0;
}
