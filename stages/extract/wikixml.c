/*
 * wikixml.c: the MediaWiki export parser on libxml2's SAX2 push interface;
 * see wikixml.h.
 *
 * The document shape is fixed and shallow, so the parser tracks only the
 * element depth and which of the few interesting elements is open:
 *
 *   depth 1  <mediawiki>
 *   depth 2    <page>                  (<siteinfo> read too; anything else: skipped)
 *   depth 3      <title> <ns> <redirect/> <revision>     (<siteinfo>: <case>)
 *   depth 4        <text>              (inside <revision>; <namespace> in <siteinfo>)
 *
 * Character data is kept only while one of <title>, <ns>, <text>, <case>,
 * <namespace> is the innermost open element (text of any element nested in
 * them is dropped).
 */
#include "stages/extract/wikixml.h"

#include "stages/common/dynlib.h"
#include "stages/extract/xml_lex.h"

#include <errno.h>
#include <libxml/chvalid.h>
#include <libxml/globals.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libxml2, loaded by the first wiki_parser_init (stages/common/dynlib.h):
 * only the commands that parse a dump pay for loading it. */
/* clang-format off: one function a line */
#define LIBXML2_FUNCTIONS(X, t)                                                                    \
    X(t, xmlInitParser)                                                                            \
    X(t, xmlSetExternalEntityLoader)                                                               \
    X(t, xmlThrDefSetGenericErrorFunc)                                                             \
    X(t, xmlSetGenericErrorFunc)                                                                   \
    X(t, xmlCreatePushParserCtxt)                                                                  \
    X(t, xmlCtxtUseOptions)                                                                        \
    X(t, xmlParseChunk)                                                                            \
    X(t, xmlStopParser)                                                                            \
    X(t, xmlFreeParserCtxt)
/* clang-format on */
SP_DYNLIB_TABLE(xml, libxml2, SP_SONAME_LIBXML2, LIBXML2_FUNCTIONS);

enum {
    DEPTH_ROOT = 1,
    DEPTH_PAGE = 2,
    DEPTH_PAGE_CHILD = 3,
    DEPTH_REVISION_CHILD = 4,
};

/* Room for any long integer in <ns>, with surrounding whitespace. */
#define NS_TEXT_MAX 32

typedef enum capture {
    CAPTURE_NONE,
    CAPTURE_TITLE,
    CAPTURE_NS,
    CAPTURE_TEXT,
    CAPTURE_CASE,
    CAPTURE_NAMESPACE,
} capture;

struct wiki_parser {
    xmlParserCtxtPtr ctxt;
    char *name;
    const extract_options *filter;
    text_buffer *text;
    wiki_page_fn on_page;
    void *on_page_ctx;
    /* The first error, from a callback or from libxml2. */
    sp_error err;
    /* Whether err is libxml2's word that the input ended inside the root,
     * which finish replaces by a clearer one of its own. */
    bool err_at_end;
    /* Lines of the document before the first byte fed (fragment mode). */
    long line_base;
    /* The document line of the root start tag (fragment mode), which the
     * fragment's parser read from the head on its line 1. */
    long root_line;
    /* libxml2's line count and read position (an input offset, see
     * input_offset) as the latest xmlParseChunk began: cdata_error_line. */
    long sync_line;
    uint64_t sync_at;
    /* With a CDATA section open: the input offset up to which its bytes
     * are checked (check_open_cdata). */
    uint64_t cdata_checked;

    int depth;
    capture capture;
    int capture_depth; /* depth of the element being captured */
    /* Text set aside by the filter (wiki_parser_set_aside), the start tags
     * named "text" so far (the filter's numbers for them), and whether the
     * text being captured is in the aside. */
    text_aside *aside;
    uint64_t texts;
    bool text_in_aside;
    bool root_seen, root_closed;
    bool in_page, in_revision;

    /* The page being read. */
    uint8_t title[SP_MAX_KEY_BYTES];
    size_t title_len;
    bool has_title;
    char ns_text[NS_TEXT_MAX];
    size_t ns_len;
    long ns;
    bool redirect;
    long page_line;

    /* <siteinfo>: the title rules so far, whether it closed, and the
     * <case> or <namespace> being read (its key and case attribute). */
    sp_title_rules *site;
    bool in_siteinfo, site_done;
    uint8_t site_text[SP_TITLE_NS_NAME_MAX];
    size_t site_len;
    long site_ns_key;
    bool site_ns_first_letter;
};

