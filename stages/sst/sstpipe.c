/*
 * sstpipe.c: libsstpipe's calls that take either a plain table or a table
 * set (sstpipe.h is the contract): the one place that tells them apart,
 * by the path at open and by the table's set afterwards, and hands each
 * call to its layer, sstpipe_table.c for a plain table, sstpipe_set.c for
 * a set, and an iterator (sstpipe_iter.c) to the cursor (cursor.h) of
 * either. The calls that need no such choice (options, the version,
 * sstpipe_free, sstpipe_iter_next and sstpipe_iter_free) are in their
 * layer's file.
 */
#include "stages/sst/sstpipe.h"

#include "stages/sst/sstpipe_iter.h"
#include "stages/sst/sstpipe_set.h"
#include "stages/sst/sstpipe_table.h"
#include "stages/sst/sstpipe_titles.h"
#include "stages/sst/table_set.h"

#include <string.h>

sstpipe_table *sstpipe_open_with(const char *path, const sstpipe_options *opt, char **errmsg) {
    sp_error err = {0};
    sstpipe_table *t = table_set_is_set_path(path) ? sstpipe_set_open(path, opt, &err)
                                                   : sstpipe_table_open(path, opt, &err);
    /* A table's title index beside it; a set's beside each shard. */
    bool failed = t && !t->set && sstpipe_titles_open(t, opt, &err);
    for (size_t i = 0; t && t->set && !failed && i < t->set->n; i++)
        failed = sstpipe_titles_open(t->set->shards[i], opt, &err) != 0;
    if (failed) {
        sstpipe_close(t);
        t = NULL;
    }
    if (!t)
        sstpipe_report_error(errmsg, &err);
    return t;
}

sstpipe_table *sstpipe_open(const char *path, char **errmsg) {
    return sstpipe_open_with(path, NULL, errmsg);
}

void sstpipe_close(sstpipe_table *t) {
    if (!t)
        return;
    if (t->set) {
        for (size_t i = 0; i < t->set->n; i++)
            sstpipe_titles_close(t->set->shards[i]);
        sstpipe_set_close(t);
    } else {
        sstpipe_titles_close(t);
        sstpipe_table_close(t);
    }
}

void sstpipe_info_get(const sstpipe_table *t, sstpipe_info *info) {
    if (t->set)
        *info = t->set->info;
    else
        sstpipe_table_info(t, info);
}

void sstpipe_compression_get(const sstpipe_table *t, sstpipe_compression *c) {
    if (!t->set) {
        sstpipe_table_compression(t, c);
        return;
    }
    /* A set's shards are tables of their own, each with its meta region. */
    *c = (sstpipe_compression){.method = "none"};
    for (size_t i = 0; i < sstpipe_shard_count(t); i++) {
        sstpipe_compression s;
        sstpipe_table_compression(sstpipe_shard(t, i), &s);
        if (strcmp(s.method, "none") != 0)
            c->method = s.method;
        c->plain_bytes += s.plain_bytes;
        c->dictionary_bytes += s.dictionary_bytes;
        c->filter_bytes += s.filter_bytes;
    }
}

const char *sstpipe_path(const sstpipe_table *t) {
    return t->set ? t->set->path : sstpipe_table_path(t);
}

const void *sstpipe_block_first_key(const sstpipe_table *t, uint64_t i, size_t *klen) {
    return t->set ? sstpipe_set_first_key(t->set, i, klen) : sstpipe_table_first_key(t, i, klen);
}

int sstpipe_get(sstpipe_table *t, const void *key, size_t klen, const void **value, size_t *vlen,
                char **errmsg) {
    return t->set ? sstpipe_set_get(t->set, key, klen, value, vlen, errmsg)
                  : sstpipe_table_get(t, key, klen, value, vlen, errmsg);
}

int sstpipe_get_many(sstpipe_table *t, size_t n, const void *const *keys, const size_t *klens,
                     const void **values, size_t *vlens, char **errmsg) {
    return t->set ? sstpipe_set_get_many(t->set, n, keys, klens, values, vlens, errmsg)
                  : sstpipe_table_get_many(t, n, keys, klens, values, vlens, errmsg);
}

sstpipe_iter *sstpipe_iter_new(sstpipe_table *t, const void *from, size_t flen, const void *prefix,
                               size_t plen) {
    sp_error err = {0}; /* only out of memory, which the NULL says */
    sst_cursor *c = t->set ? sstpipe_set_cursor(t->set, &err) : sst_cursor_table(t->r, &err);
    return sstpipe_iter_over(c, from, flen, prefix, plen);
}

bool sstpipe_is_set(const sstpipe_table *t) {
    return t->set != NULL;
}

size_t sstpipe_shard_count(const sstpipe_table *t) {
    return t->set ? t->set->n : 1;
}

sstpipe_table *sstpipe_shard(const sstpipe_table *t, size_t i) {
    if (!t->set) /* as strchr does: the caller's own table, const or not */
        return i == 0 ? (sstpipe_table *)t : NULL;
    return i < t->set->n ? t->set->shards[i] : NULL;
}

int sstpipe_shard_range(const sstpipe_table *t, size_t i, const void **lo, size_t *lo_len,
                        const void **hi, size_t *hi_len) {
    if (i >= sstpipe_shard_count(t))
        return -1;
    if (t->set) {
        sstpipe_set_shard_range(t->set, i, lo, lo_len, hi, hi_len);
    } else {
        *lo = *hi = NULL;
        *lo_len = *hi_len = 0;
    }
    return 0;
}
