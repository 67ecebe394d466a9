/*
 * chunk_map.c: a span of a file mapped and populated, or read; see
 * chunk_map.h.
 */
#include "stages/common/chunk_map.h"

#include "stages/common/fileio.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int sp_chunk_fill(sp_chunk *c, int fd, uint64_t off, size_t len, const char *name, sp_error *err) {
    sp_chunk_release(c);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    size_t lead = (size_t)(off % page);
    void *m = c->no_map ? MAP_FAILED
                        : mmap(NULL, lead + len, PROT_READ, MAP_SHARED, fd, (off_t)(off - lead));
    if (m != MAP_FAILED) {
        if (madvise(m, lead + len, MADV_POPULATE_READ) == 0) {
            c->map = m;
            c->map_len = lead + len;
            c->data = (const uint8_t *)m + lead;
            return 0;
        }
        munmap(m, lead + len);
    }
    if (c->buf_cap < len) {
        free(c->buf);
        c->buf_cap = 0;
        if (!(c->buf = malloc(len)))
            return sp_errorf(err, "%s: out of memory for a %zu-byte read buffer", name, len);
        c->buf_cap = len;
    }
    if (sp_pread_exact(fd, c->buf, len, off, name, err))
        return -1;
    c->data = c->buf;
    return 0;
}

void sp_chunk_release(sp_chunk *c) {
    if (c->map)
        munmap(c->map, c->map_len);
    c->map = NULL;
    c->map_len = 0;
    c->data = NULL;
}

void sp_chunk_destroy(sp_chunk *c) {
    sp_chunk_release(c);
    free(c->buf);
    c->buf = NULL;
    c->buf_cap = 0;
}
