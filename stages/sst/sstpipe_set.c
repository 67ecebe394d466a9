/*
 * sstpipe_set.c: libsstpipe's table sets (TABLESET.md): opening one as a
 * single table, its lookups (one by one, and batched over its shards), and
 * the sstpipe_shard_* calls (sstpipe.h is the contract).
 *
 * Opening reads and checks the manifest (table_set.c), opens every shard as
 * a plain table and holds it against the manifest: its footer's records
 * and size, its options against the set's, and its first and last key
 * against its range. The first key is in the index; the last needs the
 * shard's last block, read and checked whole, so a set opens with one
 * block read per shard and no more. Keys between them are in order by the
 * format's own checks (every block is checked before use, and scans check
 * the order across blocks), so these two keys bound them all: a shard
 * holding a key outside its range is refused at open, before a lookup
 * could route past it. verify checks every key.
 *
 * After open nothing changes: lookups and iterators only read the shard
 * array, so a set serves any number of threads as a table does.
 *
 * A set's scans are the set cursor's (cursor.h) over its shards' plain
 * tables, which are open with the set.
 */
#include "stages/sst/sstpipe_set.h"

#include "stages/common/key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last key of shard t (which has records): the end of its last block,
 * through a cursor sought to that block's first key. */
static int last_key(sstpipe_table *t, uint8_t *out, size_t *olen, sp_error *err) {
    sstpipe_info info;
    sstpipe_table_info(t, &info);
    size_t flen = 0;
    const void *first = sstpipe_table_first_key(t, info.data_blocks - 1, &flen);
    sst_cursor *c = sst_cursor_table(t->r, err);
    if (!c)
        return -1;
    int rc;
    *olen = 0;
    for (rc = sst_cursor_seek(c, first, flen); rc == 1; rc = sst_cursor_next(c)) {
        memcpy(out, c->key, c->key_len);
        *olen = c->key_len;
    }
    if (rc < 0)
        *err = *sst_cursor_error(c);
    sst_cursor_free(c);
    return rc < 0 ? -1 : 0;
}

/* Shard i, open, against the manifest. */
static int check_shard(const sstpipe_set *s, size_t i, sp_error *err) {
    sstpipe_table *t = s->shards[i];
    sstpipe_info f;
    sstpipe_table_info(t, &f);
    table_set_options o = {.format_version = f.format_version,
                           .block_size = f.block_size,
                           .cluster_size = f.cluster_size,
                           .max_value_bytes = f.max_value_bytes,
                           .restart_interval = f.restart_interval};
    if (table_set_check_footer(s->manifest, i, f.records, f.file_size, &o, err))
        return -1;
    if (f.records == 0)
        return 0;
    size_t flen = 0;
    const uint8_t *first = sstpipe_table_first_key(t, 0, &flen);
    if (table_set_check_key(s->manifest, i, "first", first, flen, err))
        return -1;
    uint8_t last[SP_MAX_KEY_BYTES];
    size_t llen;
    sp_error e = {0};
    if (last_key(t, last, &llen, &e))
        return sp_errorf(err, "%s: shard %zu: %s", table_set_manifest_path(s->manifest), i, e.msg);
    return table_set_check_key(s->manifest, i, "last", last, llen, err);
}

void sstpipe_set_close(sstpipe_table *t) {
    sstpipe_set *s = t->set;
    if (s) {
        for (size_t i = 0; s->shards && i < s->n; i++)
            sstpipe_table_close(s->shards[i]);
        free(s->shards);
        free(s->first_block);
        free(s->path);
        table_set_free(s->manifest);
        free(s);
    }
    free(t);
}

