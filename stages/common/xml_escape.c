/* xml_escape.c: escaping text for XML output; see xml_escape.h. */
#include "stages/common/xml_escape.h"

void sp_xml_escape(FILE *o, const char *s) {
    for (; *s; s++) {
        switch (*s) {
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
        default:
            fputc((unsigned char)*s < 0x20 ? '?' : *s, o);
        }
    }
}