static long current_line(const wiki_parser *p) {
    return p->line_base + (p->ctxt && p->ctxt->input ? p->ctxt->input->line : 0);
}

/* The offset of at, a byte of libxml2's input buffer, in everything it was
 * fed (converted to UTF-8 if the document is in another encoding), as
 * xmlByteConsumed counts it: bytes dropped from the buffer's front plus
 * the place in what is left. */
static uint64_t input_offset(const xmlParserInput *in, const xmlChar *at) {
    return (uint64_t)in->consumed + (uint64_t)(at - in->base);
}

/* The document line where the bytes fed so far end: libxml2's line at its
 * read position plus the line breaks it holds unread. Where libxml2 stops
 * reading depends on where the feeds were cut (a CDATA section is passed
 * on in pieces, a comment only whole); where the input ends does not. */
static long end_line(const wiki_parser *p) {
    const xmlParserInput *in = p->ctxt ? p->ctxt->input : NULL;
    long line = current_line(p);
    if (!in || !in->cur)
        return line;
    return line + (long)xml_lex_lines(in->cur, (size_t)(in->end - in->cur));
}

/* Records an error about the document's content and stops the parser. */
static void fail(wiki_parser *p, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(wiki_parser *p, long line, const char *fmt, ...) {
    if (!p->err.set) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        sp_errorf(&p->err, "%s: line %ld: %s", p->name, line, msg);
    }
    xml.xmlStopParser(p->ctxt);
}

