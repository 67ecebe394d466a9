/*
 * test_extract.c: unit tests of the extract stage (source, parser, text
 * buffer, command) on the real corpora ($SSTPIPE_CORPORA), on small inline
 * documents for every rule and every kind of bad input, and on inputs
 * recompressed here with the bzip2/gzip/xz/zstd tools.
 */
#include "stages/common/recstream.h"
#include "stages/extract/extract.h"
#include "stages/extract/parse_pool.h"

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_dir.h"

#define HDR                                                                                        \
    "<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.11/\" version=\"0.11\" "             \
    "xml:lang=\"en\">\n"

static char *tmpdir;

/* ------------------------------------------------------------ helpers */

typedef struct rec {
    char *key;
    char *value;
    size_t value_len;
} rec;

typedef struct result {
    rec *recs;
    size_t n, cap;
    extract_stats stats;
    sp_error err;
    int rc;
} result;

static int collect(void *ctx, const sp_record *r, sp_error *err) {
    (void)err;
    result *res = ctx;
    if (res->n == res->cap) {
        res->cap = res->cap ? 2 * res->cap : 64;
        res->recs = realloc(res->recs, res->cap * sizeof *res->recs);
        assert_non_null(res->recs);
    }
    rec *c = &res->recs[res->n++];
    c->key = strndup((const char *)r->key, r->key_len);
    c->value = malloc(r->value_len + 1);
    assert_non_null(c->value);
    if (r->value_fd >= 0)
        assert_int_equal(pread(r->value_fd, c->value, r->value_len, 0), (ssize_t)r->value_len);
    else
        memcpy(c->value, r->value, r->value_len);
    c->value[r->value_len] = '\0';
    c->value_len = r->value_len;
    return 0;
}

static void result_free(result *res) {
    for (size_t i = 0; i < res->n; i++) {
        free(res->recs[i].key);
        free(res->recs[i].value);
    }
    free(res->recs);
    memset(res, 0, sizeof *res);
}

static void run(const char *path, const extract_options *opts, result *res) {
    memset(res, 0, sizeof *res);
    extract_options defaults;
    extract_options_init(&defaults);
    sp_sink sink = {.put = collect, .ctx = res};
    res->rc = extract_file(path, opts ? opts : &defaults, &sink, &res->stats, &res->err);
}

static void run_ok(const char *path, const extract_options *opts, result *res) {
    run(path, opts, res);
    if (res->rc)
        fail_msg("extract %s failed: %s", path, res->err.msg);
}

/* Runs and expects failure with a message containing every given piece. */
static void run_fails(const char *path, const extract_options *opts, result *res, ...) {
    run(path, opts, res);
    if (res->rc == 0)
        fail_msg("extract %s succeeded, expected an error", path);
    assert_true(res->err.set);
    va_list ap;
    va_start(ap, res);
    for (const char *piece; (piece = va_arg(ap, const char *));)
        if (!strstr(res->err.msg, piece))
            fail_msg("error '%s' lacks '%s'", res->err.msg, piece);
    va_end(ap);
}

static const rec *find(const result *res, const char *key) {
    for (size_t i = 0; i < res->n; i++)
        if (!strcmp(res->recs[i].key, key))
            return &res->recs[i];
    fail_msg("no record '%s'", key);
    return NULL;
}

static void path_in_tmp(char *out, const char *name) {
    assert_true(snprintf(out, PATH_MAX, "%s/%s", tmpdir, name) < PATH_MAX);
}

