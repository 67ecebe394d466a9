/*
 * parse_pool.c: chunks of the document parsed on worker threads, handed on
 * in order; see parse_pool.h.
 *
 * Chunk c lives in slot c % nslots and is parsed by worker c % workers, so
 * which thread parses (and, with parts, sorts) a chunk does not depend on
 * timing: a build makes the same runs, and the same calls, every time. Two
 * counters, under the mutex, say where each chunk is: chunks below
 * `submitted` are ready to parse, below `emitted` are handed on and their
 * slot is free. The caller's thread reads into the slot of
 * chunk `submitted`; when the bytes read pass chunk_bytes and a cut point
 * lies in them, the bytes before it are submitted and the rest moved to
 * the next slot. Between reads it hands on every chunk already parsed, so
 * the sort keeps up with the workers and the slots come back.
 *
 * A worker collects each page as a small header, the title and the kept
 * text into the slot's output buffer; the caller's thread turns them back
 * into records. With parts (extract_options.parts) a worker puts its pages'
 * records into its own part instead, after telling it the chunk's place
 * (its number in document order), and only counts them in the slot; the
 * caller's thread adds the counts and reports errors in document order.
 * A stretch parsed inline gets a place of its own and goes to part 0, whose
 * worker is idle then (every chunk before it is handed on).
 *
 * Stream cuts and guessed cuts: a chunk cut at a stream start or at a page
 * start tag found by guess_cut has check_end set; its worker (or a worker
 * waiting on it, see worth_parsing) checks it and publishes end_ok (the
 * worker in the pass of the value cap's filter over the whole chunk, which
 * it makes before parsing: prepare_chunk), and
 * advance_known moves `known` (chunks
 * whose start is known to be a cut point or not) along, in order, under the
 * mutex. Workers wait for their own chunk to be known before parsing, which
 * cannot deadlock: each worker takes its chunks in order, so the worker of
 * the first chunk not known yet is at that chunk or before it, and a worker
 * publishes before it waits. The first chunk whose end is no cut point is
 * skipped, and so is every chunk after it; handing it on runs parse_rest.
 */
#include "stages/extract/parse_pool.h"

#include "stages/common/clock.h"
#include "stages/common/fileio.h"
#include "stages/extract/extract_progress.h"
#include "stages/extract/page_split.h"
#include "stages/extract/text_skip.h"
#include "stages/extract/xml_lex.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Decompressed bytes read, and fed to a parser, at once. */
#define READ_BYTES ((size_t)1 << 20)
#define FEED_BYTES ((size_t)256 << 10)

static const char root_end[] = "</mediawiki>";

typedef struct chunk_slot {
    uint8_t *in; /* the chunk's XML */
    size_t len;
    uint64_t start; /* document offset of in[0] */
    bool last;      /* ends the document */
    bool done;      /* parsed (under the mutex) */
    uint8_t *out;   /* the pages: page_header, title, text */
    size_t out_len, out_cap;
    sp_error err;        /* the parse's error; its line is relative if start > 0 */
    bool collect_failed; /* err is about collecting, not about the XML */
    bool sink_failed;    /* err is the part's (a record it refused) */
    uint64_t newlines;
    uint64_t place;       /* the chunk's number in document order */
    extract_stats counts; /* with parts: its pages, records, skipped_* */
    /* Stream cuts (see the top of the file); set at submit. */
    uint64_t index;  /* the chunk's number: its slot is index % nslots */
    bool hard_start; /* starts at 0 or at a cut point the caller's scanner found */
    bool check_end;  /* ends at a stream start or a guessed cut, which is checked */
    int end_ok;      /* with check_end: -1 not known yet, 1 a cut point, 0 not */
    bool checking;   /* with check_end: a thread is scanning it (under the mutex) */
    bool skipped;    /* not parsed: its start or its end is no cut point */
} chunk_slot;

typedef struct page_header {
    uint32_t skip; /* wiki_skip */
    uint32_t title_len;
    uint64_t value_len;
} page_header;

/* What one parsing thread owns. */
typedef struct parser_kit {
    text_buffer *text;
    uint8_t *kept; /* text_skip output: a whole chunk's (prepare_chunk) */
    size_t kept_cap;
    text_aside *aside; /* the text the filter set aside for the parser */
    uint8_t *scratch;  /* FEED_BYTES + TEXT_SKIP_SLACK: the output of another chunk's check */
} parser_kit;

typedef struct pool {
    const parse_pool_args *a;
    const char *name;
    size_t chunk, max;
    page_split *split;
    chunk_slot *slots;
    unsigned nslots;
    parser_kit *kits; /* one per worker, then the caller's */
    pthread_t *workers;
    unsigned nworkers, started;

    pthread_mutex_t mu;
    pthread_cond_t work, done, checked;
    bool stop;
    bool parsed_all;   /* with stop: the document was parsed without an error */
    double worker_cpu; /* CPU seconds of the workers that have left */
    uint64_t submitted, emitted;
    uint64_t places; /* places given to chunks and inline stretches */
    /* Chunks below known have a start whose being a cut point is known: it
     * is for those below broken (UINT64_MAX: all so far). */
    uint64_t known, broken;

    /* The caller's thread only. */
    bool streams;    /* cutting at stream starts or guessed page starts, scanning nothing */
    bool guess_ok;   /* page start tags may be guessed as cut points (guess_cut) */
    bool finished;   /* the rest of the document was parsed here (parse_rest) */
    chunk_slot *cur; /* the slot being read into; NULL after the last chunk */
    uint8_t head[PAGE_SPLIT_HEAD_MAX]; /* the document's head, for fragments */
    size_t head_len;
    long root_line;        /* the document line of the root start tag (page_split.h) */
    uint64_t lines_before; /* line breaks before the first chunk not handed on */
    uint64_t read_end;     /* document bytes read */
    bool xml_failed;       /* the error is the document's: look for damage after it */
    uint64_t failed_end;   /* end of the chunk it is in */
} pool;

