/* text_buffer.c: a page's text in bounded memory with a scratch-file spill; see text_buffer.h. */
#include "stages/extract/text_buffer.h"

#include "stages/common/fileio.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* First allocation; the buffer doubles from here up to mem_limit, so small
 * dumps never pay for the full limit. */
#define TEXT_BUFFER_MIN_ALLOC ((size_t)64 << 10)

struct text_buffer {
    uint64_t cap;
    size_t mem_limit;
    char *tmp_dir;
    uint8_t *mem;
    size_t alloc;
    size_t used;      /* bytes in mem, following the spilled ones */
    uint64_t spilled; /* bytes at the start of the scratch file */
    int fd;           /* scratch file, opened at the first spill */
};

text_buffer *text_buffer_init(uint64_t cap, size_t mem_limit, const char *tmp_dir, sp_error *err) {
    text_buffer *t = calloc(1, sizeof *t);
    if (!t || (tmp_dir && !(t->tmp_dir = strdup(tmp_dir)))) {
        free(t);
        sp_errorf(err, "text buffer: out of memory");
        return NULL;
    }
    t->cap = cap;
    t->mem_limit = mem_limit ? mem_limit : TEXT_BUFFER_MEM_LIMIT;
    t->fd = -1;
    return t;
}

void text_buffer_reset(text_buffer *t) {
    t->used = 0;
    t->spilled = 0;
}

static int spill(text_buffer *t, sp_error *err) {
    if (t->fd < 0 && (t->fd = sp_tmpfile_open(t->tmp_dir, err)) < 0)
        return -1;
    if (sp_pwrite_all(t->fd, t->mem, t->used, t->spilled, "page text scratch file", err))
        return -1;
    t->spilled += t->used;
    t->used = 0;
    return 0;
}

/* Makes room in mem: grow while under the limit, then spill. */
static int make_room(text_buffer *t, sp_error *err) {
    if (t->alloc >= t->mem_limit)
        return spill(t, err);
    size_t n = t->alloc ? 2 * t->alloc : TEXT_BUFFER_MIN_ALLOC;
    if (n > t->mem_limit)
        n = t->mem_limit;
    uint8_t *mem = realloc(t->mem, n);
    if (!mem)
        return sp_errorf(err, "text buffer: out of memory growing to %zu bytes", n);
    t->mem = mem;
    t->alloc = n;
    return 0;
}

int text_buffer_append(text_buffer *t, const void *p, size_t n, sp_error *err) {
    if (t->cap) {
        uint64_t have = t->spilled + t->used;
        if (have >= t->cap)
            return 0;
        if (n > t->cap - have)
            n = (size_t)(t->cap - have);
    }
    const uint8_t *src = p;
    while (n) {
        if (t->used == t->alloc && make_room(t, err))
            return -1;
        size_t k = t->alloc - t->used;
        if (k > n)
            k = n;
        memcpy(t->mem + t->used, src, k);
        t->used += k;
        src += k;
        n -= k;
    }
    return 0;
}

int text_buffer_value(text_buffer *t, sp_record *rec, sp_error *err) {
    if (t->spilled) {
        if (t->used && spill(t, err))
            return -1;
        rec->value = NULL;
        rec->value_len = t->spilled;
        rec->value_fd = t->fd;
    } else {
        /* Never NULL: consumers may memcpy from it even when empty. */
        rec->value = t->mem ? t->mem : (const uint8_t *)"";
        rec->value_len = t->used;
        rec->value_fd = -1;
    }
    return 0;
}

void text_buffer_destroy(text_buffer *t) {
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    free(t->mem);
    free(t->tmp_dir);
    free(t);
}
