/*
 * serve_request.h: one HTTP request to its response, without the network:
 * routing, parameter checks and the lookups. The HTTP layer (serve_http.c)
 * fills a serve_request and sends the serve_reply; the fuzz target calls
 * serve_handle directly.
 *
 *   GET /v1/get?key=K                         200 the value (text/plain), 404 absent
 *   GET /v1/prefix?prefix=P[&limit=N][&from=K][&keys_only=1]
 *                                             200 {"records": [{"key":..,"value":..},...]
 *                                             in key order, "more": bool, "next": the
 *                                             key to pass as from for the next page}
 *   POST /v1/get_many, body ["K1","K2",...]   200 [{"key":..,"value":.. or null},...] in
 *                                             the keys' order (serve_get_many.h)
 *   GET /v1/info                              200 what `sstpipe info --json` prints
 *   GET /healthz                              200 "ok"
 *   GET /metrics                              200 Prometheus text
 *   GET /, /?q=TEXT, /?title=T                the search page (serve_search.h)
 *   GET /index.html, /builds/<name>/report.html, ...
 *                                             the nightly's HTML pages, when
 *                                             serving a nightly directory
 *                                             (serve_pages.h)
 *
 * Anything else is a 4xx whose body is one line saying why: an unknown path
 * 404, a method other than GET or HEAD (POST for /v1/get_many) 405, a
 * missing, badly encoded or oversized parameter, a bad limit, a bad
 * get_many body, or (for /v1/get and /v1/prefix) a parameter the endpoint
 * does not take or one given twice 400, a get_many body over its bound 413. A table
 * error (a corrupt block) is a 500 naming the block. What a client is
 * shown of a path (/v1/info, a table error) leaves out the directory of
 * the served table: the server's layout is no client's business.
 */
#ifndef SSTPIPE_SERVE_SERVE_REQUEST_H
#define SSTPIPE_SERVE_SERVE_REQUEST_H

#include "stages/serve/serve_holder.h"
#include "stages/serve/serve_metrics.h"
#include "stages/serve/serve_params.h"

#include "stages/sst/sstpipe.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVE_DEFAULT_LIMIT 10

typedef struct serve_request {
    const char *method;
    const char *path; /* without the query, not decoded */
    /* The raw (still percent-encoded) value of query parameter name, NULL
     * when the request has none. */
    const char *(*param)(void *ctx, const char *name);
    void *param_ctx;
    /* The body, read by the HTTP layer when serve_get_many_wants_body says
     * so (else NULL and 0); body_over: it was longer than the bound and
     * was not kept. */
    const uint8_t *body;
    size_t body_len;
    bool body_over;
    const char *query; /* the raw query (after '?'), NULL when none: whose names are checked */
} serve_request;

typedef enum serve_body {
    SERVE_BODY_COPY,  /* body is only valid now (reply text, a direct-I/O buffer): copy it */
    SERVE_BODY_FREE,  /* body is malloc'd and handed over: free() it when sent */
    SERVE_BODY_TABLE, /* body points into the mapped table: valid while the table is held */
} serve_body;

typedef struct serve_reply {
    unsigned status;
    serve_endpoint endpoint;
    bool missed; /* a lookup of an absent key */
    const char *content_type;
    const char *allow; /* the Allow header of a 405, else NULL */
    const char *csp;   /* the Content-Security-Policy header of a page, else NULL */
    serve_body kind;
    const void *body;
    size_t len;
    char text[SERVE_REASON_CAP + 64];  /* short bodies: reasons, "ok" */
    char error[SERVE_REASON_CAP + 64]; /* a table error (the 500) in full, for the log; or "" */
    /* A /v1/get that followed a redirect: the title that redirected and
     * the one whose record it is, percent-encoded (the X-Sstpipe-Redirect-
     * From and -To headers); else "". */
    char redirect_from[3 * SSTPIPE_TITLE_MAX + 1];
    char redirect_to[3 * SSTPIPE_TITLE_MAX + 1];
} serve_reply;

typedef struct serve_handler {
    serve_metrics *metrics;
    uint32_t prefix_limit_max;
    bool copy_values;      /* values live in a per-thread buffer (direct I/O) */
    const char *pages_dir; /* the nightly directory whose pages are served, or NULL */
} serve_handler;

/* Fills out for req, answered from t. Never fails: every problem is a
 * status and a reason. */
void serve_handle(const serve_handler *h, const serve_request *req, served_table *t,
                  serve_reply *out);

/* Fills out with the one-line plain text reply every error is, for a
 * request the HTTP layer refuses before routing (one too large). */
void serve_reply_text(serve_reply *out, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Frees a SERVE_BODY_FREE body that was not handed to the HTTP layer. */
void serve_reply_destroy(serve_reply *r);

#endif
