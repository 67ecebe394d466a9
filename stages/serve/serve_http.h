/*
 * serve_http.h: the HTTP/1.1 side of `sstpipe serve`, on libmicrohttpd:
 * a pool of worker threads each running its own poll loop over its
 * connections, so a slow or stalled client holds a connection slot (until
 * the idle timeout cuts it off), never a thread. Requests go to
 * serve_handle (serve_request.h), each holding a reference to the table it
 * started on until its response has been sent. Errors are not printed
 * here: a table error a request met, or an access log that cannot be
 * written, is handed to the command's on_error.
 */
#ifndef SSTPIPE_SERVE_SERVE_HTTP_H
#define SSTPIPE_SERVE_SERVE_HTTP_H

#include "stages/common/error.h"
#include "stages/serve/serve_holder.h"
#include "stages/serve/serve_request.h"

#include <stddef.h>

typedef struct serve_http_options {
    int listen_fd;            /* a listening socket (serve_listen_open); handed over */
    unsigned threads;         /* worker threads, at least 1 */
    unsigned max_connections; /* beyond this, new ones wait in the listen queue */
    unsigned timeout_s;       /* a connection idle this long is closed */
    size_t max_request_bytes; /* request line and headers: beyond, a 414 or 431 */
    int access_log_fd;        /* one line a request appended, common log format; -1: none */
    /* Called from the worker threads with each table error a request met
     * (the library's whole message) and each failed write of the access
     * log; the command logs them. */
    void (*on_error)(void *ctx, const char *msg);
    void *ctx;
} serve_http_options;

typedef struct serve_http serve_http;

/* Starts serving at once. NULL on error (the socket is then closed). */
serve_http *serve_http_start(const serve_http_options *o, serve_holder *holder,
                             const serve_handler *handler, sp_error *err);

/* Stops accepting connections, lets the requests being answered finish
 * (each response from now on says Connection: close), for at most
 * timeout_s, then closes every connection and stops the workers. Returns
 * the requests still unfinished when time ran out (0 normally). */
long serve_http_drain(serve_http *s, unsigned timeout_s);

/* Frees s (after serve_http_drain, or stops it abruptly). */
void serve_http_destroy(serve_http *s);

#endif
