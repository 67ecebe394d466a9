/*
 * serve_http.c: the request handling of `sstpipe serve` on libmicrohttpd;
 * see serve_http.h.
 *
 * The library is told not to decode anything (an identity unescape
 * callback), so serve_request.c sees the raw parameters and can refuse bad
 * percent-encoding instead of passing it through. Each request gets a small
 * record when its request line is read (on_uri), filled on its first
 * callback (start time, the table reference), which the completion
 * callback turns into metrics and frees. A request over max_request_bytes
 * is refused on its first callback, in one plain line (414 or 431). A GET
 * or HEAD is answered on the callback after the whole request is in (answering
 * earlier would make the library close the connection, losing
 * keep-alive); other methods get their 405 at once, unread bodies and all
 * (the library then closes that connection), except a POST to
 * /v1/get_many (serve_get_many.h), whose body is gathered, up to its bound,
 * and answered once it is all in: a Content-Length over the bound gets its
 * 413 at once, a longer chunked body once it has been read.
 */
#include "stages/serve/serve_http.h"

#include "stages/common/clock.h"
#include "stages/common/dynlib.h"
#include "stages/serve/serve_get_many.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* libmicrohttpd, loaded when a server starts (stages/common/dynlib.h): it
 * brings GnuTLS, which no other command should pay for loading. */
/* clang-format off: one function a line */
#define LIBMICROHTTPD_FUNCTIONS(X, t)                                                              \
    X(t, MHD_start_daemon)                                                                         \
    X(t, MHD_quiesce_daemon)                                                                       \
    X(t, MHD_stop_daemon)                                                                          \
    X(t, MHD_lookup_connection_value)                                                              \
    X(t, MHD_get_connection_info)                                                                  \
    X(t, MHD_create_response_from_buffer)                                                          \
    X(t, MHD_add_response_header)                                                                  \
    X(t, MHD_queue_response)                                                                       \
    X(t, MHD_destroy_response)
/* clang-format on */
SP_DYNLIB_TABLE(mhd, libmicrohttpd, SP_SONAME_LIBMICROHTTPD, LIBMICROHTTPD_FUNCTIONS);

/* The library answers a request that overflows its memory for the
 * connection with an HTML page of its own, no Content-Type: that memory is
 * made this many times max_request_bytes, so a request over the limit is
 * still read whole and refused here, in one plain line like every other
 * error. Only one over this many times the limit meets the library's page.
 * Each open connection, idle keep-alive ones too, holds that memory
 * resident, so the factor is kept small. */
#define SERVE_HTTP_POOL_FACTOR 2

struct serve_http {
    struct MHD_Daemon *daemon;
    size_t max_request_bytes;
    int access_log_fd;
    void (*on_error)(void *ctx, const char *msg);
    void *ctx;
    serve_holder *holder;
    serve_handler handler;
    atomic_bool draining;
    atomic_bool starting;
    char start_error[256]; /* what the library logged while starting */
};

typedef struct http_request {
    char *uri;      /* the request target as sent, query included */
    char *line;     /* the request line, for the access log (when there is one) */
    time_t arrived; /* when its request line was read */
    size_t bytes;   /* of the body sent */
    served_table *table;
    uint64_t start_ns;
    serve_endpoint endpoint;
    unsigned status;
    bool missed;
    bool wants_body; /* serve_get_many_wants_body */
    bool body_over;
    uint8_t *body; /* as gathered, malloc'd */
    size_t body_len;
} http_request;

static size_t unescape_none(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls;
    (void)c;
    return strlen(s);
}

/* Running, the library's messages (a client that sent garbage, a reset)
 * are about clients and are not ours to print; while starting, the last
 * one says why the start failed. */
static void on_log(void *cls, const char *fmt, va_list ap) {
    serve_http *s = cls;
    if (atomic_load(&s->starting))
        vsnprintf(s->start_error, sizeof s->start_error, fmt, ap);
}

/* The first the library tells of a request (its request line is read):
 * the record that *req_cls holds from then on. NULL (out of memory) makes
 * on_request close the connection. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)cls;
    (void)c;
    http_request *r = calloc(1, sizeof *r);
    if (r && !(r->uri = strdup(uri))) {
        free(r);
        return NULL;
    }
    if (r)
        r->arrived = time(NULL);
    return r;
}

static void request_free(http_request *r) {
    free(r->uri);
    free(r->line);
    free(r->body);
    free(r);
}

/* The request line as the access log quotes it: bytes outside printable
 * ASCII, '"' and '\\' as \xHH, so a line is one line whatever was sent. */
static char *log_request_line(const char *method, const char *uri, const char *version) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    const char *parts[] = {method, " ", uri, " ", version};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
                fprintf(f, "\\x%02X", *p);
            else
                fputc(*p, f);
    if (fclose(f)) {
        free(out);
        return NULL;
    }
    return out;
}

/* One line of the common log format: host ident user [time] "request"
 * status bytes, written whole with one append. */
