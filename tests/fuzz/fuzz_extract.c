/*
 * fuzz_extract.c: libFuzzer target for the extract stage (decompress + parse).
 *
 * The first byte of an input picks how the rest reaches extract_file:
 *   low 3 bits 0 (or 6-7): as-is, so the decoder is whichever the content
 *     names; seeds in each compression keep every decoder's checks busy
 *     (bz2 block CRCs, gzip trailers, xz and zstd frames) and plain XML
 *     seeds the parser;
 *   1-4: compressed here first with bzip2, gzip, xz or zstd, so that
 *     mutations of the XML also travel every decoder's successful path and
 *     the parser sees them whole;
 *   5: compressed here as multistream bzip2, a stream every 1 to 256 bytes
 *     (the next byte picks), so that stream starts, where the pool cuts
 *     chunks once their worker has checked the cut, land anywhere: inside
 *     tags, comments, references and characters as well as between pages;
 *   bit 7: no value cap (page text spills to a scratch file beyond the
 *     memory buffer) instead of extract's usual 1 KiB cap.
 * Every input is extracted twice: on one thread (the reference), and on
 * the parse pool (parse_pool.h) with 2 + bits 3-4 threads and a chunk size
 * that bits 5-6 pick from 16 bytes (a cut at every page) to 4 KiB, so that
 * cut points land everywhere a mutation puts a page boundary. The two must
 * agree: the same records in the same order and the same counts, and the
 * same error message (line, offset) when the reference fails.
 * Both extracts put the text filter (text_skip.h) in front of the parser
 * when there is a value cap, so a filter bug they share (text dropped or
 * set aside wrongly, text_aside.h) would pass that comparison. With a cap,
 * the decompressed XML is therefore parsed a third time, without the
 * filter: read through source.h as extract reads it and fed straight to
 * wiki_parser in extract's 1 MiB pieces, under the name extract gives it.
 * The reference must agree with that parse too: the same records and the
 * same outcome and error message. When reading the decompressed bytes
 * fails (damaged compression), the third parse is skipped: extract may
 * then report the damage instead of an XML error before it, which this
 * parse does not mimic, and the first comparison covers such inputs.
 * Errors are expected and fine; a crash, a sanitizer report, a leak, a
 * record breaking extract's promises (key length, value cap, readable
 * spilled value) or a difference between any two parses is a finding.
 */
#include "fuzz_file.h"
#include "stages/extract/extract.h"
#include "stages/extract/source.h"
#include "stages/extract/text_buffer.h"
#include "stages/extract/wikixml.h"

#include <archive.h>
#include <archive_entry.h>
#include <bzlib.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Chunk sizes the pool is tried with (bits 5-6 of the first byte). */
static const size_t chunk_sizes[] = {16, 61, 512, 4096};

typedef struct check_ctx {
    uint64_t value_cap;
    /* Every record as key_len, key, value_len, value: what the two parses
     * compare. */
    uint8_t *log;
    size_t log_len, log_cap;
} check_ctx;

static void log_bytes(check_ctx *c, const void *p, size_t n) {
    if (c->log_cap - c->log_len < n) {
        size_t cap = c->log_cap ? c->log_cap : 4096;
        while (cap - c->log_len < n)
            cap *= 2;
        if (!(c->log = realloc(c->log, cap)))
            fuzz_fail("out of memory for the record log");
        c->log_cap = cap;
    }
    memcpy(c->log + c->log_len, p, n);
    c->log_len += n;
}

static int check_record(void *ctx, const sp_record *rec, sp_error *err) {
    (void)err;
    check_ctx *c = ctx;
    log_bytes(c, &rec->key_len, sizeof rec->key_len);
    log_bytes(c, rec->key, rec->key_len);
    log_bytes(c, &rec->value_len, sizeof rec->value_len);
    if (rec->key_len > SP_MAX_KEY_BYTES)
        fuzz_fail("extract emitted a key of %u bytes", rec->key_len);
    if (c->value_cap && rec->value_len > c->value_cap)
        fuzz_fail("extract emitted a value of %llu bytes over a cap of %llu",
                  (unsigned long long)rec->value_len, (unsigned long long)c->value_cap);
    if (rec->value_fd >= 0) {
        /* A spilled value must be there in full: the stream writer copies it. */
        uint8_t buf[65536];
        for (uint64_t at = 0; at < rec->value_len;) {
            size_t want = rec->value_len - at < sizeof buf ? rec->value_len - at : sizeof buf;
            ssize_t n = pread(rec->value_fd, buf, want, (off_t)at);
            if (n <= 0)
                fuzz_fail("spilled value shorter than its length %llu",
                          (unsigned long long)rec->value_len);
            log_bytes(c, buf, (size_t)n);
            at += (uint64_t)n;
        }
    } else if (rec->value_len && !rec->value) {
        fuzz_fail("record with value_len %llu and no value", (unsigned long long)rec->value_len);
    } else {
        log_bytes(c, rec->value, (size_t)rec->value_len);
    }
    return 0;
}