static void fail_xml(wiki_parser *p, long line, const char *msg) {
    /* libxml2's messages ("... indicate encoding !\nBytes: 0xCA ...") and
     * names quoted from the document may hold line breaks; errors are one
     * line. */
    char one_line[512];
    snprintf(one_line, sizeof one_line, "%s", msg);
    for (char *c = one_line; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    sp_errorf(&p->err, "%s: XML error at line %ld: %s", p->name, line, one_line);
    xml.xmlStopParser(p->ctxt);
}

static bool ns_wanted(const extract_options *f, long ns) {
    for (int i = 0; i < f->namespace_count; i++)
        if (f->namespaces[i] == ns)
            return true;
    return false;
}

static wiki_skip page_skip(const wiki_parser *p) {
    const extract_options *f = p->filter;
    if (f->namespaces && f->namespace_count > 0 && !ns_wanted(f, p->ns))
        return WIKI_SKIP_NAMESPACE;
    if (f->skip_redirects && p->redirect)
        return WIKI_SKIP_REDIRECT;
    return WIKI_KEEP;
}

static void begin_page(wiki_parser *p) {
    p->in_page = true;
    p->title_len = 0;
    p->has_title = false;
    p->ns = 0;
    p->redirect = false;
    p->page_line = current_line(p);
    text_buffer_reset(p->text);
}

static void end_page(wiki_parser *p) {
    p->in_page = false;
    if (!p->has_title || p->title_len == 0) {
        fail(p, p->page_line,
             p->has_title ? "<page> has an empty <title>" : "<page> has no <title>");
        return;
    }
    wiki_page page = {
        .title = p->title,
        .title_len = (uint32_t)p->title_len,
        .ns = p->ns,
        .redirect = p->redirect,
        .skip = page_skip(p),
        .line = p->page_line,
        .text = p->text,
    };
    if (page.skip != WIKI_KEEP)
        text_buffer_reset(p->text);
    if (p->on_page(p->on_page_ctx, &page, &p->err))
        xml.xmlStopParser(p->ctxt);
}

/* The value of attribute `want` among a SAX2 start tag's, as libxml2
 * gives them (localname, prefix, URI, value start, value end); NULL when
 * absent. */
static const char *attribute(int n, const xmlChar **attrs, const char *want, size_t *len) {
    for (int i = 0; i < n; i++, attrs += 5)
        if (!strcmp((const char *)attrs[0], want)) {
            *len = (size_t)(attrs[4] - attrs[3]);
            return (const char *)attrs[3];
        }
    return NULL;
}

static void begin_site_namespace(wiki_parser *p, int n, const xmlChar **attrs) {
    size_t len = 0;
    const char *key = attribute(n, attrs, "key", &len);
    char num[24];
    if (!key || len == 0 || len >= sizeof num)
        return;
    memcpy(num, key, len);
    num[len] = '\0';
    char *end;
    p->site_ns_key = strtol(num, &end, 10);
    if (*end)
        return;
    const char *word = attribute(n, attrs, "case", &len);
    p->site_ns_first_letter = word ? sp_title_case_first_letter(word, len) : p->site->first_letter;
    p->capture = CAPTURE_NAMESPACE;
    p->capture_depth = p->depth;
    p->site_len = 0;
}

static void end_site_text(wiki_parser *p, capture was) {
    if (was == CAPTURE_CASE)
        p->site->first_letter = sp_title_case_first_letter((const char *)p->site_text, p->site_len);
    else
        sp_title_rules_add(p->site, p->site_ns_key, p->site_ns_first_letter, p->site_text,
                           p->site_len);
}

static void end_ns(wiki_parser *p) {
    p->ns_text[p->ns_len] = '\0';
    char *end;
    errno = 0;
    long ns = strtol(p->ns_text, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    if (errno || end == p->ns_text || *end || ns < INT_MIN || ns > INT_MAX) {
        fail(p, current_line(p), "<ns> is not a number: '%s'", p->ns_text);
        return;
    }
    p->ns = ns;
}

/* Every local name on_start looks for, and the ones whose character data
 * on_characters keeps. */
static const char *const names_read[] = {"mediawiki", "page",     "title", "ns",
                                         "redirect",  "revision", "text"};
static const char *const names_captured[] = {"title", "ns", "text"};

static bool name_in(const char *const *names, size_t count, const char *name, size_t len) {
    for (size_t i = 0; i < count; i++)
        if (strlen(names[i]) == len && !memcmp(names[i], name, len))
            return true;
    return false;
}

bool wiki_name_read(const char *name, size_t len) {
    return name_in(names_read, sizeof names_read / sizeof *names_read, name, len);
}

bool wiki_name_captured(const char *name, size_t len) {
    return name_in(names_captured, sizeof names_captured / sizeof *names_captured, name, len);
}

static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
                     int nb_namespaces, const xmlChar **namespaces, int nb_attributes,
                     int nb_defaulted, const xmlChar **attributes) {
    (void)prefix, (void)uri, (void)nb_namespaces, (void)namespaces;
    (void)nb_defaulted;
    wiki_parser *p = ctx;
    const char *name = (const char *)localname;
    p->depth++;
    /* Whether this element's text is in the aside; asking drops the
     * entries of earlier ones, which the parser did not keep. */
    bool in_aside = false;
    if (!strcmp(name, "text") && p->aside)
        in_aside = text_aside_has(p->aside, ++p->texts);
    switch (p->depth) {
    case DEPTH_ROOT:
        p->root_seen = true;
        if (strcmp(name, "mediawiki"))
            fail(p, current_line(p), "root element is <%s>, not <mediawiki>", name);
        break;
    case DEPTH_PAGE:
        if (!strcmp(name, "page"))
            begin_page(p);
        else if (!strcmp(name, "siteinfo") && p->site)
            p->in_siteinfo = true;
        break;
    case DEPTH_PAGE_CHILD:
        if (p->in_siteinfo && !strcmp(name, "case")) {
            p->capture = CAPTURE_CASE;
            p->capture_depth = p->depth;
            p->site_len = 0;
        }
        if (!p->in_page)
            break;
        if (!strcmp(name, "title")) {
            p->capture = CAPTURE_TITLE;
            p->capture_depth = p->depth;
            p->has_title = true;
            p->title_len = 0;
        } else if (!strcmp(name, "ns")) {
            p->capture = CAPTURE_NS;
            p->capture_depth = p->depth;
            p->ns_len = 0;
        } else if (!strcmp(name, "redirect")) {
            p->redirect = true;
        } else if (!strcmp(name, "revision")) {
            /* Only the last revision counts: each one starts afresh. */
            p->in_revision = true;
            text_buffer_reset(p->text);
        }
        break;
    case DEPTH_REVISION_CHILD:
        if (p->in_siteinfo && !strcmp(name, "namespace"))
            begin_site_namespace(p, nb_attributes, attributes);
        if (p->in_revision && !strcmp(name, "text") && page_skip(p) == WIKI_KEEP) {
            p->capture = CAPTURE_TEXT;
            p->capture_depth = p->depth;
            p->text_in_aside = in_aside;
        }
        break;
    default:
        break;
    }
}

static void on_end(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
    (void)localname, (void)prefix, (void)uri;
    wiki_parser *p = ctx;
    capture was = CAPTURE_NONE;
    if (p->capture != CAPTURE_NONE && p->depth == p->capture_depth) {
        was = p->capture;
        p->capture = CAPTURE_NONE;
    }
    if (was == CAPTURE_TEXT && p->text_in_aside) {
        p->text_in_aside = false;
        size_t n;
        const uint8_t *text = text_aside_take(p->aside, &n);
        if (text_buffer_append(p->text, text, n, &p->err))
            xml.xmlStopParser(p->ctxt);
    }
    switch (p->depth) {
    case DEPTH_ROOT:
        p->root_closed = true;
        break;
    case DEPTH_PAGE:
        if (p->in_page)
            end_page(p);
        if (p->in_siteinfo)
            p->site_done = true;
        p->in_siteinfo = false;
        break;
    case DEPTH_PAGE_CHILD:
        if (was == CAPTURE_NS)
            end_ns(p);
        if (was == CAPTURE_CASE)
            end_site_text(p, was);
        p->in_revision = false;
        break;
    case DEPTH_REVISION_CHILD:
        if (was == CAPTURE_NAMESPACE)
            end_site_text(p, was);
        break;
    default:
        break;
    }
    p->depth--;
}

static void on_characters(void *ctx, const xmlChar *ch, int len) {
    wiki_parser *p = ctx;
    if (p->depth != p->capture_depth)
        return;
    switch (p->capture) {
    case CAPTURE_NONE:
        break;
    case CAPTURE_TITLE:
        if ((size_t)len > sizeof p->title - p->title_len) {
            fail(p, current_line(p), "<title> is longer than %d bytes", SP_MAX_KEY_BYTES);
            break;
        }
        memcpy(p->title + p->title_len, ch, (size_t)len);
        p->title_len += (size_t)len;
        break;
    case CAPTURE_NS:
        if ((size_t)len >= sizeof p->ns_text - p->ns_len) {
            fail(p, current_line(p), "<ns> is not a number");
            break;
        }
        memcpy(p->ns_text + p->ns_len, ch, (size_t)len);
        p->ns_len += (size_t)len;
        break;
    case CAPTURE_CASE:
    case CAPTURE_NAMESPACE:
        /* Longer text is no rule MediaWiki writes: cut, so it matches
         * nothing. */
        if ((size_t)len > sizeof p->site_text - p->site_len)
            len = (int)(sizeof p->site_text - p->site_len);
        memcpy(p->site_text + p->site_len, ch, (size_t)len);
        p->site_len += (size_t)len;
        break;
    case CAPTURE_TEXT:
        if (p->text_in_aside) {
            /* What the filter left of the content: line breaks, spaces
             * and a ';' (text_skip.c's line_breaks). Anything else means
             * the two count text elements differently: a bug, caught
             * here rather than turned into a wrong record. */
            for (int i = 0; i < len; i++)
                if (ch[i] != '\n' && ch[i] != '\r' && ch[i] != ' ' && ch[i] != ';') {
                    fail(p, current_line(p),
                         "internal error: the text filter set aside text that is not this "
                         "element's");
                    break;
                }
        } else if (text_buffer_append(p->text, ch, (size_t)len, &p->err)) {
            xml.xmlStopParser(p->ctxt);
        }
        break;
    }
}

/* A DOCTYPE is where entity declarations, external subsets and with them
 * "billion laughs" and file inclusion live; real dumps have none. */
static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
                       const xmlChar *system_id) {
    (void)name, (void)external_id, (void)system_id;
    wiki_parser *p = ctx;
    fail_xml(p, current_line(p), "DOCTYPE refused (a MediaWiki dump has none)");
}

