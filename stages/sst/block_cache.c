/*
 * block_cache.c: the bounded cache of unpacked version 2 groups and the
 * thread's values; see block_cache.h.
 *
 * The groups held are found by their block's number in an array of the
 * table's blocks, each block's groups chained, the one whose range of keys
 * holds a lookup's key answering it; all are kept on one list in order of
 * use, the most recent first: a hit moves its group to the front, room is
 * made from the back. A group's records are copied out of the unpacking
 * buffer (sized for the most a block may unpack to) into an allocation of
 * their own size, so that the budget counts what a group really holds.
 */
#include "stages/sst/block_cache.h"

#include "stages/common/key.h"
#include "stages/sst/thread_slot.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One group held: its range's keys (lo, and hi unless it is its block's
 * last group), then its records and restart point, in data; a view of the
 * records and the directory built from them. */
typedef struct entry {
    struct entry *prev, *next; /* the list of use, most recent first */
    struct entry *sibling;     /* the next group held of the same block */
    uint64_t i;
    size_t bytes; /* what the budget counts */
    block_view view;
    block_dir *dir;
    const uint8_t *lo, *hi;
    uint32_t lo_len, hi_len;
    uint8_t data[];
} entry;

struct sst_block_cache {
    pthread_mutex_t lock;
    size_t budget, bytes;
    uint64_t n_blocks;
    entry *head, *tail;
    entry *held[]; /* by block number, its groups held (NULL: none) */
};

sst_block_cache *sst_block_cache_new(uint64_t n_blocks, size_t budget) {
    sst_block_cache *c = calloc(1, sizeof *c + (size_t)n_blocks * sizeof c->held[0]);
    if (!c)
        return NULL;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    c->budget = budget;
    c->n_blocks = n_blocks;
    return c;
}

static void entry_free(entry *e) {
    block_dir_destroy(e->dir);
    free(e);
}