static void write_bytes(char *path, const char *name, const void *data, size_t len) {
    path_in_tmp(path, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void write_doc(char *path, const char *name, const char *doc) {
    write_bytes(path, name, doc, strlen(doc));
}

static const char *corpus(const char *name) {
    static char path[PATH_MAX];
    const char *dir = getenv("SSTPIPE_CORPORA");
    if (!dir)
        fail_msg("SSTPIPE_CORPORA is not set");
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void sh(const char *fmt, ...) {
    char cmd[4 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("command failed: %s", cmd);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static void totals(const result *res, size_t n, size_t key_bytes, size_t value_bytes) {
    size_t k = 0, v = 0;
    for (size_t i = 0; i < res->n; i++) {
        k += strlen(res->recs[i].key);
        v += res->recs[i].value_len;
    }
    assert_int_equal(res->n, n);
    assert_int_equal(k, key_bytes);
    assert_int_equal(v, value_bytes);
}

static void same_records(const result *a, const result *b) {
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->recs[i].key, b->recs[i].key);
        assert_int_equal(a->recs[i].value_len, b->recs[i].value_len);
        assert_memory_equal(a->recs[i].value, b->recs[i].value, a->recs[i].value_len);
    }
}

/* The compressed byte offset N from "... near compressed byte N ...". */
static unsigned long long error_offset(const result *res) {
    const char *at = strstr(res->err.msg, "near compressed byte ");
    if (!at)
        fail_msg("no offset in '%s'", res->err.msg);
    return strtoull(at + strlen("near compressed byte "), NULL, 10);
}

static int setup(void **state) {
    (void)state;
    tmpdir = test_dir_make("test_extract");
    return tmpdir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(tmpdir);
}

/* ------------------------------------------------------------ corpora */

static void test_corpus_plain(void **state) {
    (void)state;
    result res;
    run_ok(corpus("enwiki-11pages.xml"), NULL, &res);
    /* Totals computed independently with Python's xml.etree. */
    totals(&res, 11, 213, 15755);
    assert_int_equal(res.stats.pages, 11);
    assert_int_equal(res.stats.records, 11);
    assert_int_equal(res.stats.input_bytes, 25813);
    assert_int_equal(res.stats.xml_bytes, 25813);
    assert_string_equal(res.recs[0].key, "Konica Minolta Cup");
    assert_string_equal(find(&res, "Mr. & Mrs.")->value, "#REDIRECT [[Mr & Mrs]]");
    assert_string_equal(find(&res, "Penny-and-dime scam")->value,
                        "#REDIRECT [[Coin rolling scams]]");
    assert_true(!strncmp(find(&res, "Category:Amblyornis")->value,
                         "'''Amblyornis''' is a genus of the [[Ptilonorhynchidae]]", 55));
    result_free(&res);
}

static void test_corpus_bz2(void **state) {
    (void)state;
    result res;
    run_ok(corpus("enwiki-206pages.xml.bz2"), NULL, &res);
    totals(&res, 206, 3084, 5752489);
    assert_int_equal(res.stats.pages, 206);
    assert_int_equal(res.stats.input_bytes, 1695871);
    assert_int_equal(res.stats.xml_bytes, 6089746);
    assert_string_equal(res.recs[0].key, "AccessibleComputing");
    assert_string_equal(res.recs[0].value,
                        "#REDIRECT [[Computer accessibility]]\n\n{{Redr|move|from CamelCase|up}}");
    assert_int_equal(find(&res, "Anarchism")->value_len, 180822);
    result_free(&res);

    run_ok(corpus("simplewiki-7pages.xml.bz2"), NULL, &res);
    totals(&res, 7, 73, 62712);
    const rec *april = find(&res, "April");
    assert_int_equal(april->value_len, 21801);
    assert_true(!strncmp(april->value, "{{monththisyear|4}}\n'''April''' is the 4", 40));
    assert_string_equal(april->value + april->value_len - 12, "\n\n{{Months}}");
    assert_int_equal(find(&res, "Wikipedia:Administrators")->value_len, 12814);
    result_free(&res);
}

static void test_corpus_filters(void **state) {
    (void)state;
    result res;
    extract_options o;
    extract_options_init(&o);
    o.skip_redirects = true;
    run_ok(corpus("enwiki-206pages.xml.bz2"), &o, &res);
    assert_int_equal(res.n, 106);
    assert_int_equal(res.stats.pages, 206);
    assert_int_equal(res.stats.skipped_redirects, 100);
    result_free(&res);

    int ns[] = {4, 14};
    extract_options_init(&o);
    o.namespaces = ns;
    o.namespace_count = 2;
    run_ok(corpus("enwiki-11pages.xml"), &o, &res);
    assert_int_equal(res.n, 4);
    assert_int_equal(res.stats.skipped_namespace, 7);
    for (size_t i = 0; i < res.n; i++)
        assert_true(!strncmp(res.recs[i].key, "Wikipedia:", 10) ||
                    !strncmp(res.recs[i].key, "Category:", 9));
    result_free(&res);
}

/* ------------------------------------------------------------ records */

static void test_entities_and_revisions(void **state) {
    (void)state;
    char path[PATH_MAX];
    write_doc(path, "rev.xml",
              "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n" HDR
              "<siteinfo><sitename>W</sitename><namespaces><namespace key=\"0\" />"
              "</namespaces></siteinfo>\n"
              "<page><title>A &amp; B &#233; &lt;&#x65E5;&gt;</title><ns>0</ns><id>1</id>\n"
              "  <revision><id>1</id><text>first</text></revision>\n"
              "  <revision><id>2</id><comment>a comment</comment><text>second</text></revision>\n"
              "  <revision><id>3</id><comment>not text</comment>"
              "<text bytes=\"9\" xml:space=\"preserve\">third &quot;&apos;&#10;</text>"
              "</revision>\n"
              "</page>\n"
              "<page><title>Deleted</title><revision><text>old</text></revision>"
              "<revision><text deleted=\"deleted\" /></revision></page>\n"
              "<page><title>No text</title><revision><text>old</text></revision>"
              "<revision><comment>c</comment></revision></page>\n"
              "<page><title>No revision</title><ns>0</ns></page>\n"
              "<page><title>CDATA</title><revision><text><![CDATA[a<b>&amp;]]> c</text>"
              "</revision><upload><text>upload text</text></upload></page>\n"
              "</mediawiki>\n");
    result res;
    run_ok(path, NULL, &res);
    assert_int_equal(res.n, 5);
    assert_string_equal(res.recs[0].key, "A & B \xc3\xa9 <\xe6\x97\xa5>");
    assert_string_equal(res.recs[0].value, "third \"'\n");
    assert_string_equal(find(&res, "Deleted")->value, "");
    assert_string_equal(find(&res, "No text")->value, "");
    assert_string_equal(find(&res, "No revision")->value, "");
    assert_string_equal(find(&res, "CDATA")->value, "a<b>&amp; c");
    result_free(&res);
}

static void test_prefixed_schema_010(void **state) {
    (void)state;
    char path[PATH_MAX];
    write_doc(path, "pfx.xml",
              "<mw:mediawiki xmlns:mw=\"http://www.mediawiki.org/xml/export-0.10/\">"
              "<mw:page><mw:title>Talk:Foo</mw:title><mw:ns>1</mw:ns><mw:revision>"
              "<mw:text>body</mw:text></mw:revision></mw:page></mw:mediawiki>");
    result res;
    run_ok(path, NULL, &res);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.recs[0].key, "Talk:Foo");
    assert_string_equal(res.recs[0].value, "body");
    result_free(&res);
}

/* UTF-8 (BMP only) to UTF-16LE with a byte-order mark. */
static size_t to_utf16le(const char *s, uint8_t *out) {
    size_t n = 0;
    out[n++] = 0xFF;
    out[n++] = 0xFE;
    for (const uint8_t *p = (const uint8_t *)s; *p;) {
        unsigned cp;
        if (*p < 0x80) {
            cp = *p++;
        } else if (*p < 0xE0) {
            cp = (unsigned)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
            p += 2;
        } else {
            cp = (unsigned)(p[0] & 0x0F) << 12 | (unsigned)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
            p += 3;
        }
        out[n++] = (uint8_t)cp;
        out[n++] = (uint8_t)(cp >> 8);
    }
    return n;
}

static void test_utf16_bom(void **state) {
    (void)state;
    const char *doc = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n" HDR
                      "<page><title>Caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac</title><revision>"
                      "<text>na\xc3\xafve &amp; \xe2\x82\xac</text></revision></page>\n"
                      "</mediawiki>\n";
    uint8_t buf[1024];
    size_t n = to_utf16le(doc, buf);
    char path[PATH_MAX];
    write_bytes(path, "utf16.xml", buf, n);
    result res;
    run_ok(path, NULL, &res);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.recs[0].key, "Caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac");
    assert_string_equal(res.recs[0].value, "na\xc3\xafve & \xe2\x82\xac");
    assert_int_equal(res.stats.xml_bytes, n);
    result_free(&res);
}

static const char filter_doc[] =
    HDR "<page><title>Main</title><ns>0</ns><revision><text>m</text></revision></page>\n"
        "<page><title>Redir</title><ns>0</ns><redirect title=\"Main\" />"
        "<revision><text>#REDIRECT [[Main]]</text></revision></page>\n"
        "<page><title>Talk:Main</title><ns> 1 </ns><revision><text>t</text></revision></page>\n"
        "<page><title>Category:C</title><ns>14</ns><redirect title=\"Main\" />"
        "<revision><text>c</text></revision></page>\n"
        "<page><title>Category:D</title><ns>14</ns><revision><text>d</text></revision></page>\n"
        "</mediawiki>\n";

static void test_namespaces_and_redirects(void **state) {
    (void)state;
    char path[PATH_MAX];
    write_doc(path, "filter.xml", filter_doc);
    result res;
    run_ok(path, NULL, &res);
    assert_int_equal(res.n, 5);
    assert_string_equal(find(&res, "Redir")->value, "#REDIRECT [[Main]]");
    result_free(&res);

    int ns[] = {0, 14};
    extract_options o;
    extract_options_init(&o);
    o.namespaces = ns;
    o.namespace_count = 2;
    o.skip_redirects = true;
    run_ok(path, &o, &res);
    assert_int_equal(res.n, 2);
    assert_string_equal(res.recs[0].key, "Main");
    assert_string_equal(res.recs[1].key, "Category:D");
    assert_string_equal(res.recs[1].value, "d");
    assert_int_equal(res.stats.pages, 5);
    assert_int_equal(res.stats.records, 2);
    assert_int_equal(res.stats.skipped_namespace, 1);
    assert_int_equal(res.stats.skipped_redirects, 2);
    result_free(&res);
}

static void test_value_cap(void **state) {
    (void)state;
    char path[PATH_MAX];
    write_doc(path, "cap.xml",
              HDR "<page><title>Long</title><revision><text>Hello, &amp;world</text></revision>"
                  "</page><page><title>Short</title><revision><text>Hi</text></revision></page>"
                  "</mediawiki>");
    extract_options o;
    extract_options_init(&o);
    o.value_cap = 8;
    result res;
    run_ok(path, &o, &res);
    assert_int_equal(res.n, 2);
    assert_int_equal(res.recs[0].value_len, 8);
    assert_string_equal(res.recs[0].value, "Hello, &");
    assert_string_equal(res.recs[1].value, "Hi");
    result_free(&res);
}

/* ------------------------------------------------------------ spilling */

#define BIG_TEXT_BYTES ((size_t)20 << 20)
#define SPILL_LINE "line %08zu abcdefghijklmnopqrstuvwxyz 0123456789 &amp; &lt;&#60;&gt;\n"

/* The decoded text of the big page, byte i. Lines are fixed-length. */
static void big_line(size_t i, char *out, size_t *len) {
    *len =
        (size_t)snprintf(out, 128, "line %08zu abcdefghijklmnopqrstuvwxyz 0123456789 & <<>\n", i);
}

typedef struct spill_check {
    uint64_t expect_len;
    bool expect_spill; /* value_fd >= 0 rather than in memory */
    int bad;           /* exit code describing the first mismatch; 0 when all is right */
    int records;
} spill_check;

static int check_spilled(void *ctx, const sp_record *r, sp_error *err) {
    (void)err;
    spill_check *c = ctx;
    c->records++;
    if (r->key_len != 3 || memcmp(r->key, "Big", 3)) {
        if (r->value_len != 5 || memcmp(r->value, "small", 5))
            c->bad = c->bad ? c->bad : 10;
        return 0;
    }
    if ((r->value_fd >= 0) != c->expect_spill)
        c->bad = c->bad ? c->bad : 11;
    if (r->value_len != c->expect_len)
        c->bad = c->bad ? c->bad : 12;
    if (c->bad)
        return 0;
    /* Compare the scratch file with the expected text, a line at a time. */
    static char got[1 << 16];
    char want[128];
    size_t line = 0, want_len = 0, want_pos = 0;
    for (uint64_t off = 0; off < r->value_len;) {
        size_t n = sizeof got;
        if (n > r->value_len - off)
            n = (size_t)(r->value_len - off);
        if (r->value_fd < 0)
            memcpy(got, r->value + off, n);
        else if (pread(r->value_fd, got, n, (off_t)off) != (ssize_t)n) {
            c->bad = 13;
            return 0;
        }
        for (size_t i = 0; i < n; i++) {
            if (want_pos == want_len) {
                big_line(line++, want, &want_len);
                want_pos = 0;
            }
            if (got[i] != want[want_pos++]) {
                c->bad = 14;
                return 0;
            }
        }
        off += n;
    }
    return 0;
}

/* Writes a dump whose page "Big" has at least BIG_TEXT_BYTES of text; returns its length. */
static uint64_t write_big_doc(char *path) {
    path_in_tmp(path, "big.xml");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(HDR "<page><title>Big</title><revision><text>old</text></revision>"
              "<revision><text xml:space=\"preserve\">",
          f);
    uint64_t decoded = 0;
    char line[128];
    for (size_t i = 0; decoded < BIG_TEXT_BYTES; i++) {
        size_t n;
        big_line(i, line, &n);
        decoded += n;
        fprintf(f, SPILL_LINE, i);
    }
    fputs("</text></revision></page>\n<page><title>Small</title><revision><text>small</text>"
          "</revision></page>\n</mediawiki>\n",
          f);
    assert_int_equal(fclose(f), 0);
    return decoded;
}

/*
 * Extracts in a child process, so that its peak RSS (from wait4) measures
 * this extraction alone. Returns the child's exit code; *rss_growth_kb is
 * how much the peak grew during extract_file.
 */
static int extract_in_child(const char *path, uint64_t cap, unsigned threads, uint64_t expect_len,
                            bool expect_spill, long *rss_growth_kb) {
    /* libxml2 and libarchive are loaded by the first extraction
     * (stages/common/dynlib.h): a small one first, so that the figure is
     * this page's cost, not the libraries'. */
    char small[PATH_MAX];
    write_doc(small, "small.xml",
              "<mediawiki><page><title>A</title><revision><text>a</text></revision></page>"
              "</mediawiki>");
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pipefd[0]);
        result loaded;
        run(small, NULL, &loaded);
        if (loaded.rc)
            _exit(31);
        result_free(&loaded);
        struct rusage before, after;
        getrusage(RUSAGE_SELF, &before);
        extract_options o;
        extract_options_init(&o);
        o.value_cap = cap;
        o.tmp_dir = tmpdir;
        o.threads = threads;
        spill_check c = {.expect_len = expect_len, .expect_spill = expect_spill};
        sp_sink sink = {.put = check_spilled, .ctx = &c};
        sp_error err = {0};
        int rc = extract_file(path, &o, &sink, NULL, &err);
        getrusage(RUSAGE_SELF, &after);
        long growth = after.ru_maxrss - before.ru_maxrss;
        if (write(pipefd[1], &growth, sizeof growth) != sizeof growth)
            _exit(30);
        _exit(rc ? 20 : c.records != 2 ? 21 : c.bad);
    }
    close(pipefd[1]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(read(pipefd[0], rss_growth_kb, sizeof *rss_growth_kb),
                     (ssize_t)sizeof *rss_growth_kb);
    close(pipefd[0]);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_spill_20mib_page(void **state) {
    (void)state;
    char path[PATH_MAX];
    uint64_t text_len = write_big_doc(path);
    long growth_kb;
    /* value_cap 0: the whole text, beyond 4 MiB in a scratch file. 20 MiB
     * of text must not cost 20 MiB: the buffer stops at 4 MiB. With the
     * parse pool the page goes to the calling thread's spilling buffer too,
     * once a chunk slot (PARSE_POOL_MAX_FACTOR MiB at the default chunk
     * size) holds no cut point: that slot is a fixed extra, whatever the
     * thread count. Each thread adds only a fixed amount (its stack and
     * parser kit; measured ~35 KiB a thread from 2 to 16 threads, 0.5 MiB
     * in all at 2 threads), bounded here by PER_THREAD_KB, so the bound
     * grows with the threads and never with the page.
     * (AddressSanitizer keeps freed memory in quarantine, so RSS tells
     * nothing there.) */
    enum { PER_THREAD_KB = 256 };
    /* The thread counts' classes: one (no pool), two (the pool), and more
     * than the suite machine's two cores (the bound grows with each). */
    static const unsigned thread_counts[] = {1, 2, 4};
    for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
        unsigned threads = thread_counts[t];
        assert_int_equal(extract_in_child(path, 0, threads, text_len, true, &growth_kb), 0);
#ifndef __SANITIZE_ADDRESS__
        long limit_kb = 12 * 1024;
        if (threads > 1)
            limit_kb += PARSE_POOL_MAX_FACTOR * 1024 + (long)threads * PER_THREAD_KB;
        if (growth_kb > limit_kb)
            fail_msg("peak RSS grew by %ld KiB for a 20 MiB page, %u threads (bound %ld KiB)",
                     growth_kb, threads, limit_kb);
#endif
    }
    /* With a cap (even above the spill limit) the kept prefix stays in
     * memory, cut exactly at the cap. */
    uint64_t cap = ((uint64_t)5 << 20) + 3;
    assert_int_equal(extract_in_child(path, cap, 2, cap, false, &growth_kb), 0);
    /* The scratch files are anonymous: nothing is left in tmp_dir. */
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "test -z \"$(ls -A '%s' | grep -v '\\.xml$')\"", tmpdir);
    sh("%s", probe);
}

