/*
 * extract.c: the extract stage as a library call: source -> wikixml ->
 * records into a sink; see extract.h. With more than one thread the parse
 * runs on parse_pool.h's workers; with one, here, as a single stream.
 */
#include "stages/extract/extract.h"

#include "stages/common/clock.h"
#include "stages/common/cores.h"
#include "stages/common/fileio.h"
#include "stages/extract/extract_progress.h"
#include "stages/extract/parse_pool.h"
#include "stages/extract/source.h"
#include "stages/extract/text_buffer.h"
#include "stages/extract/text_skip.h"
#include "stages/extract/wikixml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decompressed bytes handed to libxml2 at once: large, so that the
 * per-call cost of both libraries is negligible next to the parsing. */
#define EXTRACT_CHUNK ((size_t)1 << 20)

typedef struct extract_run {
    const sp_sink *sink;
    extract_stats stats;
} extract_run;

void extract_options_init(extract_options *opts) {
    memset(opts, 0, sizeof *opts);
}

static int on_page(void *ctx, wiki_skip skip, const sp_record *rec, sp_error *err) {
    extract_run *run = ctx;
    if (!parse_pool_count(&run->stats, skip))
        return 0;
    if (sp_sink_put(run->sink, rec, err))
        return -1;
    run->stats.records++;
    return 0;
}

/*
 * Called after an XML error in compressed input. Decoders check their
 * checksums only at the end of a block (900 kB for bz2), after handing out
 * the damaged bytes, so the parser often trips over the damage first. Reading
 * on a little tells "the file is damaged" (reported instead) from "the XML
 * is bad" (kept).
 */
static void blame_damage(source *src, uint8_t *buf, sp_error *err) {
    if (!strcmp(source_format(src), "none"))
        return;
    sp_error damage = {0};
    for (size_t i = 0; i < EXTRACT_DAMAGE_LOOKAHEAD / EXTRACT_CHUNK; i++) {
        ssize_t n = source_read(src, buf, EXTRACT_CHUNK, &damage);
        if (n < 0) {
            *err = damage;
            return;
        }
        if (n == 0)
            return;
    }
}

static int pump(source *src, wiki_parser *wp, const extract_options *opts, extract_stats *stats,
                sp_error *err) {
    uint8_t *buf = sp_io_alloc(EXTRACT_CHUNK);
    /* With a cap, text past it is dropped before the parser has to read it
     * (text_skip.h), and the rest of plainly well-formed text is decoded
     * beside the document (text_aside.h); xml_bytes still counts every
     * byte decompressed. */
    text_skip *skip = NULL;
    uint8_t *kept = NULL;
    text_aside *aside = NULL;
    if (opts->value_cap && buf) {
        skip = text_skip_init(opts->value_cap, err);
        kept = malloc(EXTRACT_CHUNK + TEXT_SKIP_SLACK);
        aside = text_aside_init();
    }
    int rc = 0;
    if (!buf || (opts->value_cap && (!skip || !kept || !aside))) {
        rc = sp_errorf(err, "%s: out of memory", source_name(src));
        goto out;
    }
    if (skip) {
        text_skip_set_aside(skip, aside);
        wiki_parser_set_aside(wp, aside);
    }
    for (;;) {
        ssize_t n = source_read(src, buf, EXTRACT_CHUNK, err);
        if (n < 0) {
            rc = -1;
            break;
        }
        const uint8_t *feed = buf;
        size_t len = (size_t)n;
        if (skip) {
            len = n ? text_skip_run(skip, buf, len, kept) : text_skip_finish(skip, kept);
            feed = kept;
        }
        stats->xml_bytes += (uint64_t)n;
        if (len && wiki_parser_feed(wp, feed, len, err)) {
            blame_damage(src, buf, err);
            rc = -1;
            break;
        }
        if (aside)
            text_aside_compact(aside);
        if (n == 0)
            break;
        if (opts->progress) {
            stats->input_bytes = source_offset(src);
            extract_progress(opts->progress, stats);
        }
    }
out:
    text_skip_destroy(skip);
    text_aside_destroy(aside);
    free(kept);
    free(buf);
    return rc;
}

unsigned extract_threads(const extract_options *opts) {
    return opts->threads ? opts->threads : sp_usable_cores();
}

int extract_file(const char *path, const extract_options *opts, const sp_sink *sink,
                 extract_stats *stats, sp_error *err) {
    extract_run run = {.sink = sink};
    parse_pool_sink to_run = {on_page, &run};
    unsigned threads = extract_threads(opts);
    double cpu0 = sp_thread_cpu_seconds();
    run.stats.threads = threads;
    text_buffer *text = NULL;
    wiki_parser *wp = NULL;
    int rc = -1;
    source *src = source_open_with(path,
                                   &(source_options){.threads = threads,
                                                     .decompressor = opts->decompressor,
                                                     .tmp_dir = opts->tmp_dir,
                                                     .slice = opts->slice},
                                   err);
    if (!src)
        goto out;
    /* With a cap the whole kept text stays in memory (the caller chose the
     * bound, and the next stage, truncate, takes values in memory only);
     * without one, text beyond TEXT_BUFFER_MEM_LIMIT spills. */
    size_t mem_limit = opts->value_cap ? (size_t)opts->value_cap : TEXT_BUFFER_MEM_LIMIT;
    text = text_buffer_init(opts->value_cap, mem_limit, opts->tmp_dir, err);
    if (!text)
        goto out;
    if (threads > 1) {
        /* Stretches the caller's thread parses itself go to the first
         * part, while the workers are idle (parse_pool.h). */
        if (opts->parts)
            run.sink = &opts->parts[0].sink;
        parse_pool_args pa = {.opts = opts,
                              .threads = threads,
                              .src = src,
                              .text = text,
                              .emit = on_page,
                              .emit_ctx = &run,
                              .stats = &run.stats};
        rc = parse_pool_run(&pa, err);
        goto out;
    }
    wp = wiki_parser_init(source_name(src), opts, text, parse_pool_page, &to_run, err);
    if (!wp || pump(src, wp, opts, &run.stats, err))
        goto out;
    if (wiki_parser_finish(wp, err))
        goto out;
    rc = 0;
out:
    if (src)
        run.stats.input_bytes = source_offset(src);
    run.stats.caller_cpu_seconds = sp_thread_cpu_seconds() - cpu0;
    if (stats)
        *stats = run.stats;
    wiki_parser_destroy(wp);
    text_buffer_destroy(text);
    source_close(src);
    return rc;
}

void extract_stats_format(const extract_stats *s, char *buf, size_t cap) {
    snprintf(buf, cap,
             "extract: input_bytes=%llu xml_bytes=%llu pages=%llu records=%llu "
             "skipped_redirects=%llu skipped_namespace=%llu threads=%u",
             (unsigned long long)s->input_bytes, (unsigned long long)s->xml_bytes,
             (unsigned long long)s->pages, (unsigned long long)s->records,
             (unsigned long long)s->skipped_redirects, (unsigned long long)s->skipped_namespace,
             s->threads);
}
