/*
 * serve_listen.h: the listening socket, made here rather than by the HTTP
 * library so a bad address or a port in use is one clear error, and so the
 * port the kernel picked for port 0 can be printed for whoever started us.
 */
#ifndef SSTPIPE_SERVE_SERVE_LISTEN_H
#define SSTPIPE_SERVE_SERVE_LISTEN_H

#include "stages/common/error.h"

#include <stddef.h>

/* Checks "HOST:PORT" or "[IPv6]:PORT" (HOST a name or a numeric address,
 * PORT 0 to 65535) without resolving it. what names it in the error. */
int serve_listen_check(const char *text, const char *what, sp_error *err);

/* Resolves text, binds and listens (non-blocking, close-on-exec,
 * SO_REUSEADDR). *fd is the socket, bound ("127.0.0.1:40123") what it got. */
int serve_listen_open(const char *text, int backlog, int *fd, char *bound, size_t cap,
                      sp_error *err);

#endif
