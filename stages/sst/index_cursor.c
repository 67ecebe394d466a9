/*
 * index_cursor.c: parsing and checking index entries in order; see
 * index_cursor.h.
 *
 * Read from the file, the entries are taken through a window of the
 * buffer that is refilled (what is left of it moved to the front) whenever
 * less than the longest entry remains in it and the index goes on, so an
 * entry is always whole in the window when it parses at all, and a failed
 * parse is a corrupt entry, never a window boundary.
 */
#include "stages/sst/index_cursor.h"

#include "stages/common/fileio.h"
#include "stages/common/key.h"
#include "stages/common/record.h"
#include "stages/sst/coding.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct sst_index_cursor {
    const char *path;
    int fd;
    uint64_t index_offset, index_length, block_size, data_blocks;
    const uint8_t *buf; /* the window's bytes: the caller's index, or own */
    uint8_t *own;       /* the read buffer, reading from fd */
    size_t cap;
    const uint8_t *p, *end; /* the window: index bytes [win_off + (p - buf), loaded) */
    uint64_t win_off;       /* index offset of buf[0] */
    uint64_t loaded;        /* index bytes read so far */
    uint64_t block;         /* entries passed */
    uint64_t entry_pos;     /* of the last one */
    uint32_t prev_len;
    uint8_t prev[SP_MAX_KEY_BYTES];
};

sst_index_cursor *sst_index_cursor_open(const char *path, int fd, const sst_footer *f,
                                        const uint8_t *index, size_t buf_bytes, sp_error *err) {
    sst_index_cursor *c = calloc(1, sizeof *c);
    if (!c) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    *c = (sst_index_cursor){.path = path,
                            .fd = fd,
                            .index_offset = f->index_offset,
                            .index_length = f->index_length,
                            .block_size = f->block_size,
                            .data_blocks = f->data_blocks};
    if (index) {
        c->buf = index;
        c->loaded = f->index_length;
    } else {
        c->cap = buf_bytes < SST_INDEX_ENTRY_MAX_BYTES ? SST_INDEX_ENTRY_MAX_BYTES : buf_bytes;
        if (!(c->buf = c->own = malloc(c->cap))) {
            free(c);
            sp_errorf(err, "%s: out of memory for an index buffer of %zu bytes", path, buf_bytes);
            return NULL;
        }
    }
    c->p = c->buf;
    c->end = c->buf + c->loaded;
    return c;
}

void sst_index_cursor_destroy(sst_index_cursor *c) {
    if (!c)
        return;
    free(c->own);
    free(c);
}

uint64_t sst_index_cursor_block(const sst_index_cursor *c) {
    return c->block;
}

uint64_t sst_index_cursor_entry_pos(const sst_index_cursor *c) {
    return c->entry_pos;
}

/* Moves what is left of the window to the front and reads after it. */
static int refill(sst_index_cursor *c, sp_error *err) {
    size_t left = (size_t)(c->end - c->p);
    memmove(c->own, c->p, left);
    c->win_off += (uint64_t)(c->p - c->buf);
    uint64_t n = c->index_length - c->loaded;
    if (n > c->cap - left)
        n = c->cap - left;
    if (sp_pread_exact(c->fd, c->own + left, (size_t)n, c->index_offset + c->loaded, c->path, err))
        return -1;
    c->loaded += n;
    c->p = c->buf;
    c->end = c->buf + left + n;
    return 0;
}

int sst_index_cursor_next(sst_index_cursor *c, const uint8_t **key, uint32_t *klen, sp_error *err) {
    if (c->own && (size_t)(c->end - c->p) < SST_INDEX_ENTRY_MAX_BYTES &&
        c->loaded < c->index_length && refill(c, err))
        return -1;
    uint64_t pos = c->win_off + (uint64_t)(c->p - c->buf);
    unsigned long long at = (unsigned long long)(c->index_offset + pos);
    if (c->block == c->data_blocks) {
        if (pos != c->index_length)
            return sp_errorf(err, "%s: %llu bytes after the last index entry at byte %llu", c->path,
                             (unsigned long long)(c->index_length - pos), at);
        return 0;
    }
    const uint8_t *q, *next;
    uint32_t n;
    uint64_t off, i = c->block;
    if (!(q = sst_get_varint32(c->p, c->end, &n)) || n == 0 || n > SP_MAX_KEY_BYTES ||
        n > (uint64_t)(c->end - q) ||
        !(next = sst_get_varint(q + n, c->end, SST_VARINT64_MAX, &off)))
        return sp_errorf(err, "%s: corrupt index entry %llu at byte %llu", c->path,
                         (unsigned long long)i, at);
    if (off != i * c->block_size)
        return sp_errorf(err,
                         "%s: index entry %llu at byte %llu gives block offset %llu, expected %llu",
                         c->path, (unsigned long long)i, at, (unsigned long long)off,
                         (unsigned long long)(i * c->block_size));
    if (i > 0 && sp_key_cmp(c->prev, c->prev_len, q, n) >= 0)
        return sp_errorf(err, "%s: index entry %llu at byte %llu: first keys out of order", c->path,
                         (unsigned long long)i, at);
    memcpy(c->prev, q, n);
    c->prev_len = n;
    c->entry_pos = pos;
    c->p = next;
    c->block++;
    *key = q;
    *klen = n;
    return 1;
}
