/*
 * serve_params.c: strict percent-decoding and limit parsing for the
 * server's query parameters; see serve_params.h.
 *
 * The HTTP library would decode too, but leniently (a stray '%' passes
 * through as text), so the server asks it for the raw text and decodes
 * here: a malformed request is answered 400 with where it went wrong.
 */
#include "stages/serve/serve_params.h"

#include "stages/common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long serve_decode_param(const char *name, const char *in, uint8_t *out, size_t cap,
                        char reason[SERVE_REASON_CAP]) {
    size_t n = 0;
    for (size_t i = 0; in[i]; i++) {
        int byte = (unsigned char)in[i];
        if (in[i] == '%') {
            int hi = hex_value(in[i + 1]);
            int lo = hi < 0 ? -1 : hex_value(in[i + 2]);
            if (lo < 0) {
                snprintf(reason, SERVE_REASON_CAP,
                         "%s: bad percent-encoding at byte %zu (%% must be followed by two "
                         "hex digits)",
                         name, i);
                return -1;
            }
            byte = hi << 4 | lo;
            i += 2;
        }
        if (n == cap) {
            snprintf(reason, SERVE_REASON_CAP, "%s: longer than %zu bytes", name, cap);
            return -1;
        }
        out[n++] = (uint8_t)byte;
    }
    size_t bad;
    if (!sp_utf8_valid(out, n, &bad)) {
        snprintf(reason, SERVE_REASON_CAP, "%s: not valid UTF-8 (decoded byte %zu)", name, bad);
        return -1;
    }
    return (long)n;
}

int serve_parse_limit(const char *text, uint32_t max, uint32_t *out,
                      char reason[SERVE_REASON_CAP]) {
    /* Digits only: strtoul alone would take " 5", "+5" and "-5". */
    size_t len = strspn(text, "0123456789");
    errno = 0;
    unsigned long long v = len && !text[len] ? strtoull(text, NULL, 10) : 0;
    if (!len || text[len] || errno || v == 0) {
        snprintf(reason, SERVE_REASON_CAP, "limit: '%.32s' is not a whole number from 1 up", text);
        return -1;
    }
    *out = v > max ? max : (uint32_t)v;
    return 0;
}

void serve_percent_encode(const void *text, size_t n, char *out) {
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *t = text;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = t[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            (c && strchr("-._~", c))) {
            *out++ = (char)c;
        } else {
            *out++ = '%';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 15];
        }
    }
    *out = '\0';
}