/* One extract of path on `threads` threads into c's log. */
static int extract_into(const char *path, unsigned threads, size_t chunk, check_ctx *c,
                        extract_stats *stats, sp_error *err) {
    extract_options opts;
    extract_options_init(&opts);
    opts.value_cap = c->value_cap;
    opts.threads = threads;
    opts.chunk_bytes = chunk;
    sp_sink sink = {.put = check_record, .ctx = c};
    int rc = extract_file(path, &opts, &sink, stats, err);
    if (rc != 0)
        fuzz_check_error(err, path);
    if (stats->records > stats->pages)
        fuzz_fail("%llu records from %llu pages", (unsigned long long)stats->records,
                  (unsigned long long)stats->pages);
    return rc;
}

/* A page of the unfiltered parse into c's log, kept or skipped as extract
 * does (parse_pool_page, then extract.c's on_page). */
static int unfiltered_page(void *ctx, const wiki_page *page, sp_error *err) {
    if (page->skip != WIKI_KEEP)
        return 0;
    sp_record rec = {.key = page->title, .key_len = page->title_len};
    if (text_buffer_value(page->text, &rec, err))
        return -1;
    return check_record(ctx, &rec, err);
}

/* Bytes per feed of the unfiltered parse: extract's pump reads and feeds
 * 1 MiB at a time, and libxml2 words some errors differently when a feed
 * ends within a few bytes of them, so the pieces must be the same. */
#define UNFILTERED_FEED ((size_t)1 << 20)

/*
 * The decompressed XML of path parsed without the text filter, as
 * extract_file with c's value cap would parse it were there no filter:
 * records into c's log, the XML size into *xml_bytes. Returns 0 when the
 * document parses, -1 with err set when it does not, and 1 when the
 * decompressed bytes cannot all be read, which leaves nothing to compare.
 * After an XML error the rest is read all the same, to tell those apart.
 */
static int parse_unfiltered(const char *path, check_ctx *c, uint64_t *xml_bytes, sp_error *err) {
    sp_error read_err = {0};
    source *src = source_open(path, &read_err);
    if (!src)
        return 1;
    extract_options opts;
    extract_options_init(&opts);
    opts.value_cap = c->value_cap;
    /* As extract_file: with a cap, all of the kept text in memory. */
    text_buffer *text = text_buffer_init(c->value_cap, (size_t)c->value_cap, NULL, err);
    /* source_name: the name extract_file gives the parser, so that the
     * error messages compare. */
    wiki_parser *wp =
        text ? wiki_parser_init(source_name(src), &opts, text, unfiltered_page, c, err) : NULL;
    uint8_t *buf = malloc(UNFILTERED_FEED);
    if (!wp || !buf)
        fuzz_fail("cannot set up the unfiltered parse: %s", wp ? "out of memory" : err->msg);
    int rc = 0;
    bool read_failed = false;
    *xml_bytes = 0;
    for (;;) {
        ssize_t n = source_read(src, buf, UNFILTERED_FEED, &read_err);
        if (n <= 0) {
            read_failed = n < 0;
            break;
        }
        *xml_bytes += (uint64_t)n;
        if (!rc && wiki_parser_feed(wp, buf, (size_t)n, err))
            rc = -1;
    }
    if (!rc && !read_failed && wiki_parser_finish(wp, err))
        rc = -1;
    free(buf);
    wiki_parser_destroy(wp);
    text_buffer_destroy(text);
    source_close(src);
    return read_failed ? 1 : rc;
}

/* data compressed with filter (an archive_write_add_filter_* function) into
 * a new buffer; NULL only when libarchive refuses, which is not a finding. */
static uint8_t *compress_with(int (*filter)(struct archive *), const uint8_t *data, size_t size,
                              size_t *out_len) {
    size_t cap = size + size / 2 + 65536;
    uint8_t *out = malloc(cap);
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    int ok = out && a && e && filter(a) == ARCHIVE_OK &&
             archive_write_set_format_raw(a) == ARCHIVE_OK &&
             archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
             archive_write_open_memory(a, out, cap, out_len) == ARCHIVE_OK;
    if (ok) {
        archive_entry_set_pathname(e, "dump.xml");
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, (la_int64_t)size);
        ok = archive_write_header(a, e) == ARCHIVE_OK &&
             (size == 0 || archive_write_data(a, data, size) == (la_ssize_t)size) &&
             archive_write_close(a) == ARCHIVE_OK;
    }
    archive_entry_free(e);
    archive_write_free(a);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* data as concatenated bzip2 streams of piece bytes each. */
