/*
 * fuzz_serve.c: libFuzzer target for the server's request handling
 * (serve_handle: routing, percent-decoding, parameter checks, lookups and
 * the JSON of /v1/prefix), without the network.
 *
 * The input is "METHOD PATH?QUERY", then, after a newline, the request's
 * body (for POST /v1/get_many): split as libmicrohttpd splits it (the
 * method up to the first space, the query at the first '?', parameters at
 * '&' and '=', '+' made a space, nothing decoded), over a small table made
 * once with keys that share prefixes and hold multi-byte UTF-8. The
 * oracle: the status is one the endpoint can give (never a 500: the table
 * is sound), an error body is one line, a 200 from /v1/get is the stored
 * value of the decoded key, and a 200 from /v1/prefix is a page of at most
 * limit records in key order, each stored and starting with the prefix
 * (only keys with keys_only), saying whether more follow and, if so, the
 * next key; a 200 from /v1/get_many is a JSON array of one record per
 * key asked, in order, each with its stored value or null. The nightly
 * pages (serve_pages.h) are served from a small directory with symlinks
 * leading out of it: a page served must be one of its two pages, never the
 * file outside. The search page at / (serve_search.h) is its fixed start
 * and end around what the server wrote, in which no text of the request or
 * the table is markup (no "<script" whatever q or title held), and a 200
 * for a stored title shows its value, escaped.
 */
#include "fuzz_file.h"
#include "stages/common/xml_escape.h"
#include "stages/serve/search_page.h"
#include "stages/serve/serve_request.h"
#include "stages/sst/table_writer.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIMIT_MAX 8

static const char *const keys[] = {
    /* In memcmp order, as a table holds them. */
    "A",
    "AT&T",
    "Ab",
    "Abc",
    "Abc def",
    "Abd",
    "B",
    "Talk:Foo",
    "caf\xc3\xa9",
    "caf\xc3\xa9s",
    "zz%41",
    "zz+plus",
    "\xe6\x97\xa5\xe6\x9c\xac",
    "\xf0\x9f\x98\x80 emoji",
};
#define NKEYS (sizeof keys / sizeof keys[0])

static served_table served;
static serve_metrics metrics;

static const char *value_of(size_t i, char *buf, size_t cap) {
    snprintf(buf, cap, "value %zu of %s", i, keys[i]);
    return buf;
}

/* The table, written once into a scratch directory that is then removed
 * (the open table keeps its file). */
static void make_table(void) {
    char dir[] = "/tmp/fuzz-serve-XXXXXX";
    if (!mkdtemp(dir))
        fuzz_fail("mkdtemp failed");
    char path[64];
    snprintf(path, sizeof path, "%s/t.sst", dir);
    table_options o;
    table_options_init(&o);
    sp_error err = {0};
    table_writer *w = table_writer_init(path, &o, &err);
    for (size_t i = 0; w && i < NKEYS; i++) {
        char v[128];
        value_of(i, v, sizeof v);
        sp_record rec = {.key = (const uint8_t *)keys[i],
                         .key_len = (uint32_t)strlen(keys[i]),
                         .value = (const uint8_t *)v,
                         .value_len = strlen(v),
                         .value_fd = -1};
        if (table_writer_add(w, &rec, &err))
            break;
    }
    if (!w || err.set || table_writer_finish(w, &err))
        fuzz_fail("cannot write the table: %s", err.msg);
    table_writer_destroy(w);
    char *msg = NULL;
    served.table = sstpipe_open(path, &msg);
    if (!served.table)
        fuzz_fail("cannot open the table: %s", msg);
    unlink(path);
    rmdir(dir);
    served.path = "t.sst";
    served.name = served.path; /* as the holder sets it: the path past its directory */
    served.generation = 1;
    serve_metrics_init(&metrics);
}

typedef struct query {
    char *names[16];
    char *values[16];
    int n;
} query;

static const char *lookup(void *ctx, const char *name) {
    const query *q = ctx;
    for (int i = 0; i < q->n; i++)
        if (!strcmp(q->names[i], name))
            return q->values[i];
    return NULL;
}

