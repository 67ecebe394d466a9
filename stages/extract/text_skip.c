/*
 * text_skip.c: the filter that drops text past the value cap before the XML
 * parser reads it; see text_skip.h.
 *
 * A lexer that knows just enough XML to find where the content of each text
 * element starts and ends: start tags (attribute values may hold '>'), end
 * tags, and the comments, CDATA sections and processing instructions whose
 * insides must not be taken for tags (their rules, and which encodings a
 * declaration may name, are xml_lex.h's, shared with page_split.c). Anything
 * it does not follow, such as a DOCTYPE, turns it off for the rest of the
 * document.
 *
 * Why dropping is safe: dropped bytes are character data of a text element
 * after value_cap decoded bytes of that same element's character data, with
 * no markup in between. If the parser keeps that element's text, it has
 * already kept value_cap bytes of it (the buffer is reset only at <page> and
 * <revision> start tags), so it would discard the dropped bytes anyway, and
 * the line breaks put in their place as well. The count is a lower bound on
 * the decoded bytes: a reference counts 1, a CR none (CR LF decodes to LF).
 *
 * Why errors stay the same: every dropped byte has been checked to be one
 * the parser accepts there, so the parser's first error in the filtered
 * document is its first error in the original, found after the same line
 * breaks. The bytes of a construct still open (a reference, a UTF-8
 * sequence, "]]" that a '>' would make "]]>") are held back while dropping;
 * when the construct turns out bad, they are passed on with everything
 * after them in that element.
 *
 * Leaves: an element the parser does not read (<id>, <timestamp>,
 * <comment>, <sha1>, ... of every revision) is dropped whole, tags and all,
 * when it is plainly well-formed: a start tag "<name>" with a name no
 * parser refuses and no prefix, met in content (not inside another tag),
 * inside the root; content checked as text is; "</name>" right after it.
 * No byte of it could be an error, the parser would skip it, and its line
 * breaks stay. Only where the parser keeps nothing of the element around
 * it (not in a <title>, <ns> or <text>), as those line breaks become that
 * element's character data.
 */
#include "stages/extract/text_skip.h"

#include "stages/common/utf8.h"
#include "stages/extract/text_aside.h"
#include "stages/extract/wikixml.h"
#include "stages/extract/xml_lex.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The start of a document that tells whether it is UTF-8: a UTF-8 byte
 * order mark, then "<?xml" and the space after it. */
#define HEAD_BYTES 9
/* Longest XML declaration read for its encoding. Real ones are under 60
 * bytes; a longer one turns the filter off. */
#define DECL_MAX 256
/* Element names are compared with "text" up to this length. */
#define TAG_NAME_MAX 64
/* Longest reference checked while dropping, '&' included: "&#x10FFFF"
 * with zeros to spare. Longer ones go to the parser unchecked. */
#define REF_MAX 16

_Static_assert(HEAD_BYTES <= TEXT_SKIP_SLACK, "the document head is held back");
/* Held bytes come out with, at most, the one space a CR may ask for. */
_Static_assert(REF_MAX + 1 <= TEXT_SKIP_SLACK, "a reference is held back");

typedef enum mode {
    M_HEAD,     /* collecting the first bytes, to tell the encoding */
    M_DECL,     /* in the XML declaration: reading its encoding */
    M_OFF,      /* not UTF-8, or markup the lexer does not follow */
    M_OUT,      /* outside markup and outside text content */
    M_LT,       /* after '<' */
    M_SKIP,     /* after "<!" or "<?": a comment, CDATA or PI (xml_lex.h) */
    M_END_TAG,  /* in "</...>" */
    M_NAME,     /* in a start tag's name */
    M_ATTRS,    /* in a start tag after its name; last: previous byte */
    M_QUOTE,    /* in an attribute value quoted by `quote` */
    M_TEXT,     /* in a text element's character data: checked, dropped past the cap;
                   or in a leaf's (see leaf): checked, dropped */
    M_TEXT_RAW, /* the same, given up on: passed as it is up to the next '<' */
} mode;

/* A construct in text content whose bytes are not all seen yet. */
typedef enum pending {
    PEND_NONE,
    PEND_REF,      /* '&' and what followed */
    PEND_UTF8,     /* the first bytes of a multi-byte character */
    PEND_BRACKETS, /* "]" or "]]" */
} pending;

struct text_skip {
    uint64_t cap;
    mode mode;

    uint8_t head[HEAD_BYTES];
    size_t head_len;
    char decl[DECL_MAX];
    size_t decl_len;

    xml_lex_skip skip;
    uint8_t quote, last;
    char name[TAG_NAME_MAX];
    size_t name_len;
    /* For text_skip_between_pages: elements open (1 directly inside the
     * root), and whether markup was met that page_split reads otherwise. */
    long depth;
    bool cut_doubt;
    /* Bit d: the element open at depth d (below 64) may have its character
     * data kept by the parser (wiki_name_captured). */
    uint64_t kept_depths;
    /* The tag being read began at a '<' inside another tag, which the
     * parser refuses there: the rest of it is not what it seems. */
    bool torn;

