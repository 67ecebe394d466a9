/*
 * table_check.c: the structure of an SSTable file checked once, for every
 * opener and for verify; see table_check.h and FORMAT.md.
 *
 * Each rule is one "if" that reports through problem(): in stop mode that
 * ends the check with the error, in collect mode the check goes on. Only a
 * footer whose regions cannot be located (a cluster or block size out of
 * range, regions that do not tile the file) ends a collecting check, as
 * nothing after it could be read by such a footer.
 *
 * A region is read once: its checksum and its zero padding are found in the
 * same pass, and the checksum is reported first, so that a changed byte is
 * named as the checksum's failure wherever it lies.
 */
#include "stages/sst/table_check.h"

#include "stages/common/fileio.h"
#include "stages/common/key.h"
#include "stages/common/size.h"
#include "stages/common/zeros.h"
#include "stages/sst/block_packed.h"
#include "stages/sst/filter.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

/* Reads of a region not kept. Small enough that its buffer's pages, each
 * a trap to the host on its first touch in a virtual machine with shadow
 * page tables, cost little beside the reads. */
#define CHUNK_BYTES (128u << 10)
/* The index buffer of a check that keeps no index. */
#define STREAM_BYTES (64u << 10)

static int problem(sst_check *c, sp_error *err, int64_t block, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Collect mode: hands the problem on, 0. Stop mode: the error, -1. */
static int problem(sst_check *c, sp_error *err, int64_t block, uint64_t off, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!c->problem)
        return sp_errorf(err, "%s: byte %llu: %s", c->path, (unsigned long long)off, what);
    c->problem(c->ctx, block, off, what);
    return 0;
}

/* What one pass over a span of the file finds. */
typedef struct scan {
    XXH3_state_t *h;     /* NULL: nothing hashed */
    uint64_t hash_end;   /* bytes before this offset are hashed */
    uint64_t zeros_from; /* bytes in [zeros_from, zeros_end) must be zero */
    uint64_t zeros_end;
    uint64_t nonzero; /* out: the first that is not, or UINT64_MAX */
} scan;

/* Reads [off, end) in chunks for s; counted in c->bytes when count is set. */
static int scan_span(sst_check *c, uint64_t off, uint64_t end, scan *s, bool count, sp_error *err) {
    s->nonzero = UINT64_MAX;
    uint64_t n = end - off;
    uint8_t *buf = malloc(n < CHUNK_BYTES ? (size_t)n + 1 : CHUNK_BYTES);
    if (!buf)
        return sp_errorf(err, "%s: out of memory", c->path);
    while (off < end) {
        size_t k = end - off < CHUNK_BYTES ? (size_t)(end - off) : CHUNK_BYTES;
        if (sp_pread_exact(c->fd, buf, k, off, c->path, err)) {
            free(buf);
            return -1;
        }
        if (count)
            c->bytes += k;
        if (s->h && off < s->hash_end)
            XXH3_64bits_update(s->h, buf, (size_t)(s->hash_end - off < k ? s->hash_end - off : k));
        uint64_t lo = s->zeros_from > off ? s->zeros_from : off;
        uint64_t hi = s->zeros_end < off + k ? s->zeros_end : off + k;
        if (s->nonzero == UINT64_MAX && lo < hi) {
            size_t nz = sp_first_nonzero(buf + (lo - off), (size_t)(hi - lo));
            if (nz < hi - lo)
                s->nonzero = lo + nz;
        }
        off += k;
    }
    free(buf);
    return 0;
}

/* The footer region [end - len, end): its checksum as computed (up to
 * footer_checksum) and the first non-zero byte before the footer. */
static int footer_region(sst_check *c, uint64_t end, uint64_t len, bool count, uint64_t *sum,
                         uint64_t *nonzero, sp_error *err) {
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return sp_errorf(err, "%s: out of memory", c->path);
    XXH3_64bits_reset(h);
    scan s = {.h = h,
              .hash_end = end - (SST_FOOTER_BYTES - SST_FOOTER_CHECKSUM),
              .zeros_from = end - len,
              .zeros_end = end - SST_FOOTER_BYTES};
    int rc = scan_span(c, end - len, end, &s, count, err);
    *sum = XXH3_64bits_digest(h);
    *nonzero = s.nonzero;
    XXH3_freeState(h);
    return rc;
}

