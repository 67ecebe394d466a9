/*
 * sstpipe_titles.c: titles as people type them, redirects followed, and
 * suggestions by a folded prefix, over a table's title index; see
 * sstpipe_titles.h and sstpipe.h ("Titles").
 *
 * Under direct I/O a value is only valid until the thread's next lookup,
 * so a lookup takes what it needs of a record (where a redirect goes)
 * before its next read, and reads the record it returns last.
 */
#include "stages/sst/sstpipe_titles.h"

#include "stages/common/title_lists.h"
#include "stages/common/title_rules.h"
#include "stages/common/utf8.h"
#include "stages/sst/sstpipe_iter.h"
#include "stages/sst/sstpipe_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Matches read for one sstpipe_suggest, among which the best are picked:
 * all of them in an index with prefix lists, which has a list for a
 * prefix with more than SP_TITLE_LIST_FROM. */
#define SUGGEST_SCAN 1000
_Static_assert(SSTPIPE_SUGGEST_MAX <= SP_TITLE_LIST_LEN, "a prefix list holds any limit's titles");

int sstpipe_titles_open(sstpipe_table *t, const sstpipe_options *opt, sp_error *err) {
    const char *path = sstpipe_table_path(t);
    char *tpath = sp_titles_path(path);
    if (!tpath)
        return sp_errorf(err, "%s: out of memory", path);
    int rc = 0;
    if (access(tpath, F_OK) == 0) {
        t->titles = sstpipe_table_open(tpath, opt, err);
        t->rules = malloc(sizeof *t->rules);
        rc = t->titles && t->rules ? 0 : -1;
        if (t->titles && !t->rules)
            sp_errorf(err, "%s: out of memory", tpath);
        const void *v;
        size_t vlen;
        char *msg = NULL;
        int found = rc ? 0
                       : sstpipe_table_get(t->titles, SP_TITLES_RULES_KEY, SP_TITLES_RULES_KEY_LEN,
                                           &v, &vlen, &msg);
        if (!rc && found < 0)
            rc = sp_errorf(err, "%s", msg ? msg : "out of memory");
        else if (!rc && (found == 0 || sp_title_rules_decode(v, vlen, t->rules)))
            rc = sp_errorf(err, "%s: not a title index (no title rules record)", tpath);
        free(msg);
        /* An index built for another table (a build stopped between the
         * two publishes) is left alone: t answers as a table without one. */
        sp_table_identity mine = sst_reader_identity(t->r);
        if (rc || !sp_table_identity_equal(&t->rules->table, &mine))
            sstpipe_titles_close(t);
    }
    free(tpath);
    return rc;
}

void sstpipe_titles_close(sstpipe_table *t) {
    sstpipe_table_close(t->titles);
    free(t->rules);
    t->titles = NULL;
    t->rules = NULL;
}

/* The plain table that holds key: t, or the shard of t's set for it; its
 * title index is the one for the titles in its key range. */
static const sstpipe_table *home(const sstpipe_table *t, const void *key, size_t klen) {
    return t->set ? sstpipe_set_shard_for(t->set, key, klen) : t;
}

/* Whether t has title indexes: its own, or one beside every shard. */
bool sstpipe_has_titles(const sstpipe_table *t) {
    if (!t->set)
        return t->titles != NULL;
    for (size_t i = 0; i < t->set->n; i++)
        if (!t->set->shards[i]->titles)
            return false;
    return t->set->n > 0;
}

/* The dump's rules (a set's shards are of one dump: the first's). */
static const sp_title_rules *rules_of(const sstpipe_table *t) {
    return t->set ? t->set->shards[0]->rules : t->rules;
}

/* Whether the title index holds title as a redirect: 1 yes, 0 not (an
 * article, or not indexed), -1 error. */
static int indexed_redirect(const sstpipe_table *t, const uint8_t *title, size_t n, char **errmsg) {
    const sstpipe_table *h = home(t, title, n);
    uint8_t key[SP_MAX_KEY_BYTES];
    size_t klen = sp_title_index_key(h->rules->layout, title, n, key);
    if (klen == 0)
        return 0;
    const void *v;
    size_t vlen;
    int found = sstpipe_table_get(h->titles, key, klen, &v, &vlen, errmsg);
    if (found < 0)
        return -1;
    return found == 1 && vlen > 0 && *(const uint8_t *)v == SP_TITLE_REDIRECT;
}

