/*
 * page_split.c: the scanner for cut points between a dump's pages; see
 * page_split.h.
 *
 * Most of a dump is text, where '<' never occurs (it is escaped), so the
 * scanner jumps from '<' to '<' with memchr and follows markup byte by byte
 * only inside tags, which are short (start and end tags, once the head is
 * captured, in loops of their own). Comments, CDATA sections and
 * processing instructions are skipped by xml_lex.h's rules, the ones
 * text_skip.c follows too. The encoding is decided as text_skip.c decides
 * it (a document starting "<?xml " names its encoding, one starting with
 * another '<' is UTF-8): only an ASCII-compatible encoding lets '<', '>'
 * and quotes be found by their bytes.
 */
#include "stages/extract/page_split.h"

#include "stages/extract/xml_lex.h"

#include <stdlib.h>
#include <string.h>

typedef enum scan_mode {
    S_START,   /* before the first byte, or after a UTF-8 byte order mark */
    S_OUT,     /* outside markup */
    S_LT,      /* after '<' */
    S_TAG,     /* in a start tag (quote: in an attribute value) */
    S_END_TAG, /* in "</...>" */
    S_SKIP,    /* after "<!" or "<?": a comment, CDATA or PI (xml_lex.h) */
    S_OFF,     /* unsure: no more cut points */
} scan_mode;

struct page_split {
    scan_mode mode;
    uint64_t pos;  /* document offset of the next byte */
    uint64_t lt;   /* offset of the last '<' */
    uint64_t last; /* the latest cut point, 0: none */
    long depth;
    int bom; /* bytes of byte order mark matched */
    xml_lex_skip skip;
    uint8_t quote, prev;
    bool root_seen;  /* the root start tag has begun */
    bool capturing;  /* copying the declaration or the root tag into head */
    bool decl_done;  /* the XML declaration (if any) is over */
    bool head_ready; /* the root start tag is in head */
    uint8_t head[PAGE_SPLIT_HEAD_MAX];
    size_t head_len;
    long root_line; /* line of the root's '<' (until then: line breaks + 1) */
};

page_split *page_split_init(sp_error *err) {
    page_split *s = calloc(1, sizeof *s);
    if (!s)
        sp_errorf(err, "page splitter: out of memory");
    else
        s->root_line = 1;
    return s;
}

page_split *page_split_init_fragment(uint64_t start, sp_error *err) {
    page_split *s = page_split_init(err);
    if (s)
        *s = (page_split){.mode = S_OUT,
                          .pos = start,
                          .depth = 1,
                          .root_seen = true,
                          .decl_done = true,
                          .head_ready = true};
    return s;
}

bool page_split_between_pages(const page_split *s) {
    return s->mode == S_OUT && s->depth == 1 && s->head_ready;
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

long page_split_root_line(const page_split *s) {
    return s->root_line;
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

/* The XML declaration now in head: keep it if its encoding is UTF-8 (or
 * none is named), else give up. */
static void decl_end(page_split *s) {
    const char *d = (const char *)s->head;
    s->capturing = false;
    s->decl_done = true;
    if (s->head_len < 6 || memcmp(d, "<?xml", 5) || !xml_lex_space((uint8_t)d[5])) {
        s->head_len = 0; /* another processing instruction, not part of the head */
        return;
    }
    if (!xml_lex_decl_ok(d, s->head_len, true))
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
        s->mode = S_SKIP;
        xml_lex_bang(&s->skip);
    } else if (c == '?') {
        s->mode = S_SKIP;
        xml_lex_pi(&s->skip);
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
    if (c == '\n' && !s->root_seen)
        s->root_line++;
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
    case S_SKIP:
        capture(s, c); /* the XML declaration, when it is the PI at the start */
        switch (xml_lex_skip_byte(&s->skip, c)) {
        case XML_LEX_DONE:
            s->mode = S_OUT;
            if (s->capturing)
                decl_end(s);
            break;
        case XML_LEX_DOUBT:
            s->mode = S_OFF; /* a DOCTYPE, refused by the parser, or worse */
            break;
        case XML_LEX_MORE:
            break;
        }
        break;
    default:
        break;
    }
}

/*
 * The bytes of a start tag from buf[i], once the head is captured: what
 * markup_byte does for S_TAG, without its dispatch and the head's
 * bookkeeping, so a dump's many short tags cost a tight loop (the scan
 * checks every chunk's cut: issue 16). Returns where it stopped: at the
 * end, or past the byte that left S_TAG.
 */
static size_t tag_run(page_split *s, const uint8_t *buf, size_t i, size_t n) {
    uint8_t quote = s->quote, prev = s->prev;
    size_t j = i;
    for (; j < n; j++) {
        uint8_t c = buf[j];
        if (quote) {
            if (c == quote)
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '>' || c == '<') {
            s->quote = quote;
            s->prev = prev;
            s->pos += j + 1 - i;
            if (c == '>')
                start_tag_end(s);
            else
                s->mode = S_OFF;
            return j + 1;
        }
        prev = c;
    }
    s->quote = quote;
    s->prev = prev;
    s->pos += j - i;
    return j;
}

/* The bytes of an end tag from buf[i], once the root has begun (before,
 * markup_byte counts their line breaks): up to its '>'. */
static size_t end_tag_run(page_split *s, const uint8_t *buf, size_t i, size_t n) {
    const uint8_t *gt = memchr(buf + i, '>', n - i);
    if (!gt) {
        s->pos += n - i;
        return n;
    }
    size_t j = (size_t)(gt - buf);
    s->pos += j + 1 - i;
    s->mode = S_OUT;
    /* After the root closes there is nothing left to cut. */
    if (--s->depth < 1)
        s->mode = S_OFF;
    return j + 1;
}

void page_split_scan(page_split *s, const uint8_t *buf, size_t n) {
    size_t i = 0;
    while (i < n && s->mode != S_OFF) {
        if (s->mode == S_TAG && !s->capturing && s->root_seen) {
            i = tag_run(s, buf, i, n);
            continue;
        }
        if (s->mode == S_END_TAG && s->root_seen) {
            i = end_tag_run(s, buf, i, n);
            continue;
        }
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
            /* Only the prolog's line breaks are counted: the root's line. */
            for (size_t j = i; j < k && !s->root_seen; j++)
                s->root_line += buf[j] == '\n';
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
