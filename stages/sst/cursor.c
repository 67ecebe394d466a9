/*
 * cursor.c: the cursor over a table or a table set; see cursor.h.
 *
 * A table's cursor is a two-level iterator in LevelDB's shape: the
 * in-memory index picks the block where a seek lands, a block seek
 * (block_iter_seek) finds the first record >= the key in it, and the walk
 * then goes block by block in file order. Blocks come from the block
 * source's sequential reader, with pread into the cursor's own buffer,
 * never through the lookups' mapping or per-thread buffer, so a scan
 * leaves lookups alone and the kernel's sequential read-ahead applies to
 * it. A cursor reads one block at first (a prefix scan is often one block)
 * and doubles its reads up to MAX_READ_BYTES as it goes on. A short scan's
 * cursor on a mapped table (sst_cursor_table_short) reads in place instead.
 */
#include "stages/sst/cursor.h"

#include "stages/common/key.h"
#include "stages/sst/table_walk.h"

#include <stdlib.h>
#include <string.h>

#define MAX_READ_BYTES (1u << 20)

/* ------------------------------------------------------------- the calls */

/* The state after an operation returned rc: a record at or past the end
 * is the end. */
static int settle(sst_cursor *c, int rc) {
    if (rc < 0) {
        c->state = SST_CURSOR_ERROR;
        return -1;
    }
    if (rc == 1 && c->has_end && sp_key_cmp(c->key, c->key_len, c->end, c->end_len) >= 0)
        rc = 0;
    c->state = rc ? SST_CURSOR_AT : SST_CURSOR_END;
    return rc;
}

int sst_cursor_seek(sst_cursor *c, const uint8_t *key, size_t klen) {
    if (c->state == SST_CURSOR_ERROR)
        return -1;
    return settle(c, c->ops->seek(c, key, klen, &c->err));
}

int sst_cursor_next(sst_cursor *c) {
    switch (c->state) {
    case SST_CURSOR_ERROR:
        return -1;
    case SST_CURSOR_END:
        return 0;
    case SST_CURSOR_UNSET:
        return sst_cursor_seek(c, NULL, 0);
    default:
        return settle(c, c->ops->next(c, &c->err));
    }
}

int sst_cursor_moved(sst_cursor *c, int rc) {
    return settle(c, rc);
}

const sp_error *sst_cursor_error(const sst_cursor *c) {
    return &c->err;
}

void sst_cursor_free(sst_cursor *c) {
    if (c)
        c->ops->destroy(c);
}

void sst_cursor_set_end(sst_cursor *c, const uint8_t *end, size_t klen) {
    memcpy(c->end, end, klen);
    c->end_len = klen;
    c->has_end = true;
}

void sst_cursor_set_prefix_end(sst_cursor *c, const uint8_t *prefix, size_t plen) {
    /* No key is longer than SP_MAX_KEY_BYTES, so none has a longer prefix:
     * the prefix cut to that length sorts before every key >= the prefix,
     * and ends the records at once. */
    if (plen > SP_MAX_KEY_BYTES) {
        sst_cursor_set_end(c, prefix, SP_MAX_KEY_BYTES);
        return;
    }
    /* The keys with the prefix are those >= it and below the shortest key
     * that sorts after all of them: the prefix without its trailing 0xff
     * bytes, its last byte one higher. A prefix of 0xff bytes alone has
     * none: every key >= it starts with it. */
    while (plen > 0 && prefix[plen - 1] == 0xff)
        plen--;
    if (plen == 0)
        return;
    sst_cursor_set_end(c, prefix, plen);
    c->end[plen - 1]++;
}

/* ---------------------------------------------------------- a plain table */

typedef struct table_cursor {
    sst_cursor c;
    const sst_reader *r;
    uint32_t block_size;
    uint64_t blocks;
    bool in_place;     /* blocks read through r's mapping, not seq */
    sst_block_seq seq; /* the blocks read ahead of the walk */
    uint64_t block;    /* the block being walked */
    sst_walk walk;
} table_cursor;