static void on_entity_decl(void *ctx, const xmlChar *name, int type, const xmlChar *public_id,
                           const xmlChar *system_id, xmlChar *content) {
    (void)type, (void)public_id, (void)system_id, (void)content;
    wiki_parser *p = ctx;
    char msg[256];
    snprintf(msg, sizeof msg, "entity declaration '%s' refused", (const char *)name);
    fail_xml(p, current_line(p), msg);
}

/* Rewrites "line <line>" in msg as "line <line + base>". */
static void rebase_line(char *msg, size_t cap, int line, long base) {
    char want[32], with[32];
    snprintf(want, sizeof want, "line %d", line);
    snprintf(with, sizeof with, "line %ld", base + line);
    char *at = strstr(msg, want);
    size_t wl = strlen(want), nl = strlen(with);
    if (!at || (at[wl] >= '0' && at[wl] <= '9') || strlen(msg) + nl - wl >= cap)
        return;
    memmove(at + nl, at + wl, strlen(at + wl) + 1);
    memcpy(at, with, nl);
}

/* libxml2 quotes the input at an encoding error ("...\nBytes: 0xE0 0x20
 * 0x3C 0x70"): the first byte is the offending one, the rest is whatever
 * its buffer holds next, which depends on how the input was fed (a chunk
 * of the parse pool ends where one thread's buffer goes on). Only the first
 * is kept, so an error reads the same for every thread count and chunk. */
