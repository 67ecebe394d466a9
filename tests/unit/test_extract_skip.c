/*
 * test_extract_skip.c: the text filter (stages/extract/text_skip.h) may
 * change nothing but speed. Each document is parsed twice: from its own
 * bytes, and from what the filter makes of them fed in chunks split
 * anywhere. Both must give the same records, or fail with the same error at
 * the same line. Documents: the real corpora ($SSTPIPE_CORPORA),
 * data/sample.xml, dumps from a small generator here, hand-made edge cases
 * at every cap and chunk boundary, bad input hidden in dropped text, and
 * thousands of corrupted copies. extract_file (the filter in place, behind
 * the decompressor) must agree with the unfiltered parse too. The filter
 * sets text aside for the parser (text_aside.h) as extract's does.
 */
#include "stages/extract/extract.h"
#include "stages/extract/source.h"
#include "stages/extract/text_buffer.h"
#include "stages/extract/text_skip.h"
#include "stages/extract/wikixml.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_dir.h"

#define ROOT                                                                                       \
    "<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.11/\" "                              \
    "xmlns:mw=\"http://www.mediawiki.org/xml/export-0.11/\" version=\"0.11\">\n"
#define PAGE(title, revision)                                                                      \
    "<page><title>" title "</title><ns>0</ns><revision>" revision "</revision></page>\n"
#define END "</mediawiki>\n"

/* The value cap of `sstpipe build` at its default --max-bytes. */
#define BUILD_CAP 1025

static char *tmpdir;

/* ------------------------------------------------------------ growing bytes */

typedef struct bytes {
    uint8_t *p;
    size_t len, alloc;
} bytes;