int sst_check_footer_sum(sst_check *c, uint64_t end, uint64_t region_bytes, uint64_t *sum,
                         sp_error *err) {
    uint64_t nonzero;
    return footer_region(c, end, region_bytes, false, sum, &nonzero, err);
}

/* The regions against each other and the file's end: false when they do
 * not tile it (each way reported). */
static int check_tiling(sst_check *c, const sst_footer *f, uint64_t end, bool *ok, sp_error *err) {
    uint64_t foff = end - SST_FOOTER_BYTES, a = f->tail_align, bs = f->block_size;
    const char *padded = a > 1 ? " padded to the cluster size" : "";
    *ok = true;
    if (f->data_blocks > end / bs ||
        f->data_region_length != sst_align_up(f->data_blocks * bs, a)) {
        *ok = false;
        if (problem(c, err, -1, foff + SST_FOOTER_DATA_REGION_LENGTH,
                    "footer data region of %llu bytes does not hold %llu blocks of %llu bytes%s",
                    (unsigned long long)f->data_region_length, (unsigned long long)f->data_blocks,
                    (unsigned long long)bs, padded))
            return -1;
    }
    if (f->index_offset != f->data_region_length) {
        *ok = false;
        if (problem(c, err, -1, foff + SST_FOOTER_INDEX_OFFSET,
                    "footer index offset %llu is not the end of the data region (%llu)",
                    (unsigned long long)f->index_offset, (unsigned long long)f->data_region_length))
            return -1;
    }
    if (f->index_length > end || f->index_region_length != sst_align_up(f->index_length, a)) {
        *ok = false;
        if (problem(c, err, -1, foff + SST_FOOTER_INDEX_OFFSET + 16,
                    "footer index region of %llu bytes does not hold %llu bytes%s",
                    (unsigned long long)f->index_region_length, (unsigned long long)f->index_length,
                    padded))
            return -1;
    }
    /* Version 2's meta region lies between the index and the footer: at
     * least its header (the first layout: a cluster), and its own header
     * says how long (sst_check_meta). */
    uint64_t fr = sst_footer_region_bytes(f);
    uint64_t tail = f->index_offset + f->index_region_length + fr;
    uint64_t least = a > SST_META_HEADER_BYTES ? a : SST_META_HEADER_BYTES;
    bool packed = f->format_version == SST_FORMAT_VERSION_PACKED;
    if (*ok && (packed ? tail + least > end || (end - tail) % a != 0 : tail != end)) {
        *ok = false;
        if (problem(c, err, -1, foff + SST_FOOTER_INDEX_OFFSET,
                    "regions (data %llu, index %llu, footer %llu bytes) do not add up to the "
                    "file's %llu bytes",
                    (unsigned long long)f->data_region_length,
                    (unsigned long long)f->index_region_length, (unsigned long long)fr,
                    (unsigned long long)end))
            return -1;
    }
    return 0;
}

