/* recstream.c: reading and writing the inter-stage record stream; see recstream.h. */
#include "stages/common/recstream.h"

#include "stages/common/fileio.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IO_BUF (1u << 20)

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---------------------------------------------------------------- writer */

struct rs_writer {
    int fd;
    char *name;
    uint8_t *buf;
    size_t used;
    uint64_t records;
};

static int w_flush(rs_writer *w, sp_error *err) {
    if (w->used && sp_write_all(w->fd, w->buf, w->used, w->name, err))
        return -1;
    w->used = 0;
    return 0;
}

static int w_append(rs_writer *w, const void *p, size_t n, sp_error *err) {
    if (w->used + n > IO_BUF) {
        if (w_flush(w, err))
            return -1;
        if (n >= IO_BUF)
            return sp_write_all(w->fd, p, n, w->name, err);
    }
    memcpy(w->buf + w->used, p, n);
    w->used += n;
    return 0;
}

rs_writer *rs_writer_init(int fd, const char *name, const rs_header *h, sp_error *err) {
    rs_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->buf = malloc(IO_BUF)) || !(w->name = strdup(name))) {
        rs_writer_destroy(w);
        sp_errorf(err, "%s: out of memory", name);
        return NULL;
    }
    w->fd = fd;
    /* The header goes straight into the empty buffer: through w_append, gcc
     * -O3 saw a flush of the fresh (uninitialised) buffer on a path that
     * cannot happen and warned (-Wmaybe-uninitialized). */
    uint8_t *hdr = w->buf;
    memset(hdr, 0, RS_HEADER_BYTES);
    memcpy(hdr, RS_MAGIC, 8);
    put_u32(hdr + 8, RS_VERSION);
    put_u32(hdr + 12, h->flags);
    put_u32(hdr + 16, h->max_value_bytes);
    w->used = RS_HEADER_BYTES;
    return w;
}

static int w_copy_fd(rs_writer *w, int fd, uint64_t len, sp_error *err) {
    uint64_t off = 0;
    while (off < len) {
        if (w->used == IO_BUF && w_flush(w, err))
            return -1;
        size_t n = IO_BUF - w->used;
        if (n > len - off)
            n = (size_t)(len - off);
        if (sp_pread_exact(fd, w->buf + w->used, n, off, "scratch file", err))
            return -1;
        w->used += n;
        off += n;
    }
    return 0;
}

int rs_writer_put(rs_writer *w, const sp_record *rec, sp_error *err) {
    if (rec->value_len > RS_MAX_VALUE_BYTES)
        return sp_errorf(err, "%s: value of %.*s is larger than 4 GiB", w->name, (int)rec->key_len,
                         (const char *)rec->key);
    uint8_t hdr[9];
    hdr[0] = 'R';
    put_u32(hdr + 1, rec->key_len);
    put_u32(hdr + 5, (uint32_t)rec->value_len);
    if (w_append(w, hdr, sizeof hdr, err) || w_append(w, rec->key, rec->key_len, err))
        return -1;
    if (rec->value_fd >= 0) {
        if (w_copy_fd(w, rec->value_fd, rec->value_len, err))
            return -1;
    } else if (w_append(w, rec->value, (size_t)rec->value_len, err)) {
        return -1;
    }
    w->records++;
    return 0;
}

int rs_writer_finish(rs_writer *w, sp_error *err) {
    uint8_t end[9];
    end[0] = 'E';
    put_u32(end + 1, (uint32_t)w->records);
    put_u32(end + 5, (uint32_t)(w->records >> 32));
    if (w_append(w, end, sizeof end, err))
        return -1;
    return w_flush(w, err);
}

void rs_writer_destroy(rs_writer *w) {
    if (!w)
        return;
    free(w->buf);
    free(w->name);
    free(w);
}

static int writer_sink_put(void *ctx, const sp_record *rec, sp_error *err) {
    return rs_writer_put(ctx, rec, err);
}

sp_sink rs_writer_sink(rs_writer *w) {
    return (sp_sink){.put = writer_sink_put, .ctx = w};
}

/* ---------------------------------------------------------------- reader */

struct rs_reader {
    int fd;
    char *name;
    rs_header header;
    uint8_t *buf;
    size_t pos, len;
    uint64_t offset; /* stream offset of buf[pos] */
    uint8_t *key;
    uint8_t *value;
    size_t value_cap;
    uint64_t records;
    bool ended;
};

/* Makes at least n bytes available at buf[pos]; returns bytes available. */
static ssize_t r_fill(rs_reader *r, size_t n, sp_error *err) {
    if (r->len - r->pos >= n)
        return (ssize_t)(r->len - r->pos);
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->len -= r->pos;
    r->pos = 0;
    while (r->len < n) {
        ssize_t got = sp_read_full(r->fd, r->buf + r->len, IO_BUF - r->len, r->name, err);
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        r->len += (size_t)got;
    }
    return (ssize_t)r->len;
}

static int r_need(rs_reader *r, size_t n, const char *what, sp_error *err) {
    ssize_t have = r_fill(r, n, err);
    if (have < 0)
        return -1;
    if ((size_t)have < n)
        return sp_errorf(err, "%s: record stream truncated at byte %llu (inside %s)", r->name,
                         (unsigned long long)(r->offset + (uint64_t)have), what);
    return 0;
}

