/*
 * sstpipe_iter.c: libsstpipe's ordered scans (sstpipe_iter_new/next/free):
 * a cursor (cursor.h) sought once to the first key wanted, then walked.
 * The keys with a prefix are one run from the prefix itself on, so a
 * prefix is a start and an end: the scan starts at the larger of from and
 * the prefix, and the cursor ends it after the run (which also spares a
 * table set's scan the shards past it).
 */
#include "stages/sst/sstpipe_iter.h"

#include "stages/common/key.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct sstpipe_iter {
    sst_cursor *c;
    uint8_t *start; /* the first key wanted: max(from, prefix); NULL: the first key */
    size_t start_len;
    bool sought; /* the cursor was sought to start */
};

sstpipe_iter *sstpipe_iter_over(sst_cursor *c, const void *from, size_t flen, const void *prefix,
                                size_t plen) {
    if (!c)
        return NULL;
    sstpipe_iter *it = calloc(1, sizeof *it);
    if (!it) {
        sst_cursor_free(c);
        return NULL;
    }
    it->c = c;
    if (!prefix)
        plen = 0;
    if (!from)
        flen = 0;
    const void *start = from;
    size_t slen = flen;
    if (plen && (!flen || sp_key_cmp(from, flen, prefix, plen) < 0)) {
        start = prefix;
        slen = plen;
    }
    if (slen && !(it->start = malloc(slen))) {
        sstpipe_iter_free(it);
        return NULL;
    }
    if (slen)
        memcpy(it->start, start, slen);
    it->start_len = slen;
    if (plen)
        sst_cursor_set_prefix_end(c, prefix, plen);
    return it;
}

int sstpipe_iter_next(sstpipe_iter *it, const void **key, size_t *klen, const void **value,
                      size_t *vlen, char **errmsg) {
    int rc = it->sought ? sst_cursor_next(it->c) : sst_cursor_seek(it->c, it->start, it->start_len);
    it->sought = true;
    if (rc < 0) {
        sstpipe_report_error(errmsg, sst_cursor_error(it->c));
        return -1;
    }
    if (rc == 1) {
        *key = it->c->key;
        *klen = it->c->key_len;
        *value = it->c->value;
        *vlen = it->c->value_len;
    }
    return rc;
}

void sstpipe_iter_free(sstpipe_iter *it) {
    if (!it)
        return;
    sst_cursor_free(it->c);
    free(it->start);
    free(it);
}
