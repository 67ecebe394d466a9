/* truncate.c: the truncating sink; see truncate.h. */
#include "stages/truncate/truncate.h"

#include "stages/common/fileio.h"
#include "stages/common/utf8.h"

#include <stdio.h>
#include <stdlib.h>

void truncator_init(truncator *t, uint64_t max_bytes, sp_sink next) {
    t->max_bytes = max_bytes;
    t->next = next;
    t->records = 0;
    t->truncated = 0;
}

/* Forwards rec with its in-memory value cut to the UTF-8 boundary. len may
 * exceed max_bytes by one: that byte tells whether the cut splits a character. */
static int forward_cut(truncator *t, const sp_record *rec, const uint8_t *value, uint64_t len,
                       sp_error *err) {
    sp_record out = *rec;
    out.value = value;
    out.value_fd = -1;
    out.value_len = len;
    if (len > t->max_bytes) {
        out.value_len = sp_utf8_cut(value, (size_t)len, (size_t)t->max_bytes);
        t->truncated++;
    }
    t->records++;
    return sp_sink_put(&t->next, &out, err);
}

static int truncator_put(void *ctx, const sp_record *rec, sp_error *err) {
    truncator *t = ctx;
    if (rec->value_fd < 0)
        return forward_cut(t, rec, rec->value, rec->value_len, err);
    /* Spilled page text: extract only spills pages larger than its buffer, so
     * these are rare and a buffer per record costs nothing worth keeping. */
    uint64_t want = rec->value_len;
    if (want > t->max_bytes + 1)
        want = t->max_bytes + 1;
    uint8_t *buf = malloc(want ? (size_t)want : 1);
    if (!buf)
        return sp_errorf(err, "truncate: out of memory reading the value of '%.*s'",
                         (int)rec->key_len, (const char *)rec->key);
    int rc = sp_pread_exact(rec->value_fd, buf, (size_t)want, 0, "spilled page text", err);
    if (rc == 0)
        rc = forward_cut(t, rec, buf, want, err);
    free(buf);
    return rc;
}

sp_sink truncator_sink(truncator *t) {
    return (sp_sink){.put = truncator_put, .ctx = t};
}

void truncate_stats_format(uint64_t records, uint64_t truncated, char *buf, size_t cap) {
    snprintf(buf, cap, "truncate: records=%llu truncated=%llu", (unsigned long long)records,
             (unsigned long long)truncated);
}
