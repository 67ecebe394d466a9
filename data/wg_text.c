/*
 * wg_text.c: wikitext generation; see wg_text.h.
 *
 * Every append to the text goes through put()/put_word(), which is where a
 * pending straddling character is placed: appends are small and checked
 * before they happen, so the text never passes the planned offset unseen.
 * Capacity is reserved once per sentence, row or element (wg_buf.h).
 */
#include "data/wg_text.h"

#include <string.h>

static const char *const months[] = {"January",   "February", "March",    "April",
                                     "May",       "June",     "July",     "August",
                                     "September", "October",  "November", "December"};

/* Article lengths: a lognormal-looking body and a power-law tail. Bucket k
 * holds lengths in [64 << k, 128 << k), drawn uniformly inside; shares are
 * per million. The mean is about 9.4 KB and about 50 in a million articles
 * pass 1 MiB (a handful in a 1 GiB dump). */
static const uint32_t length_buckets[] = {
    20000, 30000, 60000, 110000, 170000, 200000, 170000, 120000, 70000,
    33000, 12000, 3800,  900,    250,    35,     12,     3,
};

/* Of 65536 words, how many are phrases echoed from earlier in the text, and
 * the longest phrase in bytes. */
#define ECHO_SHARE 12000
#define ECHO_MAX 96

void wg_text_init(wg_text *g, const wg_vocab *v, const wg_titles *t, wg_rng *rng,
                  uint64_t link_span) {
    memset(g, 0, sizeof *g);
    g->vocab = v;
    g->titles = t;
    g->rng = rng;
    g->link_span = link_span ? link_span : 1;
}

void wg_text_destroy(wg_text *g) {
    wg_buf_free(&g->buf);
}

/* Places the pending character so that it starts at cut_at; the gap is
 * filled with plain words. */
static void straddle(wg_text *g) {
    static const char filler[] = " and the of in to a is was for on as by with it ";
    size_t k = 0;
    while (g->buf.len < g->cut_at) {
        g->buf.p[g->buf.len++] = filler[k];
        k = (k + 1) % (sizeof filler - 1);
    }
    g->buf.len += wg_utf8_put(g->buf.p + g->buf.len, g->cut_cp);
    g->cut_pending = false;
}

static inline void cut_check(wg_text *g, size_t n) {
    if (__builtin_expect(g->cut_pending, 0) && g->buf.len + n >= g->cut_at)
        straddle(g);
}

static inline void put(wg_text *g, const char *s, size_t n) {
    cut_check(g, n);
    wg_buf_put(&g->buf, s, n);
}

static inline void lit(wg_text *g, const char *s) {
    put(g, s, strlen(s));
}

static inline void put_word(wg_text *g, const wg_word *w) {
    cut_check(g, w->len);
    /* Slots are WG_WORD_CAP bytes and the buffer has slack: copy them whole. */
    memcpy(g->buf.p + g->buf.len, w->s, WG_WORD_CAP);
    g->buf.len += w->len;
}

static inline void put_u64(wg_text *g, uint64_t n) {
    cut_check(g, 20);
    wg_buf_u64(&g->buf, n);
}

static const wg_word *draw_word(wg_text *g, uint64_t x) {
    if (((x >> 40) & 0xff) < g->foreign_share)
        return &g->vocab->foreign[wg_zipf_rank(x, WG_FOREIGN_OCTAVES)];
    return &g->vocab->text[wg_zipf_rank(x, WG_TEXT_OCTAVES)];
}

static const wg_word *any_word(wg_text *g) {
    return draw_word(g, wg_next(g->rng));
}

/* A title token: capitalised words for names, headings and captions. */
static const wg_word *title_word(wg_text *g) {
    return &g->vocab->title[wg_below(g->rng, WG_TITLE_WORDS)];
}

static void words(wg_text *g, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        if (i)
            put(g, " ", 1);
        put_word(g, any_word(g));
    }
}

static void capitalise_at(wg_text *g, size_t pos) {
    char *c = &g->buf.p[pos];
    if (pos < g->buf.len && *c >= 'a' && *c <= 'z')
        *c = (char)(*c - 'a' + 'A');
}