/* ------------------------------------------------------------ one chunk */

static chunk_slot *slot_of(const pool *p, uint64_t chunk) {
    return &p->slots[chunk % p->nslots];
}

static int collect_page(void *ctx, const wiki_page *page, sp_error *err) {
    chunk_slot *s = ctx;
    sp_record rec = {.value_fd = -1};
    if (page->skip == WIKI_KEEP && text_buffer_value(page->text, &rec, err))
        return -1;
    size_t need = sizeof(page_header) + page->title_len + (size_t)rec.value_len;
    if (s->out_cap - s->out_len < need) {
        size_t cap = s->out_cap ? s->out_cap : (size_t)64 << 10;
        while (cap - s->out_len < need)
            cap *= 2;
        uint8_t *grown = realloc(s->out, cap);
        if (!grown) {
            s->collect_failed = true;
            return sp_errorf(err, "parsing: out of memory for the pages of a chunk");
        }
        s->out = grown;
        s->out_cap = cap;
    }
    uint8_t *o = s->out + s->out_len;
    page_header h = {(uint32_t)page->skip, page->title_len, rec.value_len};
    memcpy(o, &h, sizeof h);
    memcpy(o + sizeof h, page->title, page->title_len);
    o += sizeof h + page->title_len;
    if (rec.value_fd >= 0) {
        if (sp_pread_exact(rec.value_fd, o, (size_t)rec.value_len, 0, "spilled page text", err)) {
            s->collect_failed = true;
            return -1;
        }
    } else if (rec.value_len) {
        memcpy(o, rec.value, (size_t)rec.value_len);
    }
    s->out_len += need;
    return 0;
}

bool parse_pool_count(extract_stats *st, wiki_skip skip) {
    st->pages++;
    switch (skip) {
    case WIKI_SKIP_NAMESPACE:
        st->skipped_namespace++;
        return false;
    case WIKI_SKIP_REDIRECT:
        st->skipped_redirects++;
        return false;
    case WIKI_KEEP:
        break;
    }
    return true;
}

/* A page of a chunk into the worker's part. */
typedef struct part_collector {
    chunk_slot *s;
    const extract_part *part;
} part_collector;

static int collect_to_part(void *ctx, const wiki_page *page, sp_error *err) {
    part_collector *pc = ctx;
    if (!parse_pool_count(&pc->s->counts, page->skip))
        return 0;
    sp_record rec = {.key = page->title, .key_len = page->title_len};
    if (text_buffer_value(page->text, &rec, err)) {
        pc->s->collect_failed = true;
        return -1;
    }
    if (sp_sink_put(&pc->part->sink, &rec, err)) {
        pc->s->sink_failed = true;
        return -1;
    }
    pc->s->counts.records++;
    return 0;
}

static int discard_page(void *ctx, const wiki_page *page, sp_error *err) {
    (void)ctx, (void)page, (void)err;
    return 0;
}

static int feed(wiki_parser *wp, text_skip *ts, parser_kit *kit, const uint8_t *in, size_t n,
                sp_error *err) {
    for (size_t off = 0; off < n; off += FEED_BYTES) {
        size_t k = n - off < FEED_BYTES ? n - off : FEED_BYTES;
        const uint8_t *f = in + off;
        if (ts) {
            k = text_skip_run(ts, f, k, kit->kept);
            f = kit->kept;
        }
        if (k && wiki_parser_feed(wp, f, k, err))
            return -1;
        if (ts)
            text_aside_compact(kit->aside);
    }
    return 0;
}

/* Filter ts, if any, sets text aside for parser wp in the kit's aside
 * (text_aside.h); both start at the same place. */
static void connect_aside(parser_kit *kit, text_skip *ts, wiki_parser *wp) {
    if (!ts)
        return;
    text_aside_reset(kit->aside);
    text_skip_set_aside(ts, kit->aside);
    wiki_parser_set_aside(wp, kit->aside);
}

static text_skip *chunk_filter(const pool *p, uint64_t start, sp_error *err) {
    uint64_t cap = p->a->opts->value_cap;
    if (!cap)
        return NULL;
    return start ? text_skip_init_fragment(cap, err) : text_skip_init(cap, err);
}

/* A parser for the document from offset start, which is 0 or a cut point,
 * whose line breaks before it are line_base. */
static wiki_parser *chunk_parser(const pool *p, text_buffer *text, uint64_t start,
                                 uint64_t line_base, wiki_page_fn on_page, void *ctx,
                                 sp_error *err) {
    wiki_parser *wp = wiki_parser_init(p->name, p->a->opts, text, on_page, ctx, err);
    if (!wp || !start)
        return wp;
    if (wiki_parser_init_fragment(wp, p->head, p->head_len, p->root_line, (long)line_base, err)) {
        wiki_parser_destroy(wp);
        return NULL;
    }
    return wp;
}