static void keep_first_quoted_byte(char *msg) {
    char *at = strstr(msg, "Bytes: 0x");
    if (at && strlen(at) > strlen("Bytes: 0xHH"))
        at[strlen("Bytes: 0xHH")] = '\0';
}

/*
 * The line of libxml2's error about a byte in a CDATA section that is not
 * UTF-8 (or no XML character). libxml2 checks a section a block at a time
 * (the rest of it once "]]>" is in its buffer, else 300 bytes a parse
 * call) and at a bad byte moves its read position there without counting
 * the line breaks on the way, so it names the line its block began on;
 * where blocks begin depends on how the input was cut into feeds. Its count
 * was right as the call began (sync_line at sync_at, still in the buffer:
 * libxml2 drops consumed bytes only before that point), so the byte's own
 * line is that plus the line breaks from there to it.
 */
static long cdata_error_line(const wiki_parser *p, long line) {
    const xmlParserInput *in = p->ctxt->input;
    uint64_t at = input_offset(in, in->cur);
    if (p->sync_at < in->consumed || p->sync_at > at)
        return line;
    return p->sync_line +
           (long)xml_lex_lines(in->base + (p->sync_at - in->consumed), at - p->sync_at);
}

static void on_xml_error(void *ctx, xmlErrorPtr e) {
    wiki_parser *p = ctx;
    if (e->level < XML_ERR_ERROR)
        return;
    long line = e->line;
    if (e->code == XML_ERR_INVALID_CHAR && p->ctxt && p->ctxt->instate == XML_PARSER_CDATA_SECTION)
        line = cdata_error_line(p, e->line);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", e->message ? e->message : "malformed XML");
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    /* Some messages name the line where an element opened ("tag mismatch:
     * page line 12 and ..."), that is e->int1: a fragment's line, to be
     * turned into the document's. */
    if (p->line_base && e->int1 > 0) {
        /* With only the root open, the element named is the root. */
        bool root = p->depth == 1 && e->int1 == 1;
        rebase_line(msg, sizeof msg, e->int1, root ? p->root_line - 1 : p->line_base);
    }
    keep_first_quoted_byte(msg);
    n = strlen(msg);
    /* libxml2 calls most non-XML input "Document is empty". */
    if (!p->root_seen)
        snprintf(msg + n, sizeof msg - n, " (not XML?)");
    if (!p->err.set)
        p->err_at_end = e->code == XML_ERR_DOCUMENT_END || e->code == XML_ERR_DOCUMENT_EMPTY;
    fail_xml(p, p->line_base + line, msg);
}

/* Installed process-wide: nothing may ever be read from a file or URL on
 * behalf of a document, whatever path inside libxml2 asks for it. */
static xmlParserInputPtr refuse_external_entity(const char *url, const char *id,
                                                xmlParserCtxtPtr ctxt) {
    (void)id;
    if (ctxt && ctxt->sax && ctxt->sax->internalSubset == on_doctype) {
        wiki_parser *p = ctxt->userData;
        char msg[256];
        snprintf(msg, sizeof msg, "external entity '%s' refused", url ? url : "");
        fail_xml(p, current_line(p), msg);
    }
    return NULL;
}

/* libxml2 reports some problems through its global handler, which would
 * print to stderr; ours all arrive through on_xml_error instead. */
