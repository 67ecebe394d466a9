/*
 * table_source.c: an SSTable as a merge source; see table_source.h.
 *
 * This reads blocks with the internal reader (table_reader.h) rather than
 * the public library (sstpipe.h): the merge needs block numbers, offsets
 * and whole-block checks to copy blocks as they are, which the public API,
 * made for lookups and record scans, does not and should not expose.
 *
 * A table set (stages/sst/TABLESET.md) is one source too: its shards, each
 * a table source of its own, one after the other. The shards' ranges are
 * disjoint and in order (the library's open checks the manifest and each
 * shard against it first), so the chain yields the set's records in key
 * order, and its blocks are still whole blocks of files, each with its own
 * descriptor and offset: the merge copies them exactly as a table's.
 */
#include "stages/merge/table_source.h"

#include "stages/common/chunk_map.h"
#include "stages/common/key.h"
#include "stages/sst/index_cursor.h"
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index is read through a buffer of this size per table. */
#define INDEX_READ_BYTES (64u << 10)

struct table_source {
    merge_source src;
    sst_reader *r;         /* streamed: no index in memory */
    sst_index_cursor *idx; /* the first keys, block after block */
    const sst_footer *f;
    sp_chunk chunk;        /* blocks chunk_first .. chunk_first + chunk_n */
    uint64_t chunk_blocks; /* capacity in blocks */
    uint64_t chunk_first;
    uint64_t chunk_n;
    uint64_t block; /* the current block */
    bool loaded;    /* block is open in v/it */
    bool walked;    /* some block was walked: last holds its last key */
    bool failed;    /* a read or check of this table failed */
    block_view v;
    block_iter it;
    table_source_block info; /* of the current block */
    uint8_t last[SP_MAX_KEY_BYTES];
    /* The range the records are confined to (NULL: unbounded), and
     * whether the source reached hi. */
    const uint8_t *lo, *hi;
    uint32_t lo_len, hi_len;
    bool past_hi;
    /* A table set: its shards' sources, the one being read, the sums. */
    table_source **parts;
    size_t n_parts, cur;
    sst_footer sum;
    char *set_path;
};

static int source_next(merge_source *s, sp_error *err);

static int source_value(merge_source *s, const uint8_t **value, sp_error *err) {
    (void)err;
    *value = ((table_source *)s)->it.value;
    return 0;
}

static const merge_source_ops table_source_ops = {.next = source_next, .value = source_value};

static int set_next(merge_source *s, sp_error *err);

static int set_value(merge_source *s, const uint8_t **value, sp_error *err) {
    table_source *t = (table_source *)s;
    merge_source *p = &t->parts[t->cur]->src;
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
    if (!(t->r = sst_reader_open_streamed(path, err)) ||
        !(t->idx = sst_index_cursor_open(sst_reader_path(t->r), sst_reader_fd(t->r),
                                         sst_reader_footer(t->r), NULL, INDEX_READ_BYTES, err))) {
        sst_reader_close(t->r);
        free(t);
        return NULL;
    }
    t->f = sst_reader_footer(t->r);
    table_source_set_read_bytes(t, read_bytes);
    return t;
}

void table_source_set_read_bytes(table_source *t, size_t read_bytes) {
    for (size_t i = 0; i < t->n_parts; i++)
        table_source_set_read_bytes(t->parts[i], read_bytes);
    t->chunk_blocks = read_bytes / t->f->block_size;
    if (t->chunk_blocks == 0)
        t->chunk_blocks = 1;
}

void table_source_set_range(table_source *t, const uint8_t *lo, uint32_t lo_len, const uint8_t *hi,
                            uint32_t hi_len) {
    for (size_t i = 0; i < t->n_parts; i++)
        table_source_set_range(t->parts[i], lo, lo_len, hi, hi_len);
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
    for (size_t i = 0; i < t->n_parts; i++)
        if (table_source_failed(t->parts[i]))
            return true;
    return t->failed;
}

/* The set at path, checked whole by the library (manifest, each shard's
 * counts, options and first and last key against its range), then read
 * shard by shard. */
static table_source *set_open(const char *path, size_t read_bytes, sp_error *err) {
    char *msg = NULL;
    sstpipe_table *check = sstpipe_open(path, &msg);
    if (!check) {
        sp_errorf(err, "%s", msg ? msg : "out of memory");
        sstpipe_free(msg);
        return NULL;
    }
    sstpipe_info info;
    sstpipe_info_get(check, &info);
    size_t n = sstpipe_shard_count(check);
    table_source *t = calloc(1, sizeof *t);
    if (!t || !(t->parts = calloc(n, sizeof *t->parts)) || !(t->set_path = strdup(path))) {
        sp_errorf(err, "%s: out of memory", path);
        goto fail;
    }
    t->src.ops = &set_source_ops;
    t->sum = (sst_footer){.data_blocks = info.data_blocks,
                          .records = info.records,
                          .key_bytes = info.key_bytes,
                          .value_bytes = info.value_bytes,
                          .file_size = info.file_size,
                          .block_size = info.block_size,
                          .cluster_size = info.cluster_size,
                          .max_value_bytes = info.max_value_bytes,
                          .restart_interval = info.restart_interval,
                          .format_version = info.format_version};
    t->f = &t->sum;
    for (size_t i = 0; i < n; i++) {
        if (!(t->parts[i] =
                  table_source_open(sstpipe_path(sstpipe_shard(check, i)), read_bytes, err)))
            goto fail;
        t->n_parts++;
    }
    sstpipe_close(check);
    return t;
fail:
    sstpipe_close(check);
    table_source_destroy(t);
    return NULL;
}