static void link_to(wg_text *g, uint64_t page) {
    char title[WG_TITLE_CAP];
    size_t n = wg_title(g->titles, page, title);
    lit(g, "[[");
    put(g, title, n);
}

static void link(wg_text *g, const wg_word *w) {
    link_to(g, wg_below(g->rng, (uint32_t)(g->link_span > UINT32_MAX ? UINT32_MAX : g->link_span)));
    if (wg_below(g->rng, 10) < 3) {
        put(g, "|", 1);
        put_word(g, w);
    }
    lit(g, "]]");
}

static void date(wg_text *g) {
    put_u64(g, wg_range(g->rng, 1, 28));
    put(g, " ", 1);
    lit(g, months[wg_below(g->rng, 12)]);
    put(g, " ", 1);
    put_u64(g, wg_range(g->rng, 1990, 2024));
}

static void ref(wg_text *g) {
    uint32_t kind = wg_below(g->rng, 20);
    if (kind < 3) {
        lit(g, "<ref name=\"");
        put_word(g, title_word(g));
        put_u64(g, wg_below(g->rng, 100));
        lit(g, "\" />");
        return;
    }
    if (kind < 8) {
        lit(g, "<ref name=\"");
        put_word(g, title_word(g));
        put_u64(g, wg_below(g->rng, 100));
        lit(g, "\">{{cite book |last=");
        put_word(g, title_word(g));
        lit(g, " |first=");
        put_word(g, title_word(g));
        lit(g, " |title=");
        words(g, wg_range(g->rng, 2, 6));
        lit(g, " |year=");
        put_u64(g, wg_range(g->rng, 1850, 2024));
        lit(g, " |page=");
        put_u64(g, wg_range(g->rng, 1, 900));
        lit(g, "}}</ref>");
        return;
    }
    lit(g, "<ref>{{cite web |url=https://www.example.org/");
    put_word(g, &g->vocab->text[wg_range(g->rng, 200, 4000)]);
    put(g, "/", 1);
    put_u64(g, wg_next(g->rng) % 1000000);
    lit(g, "?lang=en&id=");
    put_u64(g, wg_below(g->rng, 10000));
    lit(g, " |title=");
    words(g, wg_range(g->rng, 2, 7));
    lit(g, " |publisher=");
    put_word(g, title_word(g));
    lit(g, " |access-date=");
    date(g);
    lit(g, "}}</ref>");
}

static void inline_template(wg_text *g) {
    switch (wg_below(g->rng, 5)) {
    case 0:
        lit(g, "{{citation needed|date=");
        lit(g, months[wg_below(g->rng, 12)]);
        put(g, " ", 1);
        put_u64(g, wg_range(g->rng, 2006, 2024));
        lit(g, "}}");
        break;
    case 1:
        lit(g, "{{convert|");
        put_u64(g, wg_range(g->rng, 1, 9000));
        lit(g, "|km|mi}}");
        break;
    case 2:
        lit(g, "{{lang|el|");
        put_word(g, &g->vocab->foreign[wg_zipf_rank(wg_next(g->rng), WG_FOREIGN_OCTAVES)]);
        lit(g, "}}");
        break;
    case 3:
        lit(g, "{{as of|");
        put_u64(g, wg_range(g->rng, 1990, 2024));
        lit(g, "}}");
        break;
    default:
        lit(g, "{{nowrap|");
        words(g, 2);
        lit(g, "}}");
        break;
    }
}

static void html_bit(wg_text *g, const wg_word *w) {
    switch (wg_below(g->rng, 5)) {
    case 0:
        lit(g, "<br />");
        break;
    case 1:
        lit(g, "<small>");
        put_word(g, w);
        lit(g, "</small>");
        break;
    case 2:
        lit(g, "<!-- ");
        words(g, 4);
        lit(g, " -->");
        break;
    case 3:
        lit(g, "<math>a_{");
        put_u64(g, wg_below(g->rng, 10));
        lit(g, "} < b & c > d</math>");
        break;
    default:
        put_word(g, w);
        lit(g, "<sup>");
        put_u64(g, wg_range(g->rng, 1, 3));
        lit(g, "</sup>");
        break;
    }
}

