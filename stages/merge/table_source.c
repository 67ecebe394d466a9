/*
 * table_source.c: an SSTable as a merge source; see table_source.h.
 *
 * This reads blocks with the internal reader (table_reader.h) rather than
 * the public library (sstpipe.h): the merge needs block numbers, offsets
 * and whole-block checks to copy blocks as they are, which the public API,
 * made for lookups and record scans, does not and should not expose.
 *
 * A table set (stages/sst/TABLESET.md) is one source too: its shards, each
 * a table source of its own, one after the other, chained by the set's
 * cursor (stages/sst/cursor.h), which every scan of a set shares: each
 * table source is also a cursor over its records for that chain. The
 * shards' ranges are disjoint and in order (the manifest's rules, checked
 * when it is read), so the chain yields the set's records in key order,
 * and its blocks are still whole blocks of files, each with its own
 * descriptor and offset:
 * the merge copies them exactly as a table's. Only one shard is open at a
 * time, streamed as a table is, and closed before the next one opens, so
 * a set costs what its largest shard's buffers cost, not the sum of its
 * shards' indexes (which the library's open would hold). Each shard is
 * held against the manifest as the library holds it: at its open, its
 * footer's records and size and its options; as its first block is
 * loaded, its first key, and as its last block is, its last key, against
 * its range (keys between them are in order by the blocks' own checks).
 * The set's footer is the manifest's: its records, bytes and options, and
 * its data_blocks reckoned from the shard sizes (an upper bound: indexes
 * included), which is all the merge asks of it before the first record
 * (the output's options, and which input is the base).
 *
 * Chunks are read by the block source's sequential reader (pread into one
 * reused buffer, stages/sst/block_source.h), not mapped: every page of a fresh mapping costs a
 * fault on its first touch, which a virtual machine with shadow page tables makes dear, and the
 * merge touches each page of the base once, so the kernel's copy into the buffer costs less than
 * the faults (the merge rows and notes of tests/bench/RESULTS.md). The buffer is reused
 * chunk after chunk, so the copied blocks the writer still points into are written first (the
 * release hook, table_source_on_release).
 */
#include "stages/merge/table_source.h"

#include "stages/common/key.h"
#include "stages/sst/cursor.h"
#include "stages/sst/table_check.h"
#include "stages/sst/table_set.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index is read through a buffer of this size per table. */
#define INDEX_READ_BYTES (64u << 10)

struct table_source {
    merge_source src;
    sst_cursor cur;        /* its records as a cursor, for a set's chain */
    sst_reader *r;         /* streamed: no index in memory */
    sst_index_cursor *idx; /* the first keys, block after block */
    const sst_footer *f;
    sst_block_seq chunk;   /* the chunk of blocks read (the block source's reader) */
    uint64_t chunk_blocks; /* blocks a chunk reads */
    uint64_t block;        /* the current block */
    bool loaded;           /* block is open in v/it */
    bool walked;           /* some block was walked: last holds its last key */
    bool failed;           /* a read or check of this table failed */
    block_view v;
    block_plain plain; /* a version 2 block's records, unpacked: v's */
    block_iter it;
    table_source_block info; /* of the current block */
    uint8_t last[SP_MAX_KEY_BYTES];
    /* A set's shard: the set's manifest and its number in it, to check its
     * first and last key against its range. */
    const table_set *shard_of;
    size_t shard_i;
    /* The range the records are confined to (NULL: unbounded), and
     * whether the source reached hi. */
    const uint8_t *lo, *hi;
    uint32_t lo_len, hi_len;
    bool past_hi;
    /* A table set: its manifest, the cursor chaining its shards' sources,
     * the chunk bound for them, the manifest's sums. */
    table_set *set;
    sst_cursor *chain;
    size_t read_bytes;
    sst_footer sum;
    /* table_source_on_release's hook, or NULL. */
    void (*release_fn)(void *ctx);
    void *release_ctx;
};

static int source_next(merge_source *s, sp_error *err);

static int source_value(merge_source *s, const uint8_t **value, sp_error *err) {
    (void)err;
    *value = ((table_source *)s)->it.value;
    return 0;
}

static const merge_source_ops table_source_ops = {.next = source_next, .value = source_value};

static table_source *of_cursor(const sst_cursor *c) {
    return (table_source *)((char *)c - offsetof(table_source, cur));
}

/* The shard source a set is reading, or NULL (before the first, between
 * shards, or a plain table). */
static table_source *part_of(const table_source *t) {
    const sst_cursor *c = t->chain ? sst_cursor_set_shard(t->chain) : NULL;
    return c ? of_cursor(c) : NULL;
}

/* ---- a table source as a cursor, for a set's chain ---- */