static void set_text(char *dst, size_t *dlen, const void *src, size_t n) {
    memcpy(dst, src, n);
    dst[n] = '\0';
    *dlen = n;
}

/* The title to read: title itself when the table holds it, else its
 * normalised form when that is there; 1 with res->title and its record
 * set, 0 neither. */
static int find_title(const sstpipe_table *t, const uint8_t *title, size_t n,
                      sstpipe_lookup_result *res, char **errmsg) {
    int found = sstpipe_table_get(home(t, title, n), title, n, &res->value, &res->vlen, errmsg);
    if (found)
        set_text(res->title, &res->title_len, title, n);
    if (found || !sstpipe_has_titles(t))
        return found;
    uint8_t norm[SSTPIPE_TITLE_MAX];
    size_t nlen = sp_title_normalise(rules_of(t), title, n, norm, sizeof norm);
    if (nlen == 0 || (nlen == n && !memcmp(norm, title, n)))
        return 0;
    found = sstpipe_table_get(home(t, norm, nlen), norm, nlen, &res->value, &res->vlen, errmsg);
    if (found)
        set_text(res->title, &res->title_len, norm, nlen);
    return found;
}

/* Follows the redirects of res->title, whose record res->value is:
 * res->title becomes the last title reached, res->value its record; 1, or
 * 0 when a target is absent (res->missing_target set). */
static int follow(const sstpipe_table *t, sstpipe_lookup_result *res, char **errmsg) {
    char seen[SSTPIPE_REDIRECT_HOPS + 1][SSTPIPE_TITLE_MAX + 1];
    size_t seen_len[SSTPIPE_REDIRECT_HOPS + 1];
    for (int hop = 0; hop < SSTPIPE_REDIRECT_HOPS; hop++) {
        set_text(seen[hop], &seen_len[hop], res->title, res->title_len);
        /* The target from the page's text, as the index's build read it;
         * taken before the index is asked, since under direct I/O that
         * read ends res->value. */
        uint8_t target[SSTPIPE_TITLE_MAX];
        size_t tlen =
            sp_title_redirect_normalised(rules_of(t), res->value, res->vlen, target, sizeof target);
        int redirect =
            tlen ? indexed_redirect(t, (const uint8_t *)res->title, res->title_len, errmsg) : 0;
        if (redirect <= 0)
            return redirect < 0 ? -1 : 1;
        /* A loop ends at the redirect that closes it. */
        for (int i = 0; i <= hop; i++)
            if (seen_len[i] == tlen && !memcmp(seen[i], target, tlen))
                return 1;
        if (hop == 0)
            set_text(res->redirect_from, &res->redirect_from_len, res->title, res->title_len);
        int found =
            sstpipe_table_get(home(t, target, tlen), target, tlen, &res->value, &res->vlen, errmsg);
        if (found <= 0) {
            if (found == 0)
                set_text(res->missing_target, &res->missing_target_len, target, tlen);
            return found;
        }
        set_text(res->title, &res->title_len, target, tlen);
    }
    return 1;
}

int sstpipe_lookup(sstpipe_table *t, const void *title, size_t len, unsigned flags,
                   sstpipe_lookup_result *res, char **errmsg) {
    memset(res, 0, sizeof *res);
    if (!sstpipe_key_may_exist(len))
        return 0;
    int found = find_title(t, title, len, res, errmsg);
    const uint8_t *target;
    size_t tlen;
    /* Only a record that reads as a redirect asks the title index, so an
     * article costs what sstpipe_get does. */
    if (found != 1 || !sstpipe_has_titles(t) || (flags & SSTPIPE_LOOKUP_RAW) ||
        !sp_title_redirect_target(res->value, res->vlen, &target, &tlen))
        return found;
    found = follow(t, res, errmsg);
    if (found != 1)
        return found;
    return sstpipe_table_get(home(t, res->title, res->title_len), res->title, res->title_len,
                             &res->value, &res->vlen, errmsg);
}

/* Any table's batch: a set's or a plain table's. */
static int get_many(sstpipe_table *t, size_t n, const void *const *keys, const size_t *klens,
                    const void **values, size_t *vlens, char **errmsg) {
    return t->set ? sstpipe_set_get_many(t->set, n, keys, klens, values, vlens, errmsg)
                  : sstpipe_table_get_many(t, n, keys, klens, values, vlens, errmsg);
}