/* ------------------------------------------------------------ bad XML */

static void test_billion_laughs(void **state) {
    (void)state;
    char path[PATH_MAX];
    write_doc(path, "lol.xml",
              "<?xml version=\"1.0\"?>\n"
              "<!DOCTYPE mediawiki [\n"
              " <!ENTITY lol \"lol\">\n"
              " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
              " <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
              " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
              " <!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">\n"
              " <!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">\n"
              " <!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">\n"
              " <!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">\n"
              " <!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">\n"
              " <!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">\n"
              "]>\n" HDR "<page><title>&lol9;</title><revision><text>&lol9;</text></revision>"
              "</page></mediawiki>\n");
    /* Refused at the DOCTYPE (line 2), before the first entity is declared,
     * let alone expanded, and with no record: what a clock would only hint
     * at (a run under ASan on a loaded machine is slow either way). */
    result res;
    run_fails(path, NULL, &res, "lol.xml: XML error at line 2: DOCTYPE refused", NULL);
    assert_int_equal(res.n, 0);
    result_free(&res);
}

static void test_external_entities_refused(void **state) {
    (void)state;
    char path[PATH_MAX];
    result res;
    write_doc(
        path, "xxe.xml",
        "<?xml version=\"1.0\"?>\n<!DOCTYPE m [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>\n" HDR
        "<page><title>&xxe;</title><revision><text>&xxe;</text></revision></page>"
        "</mediawiki>\n");
    run_fails(path, NULL, &res, "DOCTYPE refused", NULL);
    assert_int_equal(res.n, 0);
    assert_null(strstr(res.err.msg, "root:"));
    result_free(&res);

    write_doc(path, "dtd.xml",
              "<?xml version=\"1.0\"?>\n<!DOCTYPE mediawiki SYSTEM \"file:///etc/passwd\">\n" HDR
              "<page><title>T</title></page></mediawiki>\n");
    run_fails(path, NULL, &res, "line 2: DOCTYPE refused", NULL);
    assert_int_equal(res.n, 0);
    result_free(&res);

    /* Without a DOCTYPE an entity reference can only be undefined. */
    write_doc(path, "undef.xml",
              HDR "<page><title>T</title><revision>\n<text>&xxe;</text></revision></page>"
                  "</mediawiki>\n");
    run_fails(path, NULL, &res, "undef.xml: XML error at line 3: Entity 'xxe' not defined", NULL);
    assert_int_equal(res.n, 0);
    result_free(&res);
}

