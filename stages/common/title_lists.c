/*
 * title_lists.c: a title index's prefix lists, made beside its page
 * records and read back; see title_lists.h.
 */
#include "stages/common/title_lists.h"

#include "stages/common/title_rules.h"
#include "stages/common/utf8.h"

#include <stdlib.h>
#include <string.h>

/* One title ranked into a prefix's list. */
typedef struct ranked {
    bool redirect;
    size_t len;
    uint64_t fold; /* which fold of the walk it has: a tie within one is
                      ranked by title */
    uint8_t title[SP_MAX_KEY_BYTES];
} ranked;

/* The list of the prefix of the current fold that ends at one byte: the
 * page records that start with it, and the best of them, each kept in its
 * slot while order ranks the slots (as sstpipe_suggest's ranking). */
typedef struct level {
    size_t count, n;
    uint8_t order[SP_TITLE_LIST_LEN];
    ranked *slots; /* made on the level's first use */
} level;

struct sp_title_lists {
    unsigned layout;
    sp_sink to;
    uint8_t fold[SP_MAX_KEY_BYTES]; /* the last page record's */
    size_t fold_len;
    uint64_t folds;                 /* distinct folds seen */
    uint8_t last[SP_MAX_KEY_BYTES]; /* the last key handed on */
    size_t last_len;
    level levels[SP_MAX_KEY_BYTES + 1];
    uint8_t value[SP_TITLE_LIST_BYTES];
};

sp_title_lists *sp_title_lists_init(unsigned layout, const sp_sink *to) {
    sp_title_lists *b = calloc(1, sizeof *b);
    if (b) {
        b->layout = layout;
        b->to = *to;
    }
    return b;
}

/* Whether a ranks before the title in slot s of l. */
static bool better(const ranked *a, const level *l, size_t s) {
    const ranked *o = &l->slots[s];
    if (a->redirect != o->redirect)
        return !a->redirect;
    if (a->len != o->len)
        return a->len < o->len;
    return a->fold == o->fold && memcmp(a->title, o->title, a->len) < 0;
}

static void rank(level *l, const ranked *c) {
    l->count++;
    size_t at = l->n;
    while (at > 0 && better(c, l, l->order[at - 1]))
        at--;
    if (at == SP_TITLE_LIST_LEN)
        return;
    size_t slot = l->n < SP_TITLE_LIST_LEN ? l->n++ : l->order[SP_TITLE_LIST_LEN - 1];
    memmove(l->order + at + 1, l->order + at, (l->n - 1 - at) * sizeof *l->order);
    l->order[at] = (uint8_t)slot;
    l->slots[slot].redirect = c->redirect;
    l->slots[slot].len = c->len;
    l->slots[slot].fold = c->fold;
    memcpy(l->slots[slot].title, c->title, c->len);
}

/* Whether rec sorts after the last record handed on. */
static bool after_last(const sp_title_lists *b, const sp_record *rec) {
    size_t n = rec->key_len < b->last_len ? rec->key_len : b->last_len;
    int c = memcmp(rec->key, b->last, n);
    return c > 0 || (c == 0 && rec->key_len > b->last_len);
}

static int hand_on(sp_title_lists *b, const sp_record *rec, sp_error *err) {
    memcpy(b->last, rec->key, rec->key_len);
    b->last_len = rec->key_len;
    return sp_sink_put(&b->to, rec, err);
}

/* Hands on the list of the current fold's prefix of len bytes, when it
 * has one, and empties the level. */
static int close_level(sp_title_lists *b, size_t len, sp_error *err) {
    level *l = &b->levels[len];
    int rc = 0;
    if (l->count > SP_TITLE_LIST_FROM) {
        size_t n = 0;
        for (size_t i = 0; i < l->n; i++) {
            const ranked *r = &l->slots[l->order[i]];
            if (n + r->len + 2 > sizeof b->value)
                break;
            b->value[n++] = r->redirect ? SP_TITLE_REDIRECT : SP_TITLE_ARTICLE;
            memcpy(b->value + n, r->title, r->len);
            n += r->len;
            b->value[n++] = 0;
        }
        uint8_t key[SP_MAX_KEY_BYTES + SP_TITLE_LIST_END_LEN];
        memcpy(key, b->fold, len);
        memcpy(key + len, SP_TITLE_LIST_END, SP_TITLE_LIST_END_LEN);
        sp_record rec = {.key = key,
                         .key_len = (uint32_t)(len + SP_TITLE_LIST_END_LEN),
                         .value = b->value,
                         .value_len = n,
                         .value_fd = -1};
        if (rec.key_len <= SP_MAX_KEY_BYTES && after_last(b, &rec))
            rc = hand_on(b, &rec, err);
    }
    l->count = l->n = 0;
    return rc;
}

