/* wg_sink.c: plain, bz2 and zstd output of the generated XML; see wg_sink.h. */
#include "data/wg_sink.h"

#include "data/wg_bzpool.h"
#include "stages/common/fileio.h"

#include <bzlib.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define OUT_CAP (1u << 20)

struct wg_sink {
    wg_format format;
    int fd;
    const char *name;
    uint64_t bytes_out;
    uint64_t streams;
    char *out; /* compressed bytes waiting to be written */
    bz_stream bz;
    bool bz_open;
    ZSTD_CCtx *zst;
    wg_bzpool *pool;
};

int wg_sink_open(wg_sink **out, wg_format format, unsigned threads, int fd, const char *name,
                 sp_error *err) {
    wg_sink *s = calloc(1, sizeof *s);
    if (!s)
        return sp_errorf(err, "wikigen: out of memory");
    s->format = format;
    s->fd = fd;
    s->name = name;
    if (format != WG_FORMAT_XML && !(s->out = malloc(OUT_CAP))) {
        free(s);
        return sp_errorf(err, "wikigen: out of memory");
    }
    if (format == WG_FORMAT_BZ2_MULTI && wg_bzpool_open(&s->pool, threads, fd, name, err)) {
        wg_sink_destroy(s);
        return -1;
    }
    if (format == WG_FORMAT_ZST) {
        s->zst = ZSTD_createCCtx();
        if (!s->zst || ZSTD_isError(ZSTD_CCtx_setParameter(s->zst, ZSTD_c_compressionLevel, 3)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s->zst, ZSTD_c_checksumFlag, 1))) {
            wg_sink_destroy(s);
            return sp_errorf(err, "%s: cannot set up zstd compression", name);
        }
    }
    *out = s;
    return 0;
}

static int emit(wg_sink *s, const void *p, size_t n, sp_error *err) {
    if (sp_write_all(s->fd, p, n, s->name, err))
        return -1;
    s->bytes_out += n;
    return 0;
}

/* Runs libbz2 with action until it has consumed its input (BZ_RUN) or
 * closed the stream (BZ_FINISH), writing output as it fills. */
static int bz_pump(wg_sink *s, int action, sp_error *err) {
    for (;;) {
        s->bz.next_out = s->out;
        s->bz.avail_out = OUT_CAP;
        int rc = BZ2_bzCompress(&s->bz, action);
        if (rc != BZ_RUN_OK && rc != BZ_FINISH_OK && rc != BZ_STREAM_END)
            return sp_errorf(err, "%s: bzip2 compression failed (libbz2 error %d)", s->name, rc);
        if (emit(s, s->out, OUT_CAP - s->bz.avail_out, err))
            return -1;
        if (action == BZ_RUN ? s->bz.avail_in == 0 : rc == BZ_STREAM_END)
            return 0;
    }
}

static int bz_begin(wg_sink *s, sp_error *err) {
    memset(&s->bz, 0, sizeof s->bz);
    int rc = BZ2_bzCompressInit(&s->bz, 9, 0, 0);
    if (rc != BZ_OK)
        return sp_errorf(err, "%s: cannot start bzip2 compression (libbz2 error %d)", s->name, rc);
    s->bz_open = true;
    s->streams++;
    return 0;
}

static int bz_end(wg_sink *s, sp_error *err) {
    if (!s->bz_open)
        return 0;
    int rc = bz_pump(s, BZ_FINISH, err);
    BZ2_bzCompressEnd(&s->bz);
    s->bz_open = false;
    return rc;
}

static int zst_pump(wg_sink *s, const void *p, size_t n, ZSTD_EndDirective mode, sp_error *err) {
    ZSTD_inBuffer in = {p, n, 0};
    for (;;) {
        ZSTD_outBuffer o = {s->out, OUT_CAP, 0};
        size_t left = ZSTD_compressStream2(s->zst, &o, &in, mode);
        if (ZSTD_isError(left))
            return sp_errorf(err, "%s: zstd compression failed: %s", s->name,
                             ZSTD_getErrorName(left));
        if (emit(s, s->out, o.pos, err))
            return -1;
        if (mode == ZSTD_e_continue ? in.pos == in.size : left == 0)
            return 0;
    }
}

int wg_sink_write(wg_sink *s, const void *p, size_t n, sp_error *err) {
    switch (s->format) {
    case WG_FORMAT_XML:
        return emit(s, p, n, err);
    case WG_FORMAT_BZ2_MULTI:
        return wg_bzpool_write(s->pool, p, n, err);
    case WG_FORMAT_ZST:
        if (!s->streams)
            s->streams = 1;
        return zst_pump(s, p, n, ZSTD_e_continue, err);
    default:
        if (!s->bz_open && bz_begin(s, err))
            return -1;
        /* avail_in is 32 bits: feed very large writes in pieces. */
        while (n) {
            unsigned piece = n > (1u << 30) ? 1u << 30 : (unsigned)n;
            s->bz.next_in = (char *)p;
            s->bz.avail_in = piece;
            if (bz_pump(s, BZ_RUN, err))
                return -1;
            p = (const char *)p + piece;
            n -= piece;
        }
        return 0;
    }
}

int wg_sink_index_page(wg_sink *s, uint64_t id, const char *title, size_t len, sp_error *err) {
    if (!s->pool)
        return 0;
    char line[64 + 1024];
    int n = snprintf(line, sizeof line, "%llu:%.*s\n", (unsigned long long)id,
                     (int)(len < 1024 ? len : 1024), title);
    return wg_bzpool_note(s->pool, line, (size_t)n, err);
}

const char *wg_sink_index(const wg_sink *s, size_t *len) {
    *len = 0;
    return s->pool ? wg_bzpool_index(s->pool, len) : NULL;
}

int wg_sink_end_stream(wg_sink *s, sp_error *err) {
    return s->pool ? wg_bzpool_end_stream(s->pool, err) : 0;
}

int wg_sink_finish(wg_sink *s, sp_error *err) {
    switch (s->format) {
    case WG_FORMAT_XML:
        return 0;
    case WG_FORMAT_ZST:
        return zst_pump(s, NULL, 0, ZSTD_e_end, err);
    case WG_FORMAT_BZ2_MULTI:
        return wg_bzpool_finish(s->pool, err);
    default:
        return bz_end(s, err);
    }
}

uint64_t wg_sink_bytes_out(const wg_sink *s) {
    return s->pool ? wg_bzpool_bytes_out(s->pool) : s->bytes_out;
}

uint64_t wg_sink_streams(const wg_sink *s) {
    return s->pool ? wg_bzpool_streams(s->pool) : s->streams;
}

void wg_sink_destroy(wg_sink *s) {
    if (!s)
        return;
    if (s->bz_open)
        BZ2_bzCompressEnd(&s->bz);
    ZSTD_freeCCtx(s->zst);
    wg_bzpool_destroy(s->pool);
    free(s->out);
    free(s);
}
