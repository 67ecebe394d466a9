/*
 * wg_dump.c: the page loop and the XML around each text; see wg_dump.h.
 *
 * Pages are written while the XML is short of the requested size; the text
 * of each page is capped by what is left, so the result lands within about
 * a page skeleton (< 1 KB) of the request whatever the size. All choices come
 * from one xoshiro stream seeded by --seed, in a fixed order, so a seed
 * always gives the same bytes.
 */
#include "data/wg_dump.h"

#include "data/wg_buf.h"
#include "data/wg_rng.h"
#include "data/wg_text.h"
#include "data/wg_titles.h"
#include "data/wg_vocab.h"

#include <stdbool.h>
#include <string.h>
#include <xxhash.h>

#define FLUSH_BYTES (1u << 20)
/* Raw text is escaped in pieces of this size, so the XML buffer only ever
 * needs room for 6x a piece beyond what it holds. */
#define ESCAPE_PIECE (64u * 1024)
/* A page with no text and its XML skeleton stays well under this. */
#define PAGE_SKELETON 900
/* Per profile (wg_profile): the share of redirects, the average page of
 * XML (to aim links and redirects at pages that exist) and, for short
 * pages, the range of the last revision's text length (0: enwiki's
 * distribution, wg_text_length). */
static const struct {
    unsigned redirect_percent;
    uint64_t mean_page_bytes;
    uint32_t text_min, text_max;
} profiles[] = {
    [WG_PROFILE_ENWIKI] = {55, 4200, 0, 0},
    [WG_PROFILE_WIKTIONARY] = {5, 1100, 60, 620},
};

static const char footer[] = "</mediawiki>\n";

typedef struct dump {
    const wg_dump_options *o;
    wg_sink *sink;
    wg_dump_stats *stats;
    wg_rng rng;
    wg_vocab vocab;
    wg_titles titles;
    wg_text text;
    wg_buf out;
    wg_buf summary;
    uint64_t page_id;
    uint64_t link_span;
} dump;

static int flush(dump *d, sp_error *err) {
    if (!d->out.len)
        return 0;
    if (wg_sink_write(d->sink, d->out.p, d->out.len, err))
        return -1;
    d->stats->xml_bytes += d->out.len;
    d->out.len = 0;
    return 0;
}

static uint64_t produced(const dump *d) {
    return d->stats->xml_bytes + d->out.len;
}

static inline void lit(dump *d, const char *s) {
    wg_buf_lit(&d->out, s);
}

/* Nonzero where x has byte c; the lowest set bit marks the first such byte
 * exactly (false positives can only sit above a true one). */
static inline uint64_t has_byte(uint64_t x, unsigned char c) {
    uint64_t y = x ^ (0x0101010101010101ull * c);
    return (y - 0x0101010101010101ull) & ~y & 0x8080808080808080ull;
}

/* XML-escapes s into b, eight bytes at a time: most text needs nothing. */
static void escape_into(wg_buf *b, const char *s, size_t n) {
    static const char *const entity[256] = {
        ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;"};
    size_t run = 0, i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            uint64_t m = has_byte(x, '&') | has_byte(x, '<') | has_byte(x, '>') | has_byte(x, '"');
            if (!m) {
                i += 8;
                continue;
            }
            i += (size_t)__builtin_ctzll(m) >> 3;
        } else if (!entity[(unsigned char)s[i]]) {
            i++;
            continue;
        }
        wg_buf_put(b, s + run, i - run);
        wg_buf_lit(b, entity[(unsigned char)s[i]]);
        run = ++i;
    }
    wg_buf_put(b, s + run, n - run);
}

/* Escapes arbitrarily long text, reserving room piece by piece. */
static int escape_long(dump *d, const char *s, size_t n, sp_error *err) {
    for (size_t at = 0; at < n; at += ESCAPE_PIECE) {
        size_t k = n - at < ESCAPE_PIECE ? n - at : ESCAPE_PIECE;
        if (wg_buf_reserve(&d->out, 6 * k, err))
            return -1;
        escape_into(&d->out, s + at, k);
    }
    return 0;
}

