/* run_file.c: buffered writing and reading of sorted runs; see run_file.h. */
#include "stages/sort/run_file.h"

#include "stages/common/fileio.h"
#include "stages/common/key.h"

#include <stdbool.h>
#include <string.h>
#include <unistd.h>

void run_writer_init(run_writer *w, int fd, const char *name, uint8_t *buf, size_t cap,
                     uint64_t start) {
    w->fd = fd;
    w->name = name;
    w->buf = buf;
    w->cap = cap;
    w->used = 0;
    w->off = start;
}

int run_writer_flush(run_writer *w, sp_error *err) {
    if (w->used && sp_pwrite_all(w->fd, w->buf, w->used, w->off, w->name, err))
        return -1;
    w->off += w->used;
    w->used = 0;
    return 0;
}

static int append(run_writer *w, const void *p, size_t n, sp_error *err) {
    if (w->used + n > w->cap) {
        if (run_writer_flush(w, err))
            return -1;
        if (n >= w->cap) {
            if (sp_pwrite_all(w->fd, p, n, w->off, w->name, err))
                return -1;
            w->off += n;
            return 0;
        }
    }
    memcpy(w->buf + w->used, p, n);
    w->used += n;
    return 0;
}

int run_writer_put(run_writer *w, const sp_record *rec, uint64_t seq, sp_error *err) {
    uint8_t hdr[RUN_RECORD_HEADER];
    uint32_t lens[2] = {rec->key_len, (uint32_t)rec->value_len};
    memcpy(hdr, lens, sizeof lens);
    memcpy(hdr + sizeof lens, &seq, sizeof seq);
    if (append(w, hdr, sizeof hdr, err) || append(w, rec->key, rec->key_len, err))
        return -1;
    return append(w, rec->value, (size_t)rec->value_len, err);
}

uint64_t run_writer_end(const run_writer *w) {
    return w->off + w->used;
}

static int source_next(merge_source *s, sp_error *err) {
    return run_reader_next((run_reader *)s, err);
}

static int source_value(merge_source *s, const uint8_t **value, sp_error *err) {
    return run_reader_value((run_reader *)s, value, err);
}

static const merge_source_ops run_source_ops = {.next = source_next, .value = source_value};

void run_reader_init(run_reader *r, const char *name, run_region reg, uint8_t *buf, size_t cap,
                     uint8_t *big, size_t big_cap) {
    memset(r, 0, sizeof *r);
    r->src.ops = &run_source_ops;
    r->big = big;
    r->big_cap = big_cap;
    r->fd = reg.fd;
    r->name = name;
    r->buf = buf;
    r->cap = cap;
    r->next_off = reg.off;
    r->end = reg.off + reg.len;
}

/* Makes n bytes available at buf[pos], reading more of the region. */
static int fill(run_reader *r, size_t n, sp_error *err) {
    if (r->len - r->pos >= n)
        return 0;
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->len -= r->pos;
    r->pos = 0;
    size_t want = r->cap - r->len;
    if (want > r->end - r->next_off)
        want = (size_t)(r->end - r->next_off);
    if (r->len + want < n)
        return sp_errorf(err, "%s: run ends inside a record at byte %llu", r->name,
                         (unsigned long long)(r->end));
    if (sp_pread_exact(r->fd, r->buf + r->len, want, r->next_off, r->name, err))
        return -1;
    r->len += want;
    r->next_off += want;
    return 0;
}

/* Drops the current record: from buf, and for a value left in the file, from the file. */
static void consume(run_reader *r) {
    r->pos += r->skip;
    if (!r->value && r->src.value_len) {
        uint64_t in_buf = r->len - r->pos;
        if (in_buf >= r->src.value_len) {
            r->pos += (size_t)r->src.value_len;
        } else {
            r->next_off += r->src.value_len - in_buf;
            r->pos = r->len;
        }
    }
    r->skip = 0;
}

int run_reader_next(run_reader *r, sp_error *err) {
    consume(r);
    if (r->pos == r->len && r->next_off == r->end)
        return 0;
    if (fill(r, RUN_RECORD_HEADER, err))
        return -1;
    uint32_t hdr[2];
    memcpy(hdr, r->buf + r->pos, sizeof hdr);
    uint64_t at = r->next_off - (r->len - r->pos);
    if (hdr[0] == 0 || hdr[0] > SP_MAX_KEY_BYTES)
        return sp_errorf(err, "%s: corrupt run record at byte %llu", r->name,
                         (unsigned long long)at);
    size_t head = RUN_RECORD_HEADER + hdr[0];
    bool whole = head + hdr[1] <= r->cap;
    if (fill(r, whole ? head + hdr[1] : head, err))
        return -1;
    r->src.key = r->buf + r->pos + RUN_RECORD_HEADER;
    r->src.key_len = hdr[0];
    r->src.prefix = sp_key_prefix(r->src.key, r->src.key_len);
    r->src.value_len = hdr[1];
    memcpy(&r->src.seq, r->buf + r->pos + sizeof hdr, sizeof r->src.seq);
    r->value = whole ? r->src.key + r->src.key_len : NULL;
    r->value_off = at + head;
    r->skip = whole ? head + hdr[1] : head;
    return 1;
}

int run_reader_value(run_reader *r, const uint8_t **value, sp_error *err) {
    uint64_t vlen = r->src.value_len;
    if (r->value || !vlen) {
        *value = r->value ? r->value : r->src.key + r->src.key_len;
        return 0;
    }
    if (vlen > r->big_cap)
        return sp_errorf(err, "%s: value of %llu bytes at byte %llu exceeds the merge buffer",
                         r->name, (unsigned long long)vlen, (unsigned long long)r->value_off);
    /* Part of the value may already be buffered; the rest comes from the file. */
    size_t in_buf = r->len - r->pos - r->skip;
    if (in_buf > vlen)
        in_buf = (size_t)vlen;
    memcpy(r->big, r->buf + r->pos + r->skip, in_buf);
    if (sp_pread_exact(r->fd, r->big + in_buf, (size_t)(vlen - in_buf), r->value_off + in_buf,
                       r->name, err))
        return -1;
    *value = r->big;
    return 0;
}
