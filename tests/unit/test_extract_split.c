/*
 * test_extract_split.c: the cut points page_split.h offers. Each document
 * is scanned whole and byte by byte (the scanner must carry its state over
 * any piece boundary); the cut points are exactly the start tags directly
 * inside the root, none inside comments, CDATA, processing instructions,
 * attribute values or deeper elements, none after a DOCTYPE or in a
 * document that is not UTF-8; the head is the declaration and root tag
 * with line breaks made spaces. text_skip_between_pages, which checks a
 * chunk's end in the filter's pass (parse_pool.c), answers "a cut" only
 * where page_split_between_pages does, and on well-formed markup wherever
 * it does.
 */
#include "stages/extract/page_split.h"
#include "stages/extract/text_skip.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_CUTS 16

/* The cut points of doc, byte by byte; checks that a whole scan ends on the
 * same last one. Returns how many. */
static size_t cuts_of(const char *doc, uint64_t *cuts) {
    size_t n = strlen(doc), count = 0;
    page_split *s = page_split_init(NULL);
    assert_non_null(s);
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        page_split_scan(s, (const uint8_t *)doc + i, 1);
        if (page_split_last(s) != last) {
            last = page_split_last(s);
            assert_true(count < MAX_CUTS);
            cuts[count++] = last;
        }
    }
    page_split *whole = page_split_init(NULL);
    page_split_scan(whole, (const uint8_t *)doc, n);
    assert_int_equal(page_split_last(whole), last);
    page_split_destroy(whole);
    page_split_destroy(s);
    return count;
}

/* The offsets of each occurrence of mark in doc. */
static size_t offsets_of(const char *doc, const char *mark, uint64_t *out) {
    size_t count = 0;
    for (const char *p = doc; (p = strstr(p, mark)); p++)
        out[count++] = (uint64_t)(p - doc);
    return count;
}

#define ROOT "<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.11/\"\n version=\"0.11\">\n"

static void test_pages_and_siteinfo(void **state) {
    (void)state;
    const char *doc = ROOT "  <siteinfo><sitename>S</sitename></siteinfo>\n"
                           "  <page><title>A</title><revision><text>x &lt;page&gt;</text>"
                           "</revision></page>\n  <page/>\n  <page><title>B</title></page>\n"
                           "</mediawiki>\n<page>\n";
    uint64_t got[MAX_CUTS];
    size_t n = cuts_of(doc, got);
    assert_int_equal(n, 4);
    assert_int_equal(got[0], strstr(doc, "<siteinfo>") - doc);
    assert_int_equal(got[1], strstr(doc, "<page>") - doc);
    assert_int_equal(got[2], strstr(doc, "<page/>") - doc);
    assert_int_equal(got[3], strstr(doc, "<page><title>B") - doc);
}

static void test_no_cut_inside_markup_or_deeper(void **state) {
    (void)state;
    const char *doc = ROOT "<page a=\"<page>\" b='>'><page>nested</page></page>\n"
                           "<!-- <page> --><?pi <page> ?><![CDATA[ <page> ]]>"
                           "<page><x/><y>text</y></page></mediawiki>";
    uint64_t got[MAX_CUTS];
    assert_int_equal(cuts_of(doc, got), 2);
    assert_int_equal(got[0], strstr(doc, "<page a") - doc);
    assert_int_equal(got[1], strstr(doc, "<page><x/>") - doc);
}

