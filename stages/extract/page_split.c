/*
 * page_split.c: the scanner for cut points between a dump's pages; see
 * page_split.h.
 *
 * Most of a dump is text, where '<' never occurs (it is escaped), so the
 * scanner jumps from '<' to '<' with memchr and follows markup byte by byte
 * only inside tags, which are short. The encoding is decided as
 * text_skip.c decides it (a document starting "<?xml " names its encoding,
 * one starting with another '<' is UTF-8): only an ASCII-compatible
 * encoding lets '<', '>' and quotes be found by their bytes.
 */
#include "stages/extract/page_split.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum scan_mode {
    S_START,   /* before the first byte, or after a UTF-8 byte order mark */
    S_OUT,     /* outside markup */
    S_LT,      /* after '<' */
    S_TAG,     /* in a start tag (quote: in an attribute value) */
    S_END_TAG, /* in "</...>" */
    S_BANG,    /* after "<!": matching "--" or "[CDATA[" */
    S_COMMENT, /* in a comment: run counts trailing '-' */
    S_CDATA,   /* in a CDATA section: run counts trailing ']' */
    S_PI,      /* in a processing instruction: run is 1 after '?' */
    S_OFF,     /* unsure: no more cut points */
} scan_mode;

struct page_split {
    scan_mode mode;
    uint64_t pos;  /* document offset of the next byte */
    uint64_t lt;   /* offset of the last '<' */
    uint64_t last; /* the latest cut point, 0: none */
    long depth;
    int bom; /* bytes of byte order mark matched */
    const char *opener;
    size_t matched;
    int run;
    uint8_t quote, prev;
    bool root_seen;  /* the root start tag has begun */
    bool capturing;  /* copying the declaration or the root tag into head */
    bool decl_done;  /* the XML declaration (if any) is over */
    bool head_ready; /* the root start tag is in head */
    uint8_t head[PAGE_SPLIT_HEAD_MAX];
    size_t head_len;
};

page_split *page_split_init(sp_error *err) {
    page_split *s = calloc(1, sizeof *s);
    if (!s)
        sp_errorf(err, "page splitter: out of memory");
    return s;
}

void page_split_destroy(page_split *s) {
    free(s);
}

uint64_t page_split_last(const page_split *s) {
    return s->last;
}

const uint8_t *page_split_head(const page_split *s, size_t *len) {
    *len = s->head_len;
    return s->head_ready ? s->head : NULL;
}

static void capture(page_split *s, uint8_t c) {
    if (!s->capturing)
        return;
    if (s->head_len == sizeof s->head) {
        s->mode = S_OFF;
        return;
    }
    s->head[s->head_len++] = c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
}

static bool is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The XML declaration now in head: keep it if its encoding is UTF-8 (or
 * none is named), else give up. */
static void decl_end(page_split *s) {
    const char *d = (const char *)s->head, *end = d + s->head_len;
    s->capturing = false;
    s->decl_done = true;
    if (s->head_len < 6 || memcmp(d, "<?xml", 5) || !is_space((uint8_t)d[5])) {
        s->head_len = 0; /* another processing instruction, not part of the head */
        return;
    }
    const char *p = memmem(d, s->head_len, "encoding", 8);
    if (!p)
        return;
    for (p += 8; p < end && is_space((uint8_t)*p); p++)
        ;
    if (p < end && *p == '=')
        for (p++; p < end && is_space((uint8_t)*p); p++)
            ;
    const char *close =
        p < end && (*p == '"' || *p == '\'') ? memchr(p + 1, *p, (size_t)(end - p - 1)) : NULL;
    size_t n = close ? (size_t)(close - p - 1) : 0;
    if (!close || !((n == 5 && !strncasecmp(p + 1, "UTF-8", 5)) ||
                    (n == 4 && !strncasecmp(p + 1, "UTF8", 4)) ||
                    (n == 8 && !strncasecmp(p + 1, "US-ASCII", 8))))
        s->mode = S_OFF;
}

/* The '>' ending a start tag. */
static void start_tag_end(page_split *s) {
    bool empty = s->prev == '/';
    if (!empty)
        s->depth++;
    s->mode = S_OUT;
    if (s->capturing) {
        s->capturing = false;
        /* <mediawiki/> has no pages to cut between. */
        s->head_ready = !empty;
        if (empty)
            s->mode = S_OFF;
    }
}

