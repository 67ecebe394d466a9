/* wg_titles.c: unique titles from page numbers; see wg_titles.h. */
#include "data/wg_titles.h"

#include "data/wg_rng.h"

#include <string.h>

/* Shares follow a pages-articles dump with talk and user pages mixed in;
 * namespaces with no share are listed in siteinfo only. */
const wg_namespace wg_namespaces[] = {
    {-2, "Media", 0, 0},       {-1, "Special", 0, 0},       {0, "", 78000, 0},
    {1, "Talk", 5000, 1},      {2, "User", 3000, 1},        {3, "User talk", 1500, 2},
    {4, "Wikipedia", 2500, 0}, {5, "Wikipedia talk", 0, 0}, {6, "File", 2000, 2},
    {7, "File talk", 0, 0},    {8, "MediaWiki", 0, 0},      {9, "MediaWiki talk", 0, 0},
    {10, "Template", 3500, 1}, {11, "Template talk", 0, 0}, {12, "Help", 300, 0},
    {13, "Help talk", 0, 0},   {14, "Category", 3700, 3},   {15, "Category talk", 0, 0},
    {100, "Portal", 0, 0},     {101, "Portal talk", 0, 0},  {118, "Draft", 0, 0},
    {119, "Draft talk", 0, 0}, {828, "Module", 500, 1},     {829, "Module talk", 0, 0},
};
const size_t wg_namespace_count = sizeof wg_namespaces / sizeof wg_namespaces[0];

static const char *const qualifiers[] = {
    "film",       "album",     "song",        "band",         "disambiguation",
    "novel",      "TV series", "1984 film",   "footballer",   "politician",
    "surname",    "river",     "mountain",    "village",      "company",
    "video game", "ship",      "play",        "magazine",     "Ελλάδα",
    "Россия",     "日本",      "rock & roll", "\"Weird Al\"", "comics",
};

#define SALT_NS 1
#define SALT_QUAL 2
#define SALT_DUP 3
#define SALT_DUP_SOURCE 4
#define SALT_PERM 5

void wg_titles_init(wg_titles *t, const wg_vocab *v, uint64_t seed, uint64_t max_pages,
                    uint32_t dup_per_million) {
    t->vocab = v;
    t->seed = seed;
    /* An even bit count (the scramble works on two halves), at least 12. */
    unsigned bits = 12;
    while (bits < 62 && (1ull << bits) < max_pages)
        bits += 2;
    t->bits = bits;
    t->mask = (1ull << bits) - 1;
    t->dup_per_million = dup_per_million;
}

size_t wg_title_namespace(const wg_titles *t, uint64_t i) {
    uint32_t pick = (uint32_t)(wg_hash3(t->seed, i, SALT_NS) % 100000);
    for (size_t k = 0; k < wg_namespace_count; k++) {
        if (pick < wg_namespaces[k].per_100k)
            return k;
        pick -= wg_namespaces[k].per_100k;
    }
    return 2; /* unreachable: the shares sum to 100000 */
}

/* A bijection on [0, 2^bits): xor with a key, multiply by an odd number and
 * xor-shift, each invertible modulo 2^bits. */
static uint64_t scramble(const wg_titles *t, uint64_t x) {
    uint64_t k = wg_hash3(t->seed, 0, SALT_PERM);
    unsigned half = t->bits / 2;
    for (int round = 0; round < 3; round++) {
        x = (x ^ k) & t->mask;
        x = (x * 0x9e3779b97f4a7c15ull) & t->mask;
        x ^= x >> half;
        x = (x * 0xbf58476d1ce4e5b9ull) & t->mask;
        x ^= x >> (half + 1);
        k = wg_rotl(k, 17);
    }
    return x;
}

size_t wg_title(const wg_titles *t, uint64_t i, char *out) {
    const wg_namespace *ns = &wg_namespaces[wg_title_namespace(t, i)];
    size_t n = strlen(ns->name);
    memcpy(out, ns->name, n);
    if (n)
        out[n++] = ':';
    size_t first = n;
    /* Bijective numeration: every n >= 1 has exactly one digit string. */
    uint64_t num = scramble(t, i & t->mask) + 1;
    while (num) {
        num--;
        const wg_word *w = &t->vocab->title[num % WG_TITLE_WORDS];
        num /= WG_TITLE_WORDS;
        if (n > first)
            out[n++] = ' ';
        memcpy(out + n, w->s, w->len);
        n += w->len;
    }
    if (out[first] >= 'a' && out[first] <= 'z')
        out[first] = (char)(out[first] - 'a' + 'A');
    uint64_t q = wg_hash3(t->seed, i, SALT_QUAL);
    if (q % 100 < 7) {
        const char *s = qualifiers[(q >> 8) % (sizeof qualifiers / sizeof qualifiers[0])];
        size_t k = strlen(s);
        memcpy(out + n, " (", 2);
        memcpy(out + n + 2, s, k);
        out[n + 2 + k] = ')';
        n += k + 3;
    }
    return n;
}

bool wg_title_is_dup(const wg_titles *t, uint64_t i) {
    return i > 0 && wg_hash3(t->seed, i, SALT_DUP) % 1000000 < t->dup_per_million;
}

uint64_t wg_title_dup_source(const wg_titles *t, uint64_t i) {
    /* An earlier page that is not itself a duplicate, so its title did
     * appear in the dump; page 0 never is one, so the search ends. */
    for (uint64_t salt = SALT_DUP_SOURCE;; salt += 16) {
        uint64_t j = wg_hash3(t->seed, i, salt) % i;
        if (!wg_title_is_dup(t, j))
            return j;
    }
}
