/*
 * make_old_titles.c: the tests' maker of a layout 1 title index (not
 * installed): rewrites TABLE.titles, written by this build in the current
 * layout, as the code before layout 2 wrote it (title_rules.h: keys of the
 * fold, 0x00 and the title as it is; a redirect's value its kind and its
 * normalised target, read from TABLE; a rules record without a layout
 * line), so that the readers of old indexes are tested on one made at
 * test time rather than on a binary file kept in the tree:
 *
 *   make_old_titles TABLE
 *
 * The same records and table options (the value bound as that code set
 * it, from the rules record without a layout line), in the same order,
 * give the bytes that main 341be5e's build writes for the same table
 * (table_writer.h: identical input and options give identical bytes).
 */
#include "stages/common/title_lists.h"
#include "stages/common/title_rules.h"
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    uint8_t key[SP_MAX_KEY_BYTES];
    size_t klen;
    uint8_t *value;
    size_t vlen;
} entry;

static int by_key(const void *a, const void *b) {
    const entry *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static int die(const char *msg) {
    fprintf(stderr, "sstpipe make_old_titles: %s\n", msg);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2)
        return die("usage: make_old_titles TABLE");
    char *path = sp_titles_path(argv[1]), *msg = NULL;
    sstpipe_table *t = path ? sstpipe_open(path, &msg) : NULL;
    sstpipe_table *table = t ? sstpipe_open(argv[1], &msg) : NULL;
    if (!table) {
        sstpipe_close(t);
        int rc = die(msg ? msg : "out of memory");
        sstpipe_free(msg);
        free(path);
        return rc;
    }
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    table_options opt = {.block_size = info.block_size,
                         .cluster_size = info.cluster_size,
                         .max_value_bytes = info.max_value_bytes};
    entry *e = calloc(info.records ? info.records : 1, sizeof *e);
    uint8_t *rules_text = NULL;
    size_t n = 0, rules_len = 0, plen;
    int status = e ? 0 : die("out of memory");
    sstpipe_iter *it = sstpipe_iter_new(t, NULL, 0, NULL, 0);
    const void *k, *v;
    size_t klen, vlen;
    sp_title_rules rules;
    unsigned layout = 0; /* the index's, read from its rules record */
    int rc;
    while (!status && (rc = sstpipe_iter_next(it, &k, &klen, &v, &vlen, &msg)) != 0) {
        if (rc < 0) {
            status = die(msg);
        } else if (klen == SP_TITLES_RULES_KEY_LEN && !memcmp(k, SP_TITLES_RULES_KEY, klen)) {
            if (sp_title_rules_decode(v, vlen, &rules))
                status = die("the rules record does not read");
            layout = rules.layout;
            rules.layout = 1;
            /* The value bound as title_index_init sets it: a page
             * record's, or the rules record's with the widest identity. */
            sp_title_rules widest = rules;
            widest.table = (sp_table_identity){UINT64_MAX, UINT64_MAX};
            uint8_t *text = sp_title_rules_encode(&widest, &rules_len);
            free(text);
            opt.max_value_bytes = 1 + SP_MAX_KEY_BYTES;
            if (rules_len > opt.max_value_bytes)
                opt.max_value_bytes = (uint32_t)rules_len;
            if (!status && (!text || !(rules_text = sp_title_rules_encode(&rules, &rules_len))))
                status = die("out of memory");
        } else if (!sp_title_list_key(k, klen, &plen)) {
            /* A page record: layout 1 has no prefix lists. */
            uint8_t title[SP_MAX_KEY_BYTES];
            size_t tlen = sp_title_index_title(layout, k, klen, title);
            e[n].klen = sp_title_index_key(1, title, tlen, e[n].key);
            bool redirect = vlen > 0 && *(const uint8_t *)v == SP_TITLE_REDIRECT;
            const void *page;
            size_t page_len;
            if (!rules_text || tlen == 0 || e[n].klen == 0 || vlen != 1 ||
                !(e[n].value = malloc(1 + SP_MAX_KEY_BYTES)))
                status = die("a page record does not read");
            else if (redirect && sstpipe_get(table, title, tlen, &page, &page_len, &msg) != 1) {
                free(e[n].value);
                status = die("a redirect's page is not in the table");
            } else {
                e[n].value[0] = redirect ? SP_TITLE_REDIRECT : SP_TITLE_ARTICLE;
                e[n].vlen =
                    1 + (redirect ? sp_title_redirect_normalised(&rules, page, page_len,
                                                                 e[n].value + 1, SP_MAX_KEY_BYTES)
                                  : 0);
                n++;
            }
        }
    }
    sstpipe_iter_free(it);
    sstpipe_close(t);
    sstpipe_close(table);
    qsort(e, n, sizeof *e, by_key);
    sp_error err = {0};
    table_writer *w = status ? NULL : table_writer_init(path, &opt, &err);
    sp_record r = {.key = (const uint8_t *)SP_TITLES_RULES_KEY,
                   .key_len = SP_TITLES_RULES_KEY_LEN,
                   .value = rules_text,
                   .value_len = rules_len,
                   .value_fd = -1};
    if (!status && (!w || table_writer_add(w, &r, &err)))
        status = die(err.msg);
    for (size_t i = 0; !status && i < n; i++) {
        r = (sp_record){.key = e[i].key,
                        .key_len = (uint32_t)e[i].klen,
                        .value = e[i].value,
                        .value_len = e[i].vlen,
                        .value_fd = -1};
        if (table_writer_add(w, &r, &err))
            status = die(err.msg);
    }
    if (!status && table_writer_finish(w, &err))
        status = die(err.msg);
    table_writer_destroy(w);
    for (size_t i = 0; i < n; i++)
        free(e[i].value);
    free(e);
    free(rules_text);
    sstpipe_free(msg);
    free(path);
    return status;
}