/* The source's current record (rc 1) is the cursor's. */
static int part_take(table_source *t, int rc) {
    if (rc == 1) {
        t->cur.key = t->it.key;
        t->cur.key_len = t->it.key_len;
        t->cur.value = t->it.value;
        t->cur.value_len = t->it.value_len;
    }
    return rc;
}

/* A merge input is streamed from its first record: its index is read
 * forward only, so the chain, never sought itself, seeks no shard to a key. */
static int part_next(sst_cursor *c, sp_error *err) {
    table_source *t = of_cursor(c);
    return part_take(t, source_next(&t->src, err));
}

static int part_seek(sst_cursor *c, const uint8_t *key, size_t klen, sp_error *err) {
    (void)klen;
    if (key)
        return sp_errorf(err, "%s: a merge input is read from its first record",
                         sst_reader_path(of_cursor(c)->r));
    return part_next(c, err);
}

static void released(const table_source *t);

/* A shard done with: the memory of its blocks goes with it. */
static void part_destroy(sst_cursor *c) {
    table_source *t = of_cursor(c);
    released(t);
    table_source_destroy(t);
}

static const sst_cursor_ops part_ops = {
    .seek = part_seek, .next = part_next, .destroy = part_destroy};

static int set_next(merge_source *s, sp_error *err);

static int set_value(merge_source *s, const uint8_t **value, sp_error *err) {
    merge_source *p = &part_of((table_source *)s)->src;
    return p->ops->value(p, value, err);
}

static const merge_source_ops set_source_ops = {.next = set_next, .value = set_value};

static table_source *set_open(const char *path, size_t read_bytes, sp_error *err);

table_source *table_source_open(const char *path, size_t read_bytes, sp_error *err) {
    if (table_set_is_set_path(path))
        return set_open(path, read_bytes, err);
    table_source *t = calloc(1, sizeof *t);
    if (!t) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    t->src.ops = &table_source_ops;
    t->cur.ops = &part_ops;
    if (!(t->r = sst_reader_open_streamed(path, err)) ||
        !(t->idx = sst_index_cursor_open(sst_reader_path(t->r), sst_reader_fd(t->r),
                                         sst_reader_footer(t->r), NULL, INDEX_READ_BYTES, err))) {
        sst_reader_close(t->r);
        free(t);
        return NULL;
    }
    t->f = sst_reader_footer(t->r);
    sst_block_seq_init(&t->chunk, sst_reader_blocks(t->r), 1, 1);
    table_source_set_read_bytes(t, read_bytes);
    return t;
}

void table_source_set_read_bytes(table_source *t, size_t read_bytes) {
    t->read_bytes = read_bytes;
    table_source *p = part_of(t);
    if (p)
        table_source_set_read_bytes(p, read_bytes);
    t->chunk_blocks = read_bytes / t->f->block_size;
    if (t->chunk_blocks == 0)
        t->chunk_blocks = 1;
    sst_block_seq_set_reads(&t->chunk, t->chunk_blocks, t->chunk_blocks);
}

void table_source_set_range(table_source *t, const uint8_t *lo, uint32_t lo_len, const uint8_t *hi,
                            uint32_t hi_len) {
    table_source *p = part_of(t);
    if (p)
        table_source_set_range(p, lo, lo_len, hi, hi_len);
    t->lo = lo;
    t->lo_len = lo_len;
    t->hi = hi;
    t->hi_len = hi_len;
}

static bool below_lo(const table_source *t, const uint8_t *key, uint32_t len) {
    return t->lo && sp_key_cmp(key, len, t->lo, t->lo_len) < 0;
}

static bool at_or_above_hi(const table_source *t, const uint8_t *key, uint32_t len) {
    return t->hi && sp_key_cmp(key, len, t->hi, t->hi_len) >= 0;
}

bool table_source_failed(const table_source *t) {
    const table_source *p = part_of(t);
    return t->failed || (p && table_source_failed(p));
}

/* Opens shard k of the set at ctx, held against the manifest, as the
 * chain's cursor over it. */
static sst_cursor *open_part(void *ctx, size_t k, sp_error *err) {
    table_source *t = ctx;
    table_source *p = table_source_open(table_set_shard_path(t->set, k), t->read_bytes, err);
    if (!p)
        return NULL;
    const sst_footer *f = p->f;
    table_set_options o = {.format_version = f->format_version,
                           .block_size = f->block_size,
                           .cluster_size = f->cluster_size,
                           .max_value_bytes = f->max_value_bytes,
                           .restart_interval = f->restart_interval};
    if (table_set_check_footer(t->set, k, f->records, f->file_size, &o, err)) {
        table_source_destroy(p);
        return NULL;
    }
    p->shard_of = t->set;
    p->shard_i = k;
    table_source_set_range(p, t->lo, t->lo_len, t->hi, t->hi_len);
    table_source_on_release(p, t->release_fn, t->release_ctx);
    return &p->cur;
}

