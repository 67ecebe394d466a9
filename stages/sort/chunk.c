/*
 * chunk.c: packing records into the arena, sorting them and reading them back
 * with duplicates resolved; see chunk.h.
 *
 * The sort is an in-place introsort rather than qsort: glibc's qsort may
 * allocate a copy of the array, which the memory budget does not allow for.
 */
#include "stages/sort/chunk.h"

#include <string.h>

#define REF_KEY_LEN(ref) ((uint32_t)((ref)&0xFFFF))
#define REF_OFFSET(ref) ((ref) >> 16)

void chunk_init(chunk *c, uint8_t *arena, size_t cap) {
    c->arena = arena;
    c->cap = cap - cap % sizeof(chunk_entry);
    c->used = 0;
    c->n = 0;
}

void chunk_reset(chunk *c) {
    c->used = 0;
    c->n = 0;
}

static chunk_entry *entries(const chunk *c) {
    return (chunk_entry *)(c->arena + c->cap) - c->n;
}

int chunk_fits(const chunk *c, uint32_t key_len, uint64_t value_len) {
    uint64_t room = c->cap - c->used - c->n * sizeof(chunk_entry);
    return CHUNK_RECORD_OVERHEAD + key_len + value_len <= room;
}

uint8_t *chunk_append(chunk *c, const uint8_t *key, uint32_t key_len, uint64_t value_len,
                      uint64_t seq) {
    uint8_t *p = c->arena + c->used;
    uint32_t vlen = (uint32_t)value_len;
    memcpy(p, &key_len, 4);
    memcpy(p + 4, &vlen, 4);
    memcpy(p + 8, &seq, 8);
    memcpy(p + RUN_RECORD_HEADER, key, key_len);
    c->n++;
    chunk_entry *e = entries(c);
    e->prefix = sp_key_prefix(key, key_len);
    e->ref = (uint64_t)c->used << 16 | key_len;
    c->used += RUN_RECORD_HEADER + key_len + value_len;
    return p + RUN_RECORD_HEADER + key_len;
}

static inline const uint8_t *entry_key(const chunk *c, const chunk_entry *e) {
    return c->arena + REF_OFFSET(e->ref) + RUN_RECORD_HEADER;
}

/* Key order; equal keys by arena offset, which is insertion order. */
static inline int entry_cmp(const chunk *c, const chunk_entry *a, const chunk_entry *b) {
    if (a->prefix != b->prefix)
        return a->prefix < b->prefix ? -1 : 1;
    int k =
        sp_key_cmp_tail(entry_key(c, a), REF_KEY_LEN(a->ref), entry_key(c, b), REF_KEY_LEN(b->ref));
    if (k)
        return k;
    return (a->ref > b->ref) - (a->ref < b->ref);
}

static inline void swap(chunk_entry *a, chunk_entry *b) {
    chunk_entry t = *a;
    *a = *b;
    *b = t;
}

static void insertion_sort(const chunk *c, chunk_entry *v, size_t n) {
    for (size_t i = 1; i < n; i++) {
        chunk_entry x = v[i];
        size_t j = i;
        while (j > 0 && entry_cmp(c, &x, &v[j - 1]) < 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

static void sift_down(const chunk *c, chunk_entry *v, size_t i, size_t n) {
    for (;;) {
        size_t m = i, l = 2 * i + 1, r = l + 1;
        if (l < n && entry_cmp(c, &v[l], &v[m]) > 0)
            m = l;
        if (r < n && entry_cmp(c, &v[r], &v[m]) > 0)
            m = r;
        if (m == i)
            return;
        swap(&v[i], &v[m]);
        i = m;
    }
}

/* The fallback that bounds introsort at O(n log n) on adversarial input. */
static void heap_sort(const chunk *c, chunk_entry *v, size_t n) {
    for (size_t i = n / 2; i-- > 0;)
        sift_down(c, v, i, n);
    for (size_t i = n; i-- > 1;) {
        swap(&v[0], &v[i]);
        sift_down(c, v, 0, i);
    }
}

static void intro_sort(const chunk *c, chunk_entry *v, size_t n, unsigned depth) {
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(c, v, n);
            return;
        }
        /* Median of three into v[0], then a Hoare partition around it. */
        size_t mid = n / 2;
        if (entry_cmp(c, &v[mid], &v[0]) < 0)
            swap(&v[mid], &v[0]);
        if (entry_cmp(c, &v[n - 1], &v[0]) < 0)
            swap(&v[n - 1], &v[0]);
        if (entry_cmp(c, &v[n - 1], &v[mid]) < 0)
            swap(&v[n - 1], &v[mid]);
        swap(&v[0], &v[mid]);
        size_t i = 0, j = n;
        for (;;) {
            do
                i++;
            while (i < n && entry_cmp(c, &v[i], &v[0]) < 0);
            do
                j--;
            while (entry_cmp(c, &v[j], &v[0]) > 0);
            if (i >= j)
                break;
            swap(&v[i], &v[j]);
        }
        swap(&v[0], &v[j]);
        /* Recurse into the smaller side, loop on the larger: O(log n) stack. */
        if (j < n - j - 1) {
            intro_sort(c, v, j, depth);
            v += j + 1;
            n -= j + 1;
        } else {
            intro_sort(c, v + j + 1, n - j - 1, depth);
            n = j;
        }
    }
    insertion_sort(c, v, n);
}

void chunk_sort(chunk *c) {
    unsigned depth = 0;
    for (size_t n = c->n; n > 1; n >>= 1)
        depth += 2;
    intro_sort(c, entries(c), c->n, depth);
}

static int same_key(const chunk *c, const chunk_entry *a, const chunk_entry *b) {
    return a->prefix == b->prefix && REF_KEY_LEN(a->ref) == REF_KEY_LEN(b->ref) &&
           sp_key_cmp_tail(entry_key(c, a), REF_KEY_LEN(a->ref), entry_key(c, b),
                           REF_KEY_LEN(b->ref)) == 0;
}

static int source_next(merge_source *src, sp_error *err) {
    (void)err;
    chunk_source *cs = (chunk_source *)src;
    const chunk *c = cs->c;
    const chunk_entry *v = entries(c);
    size_t i = cs->next;
    /* Equal keys sit together in insertion order: the last one wins. */
    while (i + 1 < c->n && same_key(c, &v[i], &v[i + 1])) {
        (*cs->dups)++;
        i++;
    }
    if (i >= c->n)
        return 0;
    const uint8_t *p = c->arena + REF_OFFSET(v[i].ref);
    uint32_t vlen;
    memcpy(&vlen, p + 4, 4);
    memcpy(&src->seq, p + 8, 8);
    src->key = p + RUN_RECORD_HEADER;
    src->key_len = REF_KEY_LEN(v[i].ref);
    src->prefix = v[i].prefix;
    src->value_len = vlen;
    cs->value = src->key + src->key_len;
    cs->next = i + 1;
    return 1;
}

static int source_value(merge_source *src, const uint8_t **value, sp_error *err) {
    (void)err;
    *value = ((chunk_source *)src)->value;
    return 0;
}

static const merge_source_ops chunk_source_ops = {.next = source_next, .value = source_value};

void chunk_source_init(chunk_source *cs, const chunk *c, uint64_t *dups) {
    memset(cs, 0, sizeof *cs);
    cs->src.ops = &chunk_source_ops;
    cs->c = c;
    cs->dups = dups;
}
