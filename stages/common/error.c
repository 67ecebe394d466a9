/* error.c: formatting of sp_error; see error.h. Thread-safe (strerror_r,
 * not strerror's static buffer): the library's lookups fail in many
 * threads at once.
 *
 * A message is one line whatever text it quotes: a parser's own message
 * (jansson quotes the token it stopped at, which may hold a raw line break),
 * a file name or a key may hold control characters, so every control byte
 * is written as \n, \t, \r or \xNN once the message is formatted. */
#include "stages/common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Rewrites err->msg with its control bytes escaped, cut at the buffer's
 * end without splitting an escape. */
static void one_line(sp_error *err) {
    char raw[sizeof err->msg];
    size_t i = 0;
    while (err->msg[i] && (unsigned char)err->msg[i] >= 0x20 && err->msg[i] != 0x7f)
        i++;
    if (!err->msg[i])
        return; /* the common case: nothing to escape, nothing copied */
    memcpy(raw, err->msg, sizeof raw);
    size_t o = i;
    for (; raw[i]; i++) {
        unsigned char c = (unsigned char)raw[i];
        char esc[5];
        if (c >= 0x20 && c != 0x7f)
            esc[0] = (char)c, esc[1] = '\0';
        else if (c == '\n' || c == '\t' || c == '\r')
            esc[0] = '\\', esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r', esc[2] = '\0';
        else
            snprintf(esc, sizeof esc, "\\x%02x", c);
        size_t n = strlen(esc);
        if (o + n >= sizeof err->msg)
            break;
        memcpy(err->msg + o, esc, n);
        o += n;
    }
    err->msg[o] = '\0';
}

void sp_error_set(sp_error *err, const char *fmt, ...) {
    if (err && !err->set) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        one_line(err);
        err->set = true;
    }
}

void sp_error_set_errno(sp_error *err, const char *fmt, ...) {
    int saved = errno;
    if (err && !err->set) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof(err->msg)) {
            char buf[256];
            /* The GNU strerror_r (_GNU_SOURCE): returns the message, which
             * need not be in buf. */
            const char *s = strerror_r(saved, buf, sizeof buf);
            snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", s);
        }
        one_line(err);
        err->set = true;
    }
    errno = saved;
}