/* Splits "a=1&b&c=3" in place, as libmicrohttpd does. A name without '='
 * has no value (the library reports NULL). */
static void split_query(char *s, query *q) {
    q->n = 0;
    while (s && *s && q->n < 16) {
        char *amp = strchr(s, '&');
        if (amp)
            *amp++ = '\0';
        for (char *p = s; *p; p++)
            if (*p == '+')
                *p = ' ';
        char *eq = strchr(s, '=');
        if (eq)
            *eq++ = '\0';
        if (eq) {
            q->names[q->n] = s;
            q->values[q->n++] = eq;
        }
        s = amp;
    }
}

static long find_key(const void *k, size_t len) {
    for (size_t i = 0; i < NKEYS; i++)
        if (strlen(keys[i]) == len && !memcmp(keys[i], k, len))
            return (long)i;
    return -1;
}

static void check_get(const query *q, const serve_reply *r) {
    if (r->status != 200)
        return;
    uint8_t key[SP_MAX_KEY_BYTES];
    char reason[SERVE_REASON_CAP];
    long klen = serve_decode_param("key", lookup((void *)q, "key"), key, sizeof key, reason);
    long i = klen < 0 ? -1 : find_key(key, (size_t)klen);
    char v[128];
    if (i < 0 || r->len != strlen(value_of((size_t)i, v, sizeof v)) || memcmp(r->body, v, r->len))
        fuzz_fail("/v1/get answered 200 with the wrong value");
}

static void check_prefix(const query *q, const serve_reply *r) {
    if (r->status != 200)
        return;
    uint8_t prefix[SP_MAX_KEY_BYTES];
    char reason[SERVE_REASON_CAP];
    long plen =
        serve_decode_param("prefix", lookup((void *)q, "prefix"), prefix, sizeof prefix, reason);
    json_error_t jerr;
    json_t *page = json_loadb(r->body, r->len, 0, &jerr);
    json_t *arr = json_object_get(page, "records");
    json_t *more = json_object_get(page, "more"), *next = json_object_get(page, "next");
    if (plen < 0 || !json_is_array(arr) || json_array_size(arr) > LIMIT_MAX ||
        !json_is_boolean(more) || json_is_true(more) != json_is_string(next))
        fuzz_fail("/v1/prefix answered 200 with a bad page: %.*s", (int)r->len,
                  (const char *)r->body);
    bool keys_only = lookup((void *)q, "keys_only") && lookup((void *)q, "keys_only")[0] != '0' &&
                     strcmp(lookup((void *)q, "keys_only"), "false");
    const char *prev = NULL;
    size_t prev_len = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *rec = json_array_get(arr, i);
        json_t *k = json_object_get(rec, "key"), *v = json_object_get(rec, "value");
        if (!json_is_string(k) || (!keys_only && !json_is_string(v)) ||
            json_object_size(rec) != (keys_only ? 1u : 2u))
            fuzz_fail("/v1/prefix record %zu is not {key, value} (or {key}, keys_only)", i);
        const char *ks = json_string_value(k);
        size_t kl = json_string_length(k);
        long at = find_key(ks, kl);
        char val[128];
        if (at < 0 ||
            (!keys_only && strcmp(json_string_value(v), value_of((size_t)at, val, sizeof val))))
            fuzz_fail("/v1/prefix record %zu is not a stored record", i);
        if (kl < (size_t)plen || memcmp(ks, prefix, (size_t)plen))
            fuzz_fail("/v1/prefix record %zu does not start with the prefix", i);
        if (prev) {
            size_t m = prev_len < kl ? prev_len : kl;
            int c = memcmp(prev, ks, m);
            if (c > 0 || (c == 0 && prev_len >= kl))
                fuzz_fail("/v1/prefix records %zu and %zu are out of order", i - 1, i);
        }
        prev = ks;
        prev_len = kl;
    }
    json_decref(page);
}