    /* The text element being read. */
    uint64_t count; /* decoded bytes passed, at least */
    bool dropping;
    bool after_cr; /* the last byte was a CR: keep it apart from a later LF */
    /* A ';' was dropped and one passed in its place (see semicolon). */
    bool semicolon_kept;
    pending pend;
    uint8_t pend_buf[REF_MAX]; /* held back while dropping, else already passed */
    size_t pend_len, pend_need;

    /* In M_TEXT: the element is no text element but one whose character
     * data the parser never keeps, with a bare start tag (leaf_name). */
    bool leaf;
    uint8_t *run_out; /* the output of the current run */
    /* With leaf: its start tag in this run's output (NULL: not all of it). */
    uint8_t *tag_out;

    /* Text content set aside (text_skip_set_aside); NULL: none is. */
    text_aside *aside;
    uint64_t texts; /* start tags named "text" so far: the elements' numbers */
    bool entered;   /* enter_text ran for the byte just written */
    /* The text element's content in this run's output (NULL: it began in
     * an earlier run, or nothing is set aside), and where dropping began
     * in it (NULL: not yet). Before pass_end the output is the content's
     * bytes as they came. */
    uint8_t *content_out, *pass_end;
};

text_skip *text_skip_init(uint64_t value_cap, sp_error *err) {
    text_skip *t = calloc(1, sizeof *t);
    if (!t) {
        sp_errorf(err, "text filter: out of memory");
        return NULL;
    }
    t->cap = value_cap;
    t->mode = M_HEAD;
    return t;
}

text_skip *text_skip_init_fragment(uint64_t value_cap, sp_error *err) {
    text_skip *t = text_skip_init(value_cap, err);
    if (t) {
        t->mode = M_OUT;
        t->depth = 1;
    }
    return t;
}

void text_skip_set_aside(text_skip *t, text_aside *aside) {
    t->aside = aside;
}

bool text_skip_between_pages(const text_skip *t) {
    return t->mode == M_OUT && t->depth == 1 && !t->cut_doubt;
}

void text_skip_destroy(text_skip *t) {
    free(t);
}

/* ------------------------------------------------------------ text content */

/* Whether a byte of text content needs no attention: printable ASCII other
 * than '<', '&', ']' and ';'. Most of the text is such bytes. */
static bool plain(uint8_t c) {
    return c >= 0x20 && c < 0x80 && c != '<' && c != '&' && c != ']' && c != ';';
}

/* Bit k set: p[k] is not plain. Sixteen bytes at a time where the CPU
 * allows. */
static unsigned special_mask(const uint8_t *p) {
#ifdef __SSE2__
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    /* Signed, bytes >= 0x80 are negative: one compare finds them and the
     * control characters. */
    __m128i hit = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('&')));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(']')));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(';')));
    return (unsigned)_mm_movemask_epi8(hit);
#else
    unsigned mask = 0;
    for (unsigned k = 0; k < 16; k++)
        mask |= (unsigned)!plain(p[k]) << k;
    return mask;
#endif
}

/* Length of the run of plain bytes at p. */
static size_t plain_run(const uint8_t *p, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        unsigned mask = special_mask(p + i);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
    }
    while (i < n && plain(p[i]))
        i++;
    return i;
}

static bool xml_char(uint64_t v) {
    return v == 0x9 || v == 0xA || v == 0xD || (v >= 0x20 && v <= 0xD7FF) ||
           (v >= 0xE000 && v <= 0xFFFD) || (v >= 0x10000 && v <= 0x10FFFF);
}

static bool ref_byte(uint8_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '#';
}