static void put(bytes *b, const void *p, size_t n) {
    if (n == 0)
        return;
    if (b->len + n > b->alloc) {
        b->alloc = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->alloc);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void puts_b(bytes *b, const char *s) {
    put(b, s, strlen(s));
}

static void printf_b(bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_b(bytes *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof tmp);
    put(b, tmp, (size_t)n);
}

/* ------------------------------------------------------------ two parses */

/* What a parse gave: the records serialised (key length, key, value
 * length, value), or the error. */
typedef struct outcome {
    bytes recs;
    size_t n;
    int rc;
    char err[sizeof(((sp_error *)0)->msg)];
    size_t fed; /* bytes the parser was given */
} outcome;

static void outcome_free(outcome *o) {
    free(o->recs.p);
    memset(o, 0, sizeof *o);
}

static void put_record(outcome *o, const uint8_t *key, size_t key_len, const uint8_t *value,
                       size_t value_len) {
    uint32_t k = (uint32_t)key_len, v = (uint32_t)value_len;
    put(&o->recs, &k, sizeof k);
    put(&o->recs, key, key_len);
    put(&o->recs, &v, sizeof v);
    put(&o->recs, value, value_len);
    o->n++;
}

static int on_page(void *ctx, const wiki_page *page, sp_error *err) {
    sp_record rec;
    if (text_buffer_value(page->text, &rec, err))
        return -1;
    assert_int_equal(rec.value_fd, -1);
    put_record(ctx, page->title, page->title_len, rec.value, rec.value_len);
    return 0;
}

/* How the filtered parse splits the document: a first chunk of `first`
 * bytes (0: none), then chunks of `size` bytes, or of 1..size bytes at
 * random when rng is set. */
typedef struct chunking {
    size_t first, size;
    uint64_t *rng;
} chunking;

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t next_chunk(const chunking *c, size_t done, size_t left) {
    size_t k = done == 0 && c->first ? c->first
               : c->rng              ? 1 + next_rand(c->rng) % c->size
                                     : c->size;
    return k < left ? k : left;
}

/*
 * Parses doc as extract does with value_cap `cap`, from its own bytes or,
 * when chunks is set, from what the filter makes of them fed in those
 * chunks. The parser gets either in pieces of at most 1 MiB, as pump feeds
 * it: libxml2 words some errors differently when a chunk ends within three
 * bytes of them, whatever the filter does.
 */
static void parse(const char *name, const uint8_t *doc, size_t len, uint64_t cap,
                  const chunking *chunks, outcome *o) {
    memset(o, 0, sizeof *o);
    sp_error err = {0};
    bytes filtered = {0};
    text_aside *aside = NULL;
    if (chunks) {
        text_skip *ts = text_skip_init(cap, &err);
        assert_non_null(ts);
        assert_non_null(aside = text_aside_init());
        text_skip_set_aside(ts, aside);
        uint8_t *out = malloc(len + TEXT_SKIP_SLACK);
        assert_non_null(out);
        for (size_t done = 0; done < len;) {
            size_t k = next_chunk(chunks, done, len - done);
            size_t m = text_skip_run(ts, doc + done, k, out);
            assert_true(m <= k + TEXT_SKIP_SLACK);
            put(&filtered, out, m);
            done += k;
        }
        size_t m = text_skip_finish(ts, out);
        assert_true(m <= TEXT_SKIP_SLACK);
        put(&filtered, out, m);
        text_skip_destroy(ts);
        free(out);
        doc = filtered.p;
        len = filtered.len;
    }
    o->fed = len;
    extract_options opts;
    extract_options_init(&opts);
    opts.value_cap = cap;
    text_buffer *text = text_buffer_init(cap, (size_t)cap, NULL, &err);
    assert_non_null(text);
    wiki_parser *wp = wiki_parser_init(name, &opts, text, on_page, o, &err);
    assert_non_null(wp);
    if (aside)
        wiki_parser_set_aside(wp, aside);
    for (size_t done = 0; done < len && !o->rc;) {
        size_t k = len - done < ((size_t)1 << 20) ? len - done : (size_t)1 << 20;
        if (wiki_parser_feed(wp, doc + done, k, &err))
            o->rc = -1;
        done += k;
    }
    if (!o->rc && wiki_parser_finish(wp, &err))
        o->rc = -1;
    if (o->rc)
        snprintf(o->err, sizeof o->err, "%s", err.msg);
    wiki_parser_destroy(wp);
    text_buffer_destroy(text);
    text_aside_destroy(aside);
    free(filtered.p);
}

static void same_outcome(const char *what, const outcome *want, const outcome *got) {
    if (want->rc != got->rc || strcmp(want->err, got->err))
        fail_msg("%s: unfiltered gave rc %d '%s', filtered rc %d '%s'", what, want->rc, want->err,
                 got->rc, got->err);
    if (want->n != got->n || want->recs.len != got->recs.len ||
        (want->recs.len && memcmp(want->recs.p, got->recs.p, want->recs.len)))
        fail_msg("%s: records differ (%zu records, %zu bytes unfiltered; %zu, %zu filtered)", what,
                 want->n, want->recs.len, got->n, got->recs.len);
}

/* Parses doc with the filter; it must agree with want, the unfiltered
 * parse of doc at cap (which a caller checking several chunkings parses
 * once). Returns the bytes the filter passed on. */
static size_t check_with(const char *what, const outcome *want, const void *doc, size_t len,
                         uint64_t cap, const chunking *chunks) {
    outcome got;
    parse("doc.xml", doc, len, cap, chunks, &got);
    char label[256];
    snprintf(label, sizeof label, "%s (cap %llu, first chunk %zu, chunks of %s%zu)", what,
             (unsigned long long)cap, chunks->first, chunks->rng ? "1.." : "", chunks->size);
    same_outcome(label, want, &got);
    size_t fed = got.fed;
    outcome_free(&got);
    return fed;
}

static size_t check_whole_with(const char *what, const outcome *want, const void *doc, size_t len,
                               uint64_t cap) {
    return check_with(what, want, doc, len, cap, &(chunking){.size = len ? len : 1});
}

/* Parses doc with and without the filter; both must agree. Returns the
 * bytes the filter passed on. */
static size_t check(const char *what, const void *doc, size_t len, uint64_t cap,
                    const chunking *chunks) {
    outcome want;
    parse("doc.xml", doc, len, cap, NULL, &want);
    size_t fed = check_with(what, &want, doc, len, cap, chunks);
    outcome_free(&want);
    return fed;
}

static size_t check_whole(const char *what, const void *doc, size_t len, uint64_t cap) {
    return check(what, doc, len, cap, &(chunking){.size = len ? len : 1});
}

/* ------------------------------------------------------------ files */

static int sink_put(void *ctx, const sp_record *r, sp_error *err) {
    (void)err;
    assert_int_equal(r->value_fd, -1);
    put_record(ctx, r->key, r->key_len, r->value, r->value_len);
    return 0;
}

/* The decompressed bytes of a file, as extract reads them. */
static bytes read_source(const char *path) {
    sp_error err = {0};
    source *src = source_open(path, &err);
    if (!src)
        fail_msg("%s", err.msg);
    bytes b = {0};
    uint8_t buf[1 << 16];
    ssize_t n;
    while ((n = source_read(src, buf, sizeof buf, &err)) > 0)
        put(&b, buf, (size_t)n);
    if (n < 0)
        fail_msg("%s", err.msg);
    source_close(src);
    return b;
}

/* extract_file on path with a value cap (the filter in pump) gives what the
 * unfiltered parse of its bytes gives, and counts every byte in xml_bytes.
 * Returns the XML size. */
static size_t check_file(const char *path, uint64_t cap) {
    bytes doc = read_source(path);
    outcome want, got = {0};
    parse(path, doc.p, doc.len, cap, NULL, &want);
    extract_options opts;
    extract_options_init(&opts);
    opts.value_cap = cap;
    extract_stats stats;
    sp_error err = {0};
    sp_sink sink = {.put = sink_put, .ctx = &got};
    got.rc = extract_file(path, &opts, &sink, &stats, &err);
    if (got.rc)
        snprintf(got.err, sizeof got.err, "%s", err.msg);
    char label[PATH_MAX + 64];
    snprintf(label, sizeof label, "extract_file %s (cap %llu)", path, (unsigned long long)cap);
    same_outcome(label, &want, &got);
    if (!got.rc)
        assert_int_equal(stats.xml_bytes, doc.len);
    outcome_free(&want);
    outcome_free(&got);
    free(doc.p);
    return doc.len;
}

static const char *corpus(const char *name) {
    static char path[PATH_MAX];
    const char *dir = getenv("SSTPIPE_CORPORA");
    if (!dir)
        fail_msg("SSTPIPE_CORPORA is not set");
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static const char *write_tmp(const char *name, const void *p, size_t len) {
    static char path[PATH_MAX];
    assert_true(snprintf(path, sizeof path, "%s/%s", tmpdir, name) < (int)sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* ------------------------------------------------------------ real dumps */

static void test_corpora(void **state) {
    (void)state;
    static const char *const names[] = {"enwiki-11pages.xml", "enwiki-206pages.xml.bz2",
                                        "simplewiki-7pages.xml.bz2"};
    static const uint64_t caps[] = {1, 64, BUILD_CAP, 100000};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *path = corpus(names[i]);
        for (size_t c = 0; c < sizeof caps / sizeof *caps; c++)
            check_file(path, caps[c]);
        bytes doc = read_source(path);
        uint64_t rng = 0x9E3779B97F4A7C15ull + i;
        check(names[i], doc.p, doc.len, BUILD_CAP, &(chunking){.size = 4093});
        check(names[i], doc.p, doc.len, BUILD_CAP, &(chunking){.size = 300, .rng = &rng});
        size_t fed = check_whole(names[i], doc.p, doc.len, BUILD_CAP);
        /* Real articles run to tens of kB: most of their bytes go. */
        if (doc.len > 1000000)
            assert_true(fed < doc.len / 2);
        free(doc.p);
    }
}

static void test_sample_xml(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *slash = strstr(path, "/tests/unit/");
    assert_non_null(slash);
    strcpy(slash, "/data/sample.xml");
    for (uint64_t cap = 1; cap <= 2048; cap = cap * 3 + 1)
        check_file(path, cap);
    bytes doc = read_source(path);
    for (size_t size = 1; size <= 64; size = size * 2 + 1)
        check("sample.xml", doc.p, doc.len, 5, &(chunking){.size = size});
    assert_true(check_whole("sample.xml", doc.p, doc.len, 5) < doc.len);
    free(doc.p);
}

/* ------------------------------------------------------------ generated dumps */

static size_t pick(uint64_t *rng, size_t n) {
    return (size_t)(next_rand(rng) % n);
}

/* Pieces of page text: words first, then everything the filter must step
 * over correctly. No piece ends with ']', so no "]]>" forms: the dumps are
 * valid. */
static const char *const text_pieces[] = {
    "lorem ",
    "ipsum ",
    "dolor sit amet, ",
    "[[Link|label]] ",
    "{{cite web |url=x}} ",
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    "\t",
    "&amp;",
    "&lt;ref&gt;",
    "&quot;",
    "&apos;",
    "&#65;",
    "&#x1F600;",
    "&#0000233;",
    "&#xfffd;",
    "\xc3\xa9",
    "\xe4\xb8\xad\xe6\x96\x87",
    "\xf0\x9f\x98\x80",
    "\xef\xbf\xbd",
    "\xef\xbb\xbf",
    "\xf4\x8f\xbf\xbf",
    "\xc2\x85",
    "\x7f",
    "]x",
    "]]y",
    "]]]z",
    "]>",
    ">",
    "a]]b",
    "]]&gt;",
    "x&#93;]>",
    "]]\n",
    "]] >",
};

/* Markup that may sit inside text: rare (real dumps have none), as the
 * filter passes all the rest of an element after it. */
static const char *const text_markup[] = {
    "<![CDATA[raw <text> & ]] ]]>",
    "<!-- </text> <text> -->",
    "<?pi <text> ?>",
    "<b>bold</b>",
    "<text>inner</text>",
    "<br/>",
};

static void gen_text(bytes *b, uint64_t *rng, size_t target) {
    size_t start = b->len;
    while (b->len - start < target) {
        if (pick(rng, 20000) == 0)
            puts_b(b, text_markup[pick(rng, sizeof text_markup / sizeof *text_markup)]);
        else if (pick(rng, 4))
            puts_b(b, text_pieces[pick(rng, 5)]); /* words, mostly */
        else
            puts_b(b, text_pieces[pick(rng, sizeof text_pieces / sizeof *text_pieces)]);
    }
}

static void gen_text_element(bytes *b, uint64_t *rng, size_t long_text) {
    switch (pick(rng, 12)) {
    case 0:
        puts_b(b, "<text bytes=\"0\" deleted=\"deleted\" />");
        return;
    case 1:
        puts_b(b, "<text/>");
        return;
    case 2:
        puts_b(b, "<mw:text xml:space=\"preserve\">");
        gen_text(b, rng, pick(rng, long_text));
        puts_b(b, "</mw:text>");
        return;
    case 3:
        puts_b(b, "<text a=\"x>y\" b='/>' c=\"it's\"\n  d = '\"text\"'>");
        break;
    default:
        printf_b(b, "<text bytes=\"%zu\" xml:space=\"preserve\">", pick(rng, 9999));
        break;
    }
    /* Lengths around every cap the tests use, and long ones. */
    size_t len = pick(rng, 4) ? pick(rng, 2200) : pick(rng, long_text);
    gen_text(b, rng, len);
    puts_b(b, "</text>");
}

/* A dump of `pages` pages; a quarter of the texts run up to long_text bytes. */
static bytes gen_dump(uint64_t seed, size_t pages, size_t long_text) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    bytes b = {0};
    switch (pick(&rng, 4)) {
    case 0:
        puts_b(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        break;
    case 1:
        puts_b(&b, "\xef\xbb\xbf<?xml version='1.0' encoding='utf8' ?>\r\n");
        break;
    case 2:
        puts_b(&b, "<?pi before <text> root?><!-- <text> -->\n");
        break;
    default:
        break;
    }
    puts_b(&b, ROOT "  <siteinfo><sitename>Gen</sitename></siteinfo>\n");
    for (size_t p = 0; p < pages; p++) {
        printf_b(&b, "  <page>\n    <title>Page %zu &amp; \xc3\xa9</title>\n    <ns>%zu</ns>\n", p,
                 pick(&rng, 3));
        if (pick(&rng, 8) == 0)
            puts_b(&b, "    <!-- a comment with <text> in it -->\n");
        for (size_t r = 1 + pick(&rng, 2); r > 0; r--) {
            printf_b(&b, "    <revision>\n      <id>%zu</id>\n      ", 1000 + p);
            gen_text_element(&b, &rng, long_text);
            if (pick(&rng, 10) == 0)
                gen_text_element(&b, &rng, long_text);
            puts_b(&b, "\n      <sha1>abc</sha1>\n    </revision>\n");
        }
        puts_b(&b, "  </page>\n");
    }
    puts_b(&b, END);
    return b;
}

static void test_generated(void **state) {
    (void)state;
    static const uint64_t caps[] = {1, 7, 100, BUILD_CAP};
    for (uint64_t seed = 1; seed <= 12; seed++) {
        bytes doc = gen_dump(seed, 40, 40000);
        char what[64];
        snprintf(what, sizeof what, "generated dump %llu", (unsigned long long)seed);
        outcome valid;
        parse("doc.xml", doc.p, doc.len, 1, NULL, &valid);
        if (valid.rc)
            fail_msg("%s", valid.err);
        outcome_free(&valid);
        uint64_t rng = seed;
        for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
            outcome want;
            parse("doc.xml", doc.p, doc.len, caps[c], NULL, &want);
            check_with(what, &want, doc.p, doc.len, caps[c], &(chunking){.size = 1 << 16});
            check_with(what, &want, doc.p, doc.len, caps[c], &(chunking){.size = 64, .rng = &rng});
            outcome_free(&want);
        }
        check(what, doc.p, doc.len, BUILD_CAP, &(chunking){.size = 1});
        /* The filter is really at work: at the build's cap most text goes;
         * under a cap no text reaches, the text set aside. */
        assert_true(check_whole(what, doc.p, doc.len, BUILD_CAP) < doc.len / 2);
        assert_true(check_whole(what, doc.p, doc.len, 100000) < doc.len / 2);
        /* And through extract_file, from a file. */
        check_file(write_tmp("generated.xml", doc.p, doc.len), BUILD_CAP);
        free(doc.p);
    }
}

/* Every byte of a generated dump, in turn, replaced by a byte that matters
 * to XML or UTF-8, or the dump cut short there: filtered and unfiltered
 * parses fail (or not) alike, with the same message and line. Under the
 * sanitizers, which look for memory errors on the paths a corruption sends
 * both parses down (and where fuzz_extract feeds the parse arbitrary
 * bytes), every third byte: the markup recurs page after page at places
 * that differ in every remainder, so each kind of corruption still meets
 * each kind of markup; the plain build compares every byte. */
#ifdef __SANITIZE_ADDRESS__
enum { CORRUPT_STEP = 3 };
#else
enum { CORRUPT_STEP = 1 };
#endif
static void test_corrupted(void **state) {
    (void)state;
    static const uint8_t evil[] = {0x00, 0x01, 0x0C, '&',  '<',  '>',  ']',  ';',  '#',
                                   '\r', '\n', '"',  0x80, 0xBF, 0xC3, 0xE4, 0xED, 0xEF,
                                   0xF0, 0xF4, 0xFF, '/',  '!',  '?',  '-',  'x'};
    bytes doc = gen_dump(99, 5, 3000);
    uint64_t rng = 7;
    uint8_t *copy = malloc(doc.len);
    assert_non_null(copy);
    size_t failures = 0;
    for (size_t pos = 0; pos < doc.len; pos += CORRUPT_STEP) {
        memcpy(copy, doc.p, doc.len);
        copy[pos] = evil[pick(&rng, sizeof evil)];
        uint64_t cap = 1 + pick(&rng, 60);
        char what[64];
        snprintf(what, sizeof what, "byte %zu set to 0x%02x", pos, copy[pos]);
        /* The unfiltered parse once, for both chunkings. */
        outcome want;
        parse("doc.xml", copy, doc.len, cap, NULL, &want);
        failures += want.rc != 0;
        check_with(what, &want, copy, doc.len, cap,
                   &(chunking){.size = 1 + pick(&rng, 40), .rng = &rng});
        check_whole_with(what, &want, copy, doc.len, cap);
        outcome_free(&want);
        if (pos % 7 == 0) {
            snprintf(what, sizeof what, "cut at byte %zu", pos);
            check(what, doc.p, pos, cap, &(chunking){.size = 1 + pick(&rng, 40), .rng = &rng});
        }
    }
    /* The corruptions did break documents, in large numbers. */
    assert_true(failures > doc.len / CORRUPT_STEP / 4);
    free(copy);
    free(doc.p);
}

/* ------------------------------------------------------------ edge cases */

/* Eight elements open, and closed. */
#define B8 "<b><b><b><b><b><b><b><b>"
#define E8 "</b></b></b></b></b></b></b></b>"

static const char *const edge_docs[] = {
    /* references and characters straddling the cut */
    ROOT PAGE("Refs", "<text>ab&amp;cd&lt;ef&#x1F600;gh&#233;ij&#0000065;kl&quot;m</text>") END,
    ROOT PAGE("UTF-8", "<text>a\xf0\x9f\x98\x80"
                       "b\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
                       "c\xe4\xb8\xad\xc3\xa9\xf4\x8f\xbf\xbf\xef\xbf\xbd"
                       "d\xc2\x85</text>") END,
    /* markup inside text: passed whole */
    ROOT PAGE("CDATA", "<text>abcdef<![CDATA[ <text>x</text> ]]>ghijklmnop</text>") END,
    ROOT PAGE("CDATA first", "<text><![CDATA[0123456789]]>abcdefgh</text>") END,
    ROOT PAGE("Comment", "<text>abcdef<!-- </text> <text> -- ->ghi -->jklmnop</text>") END,
    ROOT PAGE("PI", "<text>abc<?pi <text> ? > ?>defghijkl</text>") END,
    ROOT PAGE("Nested", "<text>abcd<b>efgh</b>ijklmnop<text>inner text</text>qrst</text>") END,
    /* empty text elements, prefixes, attributes holding '>' */
    ROOT PAGE("Empty", "<text/>") PAGE("Empty2", "<text bytes=\"0\" deleted=\"deleted\" />")
        PAGE("After", "<text>0123456789abcdef</text>") END,
    ROOT PAGE("Prefixed", "<mw:text xml:space=\"preserve\">0123456789abcdef</mw:text>") END,
    ROOT PAGE("Attrs", "<text a=\"x>y\" b='/>' c=\"it's\"\n d = '\"&gt;'>0123456789abcdef</text>")
        END,
    ROOT PAGE("Not text", "<texts>0123456789</texts><textx/><mw:texts>abc</mw:texts>"
                          "<text>0123456789abcdef</text>") END,
    /* line breaks, brackets, whitespace and the rarer characters */
    ROOT PAGE("Breaks", "<text>ab\r\ncd\ref\n\r\ngh\r\r\nij\rk\n</text>") END,
    ROOT PAGE("CR last", "<text>ab\r</text><text>\r\n</text><text>\r</text>") END,
    ROOT PAGE("CR refs", "<text>a&#13;&#10;b&#xD;\nc&#xd;&#xA;\r&#13;\r\n;;x&#59;</text>") END,
    /* elements the parser does not read, dropped whole where nothing is
     * kept around them, and kept where something is */
    ROOT "<page><title>Leaves<b>x\ny</b>c</title><ns>0<i>1</i></ns><id>7</id>\r<id>8</id>\n"
         "<revision><id>9\r</id>\n<comment>a &amp; b; c&#59;</comment><a.b-c1>x</a.b-c1>"
         "<mw:id>1</mw:id><contributor>\n<username>U</username><id>3</id>\n</contributor>"
         "<text>ab<b>x</b>cd<sha1>s</sha1>ef</text><sha1>s</sha1></revision>"
         "<revision></revision></page>" END,
    ROOT "<page><title>Torn</title><revision><text>t</text></revision><revision-\n<id>1</id></"
         "revision></page>" END,
    ROOT "<page><title>Deep</title><revision>" B8 B8 B8 B8 B8 B8 B8 B8 B8
         "<id>1</id>" E8 E8 E8 E8 E8 E8 E8 E8 E8 "<text>t</text></revision></page>" END,
    ROOT "<page><title>Bare</title><revision><text>t</text></revision></page><page></page>" END,
    ROOT PAGE("After", "<text>t</text>") END "<id>1</id>",
    /* text elements the parser does not keep, around one it keeps */
    ROOT "<page><title>Outside</title><text>page text</text><revision><b><text>deep</text></b>"
         "<text>kept text</text></revision><text>after</text></page>" END,
    ROOT PAGE("Brackets", "<text>a]]b]]]c]>d]]]]e]]&gt;f]</text>") END,
    ROOT PAGE("Rare", "<text>\t\x7f \xef\xbb\xbf\t\xc2\x80x</text>") END,
    /* several text elements and revisions in a page */
    ROOT PAGE("Two texts",
              "<text>aaaa</text><text>bbbbbbbbbbbb</text>") "<page><title>Revs</"
                                                            "title><revision><text>first revision "
                                                            "text</text></revision>"
                                                            "<revision><text>second</text></"
                                                            "revision></page>" END,
    /* markup before and around the root */
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<?pi a > b <text> ?>\n<!-- <text> -->\n" ROOT PAGE(
        "Decl", "<text>0123456789abcdef</text>") END,
    "\xef\xbb\xbf<?xml version='1.0' encoding = 'utf8'?>" ROOT PAGE(
        "BOM", "<text>0123456789abcdef</text>") END,
    /* a start tag torn between chunks at every byte, CDATA outside text */
    ROOT "<page><title>Tags<![CDATA[]]></title><revision><mw:text\n\txml:space='preserve'  >"
         "0123456789ab</mw:text  ></revision></page>" END,
};

/* Every cap from 1 to past the longest text, every chunk size from 1 to 8,
 * and for a few caps every split point. */
static void test_edge_cases(void **state) {
    (void)state;
    for (size_t d = 0; d < sizeof edge_docs / sizeof *edge_docs; d++) {
        const char *doc = edge_docs[d];
        size_t len = strlen(doc);
        char what[64];
        snprintf(what, sizeof what, "edge case %zu", d);
        /* The unfiltered parse once a cap, for all its chunkings. */
        for (uint64_t cap = 1; cap <= 70; cap++) {
            outcome want;
            parse("doc.xml", (const uint8_t *)doc, len, cap, NULL, &want);
            for (size_t size = 1; size <= 8; size++)
                check_with(what, &want, doc, len, cap, &(chunking){.size = size});
            outcome_free(&want);
        }
        static const uint64_t split_caps[] = {1, 2, 3, 5, 8, 13, 21};
        for (size_t c = 0; c < sizeof split_caps / sizeof *split_caps; c++) {
            outcome want;
            parse("doc.xml", (const uint8_t *)doc, len, split_caps[c], NULL, &want);
            for (size_t at = 1; at < len; at++)
                check_with(what, &want, doc, len, split_caps[c],
                           &(chunking){.first = at, .size = len});
            outcome_free(&want);
        }
        /* Only text before any markup in it is dropped: none in "CDATA first". */
        if (!strstr(doc, "CDATA first"))
            assert_true(check_whole(what, doc, len, 1) < len);
    }
}

/* ------------------------------------------------------------ bad input */

/* Line of the first byte of `needle` in doc. */
static int line_of(const char *doc, size_t len, const char *needle) {
    const char *at = memmem(doc, len, needle, strlen(needle));
    assert_non_null(at);
    int line = 1;
    for (const char *p = doc; p < at; p++)
        line += *p == '\n';
    return line;
}

/* A page whose text runs over 30 lines before `bad` and goes on after it. */
static size_t bad_doc(char *buf, size_t size, const char *bad, size_t bad_len, const char *after) {
    bytes b = {0};
    puts_b(&b, ROOT "<page><title>Bad</title><revision><text>");
    for (int i = 0; i < 30; i++)
        printf_b(&b, "line %d of text &amp; more [[text]]\r\n", i);
    puts_b(&b, "MARK ");
    put(&b, bad, bad_len);
    puts_b(&b, after);
    assert_true(b.len <= size);
    memcpy(buf, b.p, b.len);
    free(b.p);
    return b.len;
}

static void expect_error(const char *what, const char *doc, size_t len, const char *line_piece) {
    outcome want;
    parse("doc.xml", (const uint8_t *)doc, len, 8, NULL, &want);
    if (!want.rc)
        fail_msg("%s: the unfiltered parse accepts it", what);
    if (!strstr(want.err, line_piece))
        fail_msg("%s: '%s' lacks '%s'", what, want.err, line_piece);
    outcome_free(&want);
    for (size_t size = 1; size <= 9; size += 4)
        check(what, doc, len, 8, &(chunking){.size = size});
    for (uint64_t cap = 1; cap < 2000; cap = cap * 2 + 3)
        check_whole(what, doc, len, cap);
    /* The same through extract_file, with the file's name in the message. */
    check_file(write_tmp("bad.xml", doc, len), 8);
}

static void test_bad_input_in_dropped_text(void **state) {
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
#define BAD(s) {s, sizeof s - 1}
        BAD("\xc3x"),
        BAD("\xff"),
        BAD("\xc0\x80"),
        BAD("\xed\xa0\x80"),
        BAD("\xef\xbf\xbe"),
        BAD("\xef\xbf\xbf"),
        BAD("\xf4\x90\x80\x80"),
        BAD("\x80"),
        BAD("\xe4\xb8<"),
        BAD("\0"),
        BAD("\x01"),
        BAD("\x1b"),
        BAD("& x"),
        BAD("&"),
        BAD("&foo;"),
        BAD("&#0;"),
        BAD("&#xD800;"),
        BAD("&#x110000;"),
        BAD("&#65"),
        BAD("&amp"),
        BAD("&#X41;"),
        BAD("&#x;"),
        BAD("&am<"),
        BAD("]]>"),
        BAD("]]]>"),
        BAD("&#xFFFE;"),
        BAD("&nbsp;"),
        BAD("&#99999999999999999;"),
#undef BAD
    };
    char doc[8192];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t len = bad_doc(doc, sizeof doc, bad[i].bytes, bad[i].len,
                             "\nafter\n</text></revision></page>" END);
        char what[64], line[32];
        snprintf(what, sizeof what, "bad text %zu", i);
        snprintf(line, sizeof line, "line %d:", line_of(doc, len, "MARK"));
        expect_error(what, doc, len, line);
    }
}

