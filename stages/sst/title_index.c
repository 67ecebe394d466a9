/*
 * title_index.c: a table's title index, built from its records or merged
 * from other indexes; see title_index.h.
 */
#include "stages/sst/title_index.h"

#include "stages/common/cleanup.h"
#include "stages/common/title_lists.h"
#include "stages/sst/block_packed.h"
#include "stages/sst/format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct title_index {
    char *path;
    sp_title_rules rules;
    sorter *sort;
    table_options table;
    sp_sink to; /* the table's sink, which the tee hands records on to */
    /* Its publish, undoable until its table is in place (title_index_keep
     * or title_index_unpublish), and the cleanup.h slots of the new index
     * and of the earlier one it replaced (at pub.from), or -1. */
    sp_published pub;
    bool published;
    int cleanup_slot, earlier_slot;
};

title_index *title_index_init(const char *table_path, const sp_title_rules *rules,
                              const sort_options *sort, const table_options *table, sp_error *err) {
    title_index *x = calloc(1, sizeof *x);
    if (!x || !(x->path = sp_titles_path(table_path))) {
        free(x);
        sp_errorf(err, "%s: out of memory", table_path);
        return NULL;
    }
    x->cleanup_slot = x->earlier_slot = -1;
    x->rules = *rules;
    x->rules.layout = SP_TITLES_LAYOUT; /* a merge's inputs' may be older */
    x->table = *table;
    x->table.background = false;
    /* The table's format version: a compressed table's index is
     * compressed too, so that it stays a small part of the table. Its
     * groups are a few short records each: a dictionary of its keys'
     * text is most of what they compress by. */
    x->table.compress = table->compress;
    x->table.dictionary_from_keys = true;
    /* The rules record's bound: its text with the widest identity (the
     * table's is known only at the end). */
    x->rules.table = (sp_table_identity){.file_size = UINT64_MAX, .footer_checksum = UINT64_MAX};
    size_t rules_len;
    uint8_t *widest = sp_title_rules_encode(&x->rules, &rules_len);
    free(widest);
    if (!widest) {
        sp_errorf(err, "%s: out of memory", table_path);
        title_index_destroy(x);
        return NULL;
    }
    /* A page record's value is its kind; the rules record's and a prefix
     * list's are longer. */
    x->table.max_value_bytes = SP_TITLE_LIST_BYTES;
    if (rules_len > x->table.max_value_bytes)
        x->table.max_value_bytes = (uint32_t)rules_len;
    /* The table's blocks, or the smallest that hold such a record in its
     * format when the table's are smaller (its values may be cut shorter). */
    sp_error too_small = {0};
    while (x->table.block_size < SST_MAX_BLOCK_SIZE &&
           (x->table.compress
                ? sst_packed_check_fit(x->table.block_size, x->table.max_value_bytes, &too_small)
                : sst_check_fit(x->table.block_size, x->table.max_value_bytes, &too_small)))
        x->table.block_size *= 2;
    if (x->table.cluster_size < x->table.block_size)
        x->table.cluster_size = x->table.block_size;
    if (!(x->sort = sorter_init(sort, err))) {
        title_index_destroy(x);
        return NULL;
    }
    return x;
}

/* The index's record for one of the table's: its title and kind (a
 * redirect's target is read from the table when it is followed). */
static int add_title(title_index *x, const sp_record *rec, sp_error *err) {
    uint8_t key[SP_MAX_KEY_BYTES], target[SP_MAX_KEY_BYTES];
    size_t klen = sp_title_index_key(x->rules.layout, rec->key, rec->key_len, key);
    if (klen == 0)
        return 0;
    /* A redirect's page is a line; one whose text was spilled is no
     * redirect. */
    uint8_t kind =
        rec->value_fd < 0 && sp_title_redirect_normalised(&x->rules, rec->value, rec->value_len,
                                                          target, sizeof target) > 0
            ? SP_TITLE_REDIRECT
            : SP_TITLE_ARTICLE;
    sp_record out = {
        .key = key, .key_len = (uint32_t)klen, .value = &kind, .value_len = 1, .value_fd = -1};
    return sorter_add(x->sort, &out, err);
}

int title_index_add_entry(title_index *x, const sp_record *rec, sp_error *err) {
    return sorter_add(x->sort, rec, err);
}

static int tee_put(void *ctx, const sp_record *rec, sp_error *err) {
    title_index *x = ctx;
    if (sp_sink_put(&x->to, rec, err))
        return -1;
    return add_title(x, rec, err);
}