static int digit(uint8_t c, unsigned base) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (base == 16 && c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Whether "&s;" is a reference the parser accepts: with DOCTYPEs refused,
 * the five predefined entities and references to XML characters. */
static bool ref_ok(const uint8_t *s, size_t len) {
    if (len && s[0] == '#') {
        unsigned base = len > 1 && s[1] == 'x' ? 16 : 10;
        size_t k = base == 16 ? 2 : 1;
        if (k == len)
            return false;
        /* At most REF_MAX - 2 digits: no overflow. */
        uint64_t v = 0;
        for (; k < len; k++) {
            int d = digit(s[k], base);
            if (d < 0)
                return false;
            v = v * base + (unsigned)d;
        }
        return xml_char(v);
    }
    switch (len) {
    case 2:
        return (s[0] == 'l' || s[0] == 'g') && s[1] == 't';
    case 3:
        return !memcmp(s, "amp", 3);
    case 4:
        return !memcmp(s, "quot", 4) || !memcmp(s, "apos", 4);
    default:
        return false;
    }
}

/* Length of the reference at s ('&', name, ';') when the parser accepts it,
 * else 0. Reads at most REF_MAX + 1 bytes. */
static size_t ref_len(const uint8_t *s) {
    size_t k = 1;
    while (k < REF_MAX && ref_byte(s[k]))
        k++;
    return s[k] == ';' && ref_ok(s + 1, k - 1) ? k + 1 : 0;
}

/* Length of the UTF-8 sequence a lead byte starts; 0 for no lead byte. */
static size_t utf8_len(uint8_t c) {
    return c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}

/* U+FFFE and U+FFFF: valid UTF-8, yet no XML characters. */
static bool noncharacter(const uint8_t *s) {
    return s[0] == 0xEF && s[1] == 0xBF && s[2] >= 0xBE;
}

/* Whether s[0..n) is whole, valid UTF-8 holding no U+FFFE or U+FFFF. */
static bool xml_utf8(const uint8_t *s, size_t n) {
    if (!sp_utf8_valid(s, n, NULL))
        return false;
    for (const uint8_t *p = s; (p = memchr(p, 0xEF, (size_t)(s + n - p))); p++)
        if (noncharacter(p))
            return false;
    return true;
}

/* Content set aside (text_aside.h). */

/* Where in p[0..n) the first byte equal to a, b or c is (n: none).
 * Sixteen bytes at a time where the CPU allows: it runs over all the
 * content set aside, twice. */
static size_t find3(const uint8_t *p, size_t n, uint8_t a, uint8_t b, uint8_t c) {
    size_t i = 0;
#ifdef __SSE2__
    const __m128i va = _mm_set1_epi8((char)a), vb = _mm_set1_epi8((char)b),
                  vc = _mm_set1_epi8((char)c);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_or_si128(hit, _mm_cmpeq_epi8(v, vc)));
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
    }
#endif
    while (i < n && p[i] != a && p[i] != b && p[i] != c)
        i++;
    return i;
}

/* The code point of the reference "&s;" (ref_ok said yes). */
static uint32_t ref_value(const uint8_t *s, size_t len) {
    if (s[0] == '#') {
        unsigned base = s[1] == 'x' ? 16 : 10;
        uint32_t v = 0;
        for (size_t k = base == 16 ? 2 : 1; k < len; k++)
            v = v * base + (uint32_t)digit(s[k], base);
        return v;
    }
    switch (s[0]) {
    case 'l':
        return '<';
    case 'g':
        return '>';
    case 'q':
        return '"';
    default:
        return s[1] == 'm' ? '&' : '\'';
    }
}

static size_t utf8_put(uint32_t v, uint8_t *d) {
    if (v < 0x80) {
        d[0] = (uint8_t)v;
        return 1;
    }
    if (v < 0x800) {
        d[0] = (uint8_t)(0xC0 | v >> 6);
        d[1] = (uint8_t)(0x80 | (v & 0x3F));
        return 2;
    }
    if (v < 0x10000) {
        d[0] = (uint8_t)(0xE0 | v >> 12);
        d[1] = (uint8_t)(0x80 | (v >> 6 & 0x3F));
        d[2] = (uint8_t)(0x80 | (v & 0x3F));
        return 3;
    }
    d[0] = (uint8_t)(0xF0 | v >> 18);
    d[1] = (uint8_t)(0x80 | (v >> 12 & 0x3F));
    d[2] = (uint8_t)(0x80 | (v >> 6 & 0x3F));
    d[3] = (uint8_t)(0x80 | (v & 0x3F));
    return 4;
}

/*
 * The characters the parser would report for s[0..n), content that passed
 * every check of this filter: references resolved, and line ends
 * normalized as XML says (CR LF and a lone CR become LF; a CR from a
 * reference stays). Never longer than s. Returns the bytes written to d.
 */
static size_t decode(const uint8_t *s, size_t n, uint8_t *d) {
    size_t r = 0, w = 0;
    while (r < n) {
        size_t k = r + find3(s + r, n - r, '&', '\r', '\r');
        memcpy(d + w, s + r, k - r);
        w += k - r;
        r = k;
        if (r == n)
            break;
        if (s[r] == '\r') {
            r++;
            if (r == n || s[r] != '\n')
                d[w++] = '\n';
            continue;
        }
        const uint8_t *semi = memchr(s + r, ';', n - r);
        size_t len = (size_t)(semi - (s + r)) - 1;
        w += utf8_put(ref_value(s + r + 1, len), d + w);
        r += len + 2;
    }
    return w;
}

/*
 * Reduces the n bytes at p in place to what the parser needs of content
 * set aside: its line breaks, so that later errors are on the same lines;
 * a space between a CR and whatever followed it other than a line break,
 * so the CR never becomes half of a CR LF; and its first ';' (semicolon()
 * says why). Returns the bytes left.
 */
static size_t line_breaks(uint8_t *p, size_t n) {
    size_t w = 0, r = 0;
    bool semi = false;
    while (r < n) {
        size_t k = find3(p + r, n - r, '\n', '\r', ';');
        /* Other bytes went by: after a CR, a space stands for them. */
        if (k && w && p[w - 1] == '\r')
            p[w++] = ' ';
        r += k;
        if (r == n)
            break;
        uint8_t c = p[r++];
        if (c != ';')
            p[w++] = c;
        else if (!semi)
            p[w++] = c, semi = true;
        else if (w && p[w - 1] == '\r')
            p[w++] = ' ';
    }
    return w;
}