static void check_get_many(const uint8_t *body, size_t len, const serve_reply *r) {
    if (r->status != 200)
        return;
    json_error_t jerr;
    json_t *asked = json_loadb((const char *)body, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
    json_t *arr = json_loadb(r->body, r->len, JSON_ALLOW_NUL, &jerr);
    if (!json_is_array(asked) || !json_is_array(arr) ||
        json_array_size(arr) != json_array_size(asked))
        fuzz_fail("/v1/get_many answered 200 with a bad array: %.*s", (int)r->len,
                  (const char *)r->body);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *rec = json_array_get(arr, i), *k = json_object_get(rec, "key");
        json_t *v = json_object_get(rec, "value");
        if (!json_equal(k, json_array_get(asked, i)) || json_object_size(rec) != 2)
            fuzz_fail("/v1/get_many record %zu is not the key asked", i);
        long at = find_key(json_string_value(k), json_string_length(k));
        char val[128];
        if (at < 0 ? !json_is_null(v)
                   : !json_is_string(v) ||
                         strcmp(json_string_value(v), value_of((size_t)at, val, sizeof val)))
            fuzz_fail("/v1/get_many record %zu has the wrong value", i);
    }
    json_decref(asked);
    json_decref(arr);
}

/*
 * A nightly directory with two pages, a build that is a symlink to the
 * directory's parent and a report that is a symlink to a file outside:
 * whatever path comes in, a page served must be one of the two pages,
 * never the file outside (made once per process, removed at exit).
 */
static char pages_root[64];
static const char INDEX_PAGE[] = "<p>index</p>\n", REPORT_PAGE[] = "<p>report</p>\n";

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f))
        fuzz_fail("cannot write %s", path);
}

static void remove_pages(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", pages_root);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_serve: could not remove %s\n", pages_root);
}

static const char *pages_dir(void) {
    static char dir[96];
    if (dir[0])
        return dir;
    snprintf(pages_root, sizeof pages_root, "/tmp/fuzz-serve-pages.XXXXXX");
    if (!mkdtemp(pages_root))
        fuzz_fail("mkdtemp failed");
    atexit(remove_pages);
    char p[256];
    snprintf(p, sizeof p, "%s/secret.html", pages_root);
    put(p, "secret\n");
    snprintf(dir, sizeof dir, "%s/out", pages_root);
    const char *dirs[] = {"", "/builds", "/builds/20260101T000000Z-x", "/failed",
                          "/failed/20260101T000000Z-y"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(p, sizeof p, "%s%s", dir, dirs[i]);
        if (mkdir(p, 0755))
            fuzz_fail("mkdir %s failed", p);
    }
    snprintf(p, sizeof p, "%s/index.html", dir);
    put(p, INDEX_PAGE);
    snprintf(p, sizeof p, "%s/builds/20260101T000000Z-x/report.html", dir);
    put(p, REPORT_PAGE);
    char target[256];
    snprintf(p, sizeof p, "%s/builds/20260101T000000Z-up", dir);
    if (symlink(pages_root, p))
        fuzz_fail("symlink failed");
    snprintf(p, sizeof p, "%s/failed/20260101T000000Z-y/report.html", dir);
    snprintf(target, sizeof target, "%s/secret.html", pages_root);
    if (symlink(target, p))
        fuzz_fail("symlink failed");
    return dir;
}

static void check_page(const serve_reply *r) {
    if (!(r->len == strlen(INDEX_PAGE) && !memcmp(r->body, INDEX_PAGE, r->len)) &&
        !(r->len == strlen(REPORT_PAGE) && !memcmp(r->body, REPORT_PAGE, r->len)))
        fuzz_fail("served something that is not a page: %.*s", (int)r->len, (const char *)r->body);
}