static void lt_byte(page_split *s, uint8_t c) {
    if (c == '/') {
        s->mode = S_END_TAG;
    } else if (c == '!') {
        s->mode = S_BANG;
        s->opener = NULL;
        s->matched = 0;
    } else if (c == '?') {
        s->mode = S_PI;
        s->run = 0;
        /* Only a declaration at the very start is part of the head. */
        s->capturing = !s->decl_done && !s->root_seen && s->lt == (uint64_t)s->bom;
        capture(s, '<');
        capture(s, c);
    } else {
        if (s->depth == 1 && s->head_ready && s->lt > 0)
            s->last = s->lt;
        if (s->depth == 0 && !s->root_seen) {
            s->root_seen = true;
            s->decl_done = true;
            s->capturing = true;
            capture(s, '<');
            capture(s, c);
        } else if (s->depth == 0) {
            s->mode = S_OFF; /* a second root: the parser refuses it */
            return;
        }
        s->mode = S_TAG;
        s->quote = 0;
        s->prev = c;
    }
}

static void markup_byte(page_split *s, uint8_t c) {
    switch (s->mode) {
    case S_LT:
        lt_byte(s, c);
        break;
    case S_TAG:
        capture(s, c);
        if (s->quote) {
            if (c == s->quote)
                s->quote = 0;
        } else if (c == '"' || c == '\'') {
            s->quote = c;
        } else if (c == '>') {
            start_tag_end(s);
            return;
        } else if (c == '<') {
            s->mode = S_OFF;
            return;
        }
        s->prev = c;
        break;
    case S_END_TAG:
        if (c == '>') {
            s->mode = S_OUT;
            /* After the root closes there is nothing left to cut. */
            if (--s->depth < 1)
                s->mode = S_OFF;
        }
        break;
    case S_BANG:
        if (!s->opener)
            s->opener = c == '-' ? "--" : c == '[' ? "[CDATA[" : NULL;
        if (!s->opener || c != (uint8_t)s->opener[s->matched]) {
            s->mode = S_OFF; /* a DOCTYPE, refused by the parser, or worse */
        } else if (!s->opener[++s->matched]) {
            s->mode = s->opener[0] == '-' ? S_COMMENT : S_CDATA;
            s->run = 0;
        }
        break;
    case S_COMMENT:
    case S_CDATA: {
        uint8_t closer = s->mode == S_COMMENT ? '-' : ']';
        if (c == '>' && s->run == 2)
            s->mode = S_OUT;
        else
            s->run = c != closer ? 0 : s->run < 2 ? s->run + 1 : 2;
        break;
    }
    case S_PI:
        capture(s, c);
        if (c == '>' && s->run) {
            s->mode = S_OUT;
            if (s->capturing)
                decl_end(s);
        } else {
            s->run = c == '?';
        }
        break;
    default:
        break;
    }
}

void page_split_scan(page_split *s, const uint8_t *buf, size_t n) {
    size_t i = 0;
    while (i < n && s->mode != S_OFF) {
        switch (s->mode) {
        case S_START:
            /* A UTF-8 byte order mark, then '<'; anything else (UTF-16,
             * leading space, not XML) is left to the parser whole. */
            if (s->bom < 3 && buf[i] == (uint8_t) "\xEF\xBB\xBF"[s->bom]) {
                s->bom++;
                s->pos++;
                i++;
            } else if ((s->bom == 0 || s->bom == 3) && buf[i] == '<') {
                s->mode = S_OUT;
            } else {
                s->mode = S_OFF;
            }
            break;
        case S_OUT: {
            const uint8_t *lt = memchr(buf + i, '<', n - i);
            size_t k = lt ? (size_t)(lt - buf) : n;
            s->pos += k - i;
            i = k;
            if (lt) {
                s->lt = s->pos++;
                i++;
                s->mode = S_LT;
            }
            break;
        }
        default:
            markup_byte(s, buf[i]);
            s->pos++;
            i++;
            break;
        }
    }
}
