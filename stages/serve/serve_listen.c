/* serve_listen.c: the server's listening socket; see serve_listen.h. */
#include "stages/serve/serve_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* host and port out of text; host is "" for ":8080" (every address). */
static int split(const char *text, const char *what, char *host, size_t cap, char *port,
                 sp_error *err) {
    const char *colon;
    const char *h = text;
    size_t hlen;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return sp_errorf(err, "%s: '%s' must be [IPv6]:PORT", what, text);
        h = text + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || memchr(text, ':', (size_t)(colon - text)))
            return sp_errorf(err, "%s: '%s' must be HOST:PORT (an IPv6 address in brackets)", what,
                             text);
        hlen = (size_t)(colon - text);
    }
    const char *p = colon + 1;
    size_t plen = strspn(p, "0123456789");
    if (!plen || p[plen] || plen > 5 || atoi(p) > 65535)
        return sp_errorf(err, "%s: '%s': the port must be a number from 0 to 65535", what, text);
    if (hlen >= cap)
        return sp_errorf(err, "%s: '%s': host name too long", what, text);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memcpy(port, p, plen + 1);
    return 0;
}

int serve_listen_check(const char *text, const char *what, sp_error *err) {
    char host[256], port[8];
    return split(text, what, host, sizeof host, port, err);
}

int serve_listen_open(const char *text, int backlog, int *fd, char *bound, size_t cap,
                      sp_error *err) {
    char host[256], port[8];
    if (split(text, "listen", host, sizeof host, port, err))
        return -1;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (gai)
        return sp_errorf(err, "listen %s: %s", text, gai_strerror(gai));
    int s = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    int rc = 0;
    if (s < 0)
        rc = sp_errorf_errno(err, "listen %s: socket", text);
    else if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
             bind(s, res->ai_addr, res->ai_addrlen) || listen(s, backlog))
        rc = sp_errorf_errno(err, "listen %s: cannot listen", text);
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char addr[INET6_ADDRSTRLEN];
    if (!rc && getsockname(s, (struct sockaddr *)&ss, &sl))
        rc = sp_errorf_errno(err, "listen %s: getsockname", text);
    if (rc) {
        if (s >= 0)
            close(s);
        return -1;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof addr);
        snprintf(bound, cap, "[%s]:%u", addr, ntohs(a->sin6_port));
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
        snprintf(bound, cap, "%s:%u", addr, ntohs(a->sin_port));
    }
    *fd = s;
    return 0;
}