static void check_search(const query *q, const serve_reply *r) {
    if (r->status == 405)
        return;
    size_t head = strlen(serve_search_page_head), tail = strlen(serve_search_page_tail);
    const char *b = r->body;
    if (r->len < head + tail || memcmp(b, serve_search_page_head, head) ||
        memcmp(b + r->len - tail, serve_search_page_tail, tail))
        fuzz_fail("the search page is not its start and end around the server's part");
    /* The server's part, NUL-terminated for the searches below. */
    char *mid = strndup(b + head, r->len - head - tail);
    if (!mid)
        fuzz_fail("out of memory");
    for (const char *p = mid; (p = strchr(p, '<')); p++)
        if (!strncasecmp(p, "<script", 7))
            fuzz_fail("markup from the request or the table in the search page: %s", mid);
    const char *raw = lookup((void *)q, "title");
    uint8_t key[SP_MAX_KEY_BYTES];
    char reason[SERVE_REASON_CAP];
    long klen = raw ? serve_decode_param("title", raw, key, sizeof key, reason) : -1;
    long i = klen < 0 ? -1 : find_key(key, (size_t)klen);
    if (r->status == 200 && i >= 0) {
        char v[128], *want = NULL;
        size_t want_len = 0;
        FILE *o = open_memstream(&want, &want_len);
        if (!o)
            fuzz_fail("out of memory");
        fputs("<pre class=\"record\">", o);
        value_of((size_t)i, v, sizeof v);
        sp_xml_escape_text(o, v, strlen(v));
        fputs("</pre>", o);
        if (fclose(o) || !strstr(mid, want))
            fuzz_fail("the search page does not show the record of %s: %s", keys[i], mid);
        free(want);
    }
    free(mid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!served.table)
        make_table();
    /* The request line ends at the first newline; the body is the rest. */
    const uint8_t *nl = memchr(data, '\n', size);
    const uint8_t *body = nl ? nl + 1 : NULL;
    size_t body_len = nl ? size - (size_t)(body - data) : 0;
    /* The library hands over NUL-terminated strings: a NUL in the request
     * line ends it there. */
    char *line = strndup((const char *)data, nl ? (size_t)(nl - data) : size);
    if (!line)
        fuzz_fail("out of memory");
    char *path = strchr(line, ' ');
    if (path)
        *path++ = '\0';
    else
        path = line + strlen(line);
    char *qs = strchr(path, '?');
    if (qs)
        *qs++ = '\0';
    char *raw_query = qs ? strdup(qs) : NULL; /* split_query cuts qs up */
    if (qs && !raw_query)
        fuzz_fail("out of memory");
    query q;
    split_query(qs, &q);

    serve_handler h = {.metrics = &metrics,
                       .prefix_limit_max = LIMIT_MAX,
                       .copy_values = false,
                       .pages_dir = pages_dir()};
    serve_request req = {.method = line,
                         .path = path,
                         .param = lookup,
                         .param_ctx = &q,
                         .query = raw_query,
                         .body = body,
                         .body_len = body_len};
    serve_reply r;
    serve_handle(&h, &req, &served, &r);
    static const unsigned allowed[] = {200, 400, 404, 405};
    bool ok = false;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        ok |= r.status == allowed[i];
    if (!ok)
        fuzz_fail("status %u for %s %s", r.status, line, path);
    if (r.status >= 400 && r.endpoint != SERVE_EP_SEARCH) {
        const char *nl = memchr(r.body, '\n', r.len);
        if (!r.len || nl != (const char *)r.body + r.len - 1)
            fuzz_fail("error body is not one line: %.*s", (int)r.len, (const char *)r.body);
    }
    if (r.endpoint == SERVE_EP_PAGE && r.status == 200)
        check_page(&r);
    if (r.endpoint == SERVE_EP_GET)
        check_get(&q, &r);
    else if (r.endpoint == SERVE_EP_PREFIX)
        check_prefix(&q, &r);
    else if (r.endpoint == SERVE_EP_GET_MANY)
        check_get_many(body, body_len, &r);
    else if (r.endpoint == SERVE_EP_SEARCH)
        check_search(&q, &r);
    serve_metrics_record(&metrics, r.endpoint, r.status, 1000, r.missed);
    serve_reply_destroy(&r);
    free(raw_query);
    free(line);
    return 0;
}
