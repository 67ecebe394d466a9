/*
 * title_rules.c: MediaWiki's title rules and the title index's records;
 * see title_rules.h. Case mapping, casefolding and mark stripping are
 * utf8proc's (Unicode's own data, kept up to date by its maintainers).
 */
#include "stages/common/title_rules.h"

#include "stages/common/record.h"
#include "stages/common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

char *sp_titles_path(const char *table_path) {
    size_t n = strlen(table_path) + sizeof SP_TITLES_SUFFIX;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s", table_path, SP_TITLES_SUFFIX);
    return p;
}

void sp_title_rules_init(sp_title_rules *r) {
    r->table = (sp_table_identity){0};
    r->layout = SP_TITLES_LAYOUT;
    r->first_letter = true;
    r->ns_count = 0;
}

void sp_title_rules_add(sp_title_rules *r, long key, bool first_letter, const uint8_t *name,
                        size_t name_len) {
    if (r->ns_count == SP_TITLE_NS_MAX || name_len > SP_TITLE_NS_NAME_MAX)
        return;
    sp_title_ns *ns = &r->ns[r->ns_count++];
    ns->key = key;
    ns->first_letter = first_letter;
    ns->name_len = name_len;
    memcpy(ns->name, name, name_len);
}

bool sp_title_case_first_letter(const char *text, size_t len) {
    /* MediaWiki writes "first-letter" or "case-sensitive" (and, for some
     * old dumps, "case-insensitive", which it treats as first-letter). */
    return !(len == strlen("case-sensitive") && !memcmp(text, "case-sensitive", len));
}

static const char *case_word(bool first_letter) {
    return first_letter ? "first-letter" : "case-sensitive";
}

bool sp_table_identity_equal(const sp_table_identity *a, const sp_table_identity *b) {
    return a->file_size == b->file_size && a->footer_checksum == b->footer_checksum;
}

uint8_t *sp_title_rules_encode(const sp_title_rules *r, size_t *len) {
    size_t cap = 80;
    for (size_t i = 0; i < r->ns_count; i++)
        cap += 48 + r->ns[i].name_len;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t n = (size_t)snprintf(
        out, cap, "table=%llu %016llx\ncase=%s\n", (unsigned long long)r->table.file_size,
        (unsigned long long)r->table.footer_checksum, case_word(r->first_letter));
    if (r->layout != 1)
        n += (size_t)snprintf(out + n, cap - n, "layout=%u\n", r->layout);
    for (size_t i = 0; i < r->ns_count; i++) {
        const sp_title_ns *ns = &r->ns[i];
        n += (size_t)snprintf(out + n, cap - n, "ns=%ld %s ", ns->key, case_word(ns->first_letter));
        memcpy(out + n, ns->name, ns->name_len);
        n += ns->name_len;
        out[n++] = '\n';
    }
    *len = n;
    return (uint8_t *)out;
}

/* One line of the rules record, without its newline. */
static int decode_line(const char *s, size_t n, sp_title_rules *r) {
    if (n > 6 && !memcmp(s, "table=", 6)) {
        char line[64];
        if (n >= sizeof line)
            return -1;
        memcpy(line, s, n);
        line[n] = '\0';
        unsigned long long size, sum;
        int used = 0;
        if (sscanf(line + 6, "%llu %16llx%n", &size, &sum, &used) != 2 || (size_t)used != n - 6)
            return -1;
        r->table = (sp_table_identity){.file_size = size, .footer_checksum = sum};
        return 0;
    }
    if (n == 8 && !memcmp(s, "layout=", 7)) {
        r->layout = (unsigned)(s[7] - '0');
        return r->layout >= 1 && r->layout <= SP_TITLES_LAYOUT ? 0 : -1;
    }
    if (n > 5 && !memcmp(s, "case=", 5)) {
        r->first_letter = sp_title_case_first_letter(s + 5, n - 5);
        return 0;
    }
    if (n < 3 || memcmp(s, "ns=", 3))
        return -1;
    char num[24];
    const char *sp1 = memchr(s + 3, ' ', n - 3);
    if (!sp1 || (size_t)(sp1 - (s + 3)) >= sizeof num)
        return -1;
    memcpy(num, s + 3, (size_t)(sp1 - (s + 3)));
    num[sp1 - (s + 3)] = '\0';
    char *end;
    long key = strtol(num, &end, 10);
    if (end == num || *end)
        return -1;
    const char *word = sp1 + 1;
    const char *sp2 = memchr(word, ' ', n - (size_t)(word - s));
    if (!sp2)
        return -1;
    sp_title_rules_add(r, key, sp_title_case_first_letter(word, (size_t)(sp2 - word)),
                       (const uint8_t *)sp2 + 1, n - (size_t)(sp2 + 1 - s));
    return 0;
}

