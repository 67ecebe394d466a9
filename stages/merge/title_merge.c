/*
 * title_merge.c: a merge's output title index from its inputs'; see
 * title_merge.h.
 */
#include "stages/merge/title_merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The sort of the inputs' index records: indexes are small beside their
 * tables, and the sorter spills what passes its budget. */
#define TITLES_SORT_MEMORY (16u << 20)

/* Opens input's title index and reads its rules record into *rules: 1,
 * with *src open at its first page record; 0 when there is none built for
 * the input (footer f); -1 on error. */
static int open_index(const char *input, const sst_footer *f, size_t read_bytes, table_source **src,
                      sp_title_rules *rules, sp_error *err) {
    char *path = sp_titles_path(input);
    if (!path)
        return sp_errorf(err, "%s: out of memory", input);
    int rc = 0;
    if (access(path, F_OK) == 0) {
        *src = table_source_open(path, read_bytes, err);
        merge_source *s = *src ? table_source_merge_source(*src) : NULL;
        const uint8_t *v;
        rc = !s ? -1 : s->ops->next(s, err);
        bool rules_key = rc == 1 && s->key_len == SP_TITLES_RULES_KEY_LEN &&
                         !memcmp(s->key, SP_TITLES_RULES_KEY, SP_TITLES_RULES_KEY_LEN);
        if (rules_key && s->ops->value(s, &v, err))
            rc = -1;
        else if (rc >= 0 && (!rules_key || sp_title_rules_decode(v, s->value_len, rules)))
            rc = sp_errorf(err, "%s: not a title index (no title rules record)", path);
        sp_table_identity mine = {.file_size = f->file_size, .footer_checksum = f->footer_checksum};
        /* An index built for another table is no index of this one. */
        if (rc == 1 && !sp_table_identity_equal(&rules->table, &mine))
            rc = 0;
    }
    free(path);
    return rc;
}

/* Adds the page records of the index open at src, its keys in that
 * layout, to x, each keyed in the layout x writes and valued by its kind
 * alone (an older layout's redirect target after it is left out: readers
 * take it from the table). */
static int read_pages(title_index *x, table_source *src, unsigned layout,
                      title_merge_filter left_out, const void *ctx, sp_error *err) {
    merge_source *s = table_source_merge_source(src);
    int got;
    while ((got = s->ops->next(s, err)) == 1) {
        uint8_t title[SP_MAX_KEY_BYTES], key[SP_MAX_KEY_BYTES];
        size_t tlen = sp_title_index_title(layout, s->key, s->key_len, title);
        if (tlen == 0 || left_out(ctx, title, (uint32_t)tlen))
            continue;
        sp_record rec = {.key = key,
                         .key_len =
                             (uint32_t)sp_title_index_key(SP_TITLES_LAYOUT, title, tlen, key),
                         .value_len = s->value_len ? 1 : 0,
                         .value_fd = -1};
        if (rec.key_len == 0)
            continue;
        if (s->ops->value(s, &rec.value, err) || title_index_add_entry(x, &rec, err))
            return -1;
    }
    return got;
}

int title_merge_read(const char *out, const char *const *inputs, table_source *const *tables,
                     unsigned n, size_t read_bytes, title_merge_filter left_out, const void *ctx,
                     const table_options *topts, title_index **x, int *missing, sp_error *err) {
    *x = NULL;
    *missing = -1;
    table_source **src = calloc(n, sizeof *src);
    unsigned *layout = calloc(n, sizeof *layout);
    if (!src || !layout) {
        free(src);
        free(layout);
        return sp_errorf(err, "merge: out of memory");
    }
    sp_title_rules rules;
    int rc = 0;
    for (unsigned i = 0; i < n && !rc && *missing < 0; i++) {
        int got =
            open_index(inputs[i], table_source_footer(tables[i]), read_bytes, &src[i], &rules, err);
        if (got < 0)
            rc = -1;
        else if (got == 0)
            *missing = (int)i;
        else
            layout[i] = rules.layout;
    }
    if (!rc && *missing < 0) {
        sort_options so;
        sort_options_init(&so);
        so.memory = TITLES_SORT_MEMORY;
        *x = title_index_init(out, &rules, &so, topts, err);
        rc = *x ? 0 : -1;
        for (unsigned i = 0; i < n && !rc; i++)
            rc = read_pages(*x, src[i], layout[i], left_out, ctx, err);
        if (rc) {
            title_index_destroy(*x);
            *x = NULL;
        }
    }
    for (unsigned i = 0; i < n; i++)
        table_source_destroy(src[i]);
    free(src);
    free(layout);
    return rc;
}