/* The walk's current record is the cursor's. */
static int table_take(table_cursor *t, int rc) {
    if (rc == 1) {
        const block_iter *w = &t->walk.it;
        t->c.key = w->key;
        t->c.key_len = w->key_len;
        t->c.value = w->value;
        t->c.value_len = w->value_len;
    }
    return rc;
}

/* Makes block i the one walked, before its first record: read (with the
 * blocks after it) unless already held, and checked. */
static int load_block(table_cursor *t, uint64_t i, sp_error *err) {
    if (t->in_place) {
        if (sst_reader_mapped_view(t->r, i, &t->walk.view, err))
            return -1;
    } else {
        const uint8_t *data = sst_block_seq_at(&t->seq, i, err);
        if (!data || sst_reader_check_block(t->r, i, data, &t->walk.plain, &t->walk.view, err))
            return -1;
    }
    t->block = i;
    sst_walk_start(&t->walk);
    return 0;
}

/* The walk ran off the end of its block: the next block's first record,
 * which must sort after the last one returned. */
static int next_block(table_cursor *t, sp_error *err) {
    uint64_t i = t->block + 1;
    if (i >= t->blocks)
        return 0;
    if (load_block(t, i, err))
        return -1;
    sp_error e = {0};
    int rc = sst_walk_next(&t->walk, &e);
    if (rc < 0)
        return sst_blocks_error(sst_reader_blocks(t->r), i, &e, err);
    if (rc == 1 && !sst_walk_first_in_order(&t->walk))
        return sp_errorf(err,
                         "%s: block %llu at byte %llu: first key does not sort after the "
                         "previous block's last",
                         sst_reader_path(t->r), (unsigned long long)i,
                         (unsigned long long)(i * t->block_size));
    return rc;
}

static int advance(table_cursor *t, sp_error *err) {
    /* Cleared, not zeroed: this runs once a record, and zeroing all of an
     * sp_error was most of a suggestion's scan of its prefix's titles. */
    sp_error e;
    sp_error_clear(&e);
    int rc = sst_walk_next(&t->walk, &e);
    if (rc < 0)
        return sst_blocks_error(sst_reader_blocks(t->r), t->block, &e, err);
    return rc ? rc : next_block(t, err);
}

static int table_next(sst_cursor *c, sp_error *err) {
    table_cursor *t = (table_cursor *)c;
    return table_take(t, advance(t, err));
}

/* The first record >= key: in the last block whose first key is <= key
 * (block 0 when key sorts before every key), or else the next block's
 * first. A walk starts afresh, with no previous block. */
static int table_seek(sst_cursor *c, const uint8_t *key, size_t klen, sp_error *err) {
    table_cursor *t = (table_cursor *)c;
    if (t->blocks == 0)
        return 0;
    sst_walk_init(&t->walk);
    int64_t i = key ? sst_reader_find_block(t->r, key, klen) : 0;
    if (i < 0)
        i = 0;
    if (load_block(t, (uint64_t)i, err))
        return -1;
    if (!key)
        return table_take(t, advance(t, err));
    sp_error e = {0};
    int rc = sst_walk_seek(&t->walk, key, klen, &e);
    if (rc < 0)
        return sst_blocks_error(sst_reader_blocks(t->r), (uint64_t)i, &e, err);
    return table_take(t, rc ? rc : next_block(t, err));
}

static void table_destroy(sst_cursor *c) {
    table_cursor *t = (table_cursor *)c;
    sst_block_seq_free(&t->seq);
    sst_walk_free(&t->walk);
    free(t);
}

static const sst_cursor_ops table_ops = {
    .seek = table_seek, .next = table_next, .destroy = table_destroy};

sst_cursor *sst_cursor_table(const sst_reader *r, sp_error *err) {
    table_cursor *t = calloc(1, sizeof *t);
    if (!t) {
        sp_errorf(err, "%s: out of memory", sst_reader_path(r));
        return NULL;
    }
    const sst_footer *f = sst_reader_footer(r);
    t->c.ops = &table_ops;
    t->r = r;
    t->block_size = f->block_size;
    t->blocks = f->data_blocks;
    sst_walk_init(&t->walk);
    sst_block_seq_init(&t->seq, sst_reader_blocks(r), 1, MAX_READ_BYTES / f->block_size);
    return &t->c;
}