static void test_cut_after_comments_and_cdata(void **state) {
    (void)state;
    const char *doc = ROOT "<!-- c --><?pi x?>\n<@page/><![CDATA[]]><@page/></mediawiki>";
    uint64_t got[MAX_CUTS], want[MAX_CUTS];
    size_t n = cuts_of(doc, got);
    /* The '@' keeps the tags apart for offsets_of; the parser never sees it. */
    size_t m = offsets_of(doc, "<@page/>", want);
    assert_int_equal(n, m);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

static void test_doctype_and_other_encodings_stop_cutting(void **state) {
    (void)state;
    uint64_t got[MAX_CUTS];
    assert_int_equal(cuts_of("<!DOCTYPE x>" ROOT "<page/><page/></mediawiki>", got), 0);
    assert_int_equal(cuts_of(ROOT "<page/><!DOCTYPE x><page/><page/></mediawiki>", got), 1);
    assert_int_equal(
        cuts_of("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>" ROOT "<page/></mediawiki>", got),
        0);
    assert_int_equal(cuts_of("\xFF\xFE<\0m\0", got), 0);
    assert_int_equal(cuts_of(" " ROOT "<page/></mediawiki>", got), 0);
    assert_int_equal(cuts_of("<mediawiki/><page/>", got), 0);
    /* Before the broken tag, a cut; none after it. */
    assert_int_equal(cuts_of(ROOT "<page <page/><page/></mediawiki>", got), 1);
    assert_int_equal(cuts_of("\xEF\xBB\xBF<?xml version='1.0' encoding='utf-8'?>" ROOT
                             "<page/></mediawiki>",
                             got),
                     1);
}

static void test_head(void **state) {
    (void)state;
    const char *doc = "<?xml version=\"1.0\"\n encoding=\"UTF-8\"?>\n<!-- c -->\n" ROOT "<page/>";
    page_split *s = page_split_init(NULL);
    size_t len;
    page_split_scan(s, (const uint8_t *)doc, 20);
    assert_null(page_split_head(s, &len));
    page_split_scan(s, (const uint8_t *)doc + 20, strlen(doc) - 20);
    const uint8_t *head = page_split_head(s, &len);
    const char want[] = "<?xml version=\"1.0\"  encoding=\"UTF-8\"?><mediawiki "
                        "xmlns=\"http://www.mediawiki.org/xml/export-0.11/\"  version=\"0.11\">";
    assert_non_null(head);
    assert_int_equal(len, sizeof want - 1);
    assert_memory_equal(head, want, len);
    /* The declaration takes two lines and the comment one. */
    assert_int_equal(page_split_root_line(s), 4);
    page_split_destroy(s);

    /* Without a declaration the head is the root tag alone. */
    s = page_split_init(NULL);
    page_split_scan(s, (const uint8_t *)ROOT "<page/>", sizeof ROOT + 6);
    head = page_split_head(s, &len);
    assert_non_null(head);
    assert_int_equal(len, sizeof ROOT - 2);
    assert_memory_equal(head, "<mediawiki xmlns", 16);
    assert_int_equal(page_split_root_line(s), 1);
    page_split_destroy(s);
}

/* After each byte of a fragment (fed one byte at a time), whether the
 * filter's lexer and page_split's say the bytes so far end between pages;
 * counts the places where they differ. The cap is small, so the filter
 * drops text too. */
static size_t verdicts_differ(const char *frag) {
    size_t n = strlen(frag), differ = 0;
    page_split *ps = page_split_init_fragment(4096, NULL);
    text_skip *ts = text_skip_init_fragment(3, NULL);
    assert_non_null(ps);
    assert_non_null(ts);
    uint8_t out[1 + TEXT_SKIP_SLACK];
    for (size_t i = 0; i < n; i++) {
        page_split_scan(ps, (const uint8_t *)frag + i, 1);
        (void)text_skip_run(ts, frag + i, 1, out);
        bool split = page_split_between_pages(ps), skip = text_skip_between_pages(ts);
        /* A cut where page_split sees none would let a chunk parse from a
         * place that is no cut point. */
        if (skip && !split)
            fail_msg("%s: text_skip cuts after byte %zu, page_split does not", frag, i);
        differ += skip != split;
    }
    page_split_destroy(ps);
    text_skip_destroy(ts);
    return differ;
}

static void test_filter_checks_cuts_as_page_split(void **state) {
    (void)state;
    /* Well formed: the same answer after every byte. */
    assert_int_equal(verdicts_differ("<page><title>A &amp; B</title><revision><text bytes=\"3\" "
                                     "xml:space=\"preserve\">long text &lt;x&gt; ]] &#233; "
                                     "\xC3\xA9 more</text></revision></page>\n  <page/>\n"
                                     "<!-- <page> --><?pi <page> ?><![CDATA[ <a> ]]>\n"
                                     "<page a=\"<b>\" b='>' c=\"/\"><x/><text/><y>t</y></page>\n"
                                     "<siteinfo><sitename>S</sitename></siteinfo> "),
                     0);
    /* Markup the two lexers read otherwise, and the root's end: never a
     * cut from there on (page_split may still see one). */
    const char *bad[] = {
        "<page a\"b>x</page> <page>", "<pa\"ge>\"></page> <page/> ",
        "<\"a\">\"</a> <page/> ",     "<>x</> <page/> ",
        "<<page/> <page/> ",          "<page <x/> </page> <page/> ",
        "<page a='1' <x/>> <page/> ", "</mediawiki> <page/> ",
        "<page/></mediawiki><page> ", "<pa'ge/><page/> ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        (void)verdicts_differ(bad[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_and_siteinfo),
        cmocka_unit_test(test_no_cut_inside_markup_or_deeper),
        cmocka_unit_test(test_cut_after_comments_and_cdata),
        cmocka_unit_test(test_doctype_and_other_encodings_stop_cutting),
        cmocka_unit_test(test_head),
        cmocka_unit_test(test_filter_checks_cuts_as_page_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