/* Input that ends inside dropped text, a reference or a character. */
static void test_truncated_in_dropped_text(void **state) {
    (void)state;
    /* The error names the line the input ends on, wherever libxml2 stopped
     * reading (it leaves an LF after a reference unread at the end). */
    static const char *const tails[] = {"",       "\n\n",     "&am",     "&#x1F6", "\xf0\x9f\x98",
                                        "]]",     "\r",       "&amp;\n", "x;\n",   "&#65;\n\n",
                                        "&lt;\r", "&gt;\r\n", "a\n"};
    char doc[8192];
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        size_t len = bad_doc(doc, sizeof doc, tails[i], strlen(tails[i]), "");
        int lines = 1;
        for (size_t k = 0; k < len; k++)
            lines += doc[k] == '\n';
        char what[64], line[32];
        snprintf(what, sizeof what, "truncated text %zu", i);
        snprintf(line, sizeof line, "line %d:", lines);
        expect_error(what, doc, len, line);
    }
}

/* ------------------------------------------------------------ encodings */

static void test_other_encodings_pass_untouched(void **state) {
    (void)state;
    static const char latin1[] = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n" ROOT PAGE(
        "Latin", "<text>caf\xe9 caf\xe9 caf\xe9 0123456789</text>") END;
    static const char utf16le[] = "<\0m\0e\0d\0i\0a\0w\0i\0k\0i\0";
    static const char bom16[] = "\xff\xfe<\0m\0";
    static const char doctype[] =
        "<!DOCTYPE mediawiki>" ROOT PAGE("D", "<text>0123456789</text>") END;
    const struct {
        const char *doc;
        size_t len;
    } docs[] = {{latin1, sizeof latin1 - 1},
                {utf16le, sizeof utf16le - 1},
                {bom16, sizeof bom16 - 1},
                {doctype, sizeof doctype - 1}};
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        text_skip *ts = text_skip_init(1, NULL);
        assert_non_null(ts);
        uint8_t out[1024];
        assert_true(docs[i].len + TEXT_SKIP_SLACK <= sizeof out);
        size_t n = text_skip_run(ts, docs[i].doc, docs[i].len, out);
        n += text_skip_finish(ts, out + n);
        text_skip_destroy(ts);
        assert_int_equal(n, docs[i].len);
        assert_memory_equal(out, docs[i].doc, n);
        check_whole("other encoding", docs[i].doc, docs[i].len, 1);
    }
    /* The Latin-1 text decodes to more bytes than it has: kept right. */
    outcome o;
    parse("latin1.xml", (const uint8_t *)latin1, sizeof latin1 - 1, 12, NULL, &o);
    assert_int_equal(o.rc, 0);
    assert_true(memmem(o.recs.p, o.recs.len, "caf\xc3\xa9 caf\xc3\xa9", 11) != NULL);
    outcome_free(&o);
}