/* The set's current record is its current shard's. */
static int set_take(table_source *t, int rc) {
    if (rc == 1) {
        const merge_source *p = &t->parts[t->cur]->src;
        t->src.key = p->key;
        t->src.key_len = p->key_len;
        t->src.prefix = p->prefix;
        t->src.value_len = p->value_len;
    }
    return rc;
}

/* The next record: of this shard, or else the first of the next shard
 * that has one. */
static int set_next(merge_source *s, sp_error *err) {
    table_source *t = (table_source *)s;
    while (t->cur < t->n_parts) {
        merge_source *p = &t->parts[t->cur]->src;
        int rc = p->ops->next(p, err);
        if (rc != 0)
            return set_take(t, rc);
        if (t->cur + 1 == t->n_parts)
            return 0;
        t->cur++;
    }
    return 0;
}

void table_source_destroy(table_source *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->n_parts; i++)
        table_source_destroy(t->parts[i]);
    free(t->parts);
    free(t->set_path);
    sp_chunk_destroy(&t->chunk);
    sst_index_cursor_destroy(t->idx);
    sst_reader_close(t->r);
    free(t);
}

merge_source *table_source_merge_source(table_source *t) {
    return &t->src;
}

const sst_footer *table_source_footer(const table_source *t) {
    return t->f;
}

const char *table_source_path(const table_source *t) {
    return t->parts ? t->set_path : sst_reader_path(t->r);
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

/* Maps (or reads) the chunk holding block i, checks block i and walks it,
 * leaving it open at its start. The walk (block_iter_next checks that
 * every entry decodes and that keys increase) gives the counts a copy
 * needs; the block's last key is the walk's last. */
static int load_block(table_source *t, uint64_t i, sp_error *err) {
    const uint64_t bs = t->f->block_size;
    if (i < t->chunk_first || i >= t->chunk_first + t->chunk_n) {
        uint64_t n = t->f->data_blocks - i;
        if (n > t->chunk_blocks)
            n = t->chunk_blocks;
        t->chunk_n = 0;
        if (sp_chunk_fill(&t->chunk, sst_reader_fd(t->r), i * bs, (size_t)(n * bs),
                          sst_reader_path(t->r), err))
            return -1;
        t->chunk_first = i;
        t->chunk_n = n;
    }
    const uint8_t *data = t->chunk.data + (i - t->chunk_first) * bs;
    /* Blocks are loaded in order, each once: the cursor is at block i. */
    const uint8_t *first;
    uint32_t first_len;
    if (next_first_key(t, &first, &first_len, err) ||
        sst_reader_check_block_key(t->r, i, data, first, first_len, &t->v, err))
        return -1;
    table_source_block *b = &t->info;
    bool check_prev = t->walked;
    uint32_t prev_len = b->last_len;
    *b = (table_source_block){.index = i,
                              .offset = i * bs,
                              .fd = sst_reader_fd(t->r),
                              .data = data,
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
    sp_error e = {0};
    block_iter_init(&t->it, &t->v);
    int rc;
    while ((rc = block_iter_next(&t->it, "", &e)) == 1) {
        b->records++;
        b->key_bytes += t->it.key_len;
        b->value_bytes += t->it.value_len;
    }
    if (rc < 0)
        return sst_reader_block_error(t->r, i, &e, err);
    if (b->records != t->v.n_records)
        return sp_errorf(err,
                         "%s: block %llu at byte %llu: %llu records decoded, the trailer says %u",
                         sst_reader_path(t->r), (unsigned long long)i, (unsigned long long)(i * bs),
                         (unsigned long long)b->records, t->v.n_records);
    memcpy(t->last, t->it.key, t->it.key_len);
    b->last = t->last;
    b->last_len = t->it.key_len;
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
            sp_error e = {0};
            int rc = block_iter_next(&t->it, "", &e);
            if (rc < 0)
                return sst_reader_block_error(t->r, t->block, &e, err);
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

bool table_source_at_block_start(const table_source *t, table_source_block *b) {
    if (t->parts)
        return t->cur < t->n_parts && table_source_at_block_start(t->parts[t->cur], b);
    if (!t->loaded || t->it.index != 1 || below_lo(t, t->info.first, t->info.first_len) ||
        at_or_above_hi(t, t->info.last, t->info.last_len))
        return false;
    *b = t->info;
    return true;
}

int table_source_skip_block(table_source *t, sp_error *err) {
    if (t->parts) {
        int rc = table_source_skip_block(t->parts[t->cur], err);
        if (rc != 0 || t->cur + 1 == t->n_parts)
            return set_take(t, rc);
        t->cur++;
        return set_next(&t->src, err);
    }
    uint64_t next = t->block + 1;
    t->loaded = false;
    int rc = step(t, next, err);
    t->failed |= rc < 0;
    return rc;
}