int sst_check_footer(sst_check *c, const uint8_t raw[SST_FOOTER_BYTES], uint64_t end, sst_footer *f,
                     sp_error *err) {
    uint64_t foff = end - SST_FOOTER_BYTES;
    char lo[32], hi[32];
    sst_footer_decode(raw, f);
    if (memcmp(raw + SST_FOOTER_MAGIC, SST_MAGIC, 8) != 0 &&
        problem(c, err, -1, foff + SST_FOOTER_MAGIC,
                "not an sstpipe SSTable (no \"%s\" magic at the end of the file)", SST_MAGIC))
        return -1;
    if (f->format_version != SST_FORMAT_VERSION && f->format_version != SST_FORMAT_VERSION_PACKED &&
        problem(c, err, -1, foff + SST_FOOTER_BLOCK_SIZE + 16,
                "SSTable format version %u is not supported (expected %u or %u)", f->format_version,
                SST_FORMAT_VERSION, SST_FORMAT_VERSION_PACKED))
        return -1;
    bool packed = f->format_version == SST_FORMAT_VERSION_PACKED;
    if (!packed && f->meta_checksum != 0 &&
        problem(c, err, -1, foff + SST_FOOTER_RESERVED, "footer reserved bytes are not zero"))
        return -1;
    if (!sst_pow2_in(f->cluster_size, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE) ||
        sst_footer_region_bytes(f) > end)
        return problem(c, err, -1, foff + SST_FOOTER_BLOCK_SIZE + 4,
                       "footer cluster size %u is not a power of two from %s to %s within the "
                       "file",
                       f->cluster_size, sp_format_size(SST_MIN_CLUSTER_SIZE, lo, sizeof lo),
                       sp_format_size(SST_MAX_CLUSTER_SIZE, hi, sizeof hi));
    if (f->file_size != end &&
        problem(c, err, -1, foff + SST_FOOTER_INDEX_OFFSET + 56,
                "footer says the file has %llu bytes; it has %llu (truncated or appended to)",
                (unsigned long long)f->file_size, (unsigned long long)end))
        return -1;
    uint64_t sum, nonzero;
    if (footer_region(c, end, sst_footer_region_bytes(f), true, &sum, &nonzero, err))
        return -1;
    /* A version 2 table of the first layout, every region padded to the
     * cluster size: its footer checksum is that of the last cluster. */
    uint64_t first_sum, first_nonzero;
    if (sum != f->footer_checksum && f->format_version == SST_FORMAT_VERSION_PACKED &&
        f->cluster_size <= end) {
        if (footer_region(c, end, f->cluster_size, false, &first_sum, &first_nonzero, err))
            return -1;
        if (first_sum == f->footer_checksum) {
            c->bytes += f->cluster_size - SST_FOOTER_BYTES;
            f->tail_align = f->cluster_size;
            sum = first_sum;
            nonzero = first_nonzero;
        }
    }
    if (sum != f->footer_checksum &&
        problem(c, err, -1, foff + SST_FOOTER_CHECKSUM,
                "footer checksum mismatch (stored %016llx, computed %016llx)",
                (unsigned long long)f->footer_checksum, (unsigned long long)sum))
        return -1;
    if (nonzero != UINT64_MAX &&
        problem(c, err, -1, nonzero, "the footer region's padding is not zero"))
        return -1;
    if (f->checksum_type != SST_CHECKSUM_XXH3_64 &&
        problem(c, err, -1, foff + SST_FOOTER_BLOCK_SIZE + 20,
                "footer checksum type %u (expected %u)", f->checksum_type, SST_CHECKSUM_XXH3_64))
        return -1;
    if (f->restart_interval != SST_RESTART_INTERVAL &&
        problem(c, err, -1, foff + SST_FOOTER_BLOCK_SIZE + 12,
                "footer restart interval %u (expected %u)", f->restart_interval,
                SST_RESTART_INTERVAL))
        return -1;
    if (!sst_pow2_in(f->block_size, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE))
        return problem(c, err, -1, foff + SST_FOOTER_BLOCK_SIZE,
                       "footer block size %u is not a power of two from %s to %s", f->block_size,
                       sp_format_size(SST_MIN_BLOCK_SIZE, lo, sizeof lo),
                       sp_format_size(SST_MAX_BLOCK_SIZE, hi, sizeof hi));
    sp_error fit = {0};
    if ((packed ? sst_packed_check_fit(f->block_size, f->max_value_bytes, &fit)
                : sst_check_fit(f->block_size, f->max_value_bytes, &fit)) &&
        problem(c, err, -1, foff + SST_FOOTER_BLOCK_SIZE + 8, "footer value bound: %s", fit.msg))
        return -1;
    bool ok;
    if (check_tiling(c, f, end, &ok, err))
        return -1;
    if (((f->records == 0) != (f->data_blocks == 0) || f->records < f->data_blocks) &&
        problem(c, err, -1, foff + SST_FOOTER_INDEX_OFFSET + 32,
                "footer says %llu records in %llu blocks", (unsigned long long)f->records,
                (unsigned long long)f->data_blocks))
        return -1;
    return ok ? 1 : 0;
}

