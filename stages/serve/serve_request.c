/*
 * serve_request.c: routing, parameter checks and the lookups behind each
 * endpoint; see serve_request.h.
 *
 * Kept free of the HTTP library so the fuzz target can drive it with
 * arbitrary methods, paths and parameters. Keys and prefixes are decoded
 * into stack buffers of the largest key (SP_MAX_KEY_BYTES): nothing a
 * client sends makes the server allocate more than the reply it asked for,
 * and that is bounded by [serve] prefix_limit_max records.
 */
#include "stages/serve/serve_request.h"

#include "stages/common/record.h"
#include "stages/read/info_json.h"
#include "stages/serve/serve_get_many.h"
#include "stages/serve/serve_json.h"
#include "stages/serve/serve_pages.h"
#include "stages/serve/serve_search.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char TEXT[] = "text/plain; charset=utf-8";
static const char JSON[] = "application/json";

static void reply_vtext(serve_reply *out, unsigned status, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void reply_vtext(serve_reply *out, unsigned status, const char *fmt, va_list ap) {
    int n = vsnprintf(out->text, sizeof out->text - 1, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len > sizeof out->text - 2)
        len = sizeof out->text - 2;
    /* One line, whatever a message held. */
    for (size_t i = 0; i < len; i++)
        if (out->text[i] == '\n' || out->text[i] == '\r')
            out->text[i] = ' ';
    out->text[len++] = '\n';
    out->text[len] = '\0';
    out->status = status;
    out->content_type = TEXT;
    out->kind = SERVE_BODY_COPY;
    out->body = out->text;
    out->len = len;
}

static void reply_text(serve_reply *out, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reply_text(serve_reply *out, unsigned status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    reply_vtext(out, status, fmt, ap);
    va_end(ap);
}

void serve_reply_text(serve_reply *out, unsigned status, const char *fmt, ...) {
    memset(out, 0, sizeof *out);
    out->endpoint = SERVE_EP_OTHER;
    va_list ap;
    va_start(ap, fmt);
    reply_vtext(out, status, fmt, ap);
    va_end(ap);
}

/* The length of the directory holding the served table, its final '/'
 * included: what a client is not shown of a path (the server's layout).
 * What is left names the table (t->name), or a table set's shard
 * ("set/shard-00.sst"). */
static size_t hidden_prefix(const served_table *t) {
    return (size_t)(t->name - t->path);
}

/* p as a client is shown it: without the served table's directory. */
static const char *client_path(const served_table *t, const char *p) {
    size_t n = hidden_prefix(t);
    if (!strncmp(p, t->path, n))
        return p + n;
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* msg as a client is told it: without the table's directory, wherever
 * the message names it. */
static void hide_dir(const served_table *t, const char *msg, char *text, size_t cap) {
    size_t n = hidden_prefix(t), len = 0;
    for (const char *p = msg; *p && len + 1 < cap;)
        if (n && !strncmp(p, t->path, n))
            p += n;
        else
            text[len++] = *p++;
    text[len] = '\0';
}

/* The 500 of an error the table reported (msg, NULL when it gave none):
 * kept whole for the server's log, and told the client without the
 * table's directory. */
static void table_error(serve_reply *out, const served_table *t, const char *msg,
                        const char *what) {
    char text[sizeof out->text];
    if (!msg)
        snprintf(text, sizeof text, "%s: %s", t->path + hidden_prefix(t), what);
    else
        hide_dir(t, msg, text, sizeof text);
    if (msg)
        snprintf(out->error, sizeof out->error, "%s", msg);
    else
        snprintf(out->error, sizeof out->error, "%s: %s", t->path, what);
    out->error[strcspn(out->error, "\n")] = '\0';
    reply_text(out, 500, "%s", text);
}

static void reply_owned(serve_reply *out, const char *type, char *body, size_t len) {
    out->status = 200;
    out->content_type = type;
    out->kind = SERVE_BODY_FREE;
    out->body = body;
    out->len = len;
}

/* The decoded parameter name into buf: its length, -1 absent, -2 bad (the
 * 400 is already in out). */
static long param(const serve_request *req, const char *name, uint8_t *buf, size_t cap,
                  serve_reply *out) {
    const char *raw = req->param(req->param_ctx, name);
    if (!raw)
        return -1;
    char reason[SERVE_REASON_CAP];
    long n = serve_decode_param(name, raw, buf, cap, reason);
    if (n < 0) {
        reply_text(out, 400, "%s", reason);
        return -2;
    }
    return n;
}

/* Holds the raw query to the parameters an endpoint takes (names, NULL
 * ended): one it does not take, one given twice or one without '=' is a
 * 400 (already in out: returns -1), never ignored or first-wins. */
static int check_query(const serve_request *req, const char *endpoint, const char *const *names,
                       serve_reply *out) {
    size_t count = 0;
    while (names[count])
        count++;
    bool given[8] = {false}; /* an endpoint takes a few */
    for (const char *p = req->query; p && *p;) {
        size_t len = strcspn(p, "&");
        size_t nlen = strcspn(p, "=&");
        size_t i = 0;
        while (i < count && (strlen(names[i]) != nlen || strncmp(p, names[i], nlen)))
            i++;
        if (len && i == count) {
            char takes[128] = "";
            for (size_t j = 0; j < count; j++)
                snprintf(takes + strlen(takes), sizeof takes - strlen(takes), "%s%s", j ? ", " : "",
                         names[j]);
            reply_text(out, 400, "unknown parameter '%.*s' (%s takes %s)",
                       (int)(nlen < 64 ? nlen : 64), p, endpoint, takes);
            return -1;
        }
        if (len && given[i]) {
            reply_text(out, 400, "parameter '%s' given twice", names[i]);
            return -1;
        }
        if (len && nlen == len) {
            reply_text(out, 400, "parameter '%s' without a value (%s=...)", names[i], names[i]);
            return -1;
        }
        if (len)
            given[i] = true;
        p += len + (p[len] == '&');
    }
    return 0;
}

/* A flag's value (keys_only, raw): 1 or true, 0 or false; -1 anything else (a 400). */
static int parse_flag(const char *text) {
    if (!text || !strcmp(text, "0") || !strcmp(text, "false"))
        return 0;
    return !strcmp(text, "1") || !strcmp(text, "true") ? 1 : -1;
}

/* /v1/get?key=K[&raw=1]: K as people type a title (sstpipe_lookup), a
 * redirect followed and named in two headers; raw=1 the record itself. */
static void handle_get(const serve_handler *h, const serve_request *req, served_table *t,
                       serve_reply *out) {
    static const char *const names[] = {"key", "raw", NULL};
    if (check_query(req, "/v1/get", names, out))
        return;
    uint8_t key[SP_MAX_KEY_BYTES];
    long klen = param(req, "key", key, sizeof key, out);
    if (klen == -1)
        reply_text(out, 400, "missing parameter 'key'");
    if (klen < 0)
        return;
    const char *raw_text = req->param(req->param_ctx, "raw");
    int raw = raw_text ? parse_flag(raw_text) : 0;
    if (raw < 0) {
        reply_text(out, 400, "raw: '%.16s' is not 0 or 1", raw_text);
        return;
    }
    sstpipe_lookup_result *res = malloc(sizeof *res);
    if (!res) {
        reply_text(out, 500, "out of memory");
        return;
    }
    char *msg = NULL;
    int found =
        sstpipe_lookup(t->table, key, (size_t)klen, raw ? SSTPIPE_LOOKUP_RAW : 0, res, &msg);
    if (found < 0) {
        table_error(out, t, msg, "lookup failed");
        sstpipe_free(msg);
    } else if (found == 0) {
        out->missed = true;
        if (res->missing_target_len)
            reply_text(out, 404, "not found: %s redirects to %s, which is not in the table",
                       res->redirect_from, res->missing_target);
        else
            reply_text(out, 404, "key not found");
    } else {
        out->status = 200;
        out->content_type = TEXT;
        out->kind = h->copy_values || t->values_borrowed ? SERVE_BODY_COPY : SERVE_BODY_TABLE;
        out->body = res->value;
        out->len = res->vlen;
        if (res->redirect_from_len) {
            serve_percent_encode(res->redirect_from, res->redirect_from_len, out->redirect_from);
            serve_percent_encode(res->title, res->title_len, out->redirect_to);
        }
    }
    free(res);
}

/* /v1/suggest?q=TEXT[&limit=N]: sstpipe_suggest as JSON,
 * {"query": ..., "suggestions": [{"title": ..., "redirect": bool}, ...]}. */
static void handle_suggest(const serve_request *req, served_table *t, serve_reply *out) {
    static const char *const names[] = {"q", "limit", NULL};
    if (check_query(req, "/v1/suggest", names, out))
        return;
    uint8_t q[SSTPIPE_TITLE_MAX];
    long qlen = param(req, "q", q, sizeof q, out);
    if (qlen == -1 || qlen == 0)
        reply_text(out, 400, "missing or empty parameter 'q'");
    if (qlen <= 0)
        return;
    uint8_t lim[8];
    long llen = param(req, "limit", lim, sizeof lim - 1, out);
    if (llen == -2)
        return;
    size_t limit = 10;
    if (llen >= 0) {
        lim[llen] = '\0';
        char *end;
        unsigned long v = strtoul((const char *)lim, &end, 10);
        if (llen == 0 || *end) {
            reply_text(out, 400, "limit: '%s' is not a number", (const char *)lim);
            return;
        }
        limit = v; /* its range is sstpipe_suggest's to check */
    }
    sstpipe_suggestion *s =
        calloc(limit < SSTPIPE_SUGGEST_MAX ? limit : SSTPIPE_SUGGEST_MAX, sizeof *s);
    char *msg = NULL;
    int n = s ? sstpipe_suggest(t->table, q, (size_t)qlen, limit, s, &msg) : -1;
    /* Written straight into the body: its bound is the text's and the
     * titles' at their longest escaped, and the fixed parts'. */
    static const char head[] = "{\"query\":", list[] = ",\"suggestions\":[",
                      title[] = "{\"title\":", redirect[] = ",\"redirect\":";
    size_t cap = sizeof head + sizeof list + SERVE_JSON_STRING_MAX((size_t)qlen) + 2;
    for (int i = 0; i < n; i++)
        cap += sizeof title + sizeof redirect + SERVE_JSON_STRING_MAX(s[i].title_len) + 8;
    char *body = n >= 0 ? malloc(cap) : NULL;
    size_t len = 0;
    if (body) {
        memcpy(body, head, sizeof head - 1);
        len = sizeof head - 1;
        len += serve_json_string(body + len, q, (size_t)qlen);
        memcpy(body + len, list, sizeof list - 1);
        len += sizeof list - 1;
        for (int i = 0; i < n; i++) {
            if (i > 0)
                body[len++] = ',';
            memcpy(body + len, title, sizeof title - 1);
            len += sizeof title - 1;
            len += serve_json_string(body + len, s[i].title, s[i].title_len);
            memcpy(body + len, redirect, sizeof redirect - 1);
            len += sizeof redirect - 1;
            const char *end = s[i].redirect ? "true}" : "false}";
            memcpy(body + len, end, strlen(end));
            len += strlen(end);
        }
        memcpy(body + len, "]}", 2);
        len += 2;
    }
    free(s);
    if (n < 0 && msg) {
        /* No title index, or text it refuses: the request's fault. */
        char text[sizeof out->text];
        hide_dir(t, msg, text, sizeof text);
        reply_text(out, 400, "%s", text);
        sstpipe_free(msg);
    } else if (!body) {
        reply_text(out, 500, "out of memory");
    } else {
        reply_owned(out, JSON, body, len);
    }
}

static void handle_get_many(const serve_request *req, served_table *t, serve_reply *out) {
    char *body;
    size_t len;
    char reason[SERVE_REASON_CAP];
    const char *raw_text = req->param(req->param_ctx, "raw");
    int raw = parse_flag(raw_text);
    if (raw < 0) {
        reply_text(out, 400, "raw: '%.16s' is not 0 or 1", raw_text);
        return;
    }
    unsigned status = serve_get_many(t->table, raw == 1, req->body, req->body_len, req->body_over,
                                     &body, &len, &out->missed, reason);
    if (status == 200)
        reply_owned(out, JSON, body, len);
    else if (status == 500)
        table_error(out, t, reason, "lookup failed");
    else
        reply_text(out, status, "%s", reason);
}

static void handle_prefix(const serve_handler *h, const serve_request *req, served_table *t,
                          serve_reply *out) {
    static const char *const names[] = {"prefix", "limit", "from", "keys_only", NULL};
    if (check_query(req, "/v1/prefix", names, out))
        return;
    int keys_only = parse_flag(req->param(req->param_ctx, "keys_only"));
    if (keys_only < 0) {
        reply_text(out, 400, "keys_only: '%.32s' is not 1, 0, true or false",
                   req->param(req->param_ctx, "keys_only"));
        return;
    }
    uint8_t prefix[SP_MAX_KEY_BYTES], from[SP_MAX_KEY_BYTES];
    long plen = param(req, "prefix", prefix, sizeof prefix, out);
    if (plen == -1)
        reply_text(out, 400, "missing parameter 'prefix' (prefix= for every key)");
    if (plen < 0)
        return;
    long flen = param(req, "from", from, sizeof from, out);
    if (flen == -2)
        return;
    uint32_t limit =
        SERVE_DEFAULT_LIMIT < h->prefix_limit_max ? SERVE_DEFAULT_LIMIT : h->prefix_limit_max;
    const char *limit_text = req->param(req->param_ctx, "limit");
    char reason[SERVE_REASON_CAP];
    if (limit_text && serve_parse_limit(limit_text, h->prefix_limit_max, &limit, reason)) {
        reply_text(out, 400, "%s", reason);
        return;
    }
    sstpipe_iter *it = sstpipe_iter_new(t->table, flen >= 0 ? from : NULL,
                                        flen >= 0 ? (size_t)flen : 0, prefix, (size_t)plen);
    json_t *page = json_pack("{s:[]}", "records");
    json_t *arr = json_object_get(page, "records");
    if (!it || !arr) {
        sstpipe_iter_free(it);
        json_decref(page);
        reply_text(out, 503, "out of memory");
        return;
    }
    const void *k, *v;
    size_t kl, vl;
    char *msg = NULL;
    int rc = 0;
    uint32_t n = 0;
    for (; n < limit && (rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1; n++) {
        json_t *rec = keys_only ? json_pack("{s:s%}", "key", (const char *)k, kl)
                                : json_pack("{s:s%, s:s%}", "key", (const char *)k, kl, "value",
                                            (const char *)v, vl);
        if (!rec || json_array_append_new(arr, rec)) {
            reply_text(out, 500, "record %u of the answer is not valid UTF-8 or out of memory", n);
            rc = -2;
            break;
        }
    }
    /* A page cut at limit: the record after it says whether more follow,
     * and its key is where the next page starts (from= is inclusive). */
    if (rc == 1)
        rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg);
    if (rc >= 0 &&
        (json_object_set_new(page, "more", json_boolean(rc == 1)) ||
         (rc == 1 && json_object_set_new(page, "next", json_stringn((const char *)k, kl))))) {
        reply_text(out, 500, "the next key is not valid UTF-8 or out of memory");
        rc = -2;
    }
    sstpipe_iter_free(it);
    if (rc == -1) {
        table_error(out, t, msg, "scan failed");
        sstpipe_free(msg);
    } else if (rc >= 0) {
        char *body = json_dumps(page, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (body)
            reply_owned(out, JSON, body, strlen(body));
        else
            reply_text(out, 503, "out of memory");
    }
    json_decref(page);
}

/* The "path" of o, if it has one, as a client is shown it. */
static int show_path(const served_table *t, json_t *o) {
    const char *p = json_string_value(json_object_get(o, "path"));
    return p ? json_object_set_new(o, "path", json_string(client_path(t, p))) : 0;
}

/* What `sstpipe info --json` prints, but every path (the table's, a
 * set's shards') without the table's directory. */
static void handle_info(served_table *t, serve_reply *out) {
    json_t *o = info_json(t->table);
    int bad = !o || show_path(t, o);
    json_t *shard;
    size_t i;
    json_array_foreach(json_object_get(o, "shards"), i, shard) {
        bad = bad || show_path(t, shard);
    }
    char *body = bad ? NULL : json_dumps(o, JSON_PRESERVE_ORDER);
    json_decref(o);
    if (body)
        reply_owned(out, JSON, body, strlen(body));
    else
        reply_text(out, 500, "%s: cannot build the JSON", t->path + hidden_prefix(t));
}

static void handle_metrics(const serve_handler *h, served_table *t, serve_reply *out) {
    size_t len;
    char *body = serve_metrics_render(h->metrics, t, t->generation - 1, &len);
    if (body)
        reply_owned(out, "text/plain; version=0.0.4; charset=utf-8", body, len);
    else
        reply_text(out, 503, "out of memory");
}

static void handle_page(const serve_handler *h, const serve_request *req, serve_reply *out) {
    char *body;
    size_t len;
    const char *type;
    char reason[SERVE_REASON_CAP];
    unsigned status = serve_page_read(h->pages_dir, req->path, &body, &len, &type, reason);
    if (status != 200) {
        reply_text(out, status, "%s", reason);
        return;
    }
    reply_owned(out, type, body, len);
}

/* The search page at / (serve_search.h); a request refused is the page
 * saying why, as the 400 of check_query or param words it. */
static void handle_search(const serve_handler *h, const serve_request *req, served_table *t,
                          serve_reply *out) {
    static const char *const names[] = {"q", "title", NULL};
    serve_search_request s = {.kind = SERVE_SEARCH_REFUSED, .reports = h->pages_dir != NULL};
    bool has_title = req->param(req->param_ctx, "title") != NULL;
    uint8_t text[SSTPIPE_TITLE_MAX];
    long n = 0;
    if (!check_query(req, "/", names, out)) {
        if (has_title && req->param(req->param_ctx, "q"))
            reply_text(out, 400,
                       "give q (titles starting with it) or title (its record), "
                       "not both");
        else if ((n = param(req, has_title ? "title" : "q", text, sizeof text, out)) == -1)
            s.kind = SERVE_SEARCH_EMPTY;
        else if (n == 0)
            reply_text(out, 400, "%s is empty: type a title, or its start",
                       has_title ? "title" : "q");
        else if (n > 0)
            s.kind = has_title ? SERVE_SEARCH_TITLE : SERVE_SEARCH_QUERY;
    }
    if (s.kind == SERVE_SEARCH_REFUSED) {
        s.text = (const uint8_t *)out->text;
        s.len = strcspn(out->text, "\n");
    } else {
        s.text = text;
        s.len = n > 0 ? (size_t)n : 0;
    }
    char *body, *msg;
    size_t len;
    unsigned status = serve_search_page(t->table, &s, &body, &len, &msg);
    if (status == 500) {
        table_error(out, t, msg, "lookup failed");
        sstpipe_free(msg);
    } else if (!body) {
        reply_text(out, 503, "out of memory");
    } else {
        reply_owned(out, "text/html; charset=utf-8", body, len);
        out->status = status;
        out->missed = status == 404;
        out->csp = SERVE_SEARCH_CSP;
    }
}

void serve_handle(const serve_handler *h, const serve_request *req, served_table *t,
                  serve_reply *out) {
    memset(out, 0, sizeof *out);
    static const struct {
        const char *path;
        serve_endpoint ep;
    } routes[] = {
        {"/v1/get", SERVE_EP_GET},         {SERVE_GET_MANY_PATH, SERVE_EP_GET_MANY},
        {"/v1/prefix", SERVE_EP_PREFIX},   {"/v1/info", SERVE_EP_INFO},
        {"/healthz", SERVE_EP_HEALTHZ},    {"/metrics", SERVE_EP_METRICS},
        {"/v1/suggest", SERVE_EP_SUGGEST}, {SERVE_SEARCH_PATH, SERVE_EP_SEARCH},
    };
    out->endpoint = SERVE_EP_OTHER;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(req->path, routes[i].path))
            out->endpoint = routes[i].ep;
    if (h->pages_dir && serve_page_path(req->path))
        out->endpoint = SERVE_EP_PAGE;
    if (out->endpoint == SERVE_EP_OTHER) {
        reply_text(out, 404,
                   "no such endpoint: %.100s (see /, /v1/get, /v1/get_many, /v1/prefix, "
                   "/v1/suggest, /v1/info, /healthz, /metrics)",
                   req->path);
        return;
    }
    if (out->endpoint == SERVE_EP_GET_MANY) {
        if (strcmp(req->method, "POST")) {
            reply_text(out, 405, "method %.32s not allowed (POST)", req->method);
            out->allow = "POST";
        } else {
            handle_get_many(req, t, out);
        }
        return;
    }
    /* HEAD is GET without the body; the HTTP layer drops it. */
    if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
        reply_text(out, 405, "method %.32s not allowed (GET or HEAD)", req->method);
        out->allow = "GET, HEAD";
        return;
    }
    switch (out->endpoint) {
    case SERVE_EP_GET:
        handle_get(h, req, t, out);
        break;
    case SERVE_EP_PREFIX:
        handle_prefix(h, req, t, out);
        break;
    case SERVE_EP_SUGGEST:
        handle_suggest(req, t, out);
        break;
    case SERVE_EP_INFO:
        handle_info(t, out);
        break;
    case SERVE_EP_HEALTHZ:
        reply_text(out, 200, "ok");
        break;
    case SERVE_EP_PAGE:
        handle_page(h, req, out);
        break;
    case SERVE_EP_SEARCH:
        handle_search(h, req, t, out);
        break;
    default:
        handle_metrics(h, t, out);
        break;
    }
}

void serve_reply_destroy(serve_reply *r) {
    if (r->kind == SERVE_BODY_FREE)
        free((void *)r->body);
    r->kind = SERVE_BODY_COPY;
    r->body = NULL;
}