sp_sink title_index_tee(title_index *x, const sp_sink *to) {
    x->to = *to;
    return (sp_sink){.put = tee_put, .ctx = x};
}

int title_index_finish(title_index *x, const sp_table_identity *table, sp_error *err) {
    x->rules.table = *table;
    size_t rules_len;
    uint8_t *rules_text = sp_title_rules_encode(&x->rules, &rules_len);
    if (!rules_text)
        return sp_errorf(err, "%s: out of memory", x->path);
    table_writer *tw = table_writer_init(x->path, &x->table, err);
    if (!tw) {
        free(rules_text);
        return -1;
    }
    sp_record first = {.key = (const uint8_t *)SP_TITLES_RULES_KEY,
                       .key_len = SP_TITLES_RULES_KEY_LEN,
                       .value = rules_text,
                       .value_len = rules_len,
                       .value_fd = -1};
    int rc = table_writer_add(tw, &first, err);
    free(rules_text);
    /* The page records in key order, with the prefix lists between them. */
    sp_sink to = table_writer_sink(tw);
    sp_title_lists *lists = rc ? NULL : sp_title_lists_init(x->rules.layout, &to);
    if (!rc && !lists)
        rc = sp_errorf(err, "%s: out of memory", x->path);
    sp_sink pages = lists ? sp_title_lists_sink(lists) : to;
    if (!rc)
        rc = sorter_finish(x->sort, &pages, err);
    if (!rc)
        rc = sp_title_lists_finish(lists, err);
    sp_title_lists_destroy(lists);
    if (!rc)
        rc = table_writer_finish_undoable(tw, &x->pub, err);
    table_writer_destroy(tw);
    if (rc)
        return -1;
    x->published = true;
    /* Until its table is in place, a signal removes the new index and the
     * earlier one it replaced (left at the temporary name): no index then,
     * rather than one for another table. Registered once in place (a
     * signal just before leaves an index naming another table than the
     * one beside it, which readers ignore). */
    x->cleanup_slot = sp_cleanup_add(x->path);
    x->earlier_slot = x->pub.exchanged ? sp_cleanup_add(x->pub.from) : -1;
    if (x->cleanup_slot < 0 || (x->pub.exchanged && x->earlier_slot < 0)) {
        title_index_unpublish(x);
        return sp_errorf(err, "%s: no room to register it for removal on a signal", x->path);
    }
    return 0;
}

/* Forgets the paths registered for a signal. */
static void unregister(title_index *x) {
    sp_cleanup_remove(x->cleanup_slot);
    sp_cleanup_remove(x->earlier_slot);
    x->cleanup_slot = x->earlier_slot = -1;
    x->published = false;
}

void title_index_keep(title_index *x) {
    if (x->published && x->pub.exchanged)
        unlink(x->pub.from);
    unregister(x);
}

void title_index_unpublish(title_index *x) {
    if (!x->published)
        return;
    /* The earlier index back (or none), the new one at the temporary name
     * to remove; when that fails, no index at all. */
    if (sp_publish_undo(&x->pub, NULL) == 0) {
        unlink(x->pub.from);
    } else {
        unlink(x->path);
        if (x->pub.exchanged)
            unlink(x->pub.from);
    }
    unregister(x);
}

int title_index_publish(title_index *x, table_writer *tw, const char *table_path, sp_error *err) {
    sp_table_identity id;
    int rc = x ? table_writer_seal(tw, &id, err) : 0;
    bool published = rc == 0 && x && title_index_finish(x, &id, err) == 0;
    if (rc == 0 && x && !published)
        rc = -1;
    if (rc == 0)
        rc = table_writer_finish(tw, err);
    /* Failed after the rename, the table is in place: its index stays. */
    if (published && !table_writer_in_place(tw))
        title_index_unpublish(x);
    else if (published)
        title_index_keep(x);
    struct stat st;
    if (!x && table_writer_in_place(tw) && stat(table_path, &st) == 0 && S_ISREG(st.st_mode)) {
        char *stale = sp_titles_path(table_path);
        if (!stale)
            return rc ? rc : sp_errorf(err, "%s: out of memory", table_path);
        if (unlink(stale) && errno != ENOENT && !rc)
            rc = sp_errorf(err, "%s: cannot remove the title index of the table it replaced: %s",
                           stale, strerror(errno));
        free(stale);
    }
    return rc;
}

void title_index_destroy(title_index *x) {
    if (!x)
        return;
    unregister(x);
    sorter_destroy(x->sort);
    free(x->path);
    free(x);
}