sst_cursor *sst_cursor_table_short(const sst_reader *r, sp_error *err) {
    sst_cursor *c = sst_cursor_table(r, err);
    if (c)
        ((table_cursor *)c)->in_place = sst_reader_in_place(r);
    return c;
}

/* ------------------------------------------------------------- a table set */

typedef struct set_cursor {
    sst_cursor c;
    const table_set *m;
    sst_cursor_open_fn open;
    void *ctx;
    size_t shard;     /* the shard walked, or the one to open next */
    sst_cursor *part; /* its cursor, or NULL */
} set_cursor;

/* The shard's current record (rc 1) or error (rc -1) is the set's. */
static int set_take(set_cursor *s, int rc, sp_error *err) {
    if (rc < 0)
        *err = *sst_cursor_error(s->part);
    if (rc == 1) {
        s->c.key = s->part->key;
        s->c.key_len = s->part->key_len;
        s->c.value = s->part->value;
        s->c.value_len = s->part->value_len;
    }
    return rc;
}

/* Whether shard i's range starts at or past the cursor's end, so that it
 * holds no record wanted. */
static bool past_end(const set_cursor *s, size_t i) {
    const table_set_shard *sh = table_set_shard_at(s->m, i);
    return s->c.has_end && sh->has_lo &&
           sp_key_cmp(sh->lo, sh->lo_len, s->c.end, s->c.end_len) >= 0;
}

/* The first record >= key (NULL: the first) from the current shard on,
 * each shard done with closed before the next opens. */
static int walk_shards(set_cursor *s, const uint8_t *key, size_t klen, sp_error *err) {
    for (; s->shard < table_set_count(s->m); s->shard++) {
        if (past_end(s, s->shard))
            return 0;
        if (!(s->part = s->open(s->ctx, s->shard, err)))
            return -1;
        if (s->c.has_end)
            sst_cursor_set_end(s->part, s->c.end, s->c.end_len);
        int rc = sst_cursor_seek(s->part, key, klen);
        if (rc != 0)
            return set_take(s, rc, err);
        /* The key only matters in the shard that holds it. */
        key = NULL;
        klen = 0;
        sst_cursor_free(s->part);
        s->part = NULL;
    }
    return 0;
}

static int set_seek(sst_cursor *c, const uint8_t *key, size_t klen, sp_error *err) {
    set_cursor *s = (set_cursor *)c;
    sst_cursor_free(s->part);
    s->part = NULL;
    s->shard = key ? table_set_find(s->m, key, klen) : 0;
    return walk_shards(s, key, klen, err);
}

static int set_next(sst_cursor *c, sp_error *err) {
    set_cursor *s = (set_cursor *)c;
    int rc = sst_cursor_next(s->part);
    if (rc != 0)
        return set_take(s, rc, err);
    sst_cursor_free(s->part);
    s->part = NULL;
    s->shard++;
    return walk_shards(s, NULL, 0, err);
}

static void set_destroy(sst_cursor *c) {
    set_cursor *s = (set_cursor *)c;
    sst_cursor_free(s->part);
    free(s);
}

static const sst_cursor_ops set_ops = {.seek = set_seek, .next = set_next, .destroy = set_destroy};

sst_cursor *sst_cursor_set_shard(const sst_cursor *c) {
    return c->ops == &set_ops ? ((const set_cursor *)c)->part : NULL;
}

sst_cursor *sst_cursor_set(const table_set *m, sst_cursor_open_fn open, void *ctx, sp_error *err) {
    set_cursor *s = calloc(1, sizeof *s);
    if (!s) {
        sp_errorf(err, "%s: out of memory", table_set_manifest_path(m));
        return NULL;
    }
    s->c.ops = &set_ops;
    s->m = m;
    s->open = open;
    s->ctx = ctx;
    return &s->c;
}