static void entity_pair(wg_text *g, const wg_word *w) {
    static const char *const entities[] = {"&nbsp;", "&ndash;", "&mdash;", "&amp;", "&#91;"};
    put_word(g, w);
    lit(g, entities[wg_below(g->rng, 5)]);
    put_word(g, any_word(g));
}

/* Repeats a phrase from earlier in the text, between spaces (so never
 * inside a multi-byte character): real prose repeats its names and phrases,
 * and compressors find that, which sets how fast dumps decompress. */
static void echo(wg_text *g, size_t len) {
    const char *p = g->buf.p, *end = p + g->buf.len;
    const char *a = memchr(p + wg_below(g->rng, (uint32_t)(g->buf.len - len)), ' ', len);
    if (!a)
        return;
    a++;
    /* Within one line, so an echo never repeats a heading or a table row. */
    const char *e = a + len < end ? a + len : end;
    const char *nl = memchr(a, '\n', (size_t)(e - a));
    if (nl)
        e = nl;
    while (e > a && (e == end || *e != ' '))
        e--;
    if (e > a)
        put(g, a, (size_t)(e - a));
}

/* One sentence: words with inline markup chosen from the same random draw. */
static void sentence(wg_text *g) {
    unsigned n = wg_range(g->rng, 5, 28);
    for (unsigned k = 0; k < n; k++) {
        uint64_t x = wg_next(g->rng);
        const wg_word *w = draw_word(g, x);
        uint32_t m = (uint32_t)(x >> 48);
        size_t start = g->buf.len;
        if (m < 3400) {
            link(g, w);
        } else if (m < 4200) {
            lit(g, "'''");
            put_word(g, w);
            lit(g, "'''");
        } else if (m < 5200) {
            lit(g, "''");
            put_word(g, w);
            lit(g, "''");
        } else if (m < 5700) {
            put(g, "\"", 1);
            put_word(g, w);
            put(g, " ", 1);
            put_word(g, any_word(g));
            put(g, "\"", 1);
        } else if (m < 6600) {
            put_u64(g, (m & 1) ? wg_range(g->rng, 1000, 2024) : wg_next(g->rng) % 100000);
        } else if (m < 7000) {
            put_word(g, w);
            ref(g);
        } else if (m < 7200) {
            inline_template(g);
        } else if (m < 7350) {
            entity_pair(g, w);
        } else if (m < 7450) {
            html_bit(g, w);
        } else if (m < 7450 + ECHO_SHARE && g->buf.len > 4 * ECHO_MAX) {
            echo(g, wg_range(g->rng, 12, ECHO_MAX));
        } else {
            put_word(g, w);
        }
        if (k == 0)
            capitalise_at(g, start);
        if (k + 1 < n)
            put(g, m > 60000 ? ", " : " ", m > 60000 ? 2 : 1);
    }
    put(g, ".", 1);
}

static int paragraph(wg_text *g, size_t target, const char *prefix, bool signed_reply,
                     sp_error *err) {
    unsigned n = wg_range(g->rng, 2, 7);
    if (wg_buf_reserve(&g->buf, 0, err))
        return -1;
    put(g, "\n\n", 2);
    lit(g, prefix);
    for (unsigned i = 0; i < n && g->buf.len < target; i++) {
        if (wg_buf_reserve(&g->buf, 0, err))
            return -1;
        if (i)
            put(g, " ", 1);
        sentence(g);
    }
    if (signed_reply) {
        const wg_word *user = title_word(g);
        lit(g, " [[User:");
        put_word(g, user);
        put(g, "|", 1);
        put_word(g, user);
        lit(g, "]] ([[User talk:");
        put_word(g, user);
        lit(g, "|talk]]) ");
        put_u64(g, wg_range(g->rng, 10, 23));
        put(g, ":", 1);
        put_u64(g, wg_range(g->rng, 10, 59));
        lit(g, ", ");
        date(g);
        lit(g, " (UTC)");
    }
    return 0;
}