int sst_check_open_footer(sst_check *c, uint64_t size, sst_footer *f, sp_error *err) {
    if (size < SST_FOOTER_BYTES)
        return sp_errorf(err, "%s: %llu bytes is too short for an SSTable (at least %u)", c->path,
                         (unsigned long long)size, SST_FOOTER_BYTES);
    uint8_t raw[SST_FOOTER_BYTES];
    if (sp_pread_exact(c->fd, raw, sizeof raw, size - SST_FOOTER_BYTES, c->path, err))
        return -1;
    c->bytes += sizeof raw;
    return sst_check_footer(c, raw, size, f, err) < 0 ? -1 : 0;
}

int sst_check_data_padding(sst_check *c, const sst_footer *f, sp_error *err) {
    uint64_t from = f->data_blocks * f->block_size, to = f->data_region_length;
    scan s = {.zeros_from = from, .zeros_end = to};
    if (from == to || scan_span(c, from, to, &s, true, err))
        return from == to ? 0 : -1;
    if (s.nonzero != UINT64_MAX &&
        problem(c, err, -1, s.nonzero, "the data region's padding is not zero"))
        return -1;
    return 0;
}

/* ------------------------------------------------------------ the cursor */

/*
 * Read from the file, the entries are taken through a window of the
 * buffer that is refilled (what is left of it moved to the front) whenever
 * less than the longest entry remains in it and the index goes on, so an
 * entry is always whole in the window when it parses at all, and a failed
 * parse is a corrupt entry, never a window boundary.
 */
struct sst_index_cursor {
    sst_check own;  /* the check of a cursor opened on its own: stop mode */
    sst_check *chk; /* the check its problems go to */
    bool done;      /* the entries' end was reached, or a problem ended them */
    uint64_t index_offset, index_length, block_size, data_blocks;
    const uint8_t *buf; /* the window's bytes: the caller's index, or own */
    uint8_t *own_buf;   /* the read buffer, reading from the file */
    size_t cap;
    const uint8_t *p, *end; /* the window: index bytes [win_off + (p - buf), loaded) */
    uint64_t win_off;       /* index offset of buf[0] */
    uint64_t loaded;        /* index bytes read so far */
    uint64_t block;         /* entries passed */
    uint64_t entry_pos;     /* of the last one */
    uint32_t prev_len;
    uint8_t prev[SP_MAX_KEY_BYTES];
};

static sst_index_cursor *cursor_open(sst_check *chk, const sst_footer *f, const uint8_t *index,
                                     size_t buf_bytes, sp_error *err) {
    sst_index_cursor *c = calloc(1, sizeof *c);
    if (!c) {
        sp_errorf(err, "%s: out of memory", chk->path);
        return NULL;
    }
    *c = (sst_index_cursor){.own = *chk,
                            .index_offset = f->index_offset,
                            .index_length = f->index_length,
                            .block_size = f->block_size,
                            .data_blocks = f->data_blocks};
    c->chk = chk;
    if (index) {
        c->buf = index;
        c->loaded = f->index_length;
    } else {
        c->cap = buf_bytes < SST_INDEX_ENTRY_MAX_BYTES ? SST_INDEX_ENTRY_MAX_BYTES : buf_bytes;
        if (!(c->buf = c->own_buf = malloc(c->cap))) {
            free(c);
            sp_errorf(err, "%s: out of memory for an index buffer of %zu bytes", chk->path,
                      buf_bytes);
            return NULL;
        }
    }
    c->p = c->buf;
    c->end = c->buf + c->loaded;
    return c;
}

sst_index_cursor *sst_index_cursor_open(const char *path, int fd, const sst_footer *f,
                                        const uint8_t *index, size_t buf_bytes, sp_error *err) {
    sst_check stop = {.path = path, .fd = fd};
    sst_index_cursor *c = cursor_open(&stop, f, index, buf_bytes, err);
    if (c)
        c->chk = &c->own;
    return c;
}

void sst_index_cursor_destroy(sst_index_cursor *c) {
    if (!c)
        return;
    free(c->own_buf);
    free(c);
}

uint64_t sst_index_cursor_block(const sst_index_cursor *c) {
    return c->block;
}