static void test_truncated_xml(void **state) {
    (void)state;
    char path[PATH_MAX];
    result res;
    write_doc(path, "cut1.xml",
              HDR "<page><title>A</title><revision><text>done</text></revision></page>\n"
                  "<page><title>B</title><revision><text>cut in the mid");
    run_fails(path, NULL, &res, "cut1.xml: XML error at line 3: document ends before </mediawiki>",
              NULL);
    assert_int_equal(res.n, 1);
    result_free(&res);

    /* Cut exactly between pages: still truncated. */
    write_doc(path, "cut2.xml",
              HDR "<page><title>A</title><revision><text>done</text></revision></page>\n");
    run_fails(path, NULL, &res, "document ends before </mediawiki>", NULL);
    result_free(&res);

    /* Malformed: the line of the problem is named. */
    write_doc(path, "bad.xml", HDR "<page>\n<title>A</titel>\n</page></mediawiki>\n");
    run_fails(path, NULL, &res, "bad.xml: XML error at line 3: ", "mismatch", NULL);
    result_free(&res);

    /* Anything after the root is an error too. */
    write_doc(path, "extra.xml", HDR "</mediawiki>\n<mediawiki/>\n");
    run_fails(path, NULL, &res, "extra.xml: XML error at line 3", NULL);
    result_free(&res);
}