static void heading(wg_text *g) {
    const char *mark = wg_below(g->rng, 4) ? "==" : "===";
    lit(g, "\n\n");
    lit(g, mark);
    put(g, " ", 1);
    size_t start = g->buf.len;
    words(g, wg_range(g->rng, 1, 4));
    capitalise_at(g, start);
    put(g, " ", 1);
    lit(g, mark);
}

static int list(wg_text *g, size_t target, sp_error *err) {
    unsigned n = wg_range(g->rng, 3, 9);
    for (unsigned i = 0; i < n && g->buf.len < target; i++) {
        if (wg_buf_reserve(&g->buf, 0, err))
            return -1;
        lit(g, i ? "\n* " : "\n\n* ");
        if (wg_below(g->rng, 2))
            link(g, any_word(g));
        else
            words(g, wg_range(g->rng, 2, 10));
        if (wg_below(g->rng, 3) == 0) {
            lit(g, " &ndash; ");
            put_u64(g, wg_range(g->rng, 1900, 2024));
        }
    }
    return 0;
}

static int table(wg_text *g, size_t target, sp_error *err) {
    unsigned cols = wg_range(g->rng, 2, 6);
    unsigned rows = wg_range(g->rng, 3, 40);
    if (wg_buf_reserve(&g->buf, 0, err))
        return -1;
    lit(g, "\n\n{| class=\"wikitable sortable\" style=\"text-align:center\"\n|+ ");
    words(g, 3);
    put(g, "\n", 1);
    for (unsigned c = 0; c < cols; c++) {
        lit(g, c ? " !! " : "! ");
        put_word(g, title_word(g));
    }
    for (unsigned r = 0; r < rows && g->buf.len < target; r++) {
        if (wg_buf_reserve(&g->buf, 0, err))
            return -1;
        lit(g, "\n|-\n| ");
        for (unsigned c = 0; c < cols; c++) {
            if (c)
                lit(g, " || ");
            switch (wg_below(g->rng, 4)) {
            case 0:
                link(g, any_word(g));
                break;
            case 1:
                put_u64(g, wg_next(g->rng) % 100000);
                break;
            default:
                words(g, wg_range(g->rng, 1, 3));
                break;
            }
        }
    }
    lit(g, "\n|}");
    return 0;
}

static int infobox(wg_text *g, const char *title, size_t title_len, sp_error *err) {
    static const char *const kinds[] = {"settlement", "person", "album", "film",
                                        "company",    "river",  "ship",  "football biography"};
    static const char *const fields[] = {"image",      "caption",  "country",    "established",
                                         "population", "area_km2", "website",    "genre",
                                         "label",      "producer", "birth_date", "occupation"};
    if (wg_buf_reserve(&g->buf, 0, err))
        return -1;
    lit(g, "{{Infobox ");
    lit(g, kinds[wg_below(g->rng, 8)]);
    lit(g, "\n| name = ");
    put(g, title, title_len);
    unsigned n = wg_range(g->rng, 3, 12);
    for (unsigned i = 0; i < n; i++) {
        lit(g, "\n| ");
        lit(g, fields[wg_below(g->rng, 12)]);
        lit(g, " = ");
        if (wg_below(g->rng, 2))
            link(g, any_word(g));
        else
            put_u64(g, wg_next(g->rng) % 10000000);
    }
    lit(g, "\n}}\n");
    return 0;
}

static int lua_module(wg_text *g, size_t target, sp_error *err) {
    lit(g, "-- Implements {{");
    put_word(g, title_word(g));
    lit(g, "}}\nlocal p = {}\nlocal getArgs = require('Module:Arguments').getArgs\n");
    while (g->buf.len < target) {
        if (wg_buf_reserve(&g->buf, 0, err))
            return -1;
        const wg_word *fn = &g->vocab->text[wg_range(g->rng, 200, 30000)];
        lit(g, "\nfunction p.");
        put_word(g, fn);
        lit(g, "(frame)\n\tlocal args = getArgs(frame)\n\tif args[1] == \"");
        put_word(g, any_word(g));
        lit(g, "\" and #args > ");
        put_u64(g, wg_below(g->rng, 5));
        lit(g, " then\n\t\treturn '<span class=\"");
        put_word(g, any_word(g));
        lit(g,
            "\">' .. args[1] .. '</span>'\n\tend\n\treturn mw.text.nowiki(args[2] or '')\nend\n");
    }
    lit(g, "\nreturn p\n");
    return 0;
}