/* Moves what is left of the window to the front and reads after it. */
static int refill(sst_index_cursor *c, sp_error *err) {
    size_t left = (size_t)(c->end - c->p);
    memmove(c->own_buf, c->p, left);
    c->win_off += (uint64_t)(c->p - c->buf);
    uint64_t n = c->index_length - c->loaded;
    if (n > c->cap - left)
        n = c->cap - left;
    if (sp_pread_exact(c->chk->fd, c->own_buf + left, (size_t)n, c->index_offset + c->loaded,
                       c->chk->path, err))
        return -1;
    c->chk->bytes += n;
    c->loaded += n;
    c->p = c->buf;
    c->end = c->buf + left + n;
    return 0;
}

/* A problem that ends the entries: 0 in collect mode, -1 in stop mode. */
static int end_entries(sst_index_cursor *c, int reported) {
    c->done = true;
    return reported;
}

int sst_index_cursor_next(sst_index_cursor *c, const uint8_t **key, uint32_t *klen, sp_error *err) {
    if (c->done)
        return 0;
    if (c->own_buf && (size_t)(c->end - c->p) < SST_INDEX_ENTRY_MAX_BYTES &&
        c->loaded < c->index_length && refill(c, err))
        return -1;
    sst_check *chk = c->chk;
    uint64_t pos = c->win_off + (uint64_t)(c->p - c->buf), i = c->block;
    uint64_t at = c->index_offset + pos;
    if (i == c->data_blocks) {
        if (pos == c->index_length)
            return end_entries(c, 0);
        return end_entries(c, problem(chk, err, -1, at,
                                      "%llu bytes after the last index entry (the footer says "
                                      "%llu data blocks)",
                                      (unsigned long long)(c->index_length - pos),
                                      (unsigned long long)c->data_blocks));
    }
    if (pos == c->index_length)
        return end_entries(c, problem(chk, err, -1, at,
                                      "index has %llu entries, the footer says %llu data blocks",
                                      (unsigned long long)i, (unsigned long long)c->data_blocks));
    const uint8_t *q, *next;
    uint32_t n;
    uint64_t off;
    if (!(q = sst_get_varint32(c->p, c->end, &n)) || n == 0 || n > SP_MAX_KEY_BYTES ||
        n > (uint64_t)(c->end - q) ||
        !(next = sst_get_varint(q + n, c->end, SST_VARINT64_MAX, &off)))
        return end_entries(
            c, problem(chk, err, -1, at, "corrupt index entry %llu", (unsigned long long)i));
    if (off != i * c->block_size &&
        problem(chk, err, (int64_t)i, at, "index entry %llu points at byte %llu, not %llu",
                (unsigned long long)i, (unsigned long long)off,
                (unsigned long long)(i * c->block_size)))
        return -1;
    if (i > 0 && sp_key_cmp(c->prev, c->prev_len, q, n) >= 0 &&
        problem(chk, err, -1, at, "index entry %llu: first keys out of order",
                (unsigned long long)i))
        return -1;
    memcpy(c->prev, q, n);
    c->prev_len = n;
    c->entry_pos = pos;
    c->p = next;
    c->block++;
    *key = q;
    *klen = n;
    return 1;
}

/* ------------------------------------------------------------ the index */

int sst_check_index(sst_check *c, const sst_footer *f, uint8_t *index, sst_index_entry_fn *on_entry,
                    void *ctx, sp_error *err) {
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return sp_errorf(err, "%s: out of memory", c->path);
    XXH3_64bits_reset(h);
    uint64_t head = 0, region_end = f->index_offset + f->index_region_length;
    if (index) {
        head = f->index_length;
        if (sp_pread_exact(c->fd, index, (size_t)head, f->index_offset, c->path, err)) {
            XXH3_freeState(h);
            return -1;
        }
        c->bytes += head;
        XXH3_64bits_update(h, index, (size_t)head);
    }
    scan s = {.h = h,
              .hash_end = region_end,
              .zeros_from = f->index_offset + f->index_length,
              .zeros_end = region_end};
    int rc = scan_span(c, f->index_offset + head, region_end, &s, true, err);
    uint64_t sum = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    if (rc)
        return -1;
    if (sum != f->index_checksum &&
        problem(c, err, -1, f->index_offset,
                "index checksum mismatch (stored %016llx, computed %016llx)",
                (unsigned long long)f->index_checksum, (unsigned long long)sum))
        return -1;
    if (s.nonzero != UINT64_MAX &&
        problem(c, err, -1, s.nonzero, "the index region's padding is not zero"))
        return -1;
    sst_index_cursor *cur = cursor_open(c, f, index, STREAM_BYTES, err);
    if (!cur)
        return -1;
    /* Streamed, the entries are read a second time: the region's bytes
     * were counted by the scan. */
    uint64_t counted = c->bytes;
    const uint8_t *key;
    uint32_t klen;
    while ((rc = sst_index_cursor_next(cur, &key, &klen, err)) == 1)
        if (on_entry)
            on_entry(ctx, cur->block - 1, key, klen, cur->entry_pos);
    sst_index_cursor_destroy(cur);
    c->bytes = counted;
    return rc;
}