/*
 * The text element's content ends at in[i], a '<', with nothing in it
 * given up on. When the content began in this run (its start tag's '>'
 * and all of it are in this run's output, which the parser has not read)
 * and the end tag, "</" and the start tag's name and '>', follows right
 * here, the content goes to the aside decoded, and the output keeps only
 * its line breaks (line_breaks). Otherwise it stays as it is.
 */
static void set_aside(text_skip *t, const uint8_t *in, size_t i, size_t n, uint8_t **op) {
    uint8_t *from = t->content_out;
    t->content_out = NULL;
    size_t name = t->name_len;
    if (!from || n - i < name + 3 || in[i + 1] != '/' || memcmp(in + i + 2, t->name, name) ||
        in[i + 2 + name] != '>')
        return;
    uint8_t *passed = t->dropping ? t->pass_end : *op;
    uint8_t *d = text_aside_begin(t->aside, t->texts, (size_t)(passed - from));
    if (!d)
        return;
    text_aside_commit(t->aside, decode(from, (size_t)(passed - from), d));
    *op = from + line_breaks(from, (size_t)(*op - from));
}

/*
 * A leaf's content (leaf_start) ends at in[i], a '<', with nothing in it
 * given up on; it was dropped as it came, its line breaks kept. When its
 * start tag is in this run's output and "</name>" follows right here, the
 * element goes whole: the output keeps only what was left of its content,
 * with a space before it after a CR and after it when it ends in one, so no
 * CR meets an LF it did not meet before. Returns where the input goes on
 * (past the end tag), or 0 when the element stays.
 */
static size_t drop_leaf(text_skip *t, const uint8_t *in, size_t i, size_t n, uint8_t **op) {
    size_t name = t->name_len;
    uint8_t *tag = t->tag_out;
    if (!tag || n - i < name + 3 || in[i + 1] != '/' || memcmp(in + i + 2, t->name, name) ||
        in[i + 2 + name] != '>')
        return 0;
    const uint8_t *content = tag + name + 2;
    size_t left = (size_t)(*op - content);
    uint8_t *w = tag;
    if (tag == t->run_out || tag[-1] == '\r')
        *w++ = ' ';
    memmove(w, content, left);
    w += left;
    if (left && w[-1] == '\r')
        *w++ = ' ';
    *op = w;
    t->mode = M_OUT;
    t->depth--; /* as the end tag would have: the parent is open again */
    return i + name + 3;
}

/* Non-line-break bytes of text content went by: passed (counted as
 * `counts` decoded bytes) or dropped. A dropped run right after a CR leaves
 * a space, so the CR never meets a later LF as one CR LF. */
static void went_by(text_skip *t, const uint8_t *p, size_t n, uint64_t counts, uint8_t **op) {
    if (t->dropping) {
        if (t->after_cr)
            *(*op)++ = ' ';
    } else {
        memcpy(*op, p, n);
        *op += n;
        t->count += counts;
    }
    t->after_cr = false;
}

/*
 * A ';' goes by. The first one dropped in an element is passed all the
 * same: libxml2 parses a '&' only once it holds a ';' somewhere after it,
 * so a broken reference before this text must not lose its ';' here, or
 * its error would wait for the end of the input (and be reported as the
 * input ending early).
 */
static void semicolon(text_skip *t, uint64_t counts, uint8_t **op) {
    static const uint8_t c = ';';
    if (t->dropping && !t->semicolon_kept) {
        t->semicolon_kept = true;
        t->dropping = false;
        went_by(t, &c, 1, 0, op);
        t->dropping = true;
        return;
    }
    went_by(t, &c, 1, counts, op);
}

/* The rest of this element goes to the parser as it is, from in[i]. */
static size_t give_up(text_skip *t, size_t i, uint8_t **op) {
    if (t->dropping) {
        memcpy(*op, t->pend_buf, t->pend_len);
        *op += t->pend_len;
    }
    t->pend = PEND_NONE;
    t->pend_len = 0;
    t->mode = M_TEXT_RAW;
    return i;
}

static void pend_start(text_skip *t, pending kind, const uint8_t *p, size_t n) {
    t->pend = kind;
    memcpy(t->pend_buf, p, n);
    t->pend_len = n;
}

/*
 * The non-ASCII bytes from in[i]: whole valid characters go by, a character
 * cut by the end of the chunk is pending, anything else is given up on.
 * Returns where it stopped.
 */