/* Ends a parse: the document's end, or the end of a chunk before a cut
 * point (closed as the root would be). */
static int chunk_finish(wiki_parser *wp, text_skip *ts, uint8_t *kept, bool last, sp_error *err) {
    if (ts) {
        /* Sets nothing aside: no text element ends in what it holds. */
        size_t k = text_skip_finish(ts, kept);
        if (k && wiki_parser_feed(wp, kept, k, err))
            return -1;
    }
    if (!last && wiki_parser_feed(wp, root_end, sizeof root_end - 1, err))
        return -1;
    return wiki_parser_finish(wp, err);
}

/* Whether chunk s's last byte is one a cut may follow: '>' or a space,
 * not the inside of a character or an entity reference, which text
 * directly inside the root could hold. */
static bool ends_between_tags(const chunk_slot *s) {
    uint8_t last = s->len ? s->in[s->len - 1] : 0;
    return last == '>' || last == ' ' || last == '\n' || last == '\t';
}

/*
 * Chunk s as its parser reads it, into kit->kept: text past the cap dropped
 * and plainly well-formed text set aside into kit->aside (text_skip, over
 * the whole chunk at once), then what the filter holds back at its end.
 * The same pass lexes every byte, so it also tells whether s ends at a cut
 * point (*end_ok, as ends_at_cut would: the check of a stream or guessed
 * cut costs no scan of its own); -1 where that is left to ends_at_cut (no
 * cap, or the document's first chunk).
 */
static int prepare_chunk(const pool *p, parser_kit *kit, const chunk_slot *s, size_t *len,
                         int *end_ok, sp_error *err) {
    *len = 0;
    *end_ok = -1;
    if (!p->a->opts->value_cap)
        return 0;
    /* Room for text_skip_run's output and text_skip_finish's. */
    size_t need = s->len + 2 * TEXT_SKIP_SLACK;
    if (kit->kept_cap < need) {
        uint8_t *grown = realloc(kit->kept, need);
        if (!grown)
            return sp_errorf(err, "%s: out of memory for a parse chunk", p->name);
        kit->kept = grown;
        kit->kept_cap = need;
    }
    text_skip *ts = chunk_filter(p, s->start, err);
    if (!ts)
        return -1;
    text_aside_reset(kit->aside);
    text_skip_set_aside(ts, kit->aside);
    *len = text_skip_run(ts, s->in, s->len, kit->kept);
    if (s->start)
        *end_ok = text_skip_between_pages(ts) && ends_between_tags(s);
    *len += text_skip_finish(ts, kit->kept + *len);
    text_skip_destroy(ts);
    return 0;
}

/* Parses chunk s, prepared (prepare_chunk) into kit->kept's first len
 * bytes when there is a cap, else as it is. */
static int parse_prepared(const pool *p, parser_kit *kit, const chunk_slot *s, size_t len,
                          uint64_t line_base, wiki_page_fn on_page, void *ctx, sp_error *err) {
    const uint8_t *xml = p->a->opts->value_cap ? kit->kept : s->in;
    if (!p->a->opts->value_cap)
        len = s->len;
    wiki_parser *wp = chunk_parser(p, kit->text, s->start, line_base, on_page, ctx, err);
    if (wp && p->a->opts->value_cap)
        wiki_parser_set_aside(wp, kit->aside);
    int rc =
        wp && !feed(wp, NULL, NULL, xml, len, err) && !chunk_finish(wp, NULL, NULL, s->last, err)
            ? 0
            : -1;
    wiki_parser_destroy(wp);
    return rc;
}

/* prepare_chunk, then parse_prepared. */
static int parse_chunk(const pool *p, parser_kit *kit, const chunk_slot *s, uint64_t line_base,
                       wiki_page_fn on_page, void *ctx, sp_error *err) {
    size_t len;
    int end_ok;
    if (prepare_chunk(p, kit, s, &len, &end_ok, err))
        return -1;
    return parse_prepared(p, kit, s, len, line_base, on_page, ctx, err);
}

/* Whether chunk s ends where the document could be cut: directly inside
 * the root, outside markup (ends_between_tags too). Lexed from s's start,
 * which is a cut point or the document's start: by the filter of text past
 * the cap, as prepare_chunk does (the same lexer, so the same answer
 * whichever thread checks), or where there is no cap, or s starts the
 * document (its head: only page_split knows when it gives up on one), by
 * page_split. The filter's output goes to scratch and is dropped. */
static int ends_at_cut(const pool *p, const chunk_slot *s, uint8_t *scratch) {
    sp_error err = {0};
    int ok = 0;
    if (s->start && p->a->opts->value_cap) {
        text_skip *ts = text_skip_init_fragment(p->a->opts->value_cap, &err);
        if (!ts)
            return 0; /* parsed on the caller's thread instead */
        for (size_t off = 0; off < s->len; off += FEED_BYTES)
            (void)text_skip_run(ts, s->in + off,
                                s->len - off < FEED_BYTES ? s->len - off : FEED_BYTES, scratch);
        ok = text_skip_between_pages(ts);
        text_skip_destroy(ts);
    } else {
        page_split *sc =
            s->start ? page_split_init_fragment(s->start, &err) : page_split_init(&err);
        if (!sc)
            return 0;
        page_split_scan(sc, s->in, s->len);
        ok = page_split_between_pages(sc);
        page_split_destroy(sc);
    }
    return ok && ends_between_tags(s);
}