/* Sometimes plan a 2-, 3- or 4-byte character across WG_CUT_BYTES. */
static void plan_straddle(wg_text *g, size_t target) {
    static const uint32_t chars[] = {0xe9,   0x3bb,  0x436,   0x5d0,  0x20ac,
                                     0x6771, 0xac00, 0x1f600, 0x20bb7};
    if (target < WG_CUT_BYTES + 200 || wg_below(g->rng, 100) >= 15)
        return;
    uint32_t cp = chars[wg_below(g->rng, sizeof chars / sizeof chars[0])];
    size_t len = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    g->cut_cp = cp;
    g->cut_at = WG_CUT_BYTES - 1 - wg_below(g->rng, (uint32_t)len - 1);
    g->cut_pending = true;
}

size_t wg_text_length(wg_text *g, size_t ns_index) {
    unsigned shift = wg_namespaces[ns_index].len_shift;
    uint32_t pick = wg_below(g->rng, 1000000);
    size_t k = 0;
    while (k + 1 < sizeof length_buckets / sizeof length_buckets[0] && pick >= length_buckets[k])
        pick -= length_buckets[k++];
    size_t lo = (size_t)64 << k;
    size_t n = lo + wg_below(g->rng, (uint32_t)lo);
    n >>= shift;
    return n < 40 ? 40 : n;
}

int wg_text_page(wg_text *g, size_t ns_index, const char *title, size_t title_len, size_t target,
                 sp_error *err) {
    const wg_namespace *ns = &wg_namespaces[ns_index];
    g->buf.len = 0;
    g->cut_pending = false;
    g->foreign_share = wg_below(g->rng, 100) < 8 ? wg_range(g->rng, 64, 200) : 0;
    if (wg_buf_reserve(&g->buf, 0, err))
        return -1;
    plan_straddle(g, target);
    /* The bare name, for the lead sentence and templates. */
    const char *colon = ns->name[0] ? memchr(title, ':', title_len) : NULL;
    const char *name = colon ? colon + 1 : title;
    size_t name_len = title_len - (size_t)(name - title);

    bool talk = ns->id == 1 || ns->id == 3;
    switch (ns->id) {
    case 828:
        return lua_module(g, target, err);
    case 10:
        lit(g, "{{Navbox\n| name = ");
        put(g, name, name_len);
        lit(g, "\n| title = [[");
        put(g, name, name_len);
        lit(g, "]]\n| listclass = hlist\n| group1 = ");
        put_word(g, title_word(g));
        lit(g, "\n| list1 =\n");
        while (g->buf.len < target) {
            if (wg_buf_reserve(&g->buf, 0, err))
                return -1;
            lit(g, "* ");
            link(g, any_word(g));
            put(g, "\n", 1);
        }
        lit(g, "}}<noinclude>\n{{Documentation}}\n</noinclude>");
        return 0;
    case 6:
        lit(g, "== Summary ==\n{{Information\n|description=");
        words(g, wg_range(g->rng, 3, 12));
        lit(g, "\n|source={{own}}\n|date=");
        put_u64(g, wg_range(g->rng, 2004, 2024));
        lit(g, "-0");
        put_u64(g, wg_range(g->rng, 1, 9));
        lit(g, "-1");
        put_u64(g, wg_range(g->rng, 0, 9));
        lit(g, "\n|author=[[User:");
        put_word(g, title_word(g));
        lit(g, "]]\n}}\n\n== Licensing ==\n{{self|cc-by-sa-4.0}}");
        break;
    case 14:
        lit(g, "{{Commons category|");
        put(g, name, name_len);
        lit(g, "}}\n");
        break;
    case 2:
        lit(g, "{{User en}}\n{{Userbox|border-c=#000|id=&#9733;}}\n");
        break;
    case 4:
        lit(g, "{{Wikipedia how-to|WP:");
        put_word(g, title_word(g));
        lit(g, "}}\n");
        break;
    default:
        if (talk)
            lit(g, "{{Talk header}}\n{{WikiProject banner shell|class=C}}");
        break;
    }
    if (ns->id == 0) {
        if (wg_below(g->rng, 2)) {
            lit(g, "{{Short description|");
            words(g, wg_range(g->rng, 2, 6));
            lit(g, "}}\n");
        }
        if (target > 1500 && wg_below(g->rng, 4) == 0 && infobox(g, name, name_len, err))
            return -1;
        lit(g, "'''");
        put(g, name, name_len);
        lit(g, "''' ");
        for (unsigned i = 0; i < 3 && g->buf.len < target; i++) {
            if (wg_buf_reserve(&g->buf, 0, err))
                return -1;
            if (i)
                put(g, " ", 1);
            sentence(g);
        }
    }
    while (g->buf.len < target) {
        if (wg_buf_reserve(&g->buf, 0, err))
            return -1;
        uint32_t b = wg_below(g->rng, 100);
        int rc = 0;
        if (talk) {
            if (b < 25)
                heading(g);
            rc = paragraph(g, target, b & 1 ? ":" : "::", true, err);
        } else if (b < 20) {
            heading(g);
            rc = paragraph(g, target, "", false, err);
        } else if (b < 27) {
            rc = list(g, target, err);
        } else if (b < 30) {
            rc = table(g, target, err);
        } else {
            rc = paragraph(g, target, "", false, err);
        }
        if (rc)
            return -1;
    }
    if (wg_buf_reserve(&g->buf, 0, err))
        return -1;
    if (ns->id == 0 && target > 600)
        lit(g, "\n\n== References ==\n{{Reflist}}");
    if (!talk) {
        unsigned cats = wg_below(g->rng, 4);
        for (unsigned i = 0; i < cats; i++) {
            lit(g, "\n[[Category:");
            put_word(g, title_word(g));
            put(g, " ", 1);
            put_word(g, any_word(g));
            lit(g, "]]");
        }
    }
    return 0;
}