/* libxml2 holds back the last bytes it was fed until more arrive, so an
 * error near a parse's end only surfaces when the parse is finished, with
 * elements left open. That is the document's error, not a truncation, and
 * it reads the same on one thread and on the pool, whose chunks each end
 * just after a page (a fuzzer found the pool calling it a truncation). A
 * truncation, in turn, is named at the line where the input ends. */
static void test_error_in_last_bytes(void **state) {
    (void)state;
    char path[PATH_MAX];
    result res;
    write_doc(path, "lastref.xml",
              HDR "<page><title>A</title><revision><text>a</text></revision></page>\n"
                  "<page><title>B</title><revision><comment>x &t y</comment>\n"
                  "<text>b</text></revision></page>\n"
                  "<page><title>C</title><revision><text>c</text></revision></page>\n"
                  "</mediawiki>\n");
    const char *want = "lastref.xml: XML error at line 3: EntityRef: expecting ';'";
    run_fails(path, NULL, &res, want, NULL);
    result_free(&res);
    for (unsigned threads = 2; threads <= 3; threads++) {
        for (size_t chunk = 16; chunk <= 64; chunk *= 2) {
            extract_options o;
            extract_options_init(&o);
            o.threads = threads;
            o.chunk_bytes = chunk;
            run_fails(path, &o, &res, want, NULL);
            result_free(&res);
        }
    }

    /* A CDATA section that never closes runs to the end: libxml2 passes
     * one on in pieces as bytes arrive, so the line it stopped at depends
     * on the feeds; the line the input ends on does not. */
    write_doc(path, "opencdata.xml",
              HDR "<page><title>A</title><revision><text>a</text></revision></page>\n"
                  "<page><title>B</title><revision><text>b <![CDATA[ c\n"
                  "</text></revision></page>\n"
                  "<page><title>C</title><revision><text>c</text></revision></page>\n"
                  "</mediawiki>\n");
    want = "opencdata.xml: XML error at line 7: document ends before </mediawiki>";
    run_fails(path, NULL, &res, want, NULL);
    result_free(&res);
    for (size_t chunk = 16; chunk <= 64; chunk *= 2) {
        extract_options o;
        extract_options_init(&o);
        o.threads = 2;
        o.chunk_bytes = chunk;
        run_fails(path, &o, &res, want, NULL);
        result_free(&res);
    }
}