/* The set at path: its manifest read and checked (with each shard file
 * there at its listed size); no shard is opened yet. */
static table_source *set_open(const char *path, size_t read_bytes, sp_error *err) {
    table_source *t = calloc(1, sizeof *t);
    if (!t) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    if (!(t->set = table_set_read(path, err)) ||
        !(t->chain = sst_cursor_set(t->set, open_part, t, err))) {
        table_set_free(t->set);
        free(t);
        return NULL;
    }
    t->src.ops = &set_source_ops;
    const table_set_options *o = table_set_get_options(t->set);
    t->sum = (sst_footer){.block_size = o->block_size,
                          .cluster_size = o->cluster_size,
                          .max_value_bytes = o->max_value_bytes,
                          .restart_interval = o->restart_interval,
                          .format_version = o->format_version};
    for (size_t i = 0; i < table_set_count(t->set); i++) {
        const table_set_shard *sh = table_set_shard_at(t->set, i);
        t->sum.records += sh->records;
        t->sum.file_size += sh->bytes;
        t->sum.data_blocks += o->block_size ? sh->bytes / o->block_size : 0;
    }
    t->f = &t->sum;
    table_source_set_read_bytes(t, read_bytes);
    return t;
}

void table_source_on_release(table_source *t, void (*fn)(void *ctx), void *ctx) {
    table_source *p = part_of(t);
    if (p)
        table_source_on_release(p, fn, ctx);
    t->release_fn = fn;
    t->release_ctx = ctx;
}

/* The memory of the blocks offered so far is about to go. */
static void released(const table_source *t) {
    if (t->release_fn)
        t->release_fn(t->release_ctx);
}

/* The set's current record is its current shard's. */
static int set_take(table_source *t, int rc) {
    if (rc == 1) {
        const merge_source *p = &part_of(t)->src;
        t->src.key = p->key;
        t->src.key_len = p->key_len;
        t->src.prefix = p->prefix;
        t->src.value_len = p->value_len;
    }
    t->failed |= rc < 0;
    return rc;
}

/* The next record: of this shard, or else the first of the next shard
 * that has one, each shard closed once it is done (the chain's walk). */
static int set_next(merge_source *s, sp_error *err) {
    table_source *t = (table_source *)s;
    int rc = sst_cursor_next(t->chain);
    if (rc < 0)
        *err = *sst_cursor_error(t->chain);
    return set_take(t, rc);
}

void table_source_destroy(table_source *t) {
    if (!t)
        return;
    /* A shard still open goes with the set, not as a shard done with: the
     * caller's hook is not called. */
    table_source *p = part_of(t);
    if (p)
        p->release_fn = NULL;
    sst_cursor_free(t->chain);
    table_set_free(t->set);
    sst_block_seq_free(&t->chunk);
    sst_index_cursor_destroy(t->idx);
    sst_reader_close(t->r);
    block_plain_free(&t->plain);
    free(t);
}

merge_source *table_source_merge_source(table_source *t) {
    return &t->src;
}

const sst_footer *table_source_footer(const table_source *t) {
    return t->f;
}

/* The index entry of the next block, which must exist (data_blocks of
 * them were checked at open). */
static int next_first_key(table_source *t, const uint8_t **key, uint32_t *klen, sp_error *err) {
    int rc = sst_index_cursor_next(t->idx, key, klen, err);
    if (rc == 0)
        return sp_errorf(err, "%s: the index ends before block %llu", sst_reader_path(t->r),
                         (unsigned long long)sst_index_cursor_block(t->idx));
    return rc < 0 ? -1 : 0;
}

/* Reads the chunk holding block i, checks block i and walks it,
 * leaving it open at its start. The walk (block_iter_next checks that
 * every entry decodes and that keys increase) gives the counts a copy
 * needs; the block's last key is the walk's last. */