static size_t utf8_run(text_skip *t, const uint8_t *in, size_t i, size_t n, uint8_t **op) {
    size_t end = i;
    while (end < n && in[end] >= 0x80)
        end++;
    size_t good = end - i, bad;
    bool stop = false, tail = false;
    if (!sp_utf8_valid(in + i, end - i, &bad)) {
        good = bad;
        size_t len = utf8_len(in[i + bad]), have = n - (i + bad);
        tail = end == n && len > have;
        for (size_t k = 1; tail && k < have; k++)
            tail = (in[i + bad + k] & 0xC0) == 0x80;
        stop = !tail;
    }
    for (const uint8_t *p = in + i; (p = memchr(p, 0xEF, (size_t)(in + i + good - p))); p++)
        if (noncharacter(p)) {
            good = (size_t)(p - (in + i));
            stop = true;
            tail = false;
            break;
        }
    if (!t->dropping) {
        /* Pass only up to the first character boundary at the cap. */
        uint64_t room = t->count < t->cap ? t->cap - t->count : 0;
        if (good > room) {
            size_t m = (size_t)room;
            while (m < good && (in[i + m] & 0xC0) == 0x80)
                m++;
            if (m < good) {
                good = m;
                stop = tail = false;
            }
        }
    }
    if (good)
        went_by(t, in + i, good, good, op);
    i += good;
    if (stop)
        return give_up(t, i, op);
    if (tail) {
        went_by(t, in + i, n - i, n - i, op);
        pend_start(t, PEND_UTF8, in + i, n - i);
        t->pend_need = utf8_len(in[i]);
        return n;
    }
    return i;
}

/* The next byte of a pending construct; returns where it stopped. */
static size_t pending_byte(text_skip *t, const uint8_t *in, size_t i, uint8_t **op) {
    uint8_t c = in[i];
    switch (t->pend) {
    case PEND_REF:
        if (c == ';') {
            if (!ref_ok(t->pend_buf + 1, t->pend_len - 1))
                return give_up(t, i, op);
            t->pend = PEND_NONE;
            t->pend_len = 0;
            semicolon(t, 0, op);
            return i + 1;
        }
        if (t->pend_len == REF_MAX || !ref_byte(c))
            return give_up(t, i, op);
        t->pend_buf[t->pend_len++] = c;
        went_by(t, &c, 1, 0, op);
        return i + 1;
    case PEND_UTF8:
        if ((c & 0xC0) != 0x80)
            return give_up(t, i, op);
        t->pend_buf[t->pend_len++] = c;
        went_by(t, &c, 1, 1, op);
        if (t->pend_len == t->pend_need) {
            if (!sp_utf8_valid(t->pend_buf, t->pend_len, NULL) ||
                (t->pend_len == 3 && noncharacter(t->pend_buf)))
                return give_up(t, i + 1, op);
            t->pend = PEND_NONE;
            t->pend_len = 0;
        }
        return i + 1;
    case PEND_BRACKETS:
        if (c == ']') {
            /* Only the last two matter: "]]]>" is as bad as "]]>". */
            t->pend_buf[1] = ']';
            t->pend_len = 2;
            went_by(t, &c, 1, 1, op);
            return i + 1;
        }
        if (c == '>' && t->pend_len == 2)
            return give_up(t, i, op);
        /* No "]]>": the held brackets are simply dropped. */
        t->pend = PEND_NONE;
        t->pend_len = 0;
        return i;
    case PEND_NONE:
        break;
    }
    return i;
}

/* A byte of text content that plain_run stopped at; returns where it stopped. */
static size_t special_byte(text_skip *t, const uint8_t *in, size_t i, size_t n, uint8_t **op) {
    uint8_t c = in[i];
    switch (c) {
    case '<':
        if (t->leaf) {
            size_t after = drop_leaf(t, in, i, n, op);
            if (after)
                return after;
        } else {
            set_aside(t, in, i, n, op);
        }
        *(*op)++ = c;
        t->mode = M_LT;
        t->torn = false;
        return i + 1;
    case '\n':
    case '\r':
        *(*op)++ = c;
        t->count += !t->dropping && c == '\n';
        t->after_cr = c == '\r';
        return i + 1;
    case ';':
        semicolon(t, 1, op);
        return i + 1;
    case '&':
    case ']':
        went_by(t, &c, 1, 1, op);
        pend_start(t, c == '&' ? PEND_REF : PEND_BRACKETS, &c, 1);
        return i + 1;
    default:
        break;
    }
    if (c >= 0x80)
        return utf8_run(t, in, i, n, op);
    if (c < 0x20 && c != '\t')
        return give_up(t, i, op);
    went_by(t, &c, 1, 1, op);
    return i + 1;
}

/*
 * Bit k set: p[k] needs a look while dropping: a control character (line
 * breaks among them), non-ASCII, '<', '&', the start of "]]>", and ';' when
 * `semicolons`. Reads p[0..18).
 */
static unsigned drop_mask(const uint8_t *p, bool semicolons) {
#ifdef __SSE2__
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i hit = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('&')));
    if (semicolons)
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(';')));
    __m128i end = _mm_cmpeq_epi8(v, _mm_set1_epi8(']'));
    end = _mm_and_si128(
        end, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 1)), _mm_set1_epi8(']')));
    end = _mm_and_si128(
        end, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 2)), _mm_set1_epi8('>')));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(hit, end));