int sstpipe_lookup_many(sstpipe_table *t, size_t n, const void *const *titles, const size_t *lens,
                        unsigned flags, sstpipe_lookup_result *res, char **errmsg) {
    const void **keys = malloc((n ? n : 1) * sizeof *keys);
    const void **values = malloc((n ? n : 1) * sizeof *values);
    size_t *klens = malloc((n ? n : 1) * sizeof *klens);
    size_t *vlens = malloc((n ? n : 1) * sizeof *vlens);
    int rc = keys && values && klens && vlens ? 0 : -1;
    if (rc) {
        sp_error err = {0};
        sp_errorf(&err, "out of memory");
        sstpipe_report_error(errmsg, &err);
    }
    if (!rc)
        rc = get_many(t, n, titles, lens, values, vlens, errmsg);
    /* The exact keys answered together; a miss or a redirect then looked
     * up alone, and, since under direct I/O a lookup ends the batch's
     * values, every record found read again together. Which titles need
     * a lookup of their own is told from the batch's values before the
     * first such lookup ends them: those whose value is still NULL. */
    bool again = false, titled = sstpipe_has_titles(t);
    for (size_t i = 0; !rc && i < n; i++) {
        memset(&res[i], 0, sizeof res[i]);
        const uint8_t *target;
        size_t tlen;
        bool as_is = values[i] && ((flags & SSTPIPE_LOOKUP_RAW) || !titled ||
                                   !sp_title_redirect_target(values[i], vlens[i], &target, &tlen));
        if (as_is || (!values[i] && !titled)) {
            res[i].value = values[i];
            res[i].vlen = vlens[i];
            if (values[i])
                set_text(res[i].title, &res[i].title_len, titles[i], lens[i]);
        }
    }
    for (size_t i = 0; !rc && i < n; i++) {
        if (!titled || res[i].value)
            continue;
        int found = sstpipe_lookup(t, titles[i], lens[i], flags, &res[i], errmsg);
        if (found < 0)
            rc = -1;
        else if (found == 0)
            res[i].value = NULL;
        again = true;
    }
    if (!rc && again) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (res[i].value) {
                keys[m] = res[i].title;
                klens[m++] = res[i].title_len;
            }
        rc = get_many(t, m, keys, klens, values, vlens, errmsg);
        for (size_t i = 0, j = 0; !rc && i < n; i++)
            if (res[i].value) {
                res[i].value = values[j];
                res[i].vlen = vlens[j++];
            }
    }
    free(keys);
    free(values);
    free(klens);
    free(vlens);
    return rc;
}

/* The suggestions ranked so far and what ranks ties: the scan's order,
 * which within one index and one fold was title order in layout 1, and is
 * title order again here whatever the layout. Each stays in its slot of out
 * (and of the arrays beside it) from the time it makes the list, and order
 * ranks the slots, so a title that makes the list moves no other. */
typedef struct ranking {
    sstpipe_suggestion *out;
    size_t n, limit;
    const uint8_t *norm; /* the text normalised: its exact match ranks first */
    size_t nlen;
    uint8_t order[SSTPIPE_SUGGEST_MAX]; /* slots, the best first */
    bool exact[SSTPIPE_SUGGEST_MAX];
    size_t index[SSTPIPE_SUGGEST_MAX]; /* which shard's index it came from */
    size_t fold_len[SSTPIPE_SUGGEST_MAX];
    uint8_t fold[SSTPIPE_SUGGEST_MAX][SP_MAX_KEY_BYTES];
} ranking;

/* A title scanned: its kind, exact match and length rank it first; its
 * key's fold and title are read only for a tie or when it makes the list.
 * A title of a prefix list has its title and no key: its list ranked it
 * among the titles of its index already. */
typedef struct candidate {
    size_t title_len;
    bool redirect, exact;
    size_t index;
    const uint8_t *key, *title;
    size_t klen, fold_len;
    unsigned layout;
} candidate;

/* Whether c ranks before the suggestion in slot i of r. */
static bool better(const ranking *r, const candidate *c, size_t i) {
    const sstpipe_suggestion *b = &r->out[i];
    if (c->exact != r->exact[i])
        return c->exact;
    if (c->redirect != b->redirect)
        return !c->redirect;
    if (c->title_len != b->title_len)
        return c->title_len < b->title_len;
    if (!c->key || c->index != r->index[i] || c->fold_len != r->fold_len[i] ||
        memcmp(c->key, r->fold[i], c->fold_len))
        return false;
    uint8_t title[SP_MAX_KEY_BYTES];
    sp_title_index_title(c->layout, c->key, c->klen, title);
    return memcmp(title, b->title, c->title_len) < 0;
}