int sp_title_rules_decode(const uint8_t *text, size_t len, sp_title_rules *r) {
    sp_title_rules_init(r);
    r->layout = 1;
    const char *s = (const char *)text, *end = s + len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl || decode_line(s, (size_t)(nl - s), r))
            return -1;
        s = nl + 1;
    }
    return 0;
}

/* The options of every map below. Under each of them utf8proc maps an
 * ASCII character to itself, but for the case fold of A-Z to a-z (no
 * ASCII character decomposes, composes or is a mark). */
#define ASCII_KEPT (UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD | UTF8PROC_STRIPMARK)

/* Whether s[0..n) is all ASCII. */
static bool all_ascii(const uint8_t *s, size_t n) {
    uint8_t high = 0;
    for (size_t i = 0; i < n; i++)
        high |= s[i];
    return high < 0x80;
}

/* utf8proc_map of in[0..n) into out (cap bytes), cut at a character
 * boundary; its length, or 0 on bad input. */
static size_t map_into(const uint8_t *in, size_t n, utf8proc_option_t options, uint8_t *out,
                       size_t cap) {
    if (n == 0 || memchr(in, 0, n))
        return 0;
    /* An ASCII title, most of them, is mapped here to utf8proc's own
     * result without its allocation and its walk through the Unicode
     * tables, which were most of the CPU of a merge re-keying its inputs'
     * title indexes. */
    if (!(options & ~ASCII_KEPT) && all_ascii(in, n)) {
        size_t len = n < cap ? n : cap;
        bool fold = options & UTF8PROC_CASEFOLD;
        for (size_t i = 0; i < len; i++)
            out[i] = fold && in[i] >= 'A' && in[i] <= 'Z' ? (uint8_t)(in[i] - 'A' + 'a') : in[i];
        return len;
    }
    utf8proc_uint8_t *mapped = NULL;
    utf8proc_ssize_t m = utf8proc_map(in, (utf8proc_ssize_t)n, &mapped, options);
    if (m < 0)
        return 0;
    size_t len = sp_utf8_cut(mapped, (size_t)m, cap);
    memcpy(out, mapped, len);
    free(mapped);
    return len;
}

/* Underscores as spaces, runs of spaces as one, leading spaces dropped and
 * (when trim) trailing ones; in place, the new length. */
static size_t squeeze_spaces(uint8_t *s, size_t n, bool trim) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i] == '_' ? ' ' : s[i];
        if (c == ' ' && (o == 0 || s[o - 1] == ' '))
            continue;
        s[o++] = c;
    }
    if (trim && o > 0 && s[o - 1] == ' ')
        o--;
    return o;
}

size_t sp_title_fold(const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
    size_t len =
        map_into(in, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD | UTF8PROC_STRIPMARK,
                 out, cap);
    return squeeze_spaces(out, len, false);
}

/* Layout 2's upper-cased letters of title (n bytes) against its fold:
 * their offsets' steps into out; their count, or -1 when the title is not
 * its fold so written. */