#else
    unsigned mask = 0;
    for (unsigned k = 0; k < 16; k++) {
        uint8_t c = p[k];
        bool look = c < 0x20 || c >= 0x80 || c == '<' || c == '&' || (semicolons && c == ';') ||
                    (c == ']' && p[k + 1] == ']' && p[k + 2] == '>');
        mask |= (unsigned)look << k;
    }
    return mask;
#endif
}

/*
 * Dropping, the common case fast: from in[i], while 32 bytes of the chunk
 * remain, the bytes that need a look are found sixteen at a time and
 * checked in place, with the bytes after them at hand; the rest (brackets
 * short of "]]>", ';' once one is kept, plain text) just go. Returns where
 * it stopped: near the end of the chunk, or at a byte for special_byte to
 * judge ('<', CR, "]]>", anything doubtful).
 */
static size_t drop_fast(text_skip *t, const uint8_t *in, size_t i, size_t n, uint8_t **op) {
    uint8_t *o = *op;
    size_t p = i, stop = SIZE_MAX;
    while (p + 32 <= n && stop == SIZE_MAX) {
        size_t next = p + 16;
        unsigned mask = drop_mask(in + p, !t->semicolon_kept);
        while (mask) {
            size_t q = p + (size_t)__builtin_ctz(mask), end = q + 1; /* checked up to end */
            switch (in[q]) {
            case '\n':
                *o++ = '\n';
                break;
            case '\t':
                break;
            case ';':
            case '&':
                if (in[q] == '&' && !(end = ref_len(in + q))) {
                    stop = q;
                    break;
                }
                if (in[q] == '&')
                    end += q;
                if (!t->semicolon_kept) {
                    *o++ = ';';
                    t->semicolon_kept = true;
                }
                break;
            default:
                if (in[q] >= 0x80) {
                    while (end < n && in[end] >= 0x80)
                        end++;
                    if (end < n && xml_utf8(in + q, end - q))
                        break;
                }
                stop = q;
                break;
            }
            if (stop != SIZE_MAX)
                break;
            mask = end - p >= 16 ? 0 : mask & ~0u << (end - p);
            if (end > next)
                next = end;
        }
        p = next;
    }
    if (stop == SIZE_MAX)
        stop = p;
    *op = o;
    return stop;
}

/* Text content from in[i] until it ends or the chunk does. */
static size_t text_content(text_skip *t, const uint8_t *in, size_t i, size_t n, uint8_t **op) {
    while (i < n && t->mode == M_TEXT) {
        if (t->pend != PEND_NONE) {
            i = pending_byte(t, in, i, op);
            continue;
        }
        if (!t->dropping && t->count >= t->cap) {
            t->dropping = true;
            t->pass_end = *op;
        }
        if (t->dropping && !t->after_cr && i + 32 <= n) {
            size_t stop = drop_fast(t, in, i, n, op);
            if (stop > i) {
                i = stop;
                continue;
            }
        }
        size_t k = plain_run(in + i, n - i);
        if (k) {
            if (!t->dropping && k > t->cap - t->count)
                k = (size_t)(t->cap - t->count);
            went_by(t, in + i, k, k, op);
            i += k;
            continue;
        }
        i = special_byte(t, in, i, n, op);
    }
    return i;
}

/* ------------------------------------------------------------ markup */

static void enter_text(text_skip *t) {
    t->mode = M_TEXT;
    t->entered = true;
    t->leaf = false;
    t->count = 0;
    t->dropping = false;
    t->after_cr = false;
    t->semicolon_kept = false;
    t->pend = PEND_NONE;
    t->pend_len = 0;
}

/* The start tag's local name (after a prefix, if any); NULL when the name
 * is too long to be kept. */
static const char *local_name(const text_skip *t, size_t *len) {
    if (t->name_len > TAG_NAME_MAX)
        return NULL;
    const char *colon = memchr(t->name, ':', t->name_len);
    const char *local = colon ? colon + 1 : t->name;
    *len = t->name_len - (size_t)(local - t->name);
    return local;
}

/* Local name "text", with or without a prefix. */
static bool name_is_text(const text_skip *t) {
    size_t len;
    const char *local = local_name(t, &len);
    return local && len == 4 && !memcmp(local, "text", 4);
}

/*
 * Whether the element whose start tag just ended ("<name>", nothing else
 * in it: bare, and its '<' in content, not torn) is a leaf the filter may
 * drop whole, should its content turn out to be plain character data with
 * "</name>" right after it, so that the parser cannot have refused any byte
 * of it: an element
 * the parser does not look at (wiki_name_read), inside the root, in an
 * element whose character data the parser does not keep (so the line
 * breaks left in its place land where nothing is kept), with a name no
 * parser could refuse (ASCII letters, digits, '_', '-', '.'; no prefix, so
 * no namespace is involved).
 */