/* A document whose page B's text holds a CDATA section with a byte that is
 * not UTF-8 (0xAE) after `fill` bytes of it, closed further on when
 * `closed`, else left open to the end; *bad_line is the byte's line. */
static void write_cdata_doc(char *path, const char *name, size_t fill, bool closed,
                            long *bad_line) {
    static const char line[] = "a line of CDATA filler, sixty-four bytes long with its break.\n";
    size_t lines = fill / (sizeof line - 1);
    size_t cap = 1024 + lines * (sizeof line - 1);
    char *doc = malloc(cap);
    assert_non_null(doc);
    size_t n = (size_t)snprintf(doc, cap, "%s",
                                HDR "<page><title>A</title><revision><text>a</text></revision>"
                                    "</page>\n"
                                    "<page><title>B</title><revision><text>b <![CDATA[ c\n");
    for (size_t i = 0; i < lines; i++)
        n += (size_t)snprintf(doc + n, cap - n, "%s", line);
    n +=
        (size_t)snprintf(doc + n, cap - n, "bad \xAE byte\nmore\n%s",
                         closed ? "]]></text></revision></page>\n" : "</text></revision></page>\n");
    n += (size_t)snprintf(doc + n, cap - n, "%s",
                          "<page><title>C</title><revision><text>c</text></revision></page>\n"
                          "</mediawiki>\n");
    assert_true(n < cap);
    write_bytes(path, name, doc, n);
    free(doc);
    *bad_line = 4 + (long)lines;
}

/*
 * A byte in a CDATA section that is not UTF-8 is the document's error, named
 * at its own line, for any thread count and chunk size. libxml2 checks a
 * section 300 bytes per parse call while it is open (so how far it got
 * depended on how the input was cut: one thread said the document ends
 * before </mediawiki>, the parse pool that the byte is not UTF-8), and it
 * names the line its last 300 bytes began on (which moved with the cuts:
 * a section the pool fed in two pieces got another line).
 */
static void test_cdata_not_utf8(void **state) {
    (void)state;
    char path[PATH_MAX], want[PATH_MAX + 128];
    result res;
    static const struct {
        const char *name;
        size_t fill;
        bool closed;
    } docs[] = {
        {"opencdata-bad.xml", 1024, false},
        /* Past the pool's 256 KiB feeds, inside one thread's 1 MiB. */
        {"closedcdata-bad.xml", 300 << 10, true},
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        long bad_line;
        write_cdata_doc(path, docs[d].name, docs[d].fill, docs[d].closed, &bad_line);
        snprintf(want, sizeof want,
                 "%s: XML error at line %ld: Input is not proper UTF-8, indicate encoding ! "
                 "Bytes: 0xAE",
                 path, bad_line);
        for (unsigned threads = 1; threads <= 3; threads++) {
            for (size_t chunk = 16; chunk <= (threads == 1 ? 16 : 64); chunk *= 2) {
                extract_options o;
                extract_options_init(&o);
                o.threads = threads;
                o.chunk_bytes = chunk;
                run_fails(path, &o, &res, NULL);
                if (strcmp(res.err.msg, want))
                    fail_msg("%u threads, chunk %zu: '%s', expected '%s'", threads, chunk,
                             res.err.msg, want);
                /* The page before the section is handed on, and only it. */
                assert_int_equal(res.n, 1);
                assert_string_equal(res.recs[0].key, "A");
                result_free(&res);
            }
        }
    }
}