static int upper_steps(const uint8_t *title, size_t n, const uint8_t *fold, size_t flen,
                       uint8_t *out, size_t cap) {
    if (n != flen)
        return -1;
    size_t m = 0, prev = 0;
    for (size_t i = 0; i < n; i++) {
        if (title[i] == fold[i])
            continue;
        size_t step = i + 1 - prev;
        if (fold[i] < 'a' || fold[i] > 'z' || title[i] != fold[i] - 'a' + 'A' || step > 255 ||
            m == cap)
            return -1;
        out[m++] = (uint8_t)step;
        prev = i + 1;
    }
    return (int)m;
}

size_t sp_title_index_key(unsigned layout, const uint8_t *title, size_t n, uint8_t *key) {
    if (n == 0 || n + 2 > SP_MAX_KEY_BYTES)
        return 0;
    if (layout != 1) {
        size_t fold = sp_title_fold(title, n, key, SP_MAX_KEY_BYTES - 2);
        int steps = fold == 0 ? -1
                              : upper_steps(title, n, key, fold, key + fold + 2,
                                            SP_MAX_KEY_BYTES - fold - 2);
        if (steps >= 0) {
            key[fold] = 0;
            key[fold + 1] = SP_TITLE_UPPER;
            return fold + 2 + (size_t)steps;
        }
    }
    /* The title as it is, and for layout 2 a tag first where its first
     * byte would read as one. */
    size_t tag = layout != 1 && title[0] <= SP_TITLE_VERBATIM;
    if (n + 2 + tag > SP_MAX_KEY_BYTES)
        return 0;
    size_t fold = sp_title_fold(title, n, key, SP_MAX_KEY_BYTES - 1 - tag - n);
    if (fold == 0)
        return 0;
    key[fold] = 0;
    key[fold + 1] = SP_TITLE_VERBATIM;
    memcpy(key + fold + 1 + tag, title, n);
    return fold + 1 + tag + n;
}

size_t sp_title_index_title_len(unsigned layout, const uint8_t *key, size_t klen) {
    const uint8_t *zero = memchr(key, 0, klen);
    if (!zero || zero + 1 == key + klen)
        return 0;
    size_t fold = (size_t)(zero - key), rest = klen - fold - 1;
    if (layout == 1 || zero[1] > SP_TITLE_VERBATIM)
        return rest;
    return zero[1] == SP_TITLE_UPPER ? fold : rest - 1;
}

size_t sp_title_index_title(unsigned layout, const uint8_t *key, size_t klen, uint8_t *title) {
    size_t n = sp_title_index_title_len(layout, key, klen);
    if (n == 0)
        return 0;
    const uint8_t *zero = memchr(key, 0, klen);
    if (layout == 1 || zero[1] != SP_TITLE_UPPER) {
        memcpy(title, key + klen - n, n);
        return n;
    }
    memcpy(title, key, n);
    size_t at = 0;
    for (const uint8_t *p = zero + 2; p < key + klen; p++) {
        at += *p;
        if (at > n || *p == 0)
            return 0;
        title[at - 1] = (uint8_t)(title[at - 1] - 'a' + 'A');
    }
    return n;
}

/* Whether prefix[0..n) names namespace ns: as MediaWiki matches them,
 * without regard to case (spaces already squeezed). */
static bool ns_named(const sp_title_ns *ns, const uint8_t *prefix, size_t n) {
    uint8_t a[SP_TITLE_NS_NAME_MAX * 3], b[SP_TITLE_NS_NAME_MAX * 3];
    size_t la = map_into(prefix, n, UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD, a, sizeof a);
    size_t lb = map_into(ns->name, ns->name_len, UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD, b, sizeof b);
    return la > 0 && la == lb && !memcmp(a, b, la);
}

/* The namespace rule of the main namespace: its own line, else the
 * site's. */
static bool main_first_letter(const sp_title_rules *r) {
    for (size_t i = 0; i < r->ns_count; i++)
        if (r->ns[i].key == 0)
            return r->ns[i].first_letter;
    return r->first_letter;
}