static void ignore_generic_error(void *ctx, const char *msg, ...) {
    (void)ctx, (void)msg;
}

/* libxml2's process-wide settings, made once: parsers run on several
 * threads at once. The generic error handler is per thread in libxml2, so
 * the default for new threads is set as well. */
static void setup_libxml2(void) {
    xml.xmlInitParser();
    xml.xmlSetExternalEntityLoader(refuse_external_entity);
    xml.xmlThrDefSetGenericErrorFunc(NULL, ignore_generic_error);
    xml.xmlSetGenericErrorFunc(NULL, ignore_generic_error);
}

wiki_parser *wiki_parser_init(const char *name, const extract_options *filter, text_buffer *text,
                              wiki_page_fn on_page, void *ctx, sp_error *err) {
    sp_error why = {0};
    if (sp_dynlib_load(&libxml2, &why)) {
        sp_errorf(err, "%s: %s", name, why.msg);
        return NULL;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, setup_libxml2);
    /* Threads that existed before the default was set keep libxml2's
     * printing handler; setting it again for this thread is cheap. */
    xml.xmlSetGenericErrorFunc(NULL, ignore_generic_error);

    wiki_parser *p = calloc(1, sizeof *p);
    if (!p || !(p->name = strdup(name))) {
        free(p);
        sp_errorf(err, "%s: out of memory", name);
        return NULL;
    }
    p->filter = filter;
    p->text = text;
    p->on_page = on_page;
    p->on_page_ctx = ctx;

    xmlSAXHandler sax;
    memset(&sax, 0, sizeof sax);
    sax.initialized = XML_SAX2_MAGIC;
    sax.startElementNs = on_start;
    sax.endElementNs = on_end;
    sax.characters = on_characters;
    sax.ignorableWhitespace = on_characters;
    sax.cdataBlock = on_characters;
    sax.internalSubset = on_doctype;
    sax.externalSubset = on_doctype;
    sax.entityDecl = on_entity_decl;
    sax.serror = on_xml_error;
    p->ctxt = xml.xmlCreatePushParserCtxt(&sax, p, NULL, 0, p->name);
    if (!p->ctxt) {
        sp_errorf(err, "%s: cannot create an XML parser", name);
        wiki_parser_destroy(p);
        return NULL;
    }
    /* Deliberately without XML_PARSE_NOENT, DTDLOAD, DTDATTR or DTDVALID:
     * entities stay unexpanded and no DTD is fetched. */
    xml.xmlCtxtUseOptions(p->ctxt, XML_PARSE_NONET);
    return p;
}

/* How many bytes at the start of s[0..n), CDATA section content, libxml2
 * accepts, by its own rule (xmlCheckCdataPush): UTF-8 sequences of one to
 * four bytes, by their lead byte, whose value is an XML character (so an
 * overlong form of one passes, unlike sp_utf8_valid, which would refuse
 * more than libxml2 does: a byte the two disagree on would be an error or
 * not depending on where the feeds were cut). Stops at the first byte
 * refused (*bad) or at a sequence that n cuts short. */
static size_t cdata_ok(const uint8_t *s, size_t n, bool *bad) {
    *bad = true;
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                return i;
            i++;
            continue;
        }
        size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len)
            return i;
        if (n - i < len) {
            *bad = false;
            return i;
        }
        uint32_t cp = c & (0x7fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        if (!xmlIsCharQ(cp))
            return i;
        i += len;
    }
    *bad = false;
    return n;
}

/*
 * With a CDATA section open after a parse call, libxml2 holds its bytes
 * from the read position on (had "]]>" been among them, the section would
 * be closed) and checks them only as it passes them on, 300 bytes a call:
 * whether it ever reaches a bad byte of a section left open, and when,
 * depends on how many feeds brought the bytes. So they are checked here as
 * they arrive, by libxml2's rule; a byte refused is the document's error
 * (everything before the section is parsed), named as libxml2 names it, at
 * its own line, whatever the cuts. At the end of the input (at_end) a
 * sequence cut short is refused too.
 */