/* Copies n bytes into dst (or skips them when dst is NULL). */
static int r_take(rs_reader *r, uint8_t *dst, uint64_t n, const char *what, sp_error *err) {
    while (n) {
        if (r->pos == r->len && r_need(r, 1, what, err))
            return -1;
        size_t k = r->len - r->pos;
        if (k > n)
            k = (size_t)n;
        if (dst) {
            memcpy(dst, r->buf + r->pos, k);
            dst += k;
        }
        r->pos += k;
        r->offset += k;
        n -= k;
    }
    return 0;
}

rs_reader *rs_reader_init(int fd, const char *name, sp_error *err) {
    rs_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->buf = malloc(IO_BUF)) || !(r->name = strdup(name)) ||
        !(r->key = malloc(SP_MAX_KEY_BYTES))) {
        rs_reader_destroy(r);
        sp_errorf(err, "%s: out of memory", name);
        return NULL;
    }
    r->fd = fd;
    ssize_t have = r_fill(r, RS_HEADER_BYTES, err);
    if (have < 0) {
        rs_reader_destroy(r);
        return NULL;
    }
    if (have == 0) {
        sp_errorf(err, "%s: empty input, expected a record stream (from sstpipe extract)", name);
    } else if ((size_t)have < RS_HEADER_BYTES || memcmp(r->buf, RS_MAGIC, 8) != 0) {
        sp_errorf(err,
                  "%s: not a record stream (bad magic at byte 0); stages read what "
                  "`sstpipe extract` writes",
                  name);
    } else if (get_u32(r->buf + 8) != RS_VERSION) {
        sp_errorf(err, "%s: record stream version %u is not supported (expected %u)", name,
                  get_u32(r->buf + 8), RS_VERSION);
    } else {
        r->header.flags = get_u32(r->buf + 12);
        r->header.max_value_bytes = get_u32(r->buf + 16);
        r->pos = RS_HEADER_BYTES;
        r->offset = RS_HEADER_BYTES;
        return r;
    }
    rs_reader_destroy(r);
    return NULL;
}

const rs_header *rs_reader_header(const rs_reader *r) {
    return &r->header;
}

int rs_reader_next(rs_reader *r, uint64_t value_cap, sp_record *rec, sp_error *err) {
    if (r->ended)
        return 0;
    uint64_t at = r->offset;
    if (r_need(r, 1, "record tag", err))
        return -1;
    uint8_t tag = r->buf[r->pos];
    if (tag == 'E') {
        if (r_need(r, 9, "end marker", err))
            return -1;
        const uint8_t *p = r->buf + r->pos + 1;
        uint64_t count = (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
        r->pos += 9;
        r->offset += 9;
        if (count != r->records)
            return sp_errorf(
                err, "%s: end marker at byte %llu counts %llu records, stream had %llu", r->name,
                (unsigned long long)at, (unsigned long long)count, (unsigned long long)r->records);
        ssize_t more = r_fill(r, 1, err);
        if (more < 0)
            return -1;
        if (more > 0)
            return sp_errorf(err, "%s: data after the end marker at byte %llu", r->name,
                             (unsigned long long)r->offset);
        r->ended = true;
        return 0;
    }
    if (tag != 'R')
        return sp_errorf(err, "%s: corrupt record stream at byte %llu (bad record tag 0x%02x)",
                         r->name, (unsigned long long)at, tag);
    if (r_need(r, 9, "record header", err))
        return -1;
    uint32_t klen = get_u32(r->buf + r->pos + 1);
    uint32_t vlen = get_u32(r->buf + r->pos + 5);
    r->pos += 9;
    r->offset += 9;
    if (klen == 0 || klen > SP_MAX_KEY_BYTES)
        return sp_errorf(err, "%s: corrupt record stream at byte %llu (key length %u)", r->name,
                         (unsigned long long)at, klen);
    if (r->header.max_value_bytes && vlen > r->header.max_value_bytes)
        return sp_errorf(err,
                         "%s: corrupt record stream at byte %llu (value of %u bytes exceeds "
                         "the stream's bound of %u)",
                         r->name, (unsigned long long)at, vlen, r->header.max_value_bytes);
    if (r_take(r, r->key, klen, "key", err))
        return -1;
    uint64_t keep = vlen;
    if (value_cap && keep > value_cap)
        keep = value_cap;
    /* The buffer grows with the bytes that arrive, not with the length the
     * record claims: a damaged length must end in "truncated", not in a
     * multi-GiB allocation before a single value byte is read. */
    for (uint64_t got = 0; got < keep;) {
        uint64_t step = keep - got < IO_BUF ? keep - got : IO_BUF;
        if (got + step > r->value_cap) {
            size_t cap = r->value_cap ? r->value_cap : 4096;
            while (cap < got + step)
                cap *= 2;
            uint8_t *nv = realloc(r->value, cap);
            if (!nv)
                return sp_errorf(err, "%s: out of memory for a value of %u bytes at byte %llu",
                                 r->name, vlen, (unsigned long long)at);
            r->value = nv;
            r->value_cap = cap;
        }
        if (r_take(r, r->value + got, step, "value", err))
            return -1;
        got += step;
    }
    if (r_take(r, NULL, vlen - keep, "value", err))
        return -1;
    r->records++;
    rec->key = r->key;
    rec->key_len = klen;
    rec->value = r->value;
    rec->value_len = keep;
    rec->value_fd = -1;
    return 1;
}

uint64_t rs_reader_offset(const rs_reader *r) {
    return r->offset;
}

void rs_reader_destroy(rs_reader *r) {
    if (!r)
        return;
    free(r->buf);
    free(r->name);
    free(r->key);
    free(r->value);
    free(r);
}