/* Whether the first len bytes of fold are whole characters. */
static bool whole(const uint8_t *fold, size_t fold_len, size_t len) {
    return len == fold_len || (fold[len] & 0xc0) != 0x80;
}

/* Closes the current fold's prefixes longer than keep bytes, the longest
 * first. */
static int close_past(sp_title_lists *b, size_t keep, sp_error *err) {
    for (size_t len = b->fold_len; len > keep; len--)
        if (whole(b->fold, b->fold_len, len) && close_level(b, len, err))
            return -1;
    return 0;
}

static int put(void *ctx, const sp_record *rec, sp_error *err) {
    sp_title_lists *b = ctx;
    const uint8_t *zero = memchr(rec->key, 0, rec->key_len);
    ranked c;
    c.len = sp_title_index_title(b->layout, rec->key, rec->key_len, c.title);
    if (!zero || c.len == 0 || rec->value_len == 0)
        return hand_on(b, rec, err);
    size_t flen = (size_t)(zero - rec->key), same = 0;
    while (same < flen && same < b->fold_len && rec->key[same] == b->fold[same])
        same++;
    if (close_past(b, same, err))
        return -1;
    if (same != flen || flen != b->fold_len)
        b->folds++;
    memcpy(b->fold, rec->key, flen);
    b->fold_len = flen;
    c.redirect = rec->value[0] == SP_TITLE_REDIRECT;
    c.fold = b->folds;
    for (size_t len = 1; len <= flen; len++) {
        if (!whole(b->fold, flen, len))
            continue;
        level *l = &b->levels[len];
        if (!l->slots && !(l->slots = malloc(SP_TITLE_LIST_LEN * sizeof *l->slots)))
            return sp_errorf(err, "out of memory for a title index's prefix lists");
        rank(l, &c);
    }
    return hand_on(b, rec, err);
}

sp_sink sp_title_lists_sink(sp_title_lists *b) {
    return (sp_sink){.put = put, .ctx = b};
}

int sp_title_lists_finish(sp_title_lists *b, sp_error *err) {
    int rc = close_past(b, 0, err);
    b->fold_len = 0;
    return rc;
}

void sp_title_lists_destroy(sp_title_lists *b) {
    if (!b)
        return;
    for (size_t i = 0; i <= SP_MAX_KEY_BYTES; i++)
        free(b->levels[i].slots);
    free(b);
}

bool sp_title_list_key(const uint8_t *key, size_t klen, size_t *plen) {
    if (klen <= SP_TITLE_LIST_END_LEN || memchr(key, 0, klen) ||
        memcmp(key + klen - SP_TITLE_LIST_END_LEN, SP_TITLE_LIST_END, SP_TITLE_LIST_END_LEN))
        return false;
    *plen = klen - SP_TITLE_LIST_END_LEN;
    return true;
}

int sp_title_list_next(const uint8_t *v, size_t vlen, size_t *at, sp_title_list_entry *e) {
    if (*at == vlen)
        return 0;
    const uint8_t *p = v + *at, *zero = memchr(p, 0, vlen - *at);
    if (!zero || zero - p < 2 || (p[0] != SP_TITLE_ARTICLE && p[0] != SP_TITLE_REDIRECT))
        return -1;
    e->redirect = p[0] == SP_TITLE_REDIRECT;
    e->title = p + 1;
    e->title_len = (size_t)(zero - p) - 1;
    *at = (size_t)(zero - v) + 1;
    return 1;
}

const char *sp_title_list_problem(const uint8_t *key, size_t klen, const uint8_t *v, size_t vlen) {
    size_t plen;
    if (!sp_title_list_key(key, klen, &plen) || !sp_utf8_valid(key, plen, NULL))
        return "a list record's key is not a folded prefix and U+10FFFF";
    if (vlen > SP_TITLE_LIST_BYTES)
        return "a prefix list is longer than a list may be";
    size_t at = 0, n = 0;
    sp_title_list_entry e, prev = {0};
    int got;
    while ((got = sp_title_list_next(v, vlen, &at, &e)) == 1) {
        uint8_t fold[SP_MAX_KEY_BYTES];
        size_t flen = sp_title_fold(e.title, e.title_len, fold, sizeof fold);
        if (e.title_len > SP_MAX_KEY_BYTES - 2 || flen < plen || memcmp(fold, key, plen))
            return "a prefix list holds a title that does not start with its prefix";
        if (n > 0 && (prev.redirect > e.redirect ||
                      (prev.redirect == e.redirect && prev.title_len > e.title_len)))
            return "a prefix list is not in rank order";
        prev = e;
        n++;
    }
    if (got < 0)
        return "a prefix list's bytes are not its titles (a kind, a title, a 0x00 each)";
    if (n == 0 || n > SP_TITLE_LIST_LEN)
        return "a prefix list holds no titles, or more than a list may";
    return NULL;
}