sstpipe_table *sstpipe_set_open(const char *path, const sstpipe_options *opt, sp_error *err) {
    sstpipe_table *t = calloc(1, sizeof *t);
    sstpipe_set *s = calloc(1, sizeof *s);
    if (!t || !s || !(s->path = strdup(path))) {
        free(t);
        free(s);
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    t->direct_io = opt && opt->direct_io;
    t->set = s;
    if (!(s->manifest = table_set_read(path, err)))
        goto fail;
    s->n = table_set_count(s->manifest);
    if (!(s->shards = calloc(s->n, sizeof *s->shards)) ||
        !(s->first_block = calloc(s->n + 1, sizeof *s->first_block))) {
        sp_errorf(err, "%s: out of memory for %zu shards", path, s->n);
        goto fail;
    }
    const table_set_options *o = table_set_get_options(s->manifest);
    s->info = (sstpipe_info){.block_size = o->block_size,
                             .cluster_size = o->cluster_size,
                             .max_value_bytes = o->max_value_bytes,
                             .format_version = o->format_version,
                             .restart_interval = o->restart_interval};
    for (size_t i = 0; i < s->n; i++) {
        if (!(s->shards[i] = sstpipe_table_open(table_set_shard_path(s->manifest, i), opt, err)) ||
            check_shard(s, i, err))
            goto fail;
        sstpipe_info f;
        sstpipe_table_info(s->shards[i], &f);
        s->first_block[i + 1] = s->first_block[i] + f.data_blocks;
        s->info.records += f.records;
        s->info.data_blocks += f.data_blocks;
        s->info.key_bytes += f.key_bytes;
        s->info.value_bytes += f.value_bytes;
        s->info.file_size += f.file_size;
        s->info.index_bytes += f.index_bytes;
        s->info.index_region_bytes += f.index_region_bytes;
    }
    return t;
fail:
    sstpipe_set_close(t);
    return NULL;
}

const void *sstpipe_set_first_key(const sstpipe_set *s, uint64_t i, size_t *klen) {
    if (i >= s->first_block[s->n])
        return NULL;
    /* The last shard whose first block is <= i (empty shards have none). */
    size_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->first_block[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return sstpipe_table_first_key(s->shards[lo], i - s->first_block[lo], klen);
}

/* Out of line, so that the registers the shard search keeps across its
 * call are not saved on every plain table's lookup too. */
__attribute__((noinline)) int sstpipe_set_get(const sstpipe_set *s, const void *key, size_t klen,
                                              const void **value, size_t *vlen, char **errmsg) {
    if (!sstpipe_key_may_exist(klen))
        return 0;
    const sstpipe_table *shard = s->shards[table_set_find(s->manifest, key, klen)];
    return sstpipe_table_get(shard, key, klen, value, vlen, errmsg);
}

const sstpipe_table *sstpipe_set_shard_for(const sstpipe_set *s, const void *key, size_t klen) {
    return s->shards[table_set_find(s->manifest, key, klen)];
}

/* A key's shard, for a batch over the set's shards together, so that all
 * their reads are in flight at once. */
static const sstpipe_table *route_shard(const void *ctx, const void *key, size_t klen) {
    return sstpipe_set_shard_for(ctx, key, klen);
}

int sstpipe_set_get_many(const sstpipe_set *s, size_t n, const void *const *keys,
                         const size_t *klens, const void **values, size_t *vlens, char **errmsg) {
    return sstpipe_batch_get(route_shard, s, s->path, n, keys, klens, values, vlens, errmsg);
}

void sstpipe_set_shard_range(const sstpipe_set *s, size_t i, const void **lo, size_t *lo_len,
                             const void **hi, size_t *hi_len) {
    const table_set_shard *sh = table_set_shard_at(s->manifest, i);
    *lo = sh->has_lo ? sh->lo : NULL;
    *lo_len = sh->has_lo ? sh->lo_len : 0;
    *hi = sh->has_hi ? sh->hi : NULL;
    *hi_len = sh->has_hi ? sh->hi_len : 0;
}

/* ------------------------------------------------------------------ scans */

/* Shard i's cursor: a cursor over its plain table, open with the set. */
static sst_cursor *open_shard(void *ctx, size_t i, sp_error *err) {
    const sstpipe_set *s = ctx;
    return sst_cursor_table(s->shards[i]->r, err);
}

sst_cursor *sstpipe_set_cursor(const sstpipe_set *s, sp_error *err) {
    return sst_cursor_set(s->manifest, open_shard, (void *)s, err);
}