/* ------------------------------------------------------------ the meta region */

int sst_check_meta(sst_check *c, const sst_footer *f, sst_meta *m, uint8_t **body, sp_error *err) {
    *body = NULL;
    *m = (sst_meta){0};
    uint64_t off = f->index_offset + f->index_region_length, fr = sst_footer_region_bytes(f);
    uint64_t len = f->file_size - fr - off;
    /* The footer's sizes are checked against where the table ends, but
     * verify goes on past a footer with problems: the region is read only
     * where the file has it, never for what a damaged footer claims. */
    struct stat st;
    if (fstat(c->fd, &st))
        return sp_errorf_errno(err, "%s: cannot stat", c->path);
    uint64_t have = (uint64_t)st.st_size;
    if (off > f->file_size - fr || off > have || len > have - off) {
        int rc =
            problem(c, err, -1, off,
                    "the meta region (%llu bytes at byte %llu) runs past the end of the file "
                    "(%llu bytes)",
                    (unsigned long long)len, (unsigned long long)off, (unsigned long long)have);
        return rc < 0 ? -1 : 0;
    }
    uint8_t *buf = malloc((size_t)len);
    if (!buf)
        return sp_errorf(err, "%s: out of memory for a meta region of %llu bytes", c->path,
                         (unsigned long long)len);
    if (sp_pread_exact(c->fd, buf, (size_t)len, off, c->path, err)) {
        free(buf);
        return -1;
    }
    c->bytes += len;
    uint64_t sum = XXH3_64bits(buf, (size_t)len);
    if (sum != f->meta_checksum &&
        problem(c, err, -1, off, "meta region checksum mismatch (stored %016llx, computed %016llx)",
                (unsigned long long)f->meta_checksum, (unsigned long long)sum)) {
        free(buf);
        return -1;
    }
    sst_meta_decode(buf, m);
    uint64_t used = SST_META_HEADER_BYTES + (uint64_t)m->dictionary_length + m->filter_length;
    int rc = 0;
    if (m->compression != SST_COMPRESSION_ZSTD)
        rc = problem(c, err, -1, off, "meta region: compression %u is not known (1: zstd)",
                     m->compression);
    else if (used > len || sst_align_up(used, f->tail_align) != len)
        rc = problem(c, err, -1, off + 4,
                     "meta region of %llu bytes does not hold a %u-byte dictionary and a "
                     "%u-byte filter%s",
                     (unsigned long long)len, m->dictionary_length, m->filter_length,
                     f->tail_align > 1 ? " padded to the cluster size" : "");
    else if ((m->filter_length == 0) != (m->filter_hashes == 0) ||
             m->filter_hashes > SST_FILTER_MAX_HASHES)
        rc = problem(c, err, -1, off + 12, "meta region: %u filter hashes for a %u-byte filter",
                     m->filter_hashes, m->filter_length);
    else if (m->filter_length % SST_FILTER_LINE_BYTES)
        rc = problem(c, err, -1, off + 8,
                     "meta region: a filter of %u bytes is not whole lines of %u bytes",
                     m->filter_length, SST_FILTER_LINE_BYTES);
    else if (sp_first_nonzero(buf + used, (size_t)(len - used)) < len - used)
        rc = problem(c, err, -1, off + used + sp_first_nonzero(buf + used, (size_t)(len - used)),
                     "the meta region's padding is not zero");
    if (rc < 0 || m->compression != SST_COMPRESSION_ZSTD || used > len) {
        free(buf);
        *m = (sst_meta){0};
        return rc < 0 ? -1 : 0;
    }
    *body = buf;
    return 0;
}