static void check_open_cdata(wiki_parser *p, bool at_end) {
    const xmlParserInput *in = p->ctxt->input;
    if (p->err.set || p->ctxt->instate != XML_PARSER_CDATA_SECTION)
        return;
    uint64_t cur = input_offset(in, in->cur), end = input_offset(in, in->end);
    uint64_t from = p->cdata_checked > cur ? p->cdata_checked : cur;
    if (from >= end)
        return;
    const uint8_t *s = in->base + (from - in->consumed);
    bool bad;
    size_t ok = cdata_ok(s, (size_t)(end - from), &bad);
    p->cdata_checked = from + ok;
    if (!bad && !(at_end && from + ok < end))
        return;
    char msg[80];
    snprintf(msg, sizeof msg, "Input is not proper UTF-8, indicate encoding ! Bytes: 0x%02X",
             s[ok]);
    fail_xml(p, current_line(p) + (long)xml_lex_lines(in->cur, (size_t)(s + ok - in->cur)), msg);
}

/* One xmlParseChunk, with libxml2's line count and position noted before
 * it (cdata_error_line). */
static int parse_chunk(wiki_parser *p, const char *buf, int n, int terminate) {
    const xmlParserInput *in = p->ctxt->input;
    if (in && in->cur) {
        p->sync_line = in->line;
        p->sync_at = input_offset(in, in->cur);
    }
    return xml.xmlParseChunk(p->ctxt, buf, n, terminate);
}

static int parse(wiki_parser *p, const char *buf, int n, int terminate, sp_error *err) {
    int rc = parse_chunk(p, buf, n, terminate);
    check_open_cdata(p, false);
    if (!p->err.set && rc != 0)
        sp_errorf(&p->err, "%s: XML error at line %ld: libxml2 error %d", p->name, current_line(p),
                  rc);
    if (p->err.set) {
        if (err && !err->set)
            *err = p->err;
        return -1;
    }
    return 0;
}

int wiki_parser_feed(wiki_parser *p, const void *buf, size_t n, sp_error *err) {
    const char *at = buf;
    while (n) {
        int k = n > INT_MAX ? INT_MAX : (int)n;
        if (parse(p, at, k, 0, err))
            return -1;
        at += k;
        n -= (size_t)k;
    }
    return 0;
}

void wiki_parser_read_site(wiki_parser *p, sp_title_rules *rules) {
    sp_title_rules_init(rules);
    p->site = rules;
}

bool wiki_parser_site_done(const wiki_parser *p) {
    return p->site_done;
}

void wiki_parser_set_aside(wiki_parser *p, text_aside *aside) {
    p->aside = aside;
}

int wiki_parser_init_fragment(wiki_parser *p, const void *head, size_t head_len, long root_line,
                              long line_base, sp_error *err) {
    /* The head holds no line break (see wikixml.h), so the fragment's first
     * byte is on the parser's line 1: document line line_base + 1. */
    if (wiki_parser_feed(p, head, head_len, err))
        return -1;
    p->line_base = line_base;
    p->root_line = root_line;
    return 0;
}

int wiki_parser_finish(wiki_parser *p, sp_error *err) {
    /* Taken before the last parse, which drops libxml2's buffer on an
     * error. */
    long last_line = end_line(p);
    check_open_cdata(p, true);
    parse_chunk(p, NULL, 0, 1);
    /* libxml2 holds back the last bytes fed until it knows more follow, so
     * an error in them, such as a bad reference in the last page, may only
     * surface now: it is the document's first error, and the depth left
     * behind is its doing, not a truncation. Where the bytes were fed
     * (a whole document, or a parse pool's chunk) must not change the
     * message. */
    if (p->err.set && !p->err_at_end) {
        if (!err->set)
            *err = p->err;
        return -1;
    }
    /* libxml2's message for a document cut short, or one with no element
     * at all, is "Extra content at the end of the document": ours say more. */
    if (p->depth > 0)
        return sp_errorf(err,
                         "%s: XML error at line %ld: document ends before </mediawiki> "
                         "(truncated input?)",
                         p->name, last_line);
    if (!p->root_closed)
        return sp_errorf(err, "%s: XML error at line %ld: no <mediawiki> element (not a dump?)",
                         p->name, current_line(p));
    if (p->err.set) {
        if (!err->set)
            *err = p->err;
        return -1;
    }
    return 0;
}

void wiki_parser_destroy(wiki_parser *p) {
    if (!p)
        return;
    if (p->ctxt)
        xml.xmlFreeParserCtxt(p->ctxt);
    free(p->name);
    free(p);
}