/* Under the mutex: moves `known` past every chunk whose start can now be
 * told a cut point or not. */
static void advance_known(pool *p) {
    while (p->known < p->submitted) {
        uint64_t k = p->known;
        const chunk_slot *s = slot_of(p, k);
        if (k > 0 && !s->hard_start && k <= p->broken) {
            const chunk_slot *prev = slot_of(p, k - 1);
            if (prev->end_ok < 0)
                break;
            if (!prev->end_ok && p->broken > k)
                p->broken = k;
        }
        p->known++;
    }
}

/* Under the mutex: claims the check of chunk s's end, if it is to be
 * checked and no thread has begun it. */
static bool claim_check(chunk_slot *s) {
    if (!s->check_end || s->end_ok >= 0 || s->checking)
        return false;
    s->checking = true;
    return true;
}

/* Under the mutex: chunk s's end is a cut point (ok) or not. */
static void publish_check(pool *p, chunk_slot *s, int ok) {
    s->end_ok = ok;
    advance_known(p);
    pthread_cond_broadcast(&p->checked);
}

/* Called and returns with the mutex held: checks chunk s (claimed) with the
 * mutex released, scratch for the filter's output, and publishes it. */
static void run_check(pool *p, chunk_slot *s, uint8_t *scratch) {
    pthread_mutex_unlock(&p->mu);
    int ok = ends_at_cut(p, s, scratch);
    pthread_mutex_lock(&p->mu);
    s->checking = false;
    publish_check(p, s, ok);
}

/* A stream-cut chunk's worker checks its end (mine: it claimed the check
 * before filtering the chunk, whose pass found end_ok if that is known),
 * then waits until its start is known: a
 * chunk after a stream start that is no cut point is not parsed (nor is
 * the one before it), so nothing of it reaches a part.
 * While it waits on the check of the chunk before its own, and that check
 * has not begun (its worker is still parsing an earlier chunk), it runs
 * that check itself: otherwise a worker could get at most a chunk ahead of
 * the others, and with chunks of uneven cost it would sit idle. The check
 * is a function of the chunk's bytes alone, so who runs it changes no
 * output. */
static bool worth_parsing(pool *p, parser_kit *kit, chunk_slot *s, bool mine, int end_ok) {
    pthread_mutex_lock(&p->mu);
    if (mine && end_ok >= 0) {
        s->checking = false;
        publish_check(p, s, end_ok);
    } else if (mine) {
        run_check(p, s, kit->scratch);
    }
    while (!p->stop && (p->known <= s->index || s->end_ok < 0)) {
        chunk_slot *prev = p->known > 0 && p->known <= s->index ? slot_of(p, p->known - 1) : NULL;
        if (prev && claim_check(prev))
            run_check(p, prev, kit->scratch);
        else
            pthread_cond_wait(&p->checked, &p->mu);
    }
    bool go = !p->stop && s->index < p->broken && s->end_ok > 0;
    pthread_mutex_unlock(&p->mu);
    s->skipped = !go;
    return go;
}

typedef struct worker_arg {
    pool *p;
    unsigned i;
} worker_arg;