/* Places c into r, the worst dropped at r->limit; title is c's when
 * decoded (NULL: from its key). */
static void place(ranking *r, const candidate *c, const uint8_t *title) {
    size_t at = r->n;
    while (at > 0 && better(r, c, r->order[at - 1]))
        at--;
    if (at == r->limit)
        return;
    /* A free slot, or the one of the title it pushes off the list. */
    size_t slot = r->n < r->limit ? r->n++ : r->order[r->limit - 1];
    memmove(r->order + at + 1, r->order + at, (r->n - 1 - at) * sizeof *r->order);
    r->order[at] = (uint8_t)slot;
    uint8_t decoded[SP_MAX_KEY_BYTES];
    if (!title) {
        sp_title_index_title(c->layout, c->key, c->klen, decoded);
        title = decoded;
    }
    r->out[slot].redirect = c->redirect;
    set_text(r->out[slot].title, &r->out[slot].title_len, title, c->title_len);
    r->exact[slot] = c->exact;
    r->index[slot] = c->index;
    r->fold_len[slot] = c->fold_len;
    memcpy(r->fold[slot], c->key ? c->key : title, c->fold_len);
}

/* Ranks one scanned page record of index `index` (key and value as
 * stored) into r. */
static void rank(ranking *r, size_t index, unsigned layout, const uint8_t *key, size_t klen,
                 const uint8_t *v, size_t vlen) {
    const uint8_t *zero = memchr(key, 0, klen);
    size_t tlen = sp_title_index_title_len(layout, key, klen);
    if (!zero || tlen == 0 || vlen == 0)
        return;
    candidate c = {.title_len = tlen,
                   .redirect = v[0] == SP_TITLE_REDIRECT,
                   .index = index,
                   .key = key,
                   .klen = klen,
                   .fold_len = (size_t)(zero - key),
                   .layout = layout};
    uint8_t title[SP_MAX_KEY_BYTES];
    bool decoded = false;
    if (tlen == r->nlen) {
        sp_title_index_title(layout, key, klen, title);
        decoded = true;
        c.exact = !memcmp(title, r->norm, tlen);
    }
    place(r, &c, decoded ? title : NULL);
}

/* Puts r->out in rank order: out[i] becomes the suggestion in slot
 * order[i], each cycle of the permutation moved through one spare. */
static void put_in_order(ranking *r) {
    bool done[SSTPIPE_SUGGEST_MAX] = {false};
    for (size_t i = 0; i < r->n; i++) {
        if (done[i])
            continue;
        sstpipe_suggestion spare = r->out[i];
        size_t j = i;
        while (r->order[j] != i) {
            r->out[j] = r->out[r->order[j]];
            done[j] = true;
            j = r->order[j];
        }
        r->out[j] = spare;
        done[j] = true;
    }
}

/* Ranks the first SUGGEST_SCAN titles of index `index` (titles, its
 * rules') starting with prefix into r. 0, or -1 with *errmsg set. */
static int scan(ranking *r, size_t index, sstpipe_table *titles, const sp_title_rules *rules,
                const uint8_t *prefix, size_t plen, char **errmsg) {
    sp_error err = {0};
    sstpipe_iter *it =
        sstpipe_iter_over(sst_cursor_table_short(titles->r, &err), NULL, 0, prefix, plen);
    if (!it) {
        sp_errorf(&err, "out of memory");
        sstpipe_report_error(errmsg, &err);
        return -1;
    }
    int rc = 0;
    for (int scanned = 0; scanned < SUGGEST_SCAN; scanned++) {
        const void *k, *v;
        size_t klen, vlen;
        rc = sstpipe_iter_next(it, &k, &klen, &v, &vlen, errmsg);
        if (rc <= 0)
            break;
        rank(r, index, rules->layout, k, klen, v, vlen);
    }
    sstpipe_iter_free(it);
    return rc < 0 ? -1 : 0;
}

/* Ranks into r the list of index `index` (titles, its rules') for prefix,
 * and the title the text normalises to when it starts with prefix: 1, 0
 * when the index has no list for prefix of r->limit titles, -1 with
 * *errmsg set. */
