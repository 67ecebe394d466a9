/*
 * merge.c: k-way merge with a binary heap; see merge.h.
 *
 * The heap orders by key, then by reader index descending, so among equal
 * keys the latest run's record reaches the top first and is the one kept;
 * the rest are recognised by comparing with the last key emitted.
 */
#include "stages/sort/merge.h"

#include "stages/sort/chunk.h"

#include <string.h>

static inline int before(const run_reader *rd, unsigned a, unsigned b) {
    const run_reader *x = &rd[a], *y = &rd[b];
    if (x->prefix != y->prefix)
        return x->prefix < y->prefix;
    int c = key_cmp_tail(x->key, x->key_len, y->key, y->key_len);
    if (c)
        return c < 0;
    return a > b;
}

static void sift_down(const run_reader *rd, unsigned *heap, unsigned n, unsigned i) {
    unsigned x = heap[i];
    for (;;) {
        unsigned l = 2 * i + 1;
        if (l >= n)
            break;
        unsigned m = l;
        if (l + 1 < n && before(rd, heap[l + 1], heap[l]))
            m = l + 1;
        if (!before(rd, heap[m], x))
            break;
        heap[i] = heap[m];
        i = m;
    }
    heap[i] = x;
}

int merge_runs(run_reader *readers, unsigned n, unsigned *heap, uint8_t *big, size_t big_cap,
               const sp_sink *out, uint64_t *dups, uint64_t *emitted, sp_error *err) {
    unsigned live = 0;
    for (unsigned i = 0; i < n; i++) {
        int got = run_reader_next(&readers[i], err);
        if (got < 0)
            return -1;
        if (got)
            heap[live++] = i;
    }
    for (unsigned i = live / 2; i-- > 0;)
        sift_down(readers, heap, live, i);

    uint8_t last[SP_MAX_KEY_BYTES];
    uint32_t last_len = 0;
    while (live) {
        run_reader *r = &readers[heap[0]];
        if (last_len && r->key_len == last_len && !memcmp(r->key, last, last_len)) {
            (*dups)++;
        } else {
            sp_record rec = {
                .key = r->key, .key_len = r->key_len, .value_len = r->value_len, .value_fd = -1};
            if (run_reader_value(r, big, big_cap, &rec.value, err) || sp_sink_put(out, &rec, err))
                return -1;
            (*emitted)++;
            memcpy(last, r->key, r->key_len);
            last_len = r->key_len;
        }
        int got = run_reader_next(r, err);
        if (got < 0)
            return -1;
        if (!got)
            heap[0] = heap[--live];
        sift_down(readers, heap, live, 0);
    }
    return 0;
}