static void access_log(serve_http *s, struct MHD_Connection *c, const http_request *r) {
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    char host[INET6_ADDRSTRLEN] = "-";
    const union MHD_ConnectionInfo *info =
        mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
    struct tm tm;
    gmtime_r(&r->arrived, &tm);
    char bytes[32] = "-";
    if (r->bytes)
        snprintf(bytes, sizeof bytes, "%zu", r->bytes);
    char *line = NULL;
    int n = asprintf(&line, "%s - - [%02d/%s/%04d:%02d:%02d:%02d +0000] \"%s\" %u %s\n", host,
                     tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, r->line ? r->line : "-", r->status, bytes);
    if (n < 0) {
        s->on_error(s->ctx, "access log: out of memory");
        return;
    }
    ssize_t w = write(s->access_log_fd, line, (size_t)n);
    if (w != n) {
        char msg[128];
        snprintf(msg, sizeof msg, "access log: cannot append: %s",
                 w < 0 ? strerror(errno) : "short write");
        s->on_error(s->ctx, msg);
    }
    free(line);
}

/* A request whose line and headers exceed max_request_bytes: 414 when the
 * request line alone does, else 431; 0 when it fits. */
static unsigned too_large(const serve_http *s, struct MHD_Connection *c, const http_request *r,
                          const char *method, const char *version) {
    const union MHD_ConnectionInfo *info =
        mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    size_t line = strlen(method) + 1 + strlen(r->uri) + 1 + strlen(version) + 2;
    if (line > s->max_request_bytes)
        return 414;
    return info && info->header_size > s->max_request_bytes ? 431 : 0;
}