static int from_list(ranking *r, size_t index, sstpipe_table *titles, const sp_title_rules *rules,
                     const uint8_t *prefix, size_t plen, char **errmsg) {
    uint8_t key[SP_MAX_KEY_BYTES];
    if (rules->layout < 3 || plen + SP_TITLE_LIST_END_LEN > sizeof key)
        return 0;
    memcpy(key, prefix, plen);
    memcpy(key + plen, SP_TITLE_LIST_END, SP_TITLE_LIST_END_LEN);
    const void *v;
    size_t vlen, at = 0, n = 0;
    int found = sstpipe_table_get(titles, key, plen + SP_TITLE_LIST_END_LEN, &v, &vlen, errmsg);
    sp_title_list_entry e;
    while (found == 1 && n < r->limit && sp_title_list_next(v, vlen, &at, &e) == 1 &&
           e.title_len <= SSTPIPE_TITLE_MAX)
        n++;
    if (found <= 0 || n < r->limit)
        return found < 0 ? -1 : 0;
    /* Its titles in rank order but for the exact match, which may be
     * among them or not: looked up below, alone. */
    at = 0;
    for (size_t i = 0; i < n; i++) {
        sp_title_list_next(v, vlen, &at, &e);
        if (e.title_len == r->nlen && !memcmp(e.title, r->norm, r->nlen))
            continue;
        candidate c = {.title_len = e.title_len, .redirect = e.redirect, .index = index};
        place(r, &c, e.title);
    }
    size_t klen = r->nlen ? sp_title_index_key(rules->layout, r->norm, r->nlen, key) : 0;
    if (klen <= plen || memcmp(key, prefix, plen))
        return 1;
    found = sstpipe_table_get(titles, key, klen, &v, &vlen, errmsg);
    if (found == 1)
        rank(r, index, rules->layout, key, klen, v, vlen);
    return found < 0 ? -1 : 1;
}

int sstpipe_suggest(sstpipe_table *t, const void *text, size_t len, size_t limit,
                    sstpipe_suggestion *out, char **errmsg) {
    sp_error err = {0};
    const char *path = t->set ? t->set->path : sstpipe_table_path(t);
    if (!sstpipe_has_titles(t))
        sp_errorf(&err, "%s has no title index (%s%s): build it again to suggest titles", path,
                  t->set ? "beside each shard: shard-NN.sst" : path, SP_TITLES_SUFFIX);
    else if (limit < 1 || limit > SSTPIPE_SUGGEST_MAX)
        sp_errorf(&err, "a limit is 1 to %d", SSTPIPE_SUGGEST_MAX);
    else if (len == 0 || len > SSTPIPE_TITLE_MAX || !sp_utf8_valid(text, len, NULL))
        sp_errorf(&err, "the text to suggest titles for must be 1 to %d bytes of UTF-8",
                  SSTPIPE_TITLE_MAX);
    uint8_t prefix[SP_MAX_KEY_BYTES], norm[SSTPIPE_TITLE_MAX];
    size_t plen = err.msg[0] ? 0 : sp_title_fold(text, len, prefix, sizeof prefix);
    if (!err.msg[0] && plen == 0)
        sp_errorf(&err, "the text to suggest titles for must be 1 to %d bytes of UTF-8",
                  SSTPIPE_TITLE_MAX);
    if (err.msg[0]) {
        sstpipe_report_error(errmsg, &err);
        return -1;
    }
    size_t nlen = sp_title_normalise(rules_of(t), text, len, norm, sizeof norm);
    /* A set's titles are ranked as one: each shard's index holds the
     * titles of its key range, any of which may start with the text. */
    /* Set field by field: its folds are written as titles make the list,
     * and zeroing them all would cost more than a short scan. */
    ranking r;
    r.out = out;
    r.n = 0;
    r.limit = limit;
    r.norm = norm;
    r.nlen = nlen;
    size_t shards = t->set ? t->set->n : 1;
    for (size_t i = 0; i < shards; i++) {
        sstpipe_table *shard = t->set ? t->set->shards[i] : t;
        int listed = from_list(&r, i, shard->titles, shard->rules, prefix, plen, errmsg);
        if (listed < 0 ||
            (!listed && scan(&r, i, shard->titles, shard->rules, prefix, plen, errmsg)))
            return -1;
    }
    put_in_order(&r);
    return (int)r.n;
}