/* The first character of s[0..n) upper-cased, written at out; the bytes
 * it takes there, or 0 when it does not fit. *used: its bytes in s. */
static size_t upper_first(const uint8_t *s, size_t n, uint8_t *out, size_t cap, size_t *used) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate(s, (utf8proc_ssize_t)n, &c);
    if (k <= 0)
        return 0;
    utf8proc_uint8_t buf[4];
    utf8proc_ssize_t w = utf8proc_encode_char(utf8proc_toupper(c), buf);
    if (w <= 0 || (size_t)w > cap)
        return 0;
    memcpy(out, buf, (size_t)w);
    *used = (size_t)k;
    return (size_t)w;
}

size_t sp_title_normalise(const sp_title_rules *r, const uint8_t *in, size_t n, uint8_t *out,
                          size_t cap) {
    if (n == 0 || !sp_utf8_valid(in, n, NULL))
        return 0;
    uint8_t *s = malloc(n);
    if (!s)
        return 0;
    memcpy(s, in, n);
    n = squeeze_spaces(s, n, true);

    size_t o = 0, at = 0;
    bool first_letter = main_first_letter(r);
    const uint8_t *colon = n ? memchr(s, ':', n) : NULL;
    if (colon) {
        size_t plen = (size_t)(colon - s);
        if (plen > 0 && s[plen - 1] == ' ')
            plen--;
        for (size_t i = 0; i < r->ns_count; i++) {
            const sp_title_ns *ns = &r->ns[i];
            if (ns->name_len == 0 || !ns_named(ns, s, plen) || ns->name_len + 1 > cap)
                continue;
            memcpy(out, ns->name, ns->name_len);
            o = ns->name_len;
            out[o++] = ':';
            at = (size_t)(colon - s) + 1;
            if (at < n && s[at] == ' ')
                at++;
            first_letter = ns->first_letter;
            break;
        }
    }
    size_t len = 0;
    if (at < n) {
        size_t used = 0,
               w = first_letter ? upper_first(s + at, n - at, out + o, cap - o, &used) : 0;
        if (!first_letter || w > 0) {
            o += w;
            at += used;
            if (n - at <= cap - o) {
                memcpy(out + o, s + at, n - at);
                len = o + (n - at);
            }
        }
    }
    free(s);
    return len;
}

static bool is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool sp_title_redirect_target(const uint8_t *text, size_t n, const uint8_t **target,
                              size_t *target_len) {
    size_t i = 0;
    while (i < n && is_space(text[i]))
        i++;
    if (i == n || text[i++] != '#')
        return false;
    /* The redirect word: letters of any script, no space or bracket
     * ("#1 [[x]]" or "# [[x]]" is a numbered list, not a redirect). */
    size_t word = i;
    while (i < n && !is_space(text[i]) && text[i] != '[' && text[i] != ':' &&
           (text[i] >= 0x80 || ((text[i] | 0x20) >= 'a' && (text[i] | 0x20) <= 'z')))
        i++;
    if (i == word)
        return false;
    while (i < n && (is_space(text[i]) || text[i] == ':'))
        i++;
    if (n - i < 2 || text[i] != '[' || text[i + 1] != '[')
        return false;
    i += 2;
    size_t start = i;
    while (i < n && text[i] != ']' && text[i] != '|' && text[i] != '#' && text[i] != '\n')
        i++;
    if (i == n || text[i] == '\n' || i == start)
        return false;
    *target = text + start;
    *target_len = i - start;
    return true;
}

size_t sp_title_redirect_normalised(const sp_title_rules *r, const uint8_t *text, size_t n,
                                    uint8_t *out, size_t cap) {
    const uint8_t *target;
    size_t tlen;
    if (!sp_title_redirect_target(text, n, &target, &tlen))
        return 0;
    return sp_title_normalise(r, target, tlen, out, cap);
}