static void timestamp(dump *d, uint64_t t) {
    /* Days to civil date (H. Hinnant's algorithm): no libc time zone involved. */
    uint64_t days = t / 86400, secs = t % 86400;
    uint64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    uint64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    uint64_t year = yoe + era * 400 + (month <= 2);
    uint64_t parts[] = {year, month, day, secs / 3600, secs / 60 % 60, secs % 60};
    const char seps[] = "--T::Z";
    for (int i = 0; i < 6; i++) {
        if (i && parts[i] < 10)
            wg_buf_put(&d->out, "0", 1);
        wg_buf_u64(&d->out, parts[i]);
        wg_buf_put(&d->out, &seps[i], 1);
    }
}

/* A 31-digit base-36 digest in the place of MediaWiki's SHA-1 (nothing
 * downstream checks it; xxh3 keeps the generator fast). */
static void digest(dump *d, const char *s, size_t n) {
    XXH128_hash_t h = XXH3_128bits(s, n);
    uint64_t x = h.low64 ^ wg_rotl(h.high64, 29);
    char digits[31];
    for (int i = 0; i < 31; i++)
        digits[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[wg_splitmix64(&x) % 36];
    wg_buf_put(&d->out, digits, sizeof digits);
}

static int header(dump *d, sp_error *err) {
    if (wg_buf_reserve(&d->out, 0, err))
        return -1;
    lit(d, "<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.11/\" "
           "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
           "xsi:schemaLocation=\"http://www.mediawiki.org/xml/export-0.11/ "
           "http://www.mediawiki.org/xml/export-0.11.xsd\" version=\"0.11\" xml:lang=\"en\">\n"
           "  <siteinfo>\n"
           "    <sitename>Wikigen</sitename>\n"
           "    <dbname>wikigenwiki</dbname>\n"
           "    <base>https://wikigen.invalid/wiki/Main_Page</base>\n"
           "    <generator>MediaWiki 1.42.0-wmf.5 (wikigen synthetic dump, seed ");
    wg_buf_u64(&d->out, d->o->seed);
    lit(d, ")</generator>\n"
           "    <case>first-letter</case>\n"
           "    <namespaces>\n");
    for (size_t k = 0; k < wg_namespace_count; k++) {
        const wg_namespace *ns = &wg_namespaces[k];
        lit(d, "      <namespace key=\"");
        if (ns->id < 0) {
            lit(d, "-");
            wg_buf_u64(&d->out, (uint64_t)-ns->id);
        } else {
            wg_buf_u64(&d->out, (uint64_t)ns->id);
        }
        lit(d, "\" case=\"first-letter\"");
        if (ns->name[0]) {
            lit(d, ">");
            lit(d, ns->name);
            lit(d, "</namespace>\n");
        } else {
            lit(d, " />\n");
        }
    }
    lit(d, "    </namespaces>\n  </siteinfo>\n");
    if (flush(d, err))
        return -1;
    return wg_sink_end_stream(d->sink, err);
}

static void contributor(dump *d) {
    uint32_t kind = wg_below(&d->rng, 100);
    if (kind == 0) {
        lit(d, "      <contributor deleted=\"deleted\" />\n");
        return;
    }
    lit(d, "      <contributor>\n");
    if (kind < 16) {
        lit(d, "        <ip>");
        for (int i = 0; i < 4; i++) {
            if (i)
                lit(d, ".");
            wg_buf_u64(&d->out, wg_below(&d->rng, 256));
        }
        lit(d, "</ip>\n");
    } else {
        const wg_word *a = &d->vocab.title[wg_below(&d->rng, WG_TITLE_WORDS)];
        lit(d, "        <username>");
        escape_into(&d->out, a->s, a->len);
        if (wg_below(&d->rng, 2))
            wg_buf_u64(&d->out, wg_below(&d->rng, 10000));
        lit(d, "</username>\n        <id>");
        wg_buf_u64(&d->out, wg_range(&d->rng, 1, 45000000));
        lit(d, "</id>\n");
    }
    lit(d, "      </contributor>\n");
}

typedef struct revision {
    uint64_t id, parent, time;
    bool deleted, empty, lua;
} revision;

/* Writes one <revision>; its text, if any, is in d->text.buf. */
static int write_revision(dump *d, const revision *r, sp_error *err) {
    if (wg_buf_reserve(&d->out, 0, err))
        return -1;
    lit(d, "    <revision>\n      <id>");
    wg_buf_u64(&d->out, r->id);
    lit(d, "</id>\n");
    if (r->parent) {
        lit(d, "      <parentid>");
        wg_buf_u64(&d->out, r->parent);
        lit(d, "</parentid>\n");
    }
    lit(d, "      <timestamp>");
    timestamp(d, r->time);
    lit(d, "</timestamp>\n");
    contributor(d);
    if (wg_below(&d->rng, 10) < 3)
        lit(d, "      <minor />\n");
    if (wg_below(&d->rng, 10) < 6) {
        d->summary.len = 0;
        if (wg_buf_reserve(&d->summary, 0, err))
            return -1;
        wg_text_summary(&d->text, &d->summary);
        lit(d, "      <comment>");
        escape_into(&d->out, d->summary.p, d->summary.len);
        lit(d, "</comment>\n");
    }
    lit(d, r->lua ? "      <model>Scribunto</model>\n      <format>text/plain</format>\n"
                  : "      <model>wikitext</model>\n      <format>text/x-wiki</format>\n");
    if (r->deleted) {
        lit(d, "      <text deleted=\"deleted\" />\n      <sha1 />\n    </revision>\n");
        return 0;
    }
    const wg_buf *t = &d->text.buf;
    size_t n = r->empty ? 0 : t->len;
    lit(d, "      <text bytes=\"");
    wg_buf_u64(&d->out, n);
    if (!n) {
        lit(d, "\" xml:space=\"preserve\" />\n");
    } else {
        lit(d, "\" xml:space=\"preserve\">");
        if (escape_long(d, t->p, n, err) || wg_buf_reserve(&d->out, 0, err))
            return -1;
        lit(d, "</text>\n");
    }
    lit(d, "      <sha1>");
    digest(d, t->p, n);
    lit(d, "</sha1>\n    </revision>\n");
    return 0;
}

static int write_page(dump *d, uint64_t i, uint64_t room, sp_error *err) {
    wg_rng *r = &d->rng;
    const wg_page_list *list = d->o->pages;
    bool dup = wg_title_is_dup(&d->titles, i);
    uint64_t source = dup ? wg_title_dup_source(&d->titles, i) : i;
    size_t ns = wg_title_namespace(&d->titles, source);
    bool lua = wg_namespaces[ns].id == 828;
    char title[WG_TITLE_CAP], target[WG_TITLE_CAP];
    size_t title_len = wg_title(&d->titles, source, title), target_len = 0;

    bool redirect = !lua && wg_below(r, 100) < profiles[d->o->profile].redirect_percent;
    unsigned revs = !redirect && wg_chance(r, 25000) ? wg_range(r, 2, 5) : 1;
    if (list)
        revs = wg_range(r, list->min_revisions, list->max_revisions);
    if (redirect) {
        uint64_t j = wg_below(r, (uint32_t)(d->link_span > UINT32_MAX ? UINT32_MAX : d->link_span));
        if (j == i)
            j = i + 1;
        target_len = wg_title(&d->titles, j, target);
    }
    d->page_id += 1 + wg_below(r, 8);
    if (wg_sink_index_page(d->sink, d->page_id, title, title_len, err))
        return -1;

    if (wg_buf_reserve(&d->out, 0, err))
        return -1;
    lit(d, "  <page>\n    <title>");
    escape_into(&d->out, title, title_len);
    lit(d, "</title>\n    <ns>");
    wg_buf_u64(&d->out, (uint64_t)wg_namespaces[ns].id);
    lit(d, "</ns>\n    <id>");
    wg_buf_u64(&d->out, d->page_id);
    lit(d, "</id>\n");
    if (redirect) {
        lit(d, "    <redirect title=\"");
        escape_into(&d->out, target, target_len);
        lit(d, "\" />\n");
    }

    /* Text budget: what is left of the size, less skeletons and a margin for
     * escaping; earlier revisions are drafts growing towards the last. */
    uint64_t budget = room > PAGE_SKELETON * revs ? (room - PAGE_SKELETON * revs) * 9 / 10 : 0;
    size_t full = 0;
    if (!redirect) {
        full = profiles[d->o->profile].text_max
                   ? wg_range(r, profiles[d->o->profile].text_min, profiles[d->o->profile].text_max)
                   : wg_text_length(&d->text, ns);
        uint64_t cap = budget * 2 / (revs + 1);
        if (full > cap)
            full = cap;
    }
    revision rev = {.id = wg_range(r, 1000000, 1200000000),
                    .time = wg_range(r, 979516800, 1717200000),
                    .lua = lua};
    rev.parent = wg_below(r, 5) ? rev.id - wg_range(r, 1, 999999) : 0;
    if (list)
        rev.time = list->time_from + wg_below(r, (uint32_t)(list->time_span / (revs + 1)));
    for (unsigned k = 0; k < revs; k++) {
        bool last = k + 1 == revs;
        rev.deleted = last ? wg_chance(r, 3000) : wg_below(r, 10) == 0;
        rev.empty = !redirect && last && wg_chance(r, 500);
        if (!rev.deleted) {
            int rc = redirect
                         ? wg_text_redirect(&d->text, target, target_len, err)
                         : wg_text_page(&d->text, ns, title, title_len, full * (k + 1) / revs, err);
            if (rc)
                return -1;
        }
        if (write_revision(d, &rev, err))
            return -1;
        d->stats->revisions++;
        rev.parent = rev.id;
        rev.id += wg_range(r, 1, 5000000);
        rev.time += list ? wg_range(r, 60, (uint32_t)(list->time_span / (revs + 1)))
                         : wg_range(r, 60, 30000000);
    }
    lit(d, "  </page>\n");
    d->stats->pages++;
    d->stats->redirects += redirect;
    d->stats->duplicates += dup;
    return 0;
}

static int run(dump *d, sp_error *err) {
    const wg_dump_options *o = d->o;
    if (header(d, err))
        return -1;
    unsigned in_stream = 0;
    for (size_t k = 0;; k++) {
        uint64_t used = produced(d) + sizeof footer - 1;
        if (o->pages ? k == o->pages->n : used + PAGE_SKELETON + 300 > o->size)
            break;
        uint64_t room = o->pages ? UINT64_MAX / 16 : o->size - used;
        if (write_page(d, o->pages ? o->pages->numbers[k] : d->stats->pages, room, err))
            return -1;
        if (o->pages_per_stream && ++in_stream == o->pages_per_stream) {
            in_stream = 0;
            if (flush(d, err) || wg_sink_end_stream(d->sink, err))
                return -1;
        } else if (d->out.len >= FLUSH_BYTES && flush(d, err)) {
            return -1;
        }
    }
    if (flush(d, err) || wg_sink_end_stream(d->sink, err))
        return -1;
    lit(d, footer);
    if (flush(d, err) || wg_sink_end_stream(d->sink, err))
        return -1;
    return wg_sink_finish(d->sink, err);
}

int wg_dump_write(const wg_dump_options *o, wg_sink *sink, wg_dump_stats *stats, sp_error *err) {
    dump d;
    memset(&d, 0, sizeof d);
    memset(stats, 0, sizeof *stats);
    d.o = o;
    d.sink = sink;
    d.stats = stats;
    d.page_id = 9;
    /* An increment's pages and links are those of the dump it follows. */
    uint64_t size = o->pages ? o->pages->title_size : o->size;
    d.link_span = size / profiles[o->profile].mean_page_bytes + 16;
    wg_rng_seed(&d.rng, o->seed);
    if (wg_vocab_init(&d.vocab, err))
        return -1;
    wg_titles_init(&d.titles, &d.vocab, o->pages ? o->pages->title_seed : o->seed, size / 256 + 16,
                   o->dup_per_million);
    wg_text_init(&d.text, &d.vocab, &d.titles, &d.rng, d.link_span);
    int rc = run(&d, err);
    wg_text_destroy(&d.text);
    wg_buf_free(&d.out);
    wg_buf_free(&d.summary);
    wg_vocab_destroy(&d.vocab);
    return rc;
}