static const char *param(void *ctx, const char *name) {
    return mhd.MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

static struct MHD_Response *make_response(serve_reply *rep) {
    switch (rep->kind) {
    case SERVE_BODY_TABLE:
        /* The request holds the table until it completes. */
        return mhd.MHD_create_response_from_buffer(rep->len, (void *)rep->body,
                                                   MHD_RESPMEM_PERSISTENT);
    case SERVE_BODY_FREE: {
        struct MHD_Response *r =
            mhd.MHD_create_response_from_buffer(rep->len, (void *)rep->body, MHD_RESPMEM_MUST_FREE);
        if (r)
            rep->kind = SERVE_BODY_COPY; /* handed over */
        return r;
    }
    default:
        return mhd.MHD_create_response_from_buffer(rep->len, (void *)rep->body,
                                                   MHD_RESPMEM_MUST_COPY);
    }
}

/* Adds a piece of the body; once it passed its bound, nothing more is
 * kept. */
static void gather_body(http_request *r, const char *data, size_t n) {
    if (r->body_over || n > SERVE_GET_MANY_MAX_BODY - r->body_len) {
        r->body_over = true;
        return;
    }
    uint8_t *b = realloc(r->body, r->body_len + n);
    if (!b) {
        r->body_over = true; /* answered as too large: nothing better to say */
        return;
    }
    memcpy(b + r->body_len, data, n);
    r->body = b;
    r->body_len += n;
}

/* Whether the request's Content-Length says its body is over the bound:
 * then it is answered before any of it is read. */
static bool body_announced_over(struct MHD_Connection *c) {
    const char *cl =
        mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return cl && strtoull(cl, NULL, 10) > SERVE_GET_MANY_MAX_BODY;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    serve_http *s = cls;
    http_request *r = *req_cls;
    if (!r)
        return MHD_NO; /* out of memory in on_uri: the library closes the connection */
    unsigned refuse = 0;
    if (!r->table) {
        r->start_ns = sp_clock_ns();
        r->table = serve_holder_acquire(s->holder);
        atomic_fetch_add_explicit(&s->handler.metrics->in_flight, 1, memory_order_relaxed);
        if (s->access_log_fd >= 0)
            r->line = log_request_line(method, r->uri, version);
        refuse = too_large(s, c, r, method, version);
        /* A GET is answered once the library has the whole request
         * (the next call), which keeps the connection alive; answering
         * now would make it close the connection. */
        r->wants_body = !refuse && serve_get_many_wants_body(method, url);
        if (r->wants_body && body_announced_over(c))
            r->body_over = true; /* its 413 now, unread */
        else if (!refuse && (!strcmp(method, "GET") || !strcmp(method, "HEAD") || r->wants_body))
            return MHD_YES;
        /* Anything else gets its 405 now, without reading the body. */
    } else if (*upload_data_size) {
        /* The body of a GET is not used, nor one past its bound (its 413
         * comes once it is all in: the library answers no sooner). */
        if (r->wants_body)
            gather_body(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    serve_reply rep;
    if (refuse) {
        serve_reply_text(&rep, refuse,
                         "request %s longer than %zu bytes ([serve] max_request_bytes)",
                         refuse == 414 ? "line" : "line and headers", s->max_request_bytes);
    } else {
        const char *q = strchr(r->uri, '?');
        serve_request rq = {.method = method,
                            .path = url,
                            .param = param,
                            .param_ctx = c,
                            .query = q ? q + 1 : NULL,
                            .body = r->body,
                            .body_len = r->body_len,
                            .body_over = r->body_over};
        serve_handle(&s->handler, &rq, r->table, &rep);
    }
    r->endpoint = rep.endpoint;
    r->status = rep.status;
    r->missed = rep.missed;
    r->bytes = strcmp(method, "HEAD") ? rep.len : 0;
    if (rep.error[0])
        s->on_error(s->ctx, rep.error);
    struct MHD_Response *resp = make_response(&rep);
    serve_reply_destroy(&rep);
    if (!resp)
        return MHD_NO;
    enum MHD_Result ok =
        mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep.content_type);
    if (ok == MHD_YES && rep.allow)
        ok = mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rep.allow);
    if (ok == MHD_YES && rep.csp)
        ok = mhd.MHD_add_response_header(resp, "Content-Security-Policy", rep.csp);
    if (ok == MHD_YES && rep.redirect_from[0])
        ok = mhd.MHD_add_response_header(resp, "X-Sstpipe-Redirect-From", rep.redirect_from);
    if (ok == MHD_YES && rep.redirect_to[0])
        ok = mhd.MHD_add_response_header(resp, "X-Sstpipe-Redirect-To", rep.redirect_to);
    if (ok == MHD_YES && atomic_load_explicit(&s->draining, memory_order_relaxed))
        ok = mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (ok == MHD_YES)
        ok = mhd.MHD_queue_response(c, rep.status, resp);
    mhd.MHD_destroy_response(resp);
    return ok;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    serve_http *s = cls;
    (void)toe;
    http_request *r = *req_cls;
    *req_cls = NULL;
    if (!r)
        return;
    if (!r->table) {
        /* Ended before its headers were in (a timeout, a hang-up, the
         * library's own refusal): never answered by us, not counted. */
        request_free(r);
        return;
    }
    if (s->access_log_fd >= 0)
        access_log(s, c, r);
    serve_metrics *m = s->handler.metrics;
    serve_metrics_record(m, r->endpoint, r->status, sp_clock_ns() - r->start_ns, r->missed);
    served_table_release(r->table);
    request_free(r);
    atomic_fetch_sub_explicit(&m->in_flight, 1, memory_order_release);
}

serve_http *serve_http_start(const serve_http_options *o, serve_holder *holder,
                             const serve_handler *handler, sp_error *err) {
    sp_error why = {0};
    if (sp_dynlib_load(&libmicrohttpd, &why)) {
        close(o->listen_fd);
        sp_errorf(err, "serve: %s", why.msg);
        return NULL;
    }
    serve_http *s = calloc(1, sizeof *s);
    if (!s) {
        close(o->listen_fd);
        sp_errorf(err, "serve: out of memory");
        return NULL;
    }
    s->holder = holder;
    s->handler = *handler;
    s->max_request_bytes = o->max_request_bytes;
    s->access_log_fd = o->access_log_fd;
    s->on_error = o->on_error;
    s->ctx = o->ctx;
    atomic_init(&s->draining, false);
    atomic_init(&s->starting, true);
    /* ITC: MHD_quiesce_daemon needs it to wake the workers. poll, not
     * epoll: the library's edge-triggered epoll loop (0.9.75) can miss the
     * end of a client that half-closed its side right after its request
     * (shutdown(SHUT_WR), `nc -N`), which then waits for the idle timeout
     * after its answer; poll sees that end every time, and the library
     * answers what was read and closes. The price: each wakeup of a
     * worker looks at every connection it holds, not just the ready ones. */
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    s->daemon = mhd.MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, o->listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)o->threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)o->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->max_request_bytes * SERVE_HTTP_POOL_FACTOR,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, s, MHD_OPTION_EXTERNAL_LOGGER, on_log, s,
        MHD_OPTION_END);
    atomic_store(&s->starting, false);
    if (!s->daemon) {
        close(o->listen_fd);
        sp_errorf(err, "serve: cannot start the HTTP server (libmicrohttpd): %s",
                  s->start_error[0] ? s->start_error : "no reason given");
        free(s);
        return NULL;
    }
    return s;
}

long serve_http_drain(serve_http *s, unsigned timeout_s) {
    atomic_store(&s->draining, true);
    MHD_socket fd = mhd.MHD_quiesce_daemon(s->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    /* A short sleep between looks: the workers finish on their own and
     * nothing signals "the last one is done" more cheaply. */
    atomic_int_fast64_t *in_flight = &s->handler.metrics->in_flight;
    uint64_t deadline = sp_clock_ns() + (uint64_t)timeout_s * 1000000000u;
    while (atomic_load(in_flight) > 0 && sp_clock_ns() < deadline)
        nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
    long left = (long)atomic_load(in_flight);
    mhd.MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
    return left;
}

void serve_http_destroy(serve_http *s) {
    if (!s)
        return;
    if (s->daemon)
        mhd.MHD_stop_daemon(s->daemon);
    free(s);
}
