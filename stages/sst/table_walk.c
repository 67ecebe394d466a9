/*
 * table_walk.c: walking data blocks in file order; see table_walk.h.
 *
 * The previous block's last key is copied out when the next block starts,
 * not at every record: the block_iter already holds the current key whole
 * (it undoes the prefix compression), so the copy is one per block.
 */
#include "stages/sst/table_walk.h"

#include "stages/common/key.h"

#include <string.h>

void sst_walk_init(sst_walk *w) {
    memset(&w->view, 0, sizeof w->view);
    block_iter_init(&w->it, &w->view);
    w->entry_pos = 0;
    w->have_last = false;
    w->last_len = 0;
}

void sst_walk_free(sst_walk *w) {
    block_plain_free(&w->plain);
}

void sst_walk_start(sst_walk *w) {
    if (w->it.key_len) {
        memcpy(w->last_key, w->it.key, w->it.key_len);
        w->last_len = w->it.key_len;
        w->have_last = true;
    }
    block_iter_init(&w->it, &w->view);
    w->entry_pos = 0;
}

int sst_walk_next(sst_walk *w, sp_error *err) {
    w->entry_pos = w->it.pos;
    return block_iter_next(&w->it, "", err);
}

int sst_walk_seek(sst_walk *w, const uint8_t *key, size_t klen, sp_error *err) {
    return block_iter_seek(&w->it, &w->view, key, klen, "", err);
}

bool sst_walk_first_in_order(const sst_walk *w) {
    return !w->have_last || sp_key_cmp(w->last_key, w->last_len, w->it.key, w->it.key_len) < 0;
}

const uint8_t *sst_walk_last_key(const sst_walk *w, uint32_t *klen) {
    if (w->it.key_len) {
        *klen = w->it.key_len;
        return w->it.key;
    }
    *klen = w->last_len;
    return w->have_last ? w->last_key : NULL;
}