static bool leaf_start(const text_skip *t, bool bare) {
    long parent = t->depth - 1;
    if (!bare || t->torn || parent < 1 || parent >= 64 || (t->kept_depths >> parent & 1) ||
        t->name_len > TAG_NAME_MAX)
        return false;
    for (size_t k = 0; k < t->name_len; k++) {
        char c = t->name[k];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && (k == 0 || !((c >= '0' && c <= '9') || c == '-' || c == '.')))
            return false;
    }
    return !wiki_name_read(t->name, t->name_len);
}

/* The end of a start tag: content follows unless it was "<.../>" (empty);
 * bare: it was "<name>". A tag with no name ("<>", "< a>") page_split may
 * read otherwise. */
static void start_tag_end(text_skip *t, bool empty, bool bare) {
    if (!t->name_len)
        t->cut_doubt = true;
    t->depth += !empty;
    bool text = name_is_text(t);
    t->texts += text;
    /* Stray end tags can take depth below the root; the parser refuses
     * them, and nothing is dropped there (leaf_start). */
    if (!empty && t->depth > 0 && t->depth < 64) {
        size_t len;
        const char *local = local_name(t, &len);
        uint64_t bit = (uint64_t)1 << t->depth;
        if (!local || wiki_name_captured(local, len))
            t->kept_depths |= bit;
        else
            t->kept_depths &= ~bit;
    }
    if (!empty && text) {
        enter_text(t);
    } else if (!empty && leaf_start(t, bare)) {
        enter_text(t);
        t->leaf = true;
        t->dropping = true;
    } else {
        t->mode = M_OUT;
    }
}

/* The bytes that end the run of a start tag's name: its end, a space,
 * and the quotes page_split would take for an attribute value's (name_byte
 * then tells text_skip_between_pages). One load a byte: the run is most of
 * the markup's bytes. */
static const bool name_stop[256] = {
    ['>'] = true,  ['/'] = true,  ['<'] = true, [' '] = true, ['\t'] = true,
    ['\n'] = true, ['\r'] = true, ['"'] = true, ['\''] = true};

static void name_add(text_skip *t, const uint8_t *p, size_t n) {
    if (t->name_len + n > TAG_NAME_MAX) {
        t->name_len = TAG_NAME_MAX + 1; /* too long to be "text" */
        return;
    }
    memcpy(t->name + t->name_len, p, n);
    t->name_len += n;
}

static void name_byte(text_skip *t, uint8_t c) {
    if (c == '>') {
        start_tag_end(t, false, true);
    } else if (c == '/' || xml_lex_space(c)) {
        t->mode = M_ATTRS;
        t->last = c;
    } else if (c == '<') {
        t->mode = M_LT;
        t->torn = true;
        t->cut_doubt = true; /* page_split stops at '<' in a tag */
    } else {
        /* page_split takes a quote in a tag's name for an attribute value's. */
        t->cut_doubt |= c == '"' || c == '\'';
        name_add(t, &c, 1);
    }
}

/* The XML declaration is complete: UTF-8 (or no encoding named) or not. */
static void decl_end(text_skip *t) {
    t->mode = xml_lex_decl_ok(t->decl, t->decl_len, false) ? M_OUT : M_OFF;
}

