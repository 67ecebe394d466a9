/*
 * merge.c: k-way merge with a binary heap; see merge.h.
 *
 * The heap orders by key, then by seq and source index descending, so among
 * equal keys the latest record reaches the top first and is the one
 * kept; the rest are recognised by comparing with the last key returned.
 * A returned record's source is advanced only on the next call, because
 * advancing may overwrite the buffer the record's key and value are in.
 */
#include "stages/sort/merge.h"

#include "stages/common/key.h"

#include <string.h>

static inline int before(merge_source *const *src, unsigned a, unsigned b) {
    const merge_source *x = src[a], *y = src[b];
    if (x->prefix != y->prefix)
        return x->prefix < y->prefix;
    int c = sp_key_cmp_tail(x->key, x->key_len, y->key, y->key_len);
    if (c)
        return c < 0;
    if (x->seq != y->seq)
        return x->seq > y->seq;
    return a > b;
}

static void sift_down(merge_source *const *src, unsigned *heap, unsigned n, unsigned i) {
    unsigned x = heap[i];
    for (;;) {
        unsigned l = 2 * i + 1;
        if (l >= n)
            break;
        unsigned m = l;
        if (l + 1 < n && before(src, heap[l + 1], heap[l]))
            m = l + 1;
        if (!before(src, heap[m], x))
            break;
        heap[i] = heap[m];
        i = m;
    }
    heap[i] = x;
}

int merger_init(merger *m, merge_source **src, unsigned n, unsigned *heap, sp_error *err) {
    m->src = src;
    m->n = n;
    m->heap = heap;
    m->live = 0;
    m->pending = 0;
    m->dups = 0;
    m->last_len = 0;
    for (unsigned i = 0; i < n; i++) {
        int got = src[i]->ops->next(src[i], err);
        if (got < 0)
            return -1;
        if (got)
            heap[m->live++] = i;
    }
    for (unsigned i = m->live / 2; i-- > 0;)
        sift_down(src, heap, m->live, i);
    return 0;
}

/* Moves the top source to its next record and restores the heap. */
static int advance_top(merger *m, sp_error *err) {
    merge_source *s = m->src[m->heap[0]];
    int got = s->ops->next(s, err);
    if (got < 0)
        return -1;
    if (!got)
        m->heap[0] = m->heap[--m->live];
    sift_down(m->src, m->heap, m->live, 0);
    return 0;
}

/* Leaves at the top the winner of a key not yet returned. */
static int settle(merger *m, sp_error *err) {
    if (m->pending) {
        m->pending = 0;
        if (advance_top(m, err))
            return -1;
    }
    while (m->live) {
        const merge_source *s = m->src[m->heap[0]];
        if (s->key_len != m->last_len || memcmp(s->key, m->last, m->last_len))
            break;
        m->dups++;
        if (advance_top(m, err))
            return -1;
    }
    return 0;
}

int merger_peek(merger *m, const uint8_t **key, uint32_t *key_len, unsigned *from, sp_error *err) {
    if (settle(m, err))
        return -1;
    if (!m->live)
        return 0;
    const merge_source *s = m->src[m->heap[0]];
    *key = s->key;
    *key_len = s->key_len;
    *from = m->heap[0];
    return 1;
}

int merger_next(merger *m, sp_record *rec, unsigned *from, sp_error *err) {
    if (settle(m, err))
        return -1;
    if (!m->live)
        return 0;
    merge_source *s = m->src[m->heap[0]];
    const uint8_t *value;
    if (s->ops->value(s, &value, err))
        return -1;
    memcpy(m->last, s->key, s->key_len);
    m->last_len = s->key_len;
    m->pending = 1;
    *rec = (sp_record){.key = s->key,
                       .key_len = s->key_len,
                       .value = value,
                       .value_len = s->value_len,
                       .value_fd = -1};
    *from = m->heap[0];
    return 1;
}