static uint8_t *multistream(const uint8_t *data, size_t size, size_t piece, size_t *out_len) {
    size_t pieces = size / piece + 1;
    size_t cap = size + size / 50 + pieces * 700 + 1024;
    uint8_t *out = malloc(cap);
    *out_len = 0;
    for (size_t at = 0; out && (at < size || at == 0); at += piece) {
        size_t n = size - at < piece ? size - at : piece;
        unsigned len = (unsigned)(cap - *out_len);
        if (BZ2_bzBuffToBuffCompress((char *)out + *out_len, &len, (char *)(uintptr_t)(data + at),
                                     (unsigned)n, 1, 0, 0) != BZ_OK) {
            free(out);
            return NULL;
        }
        *out_len += len;
        if (n == 0)
            break;
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    static int (*const filters[])(struct archive *) = {
        NULL,
        archive_write_add_filter_bzip2,
        archive_write_add_filter_gzip,
        archive_write_add_filter_xz,
        archive_write_add_filter_zstd,
    };
    unsigned mode_byte = data[0], mode = mode_byte & 7u;
    uint64_t value_cap = (mode_byte & 0x80u) ? 0 : 1024;
    data++, size--;

    uint8_t *packed = NULL;
    if (mode == 5) {
        if (size == 0)
            return 0;
        size_t piece = 1 + (size_t)data[0], packed_len = 0;
        if (!(packed = multistream(data + 1, size - 1, piece, &packed_len)))
            return 0;
        data = packed, size = packed_len;
    } else if (mode >= 1 && mode <= 4) {
        size_t packed_len = 0;
        packed = compress_with(filters[mode], data, size, &packed_len);
        if (!packed)
            return 0;
        data = packed, size = packed_len;
    }

    fuzz_file file;
    fuzz_file_init(&file, data, size);
    check_ctx one = {.value_cap = value_cap}, pool = {.value_cap = value_cap};
    extract_stats s1, sn;
    sp_error e1 = {0}, en = {0};
    unsigned threads = 2 + ((mode_byte >> 3) & 3u);
    size_t chunk = chunk_sizes[(mode_byte >> 5) & 3u];
    int rc1 = extract_into(file.path, 1, 0, &one, &s1, &e1);
    int rcn = extract_into(file.path, threads, chunk, &pool, &sn, &en);
    if (rc1 != rcn)
        fuzz_fail("one thread %s, %u threads (chunk %zu) %s: %s", rc1 ? "fails" : "succeeds",
                  threads, chunk, rcn ? "fail" : "succeed", rc1 ? e1.msg : en.msg);
    if (rc1 && strcmp(e1.msg, en.msg))
        fuzz_fail("one thread: %s; %u threads (chunk %zu): %s", e1.msg, threads, chunk, en.msg);
    if (one.log_len != pool.log_len || (one.log_len && memcmp(one.log, pool.log, one.log_len)))
        fuzz_fail("%u threads (chunk %zu) emit other records than one thread", threads, chunk);
    if (s1.pages != sn.pages || s1.records != sn.records ||
        s1.skipped_redirects != sn.skipped_redirects ||
        s1.skipped_namespace != sn.skipped_namespace || (!rc1 && s1.xml_bytes != sn.xml_bytes))
        fuzz_fail("%u threads (chunk %zu) count other pages than one thread", threads, chunk);
    if (value_cap) {
        check_ctx plain = {.value_cap = value_cap};
        sp_error ep = {0};
        uint64_t xml_bytes = 0;
        int rcp = parse_unfiltered(file.path, &plain, &xml_bytes, &ep);
        if (rcp != 1) {
            if (rc1 != rcp)
                fuzz_fail("with the text filter extract %s, without it the parse %s: %s",
                          rc1 ? "fails" : "succeeds", rcp ? "fails" : "succeeds",
                          rc1 ? e1.msg : ep.msg);
            if (rc1 && strcmp(e1.msg, ep.msg))
                fuzz_fail("with the text filter: %s; without it: %s", e1.msg, ep.msg);
            if (one.log_len != plain.log_len ||
                (one.log_len && memcmp(one.log, plain.log, one.log_len)))
                fuzz_fail("the text filter changes the records (%zu bytes of them with it, %zu "
                          "without)",
                          one.log_len, plain.log_len);
            if (!rc1 && s1.xml_bytes != xml_bytes)
                fuzz_fail("extract counts %llu bytes of XML, the source holds %llu",
                          (unsigned long long)s1.xml_bytes, (unsigned long long)xml_bytes);
        }
        free(plain.log);
    }
    free(one.log);
    free(pool.log);
    fuzz_file_destroy(&file);
    free(packed);
    return 0;
}
