/*
 * source.c: the libarchive-backed source; see source.h.
 *
 * libarchive's filters recognise the compression by content and its "raw"
 * format passes the decompressed bytes through as one entry. We feed it
 * through our own read callback so that we know exactly how many compressed
 * bytes were consumed (for error offsets and stats) and can tell a failing
 * read(2) apart from damaged data.
 */
#include "stages/extract/source.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stages/common/cli.h"

/* Large enough that libarchive's per-call overhead vanishes, small enough
 * that "near compressed byte N" stays near. */
#define SOURCE_BLOCK (256u << 10)

struct source {
    struct archive *a;
    int fd;
    char *name;
    uint8_t *block;
    uint64_t offset;
    int read_errno;  /* errno of a failed read(2); 0 when none failed */
    char format[16]; /* libarchive's name for the compression, kept because
                        a failed archive no longer reports it */
    bool at_end;
};

/* Names the compression from its magic bytes. libarchive knows the name
 * too, but not when the data is already damaged inside archive_read_open. */
static void sniff_format(source *s, const uint8_t *p, size_t n) {
    static const struct {
        const char *magic;
        size_t len;
        const char *name;
    } magics[] = {
        {"BZh", 3, "bzip2"},
        {"\x1f\x8b", 2, "gzip"},
        {"\xfd"
         "7zXZ",
         5, "xz"},
        {"\x28\xb5\x2f\xfd", 4, "zstd"},
    };
    for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++)
        if (n >= magics[i].len && !memcmp(p, magics[i].magic, magics[i].len))
            snprintf(s->format, sizeof s->format, "%s", magics[i].name);
}

static la_ssize_t on_read(struct archive *a, void *ctx, const void **buf) {
    source *s = ctx;
    for (;;) {
        ssize_t r = read(s->fd, s->block, SOURCE_BLOCK);
        if (r >= 0) {
            if (s->offset == 0)
                sniff_format(s, s->block, (size_t)r);
            s->offset += (uint64_t)r;
            *buf = s->block;
            return r;
        }
        if (errno != EINTR) {
            s->read_errno = errno;
            archive_set_error(a, errno, "read failed");
            return ARCHIVE_FATAL;
        }
    }
}

/* Turns a libarchive failure into the one-line error. */
static int source_fail(source *s, sp_error *err) {
    if (s->read_errno) {
        errno = s->read_errno;
        return sp_errorf_errno(err, "%s: read failed near byte %llu", s->name,
                               (unsigned long long)s->offset);
    }
    const char *why = archive_error_string(s->a);
    return sp_errorf(err, "%s: corrupt or truncated %s data near compressed byte %llu (%s)",
                     s->name, source_format(s), (unsigned long long)s->offset,
                     why ? why : "no detail");
}

source *source_open(const char *path, sp_error *err) {
    source *s = calloc(1, sizeof *s);
    if (!s) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    s->fd = -1;
    s->name = strdup(strcmp(path, "-") ? path : "stdin");
    s->block = malloc(SOURCE_BLOCK);
    if (!s->name || !s->block) {
        sp_errorf(err, "%s: out of memory", path);
        source_close(s);
        return NULL;
    }
    if (sp_open_input(path, &s->fd, err)) {
        source_close(s);
        return NULL;
    }
    s->a = archive_read_new();
    if (!s->a) {
        sp_errorf(err, "%s: out of memory", s->name);
        source_close(s);
        return NULL;
    }
    /* ARCHIVE_WARN only says some rare filters would need an external
     * program; the formats we care about are built in. */
    archive_read_support_filter_all(s->a);
    archive_read_support_format_raw(s->a);
    archive_read_support_format_empty(s->a);
    struct archive_entry *entry;
    int rc = archive_read_open(s->a, s, NULL, on_read, NULL);
    if (rc == ARCHIVE_OK) {
        const char *format = archive_filter_name(s->a, 0);
        snprintf(s->format, sizeof s->format, "%s", format ? format : "unknown");
        rc = archive_read_next_header(s->a, &entry);
    }
    if (rc != ARCHIVE_OK) {
        /* The "empty" format claims exactly the inputs with no data. */
        if (rc == ARCHIVE_EOF && s->offset == 0)
            sp_errorf(err, "%s: empty input", s->name);
        else if (rc == ARCHIVE_EOF)
            sp_errorf(err, "%s: empty input (nothing after %s decompression)", s->name,
                      source_format(s));
        else
            source_fail(s, err);
        source_close(s);
        return NULL;
    }
    return s;
}

ssize_t source_read(source *s, void *buf, size_t n, sp_error *err) {
    if (s->at_end)
        return 0;
    la_ssize_t r = archive_read_data(s->a, buf, n);
    if (r < 0)
        return source_fail(s, err);
    if ((size_t)r < n)
        s->at_end = true;
    return r;
}

uint64_t source_offset(const source *s) {
    return s->offset;
}

const char *source_format(const source *s) {
    return s->format[0] ? s->format : "unknown";
}

const char *source_name(const source *s) {
    return s->name;
}

void source_close(source *s) {
    if (!s)
        return;
    if (s->a)
        archive_read_free(s->a);
    if (s->fd > STDIN_FILENO)
        close(s->fd);
    free(s->block);
    free(s->name);
    free(s);
}