/* One byte of markup, already copied to the output. */
static void markup_byte(text_skip *t, uint8_t c) {
    switch (t->mode) {
    case M_DECL:
        if (t->decl_len == DECL_MAX) {
            t->mode = M_OFF;
            break;
        }
        t->decl[t->decl_len++] = (char)c;
        if (c == '>' && t->decl[t->decl_len - 2] == '?')
            decl_end(t);
        break;
    case M_LT:
        if (c == '!') {
            t->mode = M_SKIP;
            xml_lex_bang(&t->skip);
        } else if (c == '?') {
            t->mode = M_SKIP;
            xml_lex_pi(&t->skip);
        } else if (c == '/') {
            t->mode = M_END_TAG;
        } else {
            t->mode = M_NAME;
            t->name_len = 0;
            name_byte(t, c);
        }
        break;
    case M_SKIP:
        /* Anything but a comment, CDATA or PI after "<!" (a DOCTYPE,
         * refused by the parser) or worse: stop following. */
        switch (xml_lex_skip_byte(&t->skip, c)) {
        case XML_LEX_DONE:
            t->mode = M_OUT;
            break;
        case XML_LEX_DOUBT:
            t->mode = M_OFF;
            break;
        case XML_LEX_MORE:
            break;
        }
        break;
    case M_NAME:
        name_byte(t, c);
        break;
    case M_ATTRS:
        if (c == '"' || c == '\'') {
            t->quote = c;
            t->mode = M_QUOTE;
        } else if (c == '>') {
            start_tag_end(t, t->last == '/', false);
        } else if (c == '<') {
            t->mode = M_LT;
            t->torn = true;
            t->cut_doubt = true; /* page_split stops at '<' in a tag */
        }
        t->last = c;
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ the document */

static uint8_t *filter(text_skip *t, const uint8_t *in, size_t n, uint8_t *o);

/* Decides from the document's first bytes whether it is UTF-8. */
static uint8_t *head_end(text_skip *t, uint8_t *o) {
    const uint8_t *h = t->head;
    size_t p = h[0] == 0xEF && h[1] == 0xBB && h[2] == 0xBF ? 3 : 0;
    bool decl = !memcmp(h + p, "<?xml", 5);
    if (h[p] == '<' && h[p + 1] && !decl) {
        t->mode = M_OUT;
        return filter(t, h, HEAD_BYTES, o);
    }
    /* UTF-16 or UTF-32 ('<' then NUL, a byte order mark), EBCDIC, or "<?xml"
     * not followed by the rest of a declaration: pass it all. */
    t->mode = M_OFF;
    if (decl && xml_lex_space(h[p + 5])) {
        t->mode = M_DECL;
        t->decl_len = HEAD_BYTES - p;
        memcpy(t->decl, h + p, t->decl_len);
    }
    memcpy(o, h, HEAD_BYTES);
    return o + HEAD_BYTES;
}

/* Copies in[0..n) up to and including the first `stop`; returns the bytes
 * copied, and whether `stop` was among them. */
static size_t copy_through(const uint8_t *in, size_t n, uint8_t stop, bool *found, uint8_t **op) {
    const uint8_t *at = memchr(in, stop, n);
    size_t k = at ? (size_t)(at - in) + 1 : n;
    memcpy(*op, in, k);
    *op += k;
    *found = at != NULL;
    return k;
}

/* After a byte of markup: where a text element's content begins, when
 * that byte began it. */
static void content_starts(text_skip *t, uint8_t *o) {
    if (t->entered) {
        t->entered = false;
        t->content_out = t->aside && !t->leaf ? o : NULL;
        t->pass_end = NULL;
        /* A leaf's start tag is "<name>", just written. */
        size_t tag = t->name_len + 2;
        t->tag_out = t->leaf && (size_t)(o - t->run_out) >= tag ? o - tag : NULL;
    }
}

static uint8_t *filter(text_skip *t, const uint8_t *in, size_t n, uint8_t *o) {
    size_t i = 0;
    while (i < n) {
        bool found;
        switch (t->mode) {
        case M_HEAD: {
            size_t k = HEAD_BYTES - t->head_len < n - i ? HEAD_BYTES - t->head_len : n - i;
            memcpy(t->head + t->head_len, in + i, k);
            t->head_len += k;
            i += k;
            if (t->head_len == HEAD_BYTES)
                o = head_end(t, o);
            break;
        }
        case M_OFF:
            memcpy(o, in + i, n - i);
            o += n - i;
            i = n;
            break;
        case M_OUT:
        case M_TEXT_RAW:
            i += copy_through(in + i, n - i, '<', &found, &o);
            if (found) {
                t->mode = M_LT;
                t->torn = false;
            }
            break;
        case M_END_TAG:
            i += copy_through(in + i, n - i, '>', &found, &o);
            if (found) {
                t->mode = M_OUT;
                /* After the root's end nothing is cut (page_split). */
                t->cut_doubt |= --t->depth < 1;
            }
            break;
        case M_QUOTE:
            i += copy_through(in + i, n - i, t->quote, &found, &o);
            if (found) {
                t->mode = M_ATTRS;
                t->last = t->quote;
            }
            break;
        case M_TEXT:
            i = text_content(t, in, i, n, &o);
            break;
        case M_NAME:
        case M_ATTRS: {
            /* The run up to the next byte that matters in a start tag. */
            size_t k = i;
            if (t->mode == M_NAME) {
                while (k < n && !name_stop[in[k]])
                    k++;
                name_add(t, in + i, k - i);
            } else {
                while (k < n && in[k] != '"' && in[k] != '\'' && in[k] != '>' && in[k] != '<')
                    k++;
                if (k > i)
                    t->last = in[k - 1];
            }
            memcpy(o, in + i, k - i);
            o += k - i;
            i = k;
            if (i < n) {
                *o++ = in[i];
                markup_byte(t, in[i]);
                content_starts(t, o);
                i++;
            }
            break;
        }
        default:
            *o++ = in[i];
            markup_byte(t, in[i]);
            content_starts(t, o);
            i++;
            break;
        }
    }
    return o;
}

size_t text_skip_run(text_skip *t, const void *in, size_t n, uint8_t *out) {
    /* The parser may have read the output of earlier runs. */
    t->content_out = NULL;
    t->tag_out = NULL;
    t->run_out = out;
    return (size_t)(filter(t, in, n, out) - out);
}

size_t text_skip_finish(text_skip *t, uint8_t *out) {
    size_t n = 0;
    if (t->mode == M_HEAD) {
        /* A document shorter than its head: nothing to drop in it. */
        n = t->head_len;
        memcpy(out, t->head, n);
    } else if (t->mode == M_TEXT && t->dropping) {
        /* The document ends in dropped text (it is cut short: the parser
         * will say so at the line it ends on, line breaks kept). */
        memcpy(out, t->pend_buf, t->pend_len);
        n += t->pend_len;
        if (t->pend == PEND_NONE)
            out[n++] = ' ';
    }
    t->mode = M_OFF;
    return n;
}
