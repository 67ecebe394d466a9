/* xml_escape.c: escaping text for XML output; see xml_escape.h. */
#include "stages/common/xml_escape.h"

#include <stdbool.h>
#include <string.h>

static void escape(FILE *o, const unsigned char *s, size_t n, bool lines) {
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '<':
            fputs("&lt;", o);
            break;
        case '>':
            fputs("&gt;", o);
            break;
        case '&':
            fputs("&amp;", o);
            break;
        case '"':
            fputs("&quot;", o);
            break;
        case '\t':
        case '\n':
        case '\r':
            fputc(lines ? s[i] : '?', o);
            break;
        default:
            fputc(s[i] < 0x20 ? '?' : s[i], o);
        }
    }
}

void sp_xml_escape(FILE *o, const char *s) {
    escape(o, (const unsigned char *)s, strlen(s), false);
}

void sp_xml_escape_text(FILE *o, const void *s, size_t n) {
    escape(o, s, n, true);
}