static void test_not_a_dump(void **state) {
    (void)state;
    char path[PATH_MAX];
    result res;
    write_doc(path, "text.txt", "This is a plain text file, not XML.\n");
    run_fails(path, NULL, &res, "text.txt: XML error at line 1: ", NULL);
    result_free(&res);

    write_bytes(path, "binary.bin", "\x00\x01\x02\x03\xff\xfe\x10 binary", 14);
    run_fails(path, NULL, &res, "binary.bin: XML error at line 1: ", NULL);
    result_free(&res);

    write_doc(path, "blank.xml", "  \n\n");
    run_fails(path, NULL, &res, "blank.xml: XML error at line 3: no <mediawiki> element", NULL);
    result_free(&res);

    write_doc(path, "empty.xml", "");
    run_fails(path, NULL, &res, "empty.xml: empty input", NULL);
    assert_int_equal(res.stats.input_bytes, 0);
    result_free(&res);

    write_doc(path, "root.xml", "<?xml version=\"1.0\"?>\n<feed><page/></feed>\n");
    run_fails(path, NULL, &res, "root.xml: line 2: root element is <feed>, not <mediawiki>", NULL);
    result_free(&res);

    path_in_tmp(path, "missing.xml");
    run_fails(path, NULL, &res, "missing.xml: cannot open", NULL);
    result_free(&res);
}

static void test_bad_pages(void **state) {
    (void)state;
    char path[PATH_MAX];
    result res;
    write_doc(path, "notitle.xml",
              HDR "<page><title>Fine</title></page>\n"
                  "<page>\n  <ns>0</ns><revision><text>x</text></revision></page>\n"
                  "</mediawiki>\n");
    run_fails(path, NULL, &res, "notitle.xml: line 3: <page> has no <title>", NULL);
    assert_int_equal(res.n, 1);
    result_free(&res);

    write_doc(path, "emptytitle.xml", HDR "<page><title></title></page></mediawiki>\n");
    run_fails(path, NULL, &res, "line 2: <page> has an empty <title>", NULL);
    result_free(&res);

    char doc[2048];
    char title[601];
    memset(title, 'x', 600);
    title[600] = '\0';
    snprintf(doc, sizeof doc, HDR "<page>\n<title>%s</title></page></mediawiki>\n", title);
    write_doc(path, "longtitle.xml", doc);
    run_fails(path, NULL, &res, "line 3: <title> is longer than 320 bytes", NULL);
    result_free(&res);

    /* Exactly the limit is fine. */
    title[SP_MAX_KEY_BYTES] = '\0';
    snprintf(doc, sizeof doc, HDR "<page><title>%s</title></page></mediawiki>\n", title);
    write_doc(path, "maxtitle.xml", doc);
    run_ok(path, NULL, &res);
    assert_int_equal(strlen(res.recs[0].key), SP_MAX_KEY_BYTES);
    result_free(&res);

    write_doc(path, "badns.xml", HDR "<page><title>T</title>\n<ns>zero</ns></page></mediawiki>\n");
    run_fails(path, NULL, &res, "badns.xml: line 3: <ns> is not a number: 'zero'", NULL);
    result_free(&res);
}

/* ------------------------------------------------------------ compression */

/* The 11-page corpus recompressed by each tool gives the same records. */
static void test_every_compression(void **state) {
    (void)state;
    result plain;
    run_ok(corpus("enwiki-11pages.xml"), NULL, &plain);
    static const struct {
        const char *tool, *format;
    } tools[] = {{"bzip2", "bzip2"}, {"gzip", "gzip"}, {"xz", "xz"}, {"zstd -q", "zstd"}};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        char path[PATH_MAX];
        /* No telling extension: the content decides. */
        char name[32];
        snprintf(name, sizeof name, "c11.%zu.dat", i);
        path_in_tmp(path, name);
        sh("%s -c '%s' > '%s'", tools[i].tool, corpus("enwiki-11pages.xml"), path);
        result res;
        run_ok(path, NULL, &res);
        same_records(&plain, &res);
        assert_int_equal(res.stats.input_bytes, file_size(path));
        assert_int_equal(res.stats.xml_bytes, 25813);
        result_free(&res);
    }
    result_free(&plain);
}

/* Counts bz2 stream starts: "BZh9" followed by the first block's magic. */
static int bz2_streams(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static const char magic[] = "BZh91AY&SY";
    int streams = 0;
    size_t matched = 0;
    for (int ch; (ch = fgetc(f)) != EOF;) {
        if (ch == magic[matched])
            matched++;
        else
            matched = ch == magic[0];
        if (matched == sizeof magic - 1) {
            streams++;
            matched = 0;
        }
    }
    fclose(f);
    return streams;
}

/* Splits `plain` into `parts` byte ranges, compresses each with `tool`, concatenates. */
static void make_multistream(const char *plain, const char *tool, int parts, char *out) {
    uint64_t size = file_size(plain);
    uint64_t step = size / (uint64_t)parts + 1;
    sh("rm -f '%s'", out);
    for (int i = 0; i < parts; i++)
        sh("tail -c +%llu '%s' | head -c %llu | %s -c >> '%s'", (unsigned long long)(i * step + 1),
           plain, (unsigned long long)step, tool, out);
}