void sst_block_cache_free(sst_block_cache *c) {
    if (!c)
        return;
    for (entry *e = c->head, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void unlink_entry(sst_block_cache *c, entry *e) {
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(sst_block_cache *c, entry *e) {
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

/* The search of a group held or about to be, its value copied. */
static int search(const block_view *v, const block_dir *d, const uint8_t *key, size_t klen,
                  const void **value, size_t *vlen, sp_error *what) {
    const void *at;
    size_t n;
    int rc = block_dir_find(d, v->data, key, klen, &at, &n, "", what);
    if (rc != 1)
        return rc;
    if (!(*value = sst_values_copy(at, n)))
        return sp_errorf(what, ": out of memory for a value of %zu bytes", n);
    *vlen = n;
    return 1;
}

/* Block i's group held whose range holds key, or NULL. */
static entry *held_group(const sst_block_cache *c, uint64_t i, const uint8_t *key, size_t klen) {
    for (entry *e = i < c->n_blocks ? c->held[i] : NULL; e; e = e->sibling)
        if (sp_key_cmp(e->lo, e->lo_len, key, klen) <= 0 &&
            (!e->hi || sp_key_cmp(key, klen, e->hi, e->hi_len) < 0))
            return e;
    return NULL;
}

int sst_block_cache_find(sst_block_cache *c, uint64_t i, const uint8_t *key, size_t klen,
                         const void **value, size_t *vlen, sp_error *what) {
    pthread_mutex_lock(&c->lock);
    entry *e = held_group(c, i, key, klen);
    int rc = SST_BLOCK_CACHE_MISS;
    if (e) {
        if (e != c->head) {
            unlink_entry(c, e);
            push_front(c, e);
        }
        rc = search(&e->view, e->dir, key, klen, value, vlen, what);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* A copy of g and d as a group of block i to hold, or NULL when out of
 * memory. */
static entry *entry_new(uint64_t i, const packed_group_view *g, block_dir *d) {
    const block_view *v = &g->view;
    size_t restarts = 4 * (size_t)v->n_restarts;
    size_t len = sizeof(entry) + v->entries_len + restarts + g->lo_len + g->hi_len;
    entry *e = malloc(len);
    if (!e)
        return NULL;
    *e = (entry){.i = i,
                 .bytes = len + block_dir_bytes(d),
                 .view = *v,
                 .dir = d,
                 .lo_len = g->lo_len,
                 .hi_len = g->hi_len};
    /* The range's keys first, beside the fields a lookup reads before it
     * knows whether the group holds its key. */
    uint8_t *at = e->data;
    memcpy(at, g->lo, g->lo_len);
    e->lo = at;
    at += g->lo_len;
    if (g->hi) {
        memcpy(at, g->hi, g->hi_len);
        e->hi = at;
        at += g->hi_len;
    }
    memcpy(at, v->data, v->entries_len);
    e->view.data = at;
    memcpy(at += v->entries_len, v->restarts, restarts);
    e->view.restarts = at;
    return e;
}

/* Drops e, the list's last, from block e->i's groups held and frees it. */
static void evict(sst_block_cache *c, entry *e) {
    unlink_entry(c, e);
    entry **at = &c->held[e->i];
    while (*at != e)
        at = &(*at)->sibling;
    *at = e->sibling;
    c->bytes -= e->bytes;
    entry_free(e);
}

int sst_block_cache_add_find(sst_block_cache *c, uint64_t i, const packed_group_view *g,
                             block_dir *d, const uint8_t *key, size_t klen, const void **value,
                             size_t *vlen, sp_error *what) {
    /* The copy is made before the lock is taken: the lock is for lists. */
    entry *e = i < c->n_blocks && c->budget ? entry_new(i, g, d) : NULL;
    if (e && e->bytes > c->budget) {
        e->dir = NULL; /* searched below, freed there */
        free(e);
        e = NULL;
    }
    if (!e) {
        int rc = search(&g->view, d, key, klen, value, vlen, what);
        block_dir_destroy(d);
        return rc;
    }
    pthread_mutex_lock(&c->lock);
    entry *had = held_group(c, i, key, klen);
    if (had) {
        entry_free(e);
        e = had;
        unlink_entry(c, e);
    } else {
        while (c->tail && c->bytes + e->bytes > c->budget)
            evict(c, c->tail);
        e->sibling = c->held[i];
        c->held[i] = e;
        c->bytes += e->bytes;
    }
    push_front(c, e);
    int rc = search(&e->view, e->dir, key, klen, value, vlen, what);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

size_t sst_block_cache_bytes(sst_block_cache *c) {
    pthread_mutex_lock(&c->lock);
    size_t n = c->bytes;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ---------------------------------------------------------------- threads */

/* The values copied since the thread's last reset: chunks, the newest
 * (and largest) first, each value whole in one, so that a new chunk never
 * moves the values before it. */
typedef struct chunk {
    struct chunk *next;
    size_t cap, used;
    uint8_t data[];
} chunk;

/* The least a chunk holds: a batch of ordinary values fits one. */
#define CHUNK_MIN ((size_t)64 << 10)

typedef struct thread_bufs {
    chunk *chunks;
    block_plain plain;
} thread_bufs;

static void *bufs_make(void) {
    return calloc(1, sizeof(thread_bufs));
}

static void free_chunks(chunk *c) {
    for (chunk *next; c; c = next) {
        next = c->next;
        free(c);
    }
}

static void bufs_free(void *p) {
    thread_bufs *b = p;
    free_chunks(b->chunks);
    block_plain_free(&b->plain);
    free(b);
}

static sst_thread_slot bufs_slot = SST_THREAD_SLOT(bufs_make, bufs_free);

/* The thread's buffers, made on first use when make is true; NULL when
 * out of memory (or not made yet). */
static thread_bufs *thread_buffers(bool make) {
    return sst_thread_slot_get(&bufs_slot, make);
}

block_plain *sst_thread_plain(void) {
    thread_bufs *b = thread_buffers(true);
    return b ? &b->plain : NULL;
}

void sst_values_reset(void) {
    thread_bufs *b = thread_buffers(false);
    if (!b || !b->chunks)
        return;
    free_chunks(b->chunks->next);
    b->chunks->next = NULL;
    b->chunks->used = 0;
}

const void *sst_values_copy(const void *v, size_t n) {
    thread_bufs *b = thread_buffers(true);
    if (!b)
        return NULL;
    chunk *c = b->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = c ? 2 * c->cap : CHUNK_MIN;
        if (cap < n)
            cap = n;
        chunk *fresh = malloc(sizeof *fresh + cap);
        if (!fresh)
            return NULL;
        *fresh = (chunk){.next = c, .cap = cap};
        b->chunks = c = fresh;
    }
    uint8_t *at = c->data + c->used;
    if (n)
        memcpy(at, v, n);
    c->used += n;
    return at;
}