/* ------------------------------------------------------------ size */

static int count_value(void *ctx, const sp_record *r, sp_error *err) {
    (void)err;
    *(uint64_t *)ctx += r->value_len;
    return 0;
}

/* A 20 MiB text: the parser gets little more than its line breaks, and the
 * record is the same; the standalone extract (no cap) still keeps it all. */
static void test_huge_text(void **state) {
    (void)state;
    static const char line[] = "a line of text &amp; [[links]] \xe4\xb8\xad\xe6\x96\x87 and more\n";
    bytes b = {0};
    puts_b(&b, ROOT "<page><title>Huge</title><revision><text>");
    uint64_t decoded = 0;
    while (decoded < ((uint64_t)20 << 20)) {
        puts_b(&b, line);
        decoded += sizeof line - 1 - strlen("amp;");
    }
    puts_b(&b, "</text></revision></page>" END);
    size_t fed = check("huge text", b.p, b.len, BUILD_CAP, &(chunking){.size = 1 << 20});
    assert_true(fed < b.len / 20);

    const char *path = write_tmp("huge.xml", b.p, b.len);
    check_file(path, BUILD_CAP);
    extract_options opts;
    extract_options_init(&opts);
    uint64_t kept = 0;
    sp_error err = {0};
    sp_sink sink = {.put = count_value, .ctx = &kept};
    assert_int_equal(extract_file(path, &opts, &sink, NULL, &err), 0);
    assert_int_equal(kept, decoded);
    free(b.p);
}

static int setup(void **state) {
    (void)state;
    tmpdir = test_dir_make("test_extract_skip");
    return tmpdir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(tmpdir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpora),
        cmocka_unit_test(test_sample_xml),
        cmocka_unit_test(test_generated),
        cmocka_unit_test(test_corrupted),
        cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_bad_input_in_dropped_text),
        cmocka_unit_test(test_truncated_in_dropped_text),
        cmocka_unit_test(test_other_encodings_pass_untouched),
        cmocka_unit_test(test_huge_text),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
