/*
 * serve_json.c: JSON strings written straight into a buffer; see
 * serve_json.h.
 */
#include "stages/serve/serve_json.h"

#include <stdint.h>

size_t serve_json_string(char *out, const void *text, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    const uint8_t *s = text;
    char *o = out;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        char short_form = c == '"'    ? '"'
                          : c == '\\' ? '\\'
                          : c == '\b' ? 'b'
                          : c == '\f' ? 'f'
                          : c == '\n' ? 'n'
                          : c == '\r' ? 'r'
                          : c == '\t' ? 't'
                                      : 0;
        if (short_form) {
            *o++ = '\\';
            *o++ = short_form;
        } else if (c < 0x20) {
            *o++ = '\\';
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    return (size_t)(o - out);
}