static void test_multistream(void **state) {
    (void)state;
    char plain[PATH_MAX], out[PATH_MAX];
    path_in_tmp(plain, "e206.xml");
    sh("bzip2 -dc '%s' > '%s'", corpus("enwiki-206pages.xml.bz2"), plain);

    /* Like the public multistream dumps: many bz2 streams back to back. */
    path_in_tmp(out, "multi.xml.bz2");
    make_multistream(plain, "bzip2", 9, out);
    assert_int_equal(bz2_streams(out), 9);
    result res;
    run_ok(out, NULL, &res);
    totals(&res, 206, 3084, 5752489);
    assert_int_equal(res.stats.xml_bytes, 6089746);
    assert_int_equal(res.stats.input_bytes, file_size(out));
    result_free(&res);

    /* Streams cut at tiny sizes (mid-tag, mid-character). */
    path_in_tmp(out, "tiny.xml.bz2");
    make_multistream(corpus("enwiki-11pages.xml"), "bzip2", 40, out);
    assert_int_equal(bz2_streams(out), 40);
    result plain11;
    run_ok(corpus("enwiki-11pages.xml"), NULL, &plain11);
    run_ok(out, NULL, &res);
    same_records(&plain11, &res);
    result_free(&res);

    /* gzip members, xz streams and zstd frames concatenate the same way. */
    const char *tools[] = {"gzip", "xz", "zstd -q"};
    for (size_t i = 0; i < 3; i++) {
        path_in_tmp(out, "multi.dat");
        make_multistream(corpus("enwiki-11pages.xml"), tools[i], 3, out);
        run_ok(out, NULL, &res);
        same_records(&plain11, &res);
        result_free(&res);
    }
    result_free(&plain11);
}

static void expect_damaged(const char *path, const char *format, uint64_t max_offset) {
    result res;
    char want[128];
    snprintf(want, sizeof want, ": corrupt or truncated %s data near compressed byte ", format);
    run_fails(path, NULL, &res, want, NULL);
    unsigned long long off = error_offset(&res);
    if (off == 0 || off > max_offset)
        fail_msg("offset %llu outside (0, %llu]: %s", off, (unsigned long long)max_offset,
                 res.err.msg);
    result_free(&res);
}

static void copy_head(const char *from, const char *to, uint64_t bytes) {
    sh("head -c %llu '%s' > '%s'", (unsigned long long)bytes, from, to);
}

/* Flips one byte at off. */
static void corrupt_at(const char *path, uint64_t off) {
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x55;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

static void test_damaged_compression(void **state) {
    (void)state;
    char plain[PATH_MAX], full[PATH_MAX], cut[PATH_MAX];
    path_in_tmp(plain, "d206.xml");
    sh("bzip2 -dc '%s' > '%s'", corpus("enwiki-206pages.xml.bz2"), plain);

    /* Truncated: the real bz2 corpus cut in half. */
    path_in_tmp(cut, "cut.bz2");
    copy_head(corpus("enwiki-206pages.xml.bz2"), cut, 800000);
    expect_damaged(cut, "bzip2", 800000);

    /* Corrupt: one byte flipped deep inside (block CRCs catch it). */
    path_in_tmp(full, "flip.bz2");
    sh("cp '%s' '%s' && chmod u+w '%s'", corpus("enwiki-206pages.xml.bz2"), full, full);
    corrupt_at(full, 1000000);
    expect_damaged(full, "bzip2", file_size(full));

    static const struct {
        const char *tool, *format;
        bool checks_content; /* detects a flipped byte by checksum */
    } tools[] = {{"gzip", "gzip", false}, {"xz -1", "xz", true}, {"zstd -q", "zstd", true}};
    for (size_t i = 0; i < 3; i++) {
        /* xz -1: the same format and CRC64 check as the default level, at a
         * fraction of the compression time. */
        path_in_tmp(full, "full.dat");
        sh("%s -c '%s' > '%s'", tools[i].tool, plain, full);
        uint64_t size = file_size(full);
        copy_head(full, cut, size / 2);
        expect_damaged(cut, tools[i].format, size / 2);
        if (tools[i].checks_content) {
            corrupt_at(full, size / 2);
            expect_damaged(full, tools[i].format, size);
        }
    }

    /* A compressed empty file is empty input too. */
    char empty[PATH_MAX];
    write_bytes(empty, "empty", "", 0);
    path_in_tmp(full, "empty.gz");
    sh("gzip -c '%s' > '%s'", empty, full);
    result res;
    run_fails(full, NULL, &res, "empty.gz: empty input", NULL);
    result_free(&res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spill_20mib_page),
        cmocka_unit_test(test_corpus_plain),
        cmocka_unit_test(test_corpus_bz2),
        cmocka_unit_test(test_corpus_filters),
        cmocka_unit_test(test_entities_and_revisions),
        cmocka_unit_test(test_prefixed_schema_010),
        cmocka_unit_test(test_utf16_bom),
        cmocka_unit_test(test_namespaces_and_redirects),
        cmocka_unit_test(test_value_cap),
        cmocka_unit_test(test_billion_laughs),
        cmocka_unit_test(test_external_entities_refused),
        cmocka_unit_test(test_truncated_xml),
        cmocka_unit_test(test_error_in_last_bytes),
        cmocka_unit_test(test_cdata_not_utf8),
        cmocka_unit_test(test_not_a_dump),
        cmocka_unit_test(test_bad_pages),
        cmocka_unit_test(test_every_compression),
        cmocka_unit_test(test_multistream),
        cmocka_unit_test(test_damaged_compression),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