static void *worker_main(void *arg) {
    pool *p = ((worker_arg *)arg)->p;
    unsigned i = ((worker_arg *)arg)->i;
    parser_kit *kit = &p->kits[i];
    const extract_part *part = p->a->opts->parts ? &p->a->opts->parts[i] : NULL;
    free(arg);
    for (uint64_t next = i;; next += p->nworkers) {
        pthread_mutex_lock(&p->mu);
        while (!p->stop && p->submitted <= next)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            /* The part sorts (or spills) what it holds here, on every
             * worker at once; after a failure nothing is merged, so that
             * work would be wasted. */
            if (part && part->end && p->parsed_all)
                part->end(part->ctx);
            pthread_mutex_lock(&p->mu);
            p->worker_cpu += sp_thread_cpu_seconds();
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        chunk_slot *s = slot_of(p, next);
        pthread_mutex_unlock(&p->mu);

        s->err = (sp_error){0};
        s->collect_failed = false;
        s->sink_failed = false;
        s->out_len = 0;
        s->counts = (extract_stats){0};
        /* Filtered before the check: the filter's pass checks it too.
         * Claimed first, so that a worker waiting on it waits for this
         * pass rather than repeating it. */
        pthread_mutex_lock(&p->mu);
        bool mine = claim_check(s);
        pthread_mutex_unlock(&p->mu);
        size_t len;
        int end_ok;
        sp_error prep = {0};
        bool prepared = !prepare_chunk(p, kit, s, &len, &end_ok, &prep);
        /* A chunk not worth parsing yields nothing (worth_parsing). */
        if (worth_parsing(p, kit, s, mine, prepared ? end_ok : -1)) {
            if (!prepared) {
                s->err = prep;
            } else if (part) {
                part_collector pc = {s, part};
                part->begin(part->ctx, s->place);
                (void)parse_prepared(p, kit, s, len, 0, collect_to_part, &pc, &s->err);
            } else {
                (void)parse_prepared(p, kit, s, len, 0, collect_page, s, &s->err);
            }
        }
        s->newlines = xml_lex_lines(s->in, s->len);

        pthread_mutex_lock(&p->mu);
        s->done = true;
        pthread_cond_broadcast(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
}

/* ------------------------------------------------------------ in order */

int parse_pool_page(void *ctx, const wiki_page *page, sp_error *err) {
    const parse_pool_sink *sink = ctx;
    if (page->skip != WIKI_KEEP)
        return sink->emit(sink->ctx, page->skip, NULL, err);
    sp_record rec = {.key = page->title, .key_len = page->title_len};
    if (text_buffer_value(page->text, &rec, err))
        return -1;
    return sink->emit(sink->ctx, WIKI_KEEP, &rec, err);
}

/* Submits the chunk in cur, whose end is a stream start or a guessed page
 * start (check_end: its worker checks it) or not; the next chunk starts at
 * a cut point the caller's scanner found unless it is such a cut too. */
static void submit(pool *p, bool check_end, bool guessed) {
    chunk_slot *s = p->cur;
    p->a->stats->parse_chunks++;
    p->a->stats->stream_cuts += check_end && !guessed;
    p->a->stats->guessed_cuts += guessed;
    s->place = p->places++;
    pthread_mutex_lock(&p->mu);
    s->index = p->submitted;
    s->check_end = check_end;
    s->end_ok = check_end ? -1 : 1;
    s->checking = false;
    s->skipped = false;
    p->submitted++;
    advance_known(p);
    pthread_cond_broadcast(&p->work); /* for the chunk's own worker */
    pthread_mutex_unlock(&p->mu);
}

static int parse_rest(pool *p, chunk_slot *from, sp_error *err);

/* Hands on the oldest chunk not yet handed on. Returns 0 when done, 1 when
 * it is not parsed yet and wait is false, -1 on error. */
static int emit_next(pool *p, bool wait, sp_error *err) {
    chunk_slot *s = slot_of(p, p->emitted);
    pthread_mutex_lock(&p->mu);
    while (!s->done) {
        if (!wait) {
            pthread_mutex_unlock(&p->mu);
            return 1;
        }
        pthread_cond_wait(&p->done, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    if (s->skipped)
        return parse_rest(p, s, err);

    for (size_t off = 0; off < s->out_len;) {
        page_header h;
        memcpy(&h, s->out + off, sizeof h);
        sp_record rec = {.key = s->out + off + sizeof h,
                         .key_len = h.title_len,
                         .value = s->out + off + sizeof h + h.title_len,
                         .value_len = h.value_len,
                         .value_fd = -1};
        off += sizeof h + h.title_len + (size_t)h.value_len;
        if (p->a->emit(p->a->emit_ctx, (wiki_skip)h.skip, h.skip == WIKI_KEEP ? &rec : NULL, err)) {
            /* As a failing sink stops the single parser, after which
             * extract looks for damage too. */
            p->xml_failed = true;
            p->failed_end = s->start + s->len;
            return -1;
        }
    }
    extract_stats *st = p->a->stats;
    st->pages += s->counts.pages;
    st->records += s->counts.records;
    st->skipped_namespace += s->counts.skipped_namespace;
    st->skipped_redirects += s->counts.skipped_redirects;
    if (s->err.set) {
        *err = s->err;
        if (s->sink_failed) {
            /* As the failing sink of the paragraph above. */
            p->xml_failed = true;
            p->failed_end = s->start + s->len;
        } else if (!s->collect_failed) {
            p->xml_failed = true;
            p->failed_end = s->start + s->len;
            /* The worker did not know the chunk's first line; now it is
             * known. The parse is the same, so it fails the same way. */
            if (s->start) {
                parser_kit *kit = &p->kits[p->nworkers];
                sp_error again = {0};
                if (parse_chunk(p, kit, s, p->lines_before, discard_page, NULL, &again))
                    *err = again;
            }
        }
        return -1;
    }
    p->lines_before += s->newlines;
    s->done = false;
    p->emitted++;
    return 0;
}

static int drain(pool *p, sp_error *err) {
    while (p->emitted < p->submitted && !p->finished)
        if (emit_next(p, true, err))
            return -1;
    return 0;
}

static void count_read(pool *p, size_t n) {
    const parse_pool_args *a = p->a;
    p->read_end += n;
    a->stats->xml_bytes += n;
    if (a->opts->progress) {
        a->stats->input_bytes = source_offset(a->src);
        extract_progress(a->opts->progress, a->stats);
    }
}

/*
 * After an XML error in compressed input. Decoders check their checksums
 * only at the end of a block (900 kB for bz2), after handing out the
 * damaged bytes, so the parser often trips over the damage first. Reading
 * on a little tells "the file is damaged" (reported instead) from "the XML
 * is bad" (kept).
 */
static void blame_damage(pool *p, uint8_t *buf, sp_error *err) {
    source *src = p->a->src;
    if (!strcmp(source_format(src), "none"))
        return;
    sp_error damage = {0};
    while (p->read_end < p->failed_end + EXTRACT_DAMAGE_LOOKAHEAD) {
        ssize_t n = source_read(src, buf, READ_BYTES, &damage);
        if (n < 0) {
            *err = damage;
            return;
        }
        if (n == 0)
            return;
        p->read_end += (uint64_t)n;
    }
}

static int parse_inline(pool *p, chunk_slot *cur, bool *eof, sp_error *err);

/* The source failed after read_end bytes: the chunks before come first,
 * then the bytes read into cur, parsed here as one thread parses every
 * byte it was given before the failure (so its pages ending there are
 * handed on, whatever the size of the reads was); parse_inline's own read
 * then fails again, a source's error being kept. Their error wins unless
 * it is one the damage explains. */
static int source_failed(pool *p, chunk_slot *cur, const sp_error *damage, sp_error *err) {
    bool eof = false;
    if (parse_inline(p, cur, &eof, err) == 0 ||
        (p->xml_failed && strcmp(source_format(p->a->src), "none") &&
         p->read_end <= p->failed_end + EXTRACT_DAMAGE_LOOKAHEAD)) {
        *err = *damage;
        p->xml_failed = false;
    }
    return -1;
}

/* The document's head, once scanned, for the workers' fragments. */
static void take_head(pool *p) {
    size_t len;
    const uint8_t *head = page_split_head(p->split, &len);
    if (head && !p->head_len) {
        memcpy(p->head, head, len);
        p->head_len = len;
        p->root_line = page_split_root_line(p->split);
    }
}

/*
 * cur is full and holds no cut point after its start: every chunk before
 * it is handed on, then the document is parsed here, as it streams in,
 * until the next cut point (cur then holds the bytes from there) or the
 * end (*eof).
 */
static int parse_inline(pool *p, chunk_slot *cur, bool *eof, sp_error *err) {
    const parse_pool_args *a = p->a;
    if (drain(p, err))
        return -1;
    parser_kit *kit = &p->kits[p->nworkers];
    parse_pool_sink sink = {a->emit, a->emit_ctx};
    text_skip *ts = NULL;
    wiki_parser *wp = NULL;
    int rc = -1;
    uint64_t fed_to = cur->start + cur->len;
    p->xml_failed = true;
    p->failed_end = fed_to;
    if (a->opts->value_cap && !(ts = chunk_filter(p, cur->start, err)))
        goto out;
    if (a->opts->parts)
        a->opts->parts[0].begin(a->opts->parts[0].ctx, p->places++);
    if (!(wp = chunk_parser(p, a->text, cur->start, p->lines_before, parse_pool_page, &sink, err)))
        goto out;
    connect_aside(kit, ts, wp);
    if (feed(wp, ts, kit, cur->in, cur->len, err))
        goto out;
    p->lines_before += xml_lex_lines(cur->in, cur->len);
    for (;;) {
        sp_error damage = {0};
        ssize_t n = source_read(a->src, cur->in, READ_BYTES, &damage);
        if (n < 0) {
            *err = damage;
            p->xml_failed = false;
            goto out;
        }
        page_split_scan(p->split, cur->in, (size_t)n);
        count_read(p, (size_t)n);
        take_head(p);
        if (n == 0) {
            *eof = true;
            rc = chunk_finish(wp, ts, kit->kept, true, err);
            goto out;
        }
        uint64_t cut = page_split_last(p->split);
        size_t k = cut > fed_to ? (size_t)(cut - fed_to) : (size_t)n;
        p->failed_end = fed_to + (uint64_t)n;
        if (feed(wp, ts, kit, cur->in, k, err))
            goto out;
        p->lines_before += xml_lex_lines(cur->in, k);
        fed_to += k;
        if (k < (size_t)n) {
            if (chunk_finish(wp, ts, kit->kept, false, err))
                goto out;
            memmove(cur->in, cur->in + k, (size_t)n - k);
            cur->len = (size_t)n - k;
            cur->start = cut;
            rc = 0;
            goto out;
        }
    }
out:
    if (rc == 0)
        p->xml_failed = false;
    wiki_parser_destroy(wp);
    text_skip_destroy(ts);
    return rc;
}

/*
 * Chunk `from` ends at a stream start that is no cut point (so the chunks
 * after it were not parsed either): the document is parsed here from its
 * start to the end, as the single-threaded path would, from the bytes
 * already read (the chunks, then cur) and then from the source. Rare:
 * dumps begin their streams on pages.
 */
static int parse_rest(pool *p, chunk_slot *from, sp_error *err) {
    const parse_pool_args *a = p->a;
    if (!from->check_end || from->index >= p->broken)
        return sp_errorf(err, "%s: parse pool: chunk %llu skipped out of order", p->name,
                         (unsigned long long)from->index);
    /* The workers are idle once every chunk is done: the ones after from
     * are skipped at once. */
    pthread_mutex_lock(&p->mu);
    for (uint64_t c = from->index; c < p->submitted; c++)
        while (!slot_of(p, c)->done)
            pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    parser_kit *kit = &p->kits[p->nworkers];
    parse_pool_sink sink = {a->emit, a->emit_ctx};
    text_skip *ts = NULL;
    wiki_parser *wp = NULL;
    int rc = -1;
    p->xml_failed = true;
    p->failed_end = p->read_end;
    if (a->opts->value_cap && !(ts = chunk_filter(p, from->start, err)))
        goto out;
    if (a->opts->parts)
        a->opts->parts[0].begin(a->opts->parts[0].ctx, p->places++);
    if (!(wp = chunk_parser(p, a->text, from->start, p->lines_before, parse_pool_page, &sink, err)))
        goto out;
    connect_aside(kit, ts, wp);
    for (uint64_t c = from->index; c < p->submitted; c++) {
        chunk_slot *s = slot_of(p, c);
        if (feed(wp, ts, kit, s->in, s->len, err))
            goto out;
        s->done = false;
    }
    p->emitted = p->submitted;
    bool last = !p->cur;
    if (p->cur && feed(wp, ts, kit, p->cur->in, p->cur->len, err))
        goto out;
    while (!last) {
        sp_error damage = {0};
        ssize_t n = source_read(a->src, p->cur->in, READ_BYTES, &damage);
        if (n < 0) {
            *err = damage;
            p->xml_failed = false;
            goto out;
        }
        count_read(p, (size_t)n);
        p->failed_end = p->read_end;
        last = n == 0;
        if (n && feed(wp, ts, kit, p->cur->in, (size_t)n, err))
            goto out;
    }
    rc = chunk_finish(wp, ts, kit->kept, true, err);
out:
    if (rc == 0)
        p->xml_failed = false;
    p->finished = true;
    wiki_parser_destroy(wp);
    text_skip_destroy(ts);
    return rc;
}

/* The latest stream start in cur past its start, or 0. */
static uint64_t stream_cut(const pool *p) {
    uint64_t at = source_stream_start(p->a->src);
    return at > p->cur->start && at <= p->read_end ? at : 0;
}

/* Whether b (n bytes) begins with a page start tag: "<page" and '>' or a
 * space. */
static bool page_tag(const uint8_t *b, size_t n) {
    return n > 5 && !memcmp(b, "<page", 5) && (b[5] == '>' || xml_lex_space(b[5]));
}

/*
 * The last page start tag in cur past its start, once cur holds a chunk's
 * bytes, or 0: a guess, which the chunk's worker checks as it checks a
 * stream start (ends_at_cut), so the calling thread need not scan every
 * byte for the cut points (the scan is most of its work: issue 16). In a
 * dump '<' is escaped in text, so a "<page" is markup, and a page start
 * tag directly inside the root wherever the dump is not unusual (a page
 * inside a comment or CDATA section, a deeper "page" element); such a
 * guess fails its check and the rest of the document is parsed on this
 * thread, exactly (parse_rest). The search goes back from the end, from
 * '<' to '<', so it reads about one page.
 */
static uint64_t guess_cut(const pool *p) {
    const chunk_slot *c = p->cur;
    if (c->len < p->chunk)
        return 0;
    for (size_t end = c->len; end > 1;) {
        const uint8_t *lt = memrchr(c->in + 1, '<', end - 1);
        if (!lt)
            return 0;
        end = (size_t)(lt - c->in);
        if (page_tag(lt, c->len - end))
            return c->start + end;
    }
    return 0;
}

/*
 * In stream mode cur filled up without a stream start: once every chunk
 * before it is handed on (each one's end checked), cur starts at a cut
 * point, and the caller's scanner takes over from there.
 */
static int leave_streams(pool *p, sp_error *err) {
    if (drain(p, err) || p->finished)
        return -1;
    sp_error e = {0};
    page_split *sc = page_split_init_fragment(p->cur->start, &e);
    if (!sc)
        return sp_errorf(err, "%s: %s", p->name, e.msg);
    page_split_destroy(p->split);
    p->split = sc;
    page_split_scan(sc, p->cur->in, p->cur->len);
    p->cur->hard_start = true;
    p->streams = false;
    /* No page start tag in a whole stretch (a huge page, or names with a
     * prefix): guessing waits until the scanner cuts at one again. */
    p->guess_ok = false;
    return 0;
}

static int pump(pool *p, sp_error *err) {
    const parse_pool_args *a = p->a;
    chunk_slot *cur = p->cur = slot_of(p, 0);
    cur->start = 0;
    cur->len = 0;
    cur->hard_start = true;
    for (;;) {
        int got;
        while (p->emitted < p->submitted && (got = emit_next(p, false, err)) != 1)
            if (got < 0 || p->finished)
                return got < 0 ? -1 : 0;
        /* cur is full only right after leave_streams: cut it first. */
        if (cur->len < p->max) {
            /* At most chunk bytes at a time: a read is cut at its last cut
             * point, so a larger read would make every chunk as large as it. */
            size_t want = p->max - cur->len;
            if (want > READ_BYTES)
                want = READ_BYTES;
            if (want > p->chunk)
                want = p->chunk;
            sp_error damage = {0};
            ssize_t n = source_read(a->src, cur->in + cur->len, want, &damage);
            if (n < 0)
                return source_failed(p, cur, &damage, err);
            /* A multistream dump's streams begin on pages: once one has
             * begun (and the head is known), chunks are cut at stream
             * starts, and the scan moves to the workers, which check each
             * such cut (stream_cut, worth_parsing). */
            if (!p->streams)
                page_split_scan(p->split, cur->in + cur->len, (size_t)n);
            cur->len += (size_t)n;
            count_read(p, (size_t)n);
            take_head(p);
            if (n == 0) {
                cur->last = true;
                submit(p, false, false);
                p->cur = NULL;
                return drain(p, err);
            }
            if (!p->streams && p->head_len && (source_stream_start(a->src) || p->guess_ok))
                p->streams = true;
        }
        uint64_t cut = p->streams ? stream_cut(p) : page_split_last(p->split);
        bool guessed = false;
        if (p->streams && !cut && p->guess_ok)
            guessed = (cut = guess_cut(p)) != 0;
        if (cur->len >= p->chunk && cut > cur->start) {
            while (p->submitted + 1 - p->emitted >= p->nslots)
                if (emit_next(p, true, err) || p->finished)
                    return p->finished && !err->set ? 0 : -1;
            chunk_slot *next = slot_of(p, p->submitted + 1);
            size_t keep = (size_t)(cut - cur->start);
            next->len = cur->len - keep;
            next->start = cut;
            next->last = false;
            next->hard_start = !p->streams;
            memcpy(next->in, cur->in + keep, next->len);
            cur->len = keep;
            cur->last = false;
            submit(p, p->streams, guessed);
            cur = p->cur = next;
            if (!p->streams && page_tag(next->in, next->len))
                p->guess_ok = true;
        } else if (cur->len == p->max && p->streams) {
            if (leave_streams(p, err))
                return p->finished && !err->set ? 0 : -1;
        } else if (cur->len == p->max) {
            bool eof = false;
            if (parse_inline(p, cur, &eof, err))
                return -1;
            cur->hard_start = true;
            if (eof)
                return 0;
        }
    }
}

/* ------------------------------------------------------------ setup */

static int kit_init(parser_kit *kit, const pool *p, sp_error *err) {
    const extract_options *o = p->a->opts;
    /* A chunk's text never spills: it fits in the chunk. */
    size_t mem = o->value_cap ? (size_t)o->value_cap : p->max;
    if (!(kit->text = text_buffer_init(o->value_cap, mem, o->tmp_dir, err)))
        return -1;
    kit->kept_cap = FEED_BYTES + TEXT_SKIP_SLACK;
    if (!(kit->kept = malloc(kit->kept_cap)) || !(kit->scratch = malloc(kit->kept_cap)) ||
        !(kit->aside = text_aside_init()))
        return sp_errorf(err, "%s: out of memory", p->name);
    return 0;
}

/* Workers finish the chunk they are on and leave. */
static void stop_workers(pool *p) {
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_cond_broadcast(&p->checked);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->workers[i], NULL);
    p->started = 0;
}

static void pool_destroy(pool *p) {
    stop_workers(p);
    free(p->workers);
    if (p->kits)
        for (unsigned i = 0; i <= p->nworkers; i++) {
            text_buffer_destroy(p->kits[i].text);
            free(p->kits[i].kept);
            free(p->kits[i].scratch);
            text_aside_destroy(p->kits[i].aside);
        }
    free(p->kits);
    if (p->slots)
        for (unsigned i = 0; i < p->nslots; i++) {
            free(p->slots[i].in);
            free(p->slots[i].out);
        }
    free(p->slots);
    page_split_destroy(p->split);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->checked);
    pthread_mutex_destroy(&p->mu);
}

int parse_pool_run(const parse_pool_args *a, sp_error *err) {
    pool p = {.a = a, .name = source_name(a->src)};
    p.chunk = a->opts->chunk_bytes ? a->opts->chunk_bytes : PARSE_POOL_DEFAULT_CHUNK;
    p.max = PARSE_POOL_MAX_FACTOR * p.chunk;
    if (p.max < READ_BYTES)
        p.max = READ_BYTES;
    p.nworkers = a->threads;
    p.nslots = 2 * a->threads + 1;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.work, NULL);
    pthread_cond_init(&p.done, NULL);
    pthread_cond_init(&p.checked, NULL);
    p.broken = UINT64_MAX;
    p.guess_ok = true;
    int rc = -1;
    if (!(p.split = page_split_init(err)))
        goto out;
    p.slots = calloc(p.nslots, sizeof *p.slots);
    p.kits = calloc(p.nworkers + 1, sizeof *p.kits);
    if (!p.slots || !p.kits) {
        sp_errorf(err, "%s: out of memory", p.name);
        goto out;
    }
    for (unsigned i = 0; i < p.nslots; i++)
        if (!(p.slots[i].in = sp_io_alloc(p.max))) {
            sp_errorf(err, "%s: out of memory for %u parse chunks", p.name, p.nslots);
            goto out;
        }
    /* The caller's kit: its own text buffer serves stretches parsed inline. */
    for (unsigned i = 0; i <= p.nworkers; i++)
        if (kit_init(&p.kits[i], &p, err))
            goto out;
    if (!(p.workers = calloc(p.nworkers, sizeof *p.workers))) {
        sp_errorf(err, "%s: out of memory", p.name);
        goto out;
    }
    for (unsigned i = 0; i < p.nworkers; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        int e = wa ? pthread_create(&p.workers[i], NULL, worker_main,
                                    memcpy(wa, &(worker_arg){&p, i}, sizeof *wa))
                   : -1;
        if (e) {
            free(wa);
            sp_errorf(err, "%s: cannot start a parsing thread", p.name);
            goto out;
        }
        p.started++;
    }
    rc = pump(&p, err);
    p.parsed_all = rc == 0;
    stop_workers(&p);
    a->stats->parse_cpu_seconds = p.worker_cpu;
    if (rc && p.xml_failed)
        blame_damage(&p, p.slots[0].in, err);
out:
    pool_destroy(&p);
    return rc;
}