int wg_text_redirect(wg_text *g, const char *target, size_t target_len, sp_error *err) {
    static const char *const kinds[] = {"R from move", "R from alternative spelling",
                                        "R from short name", "R to section",
                                        "R from other capitalisation"};
    g->buf.len = 0;
    g->cut_pending = false;
    g->foreign_share = 0;
    if (wg_buf_reserve(&g->buf, 0, err))
        return -1;
    uint32_t v = wg_below(g->rng, 100);
    lit(g, v < 5 ? "#redirect [[" : "#REDIRECT [[");
    put(g, target, target_len);
    if (v >= 60 && v < 70) {
        put(g, "#", 1);
        words(g, wg_range(g->rng, 1, 3));
    }
    lit(g, "]]");
    if (v < 5 || v >= 70) {
        lit(g, "\n\n{{Redirect category shell|\n{{");
        lit(g, kinds[wg_below(g->rng, 5)]);
        lit(g, "}}\n}}");
    }
    return 0;
}

void wg_text_summary(wg_text *g, wg_buf *b) {
    /* Summaries are written to a different buffer than the text: borrow it. */
    wg_buf saved = g->buf;
    bool pending = g->cut_pending;
    g->buf = *b;
    g->cut_pending = false;
    switch (wg_below(g->rng, 4)) {
    case 0:
        lit(g, "/* ");
        words(g, wg_range(g->rng, 1, 3));
        lit(g, " */ ");
        words(g, wg_range(g->rng, 1, 6));
        break;
    case 1:
        lit(g, "Reverted edits by [[Special:Contributions/");
        put_word(g, title_word(g));
        lit(g, "|");
        put_word(g, title_word(g));
        lit(g, "]] to last version by \"");
        put_word(g, title_word(g));
        lit(g, "\" & others");
        break;
    default:
        words(g, wg_range(g->rng, 2, 12));
        break;
    }
    *b = g->buf;
    g->buf = saved;
    g->cut_pending = pending;
}