static int load_block(table_source *t, uint64_t i, sp_error *err) {
    const uint64_t bs = t->f->block_size;
    const sst_blocks *src = sst_reader_blocks(t->r);
    if (!sst_block_seq_holds(&t->chunk, i) && t->chunk.n)
        released(t);
    const uint8_t *data = sst_block_seq_at(&t->chunk, i, err);
    if (!data)
        return -1;
    /* Blocks are loaded in order, each once: the cursor is at block i. */
    const uint8_t *first;
    uint32_t first_len;
    if (next_first_key(t, &first, &first_len, err) ||
        sst_blocks_check(src, i, data, first, first_len, &t->plain, &t->v, err))
        return -1;
    table_source_block *b = &t->info;
    bool check_prev = t->walked;
    uint32_t prev_len = b->last_len;
    *b = (table_source_block){.index = i,
                              .offset = i * bs,
                              .fd = sst_reader_fd(t->r),
                              .data = data,
                              .view = &t->v,
                              .first = first,
                              .first_len = first_len};
    /* Across blocks: the first key (the index's, checked against the
     * block's own) after the previous block's last. */
    if (check_prev && sp_key_cmp(t->last, prev_len, b->first, b->first_len) >= 0)
        return sp_errorf(err,
                         "%s: block %llu at byte %llu: first key does not sort after the previous "
                         "block's last",
                         sst_reader_path(t->r), (unsigned long long)i,
                         (unsigned long long)(i * bs));
    /* Cleared, not zeroed: zeroing all 1 KiB of it for every block (and in
     * step, every record) stood out in a merge's instruction profile. */
    sp_error e;
    sp_error_clear(&e);
    block_iter_init(&t->it, &t->v);
    int rc;
    while ((rc = block_iter_next(&t->it, "", &e)) == 1) {
        b->records++;
        b->key_bytes += t->it.key_len;
        b->value_bytes += t->it.value_len;
    }
    if (rc < 0)
        return sst_blocks_error(src, i, &e, err);
    if (b->records != t->v.n_records)
        return sp_errorf(err,
                         "%s: block %llu at byte %llu: %llu records decoded, the trailer says %u",
                         sst_reader_path(t->r), (unsigned long long)i, (unsigned long long)(i * bs),
                         (unsigned long long)b->records, t->v.n_records);
    memcpy(t->last, t->it.key, t->it.key_len);
    b->last = t->last;
    b->last_len = t->it.key_len;
    if (t->shard_of &&
        ((i == 0 &&
          table_set_check_key(t->shard_of, t->shard_i, "first", b->first, b->first_len, err)) ||
         (i + 1 == t->f->data_blocks &&
          table_set_check_key(t->shard_of, t->shard_i, "last", b->last, b->last_len, err))))
        return -1;
    t->block = i;
    t->loaded = true;
    t->walked = true;
    block_iter_init(&t->it, &t->v);
    return 0;
}

/* Makes the next record current, moving to block `from` when the current
 * one is done; records outside the range are passed over. */
static int step(table_source *t, uint64_t from, sp_error *err) {
    if (t->past_hi)
        return 0;
    for (;;) {
        if (t->loaded) {
            sp_error e;
            sp_error_clear(&e);
            int rc = block_iter_next(&t->it, "", &e);
            if (rc < 0)
                return sst_blocks_error(sst_reader_blocks(t->r), t->block, &e, err);
            if (rc == 1 && below_lo(t, t->it.key, t->it.key_len))
                continue;
            if (rc == 1 && at_or_above_hi(t, t->it.key, t->it.key_len)) {
                t->loaded = false;
                t->past_hi = true;
                return 0;
            }
            if (rc == 1) {
                t->src.key = t->it.key;
                t->src.key_len = t->it.key_len;
                t->src.prefix = sp_key_prefix(t->it.key, t->it.key_len);
                t->src.value_len = t->it.value_len;
                return 1;
            }
            from = t->block + 1;
        }
        if (from >= t->f->data_blocks) {
            t->loaded = false;
            return 0;
        }
        if (load_block(t, from, err))
            return -1;
        /* Wholly below the range: checked (blocks are checked in order,
         * each once), none of its records decoded again. */
        if (below_lo(t, t->info.last, t->info.last_len)) {
            t->loaded = false;
            from = t->block + 1;
        }
    }
}

static int source_next(merge_source *s, sp_error *err) {
    table_source *t = (table_source *)s;
    int rc = step(t, 0, err);
    t->failed |= rc < 0;
    return rc;
}

int table_source_dictionary(const table_source *t, const uint8_t **dict, size_t *len) {
    if (t->set || t->f->format_version != SST_FORMAT_VERSION_PACKED)
        return 0;
    *dict = sst_reader_dictionary(t->r, len);
    return 1;
}

bool table_source_at_block_start(const table_source *t, table_source_block *b) {
    if (t->set) {
        const table_source *p = part_of(t);
        return p && table_source_at_block_start(p, b);
    }
    if (!t->loaded || t->it.index != 1 || below_lo(t, t->info.first, t->info.first_len) ||
        at_or_above_hi(t, t->info.last, t->info.last_len))
        return false;
    *b = t->info;
    return true;
}

int table_source_skip_block(table_source *t, sp_error *err) {
    if (t->set) {
        /* The shard's cursor is moved too, so that the chain, asked for
         * the next record at the shard's end, moves to the next shard. */
        table_source *p = part_of(t);
        int rc = sst_cursor_moved(&p->cur, part_take(p, table_source_skip_block(p, &p->cur.err)));
        if (rc < 0)
            *err = p->cur.err;
        return rc == 0 ? set_next(&t->src, err) : set_take(t, rc);
    }
    uint64_t next = t->block + 1;
    t->loaded = false;
    int rc = step(t, next, err);
    t->failed |= rc < 0;
    return rc;
}
