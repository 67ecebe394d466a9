/*
 * source.c: the decompressed bytes of an input file; see source.h.
 *
 * The first bytes decide the decoder: "BZh1".."BZh9" goes to the parallel
 * bz2 decoder (bz2_reader.c), the gzip magic to zlib, anything else to
 * libarchive (xz, zstd, plain data, and whatever else its filters know).
 * gzip is decoded here rather than by libarchive because libarchive does
 * not check the gzip CRC: a damaged .gz would decode silently to wrong text.
 * All input goes through our own reads so that we know exactly how many
 * compressed bytes were consumed (for error offsets and stats) and can tell
 * a failing read(2) apart from damaged data.
 * gzip, libarchive and an external command's pipe are read and decoded on
 * the source_queue thread; once it runs, their state belongs to it. A read
 * that could block (a pipe, a terminal) first polls an eventfd as well, so
 * that source_close can stop that thread at any point.
 */
#include "stages/extract/source.h"

#include "stages/common/compression.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "stages/common/cli.h"
#include "stages/common/cores.h"
#include "stages/common/dynlib.h"
#include "stages/common/fileio.h"
#include "stages/extract/bz2_reader.h"
#include "stages/extract/source_command.h"
#include "stages/extract/source_queue.h"

/* Large enough that the decoders' per-call overhead vanishes, small enough
 * that "near compressed byte N" stays near. */
#define SOURCE_BLOCK (256u << 10)

typedef enum source_kind { SOURCE_ARCHIVE, SOURCE_GZIP, SOURCE_BZ2, SOURCE_COMMAND } source_kind;

struct source {
    source_kind kind;
    int fd;      /* the input file */
    int in_fd;   /* what read_block reads: fd, or the command's stdout */
    int wake_fd; /* eventfd that ends a blocked read_block; -1 when none can block */
    char *name;
    uint8_t *block;
    size_t head_len; /* bytes source_open read into block, not yet decoded */
    uint64_t offset;
    int read_errno;  /* errno of a failed read(2); 0 when none failed */
    char format[16]; /* kept because a failed archive no longer reports it */

    struct archive *a; /* SOURCE_ARCHIVE */
    bool at_end;

    z_stream z; /* SOURCE_GZIP */
    bool z_live;
    bool in_eof;      /* the file has no more bytes */
    bool member_done; /* between two gzip members */
    bool gz_done;

    bz2_reader *bz; /* SOURCE_BZ2 */

    source_command *cmd; /* SOURCE_COMMAND */
    bool in_seekable;    /* the command's stdin shares fd's file offset */
    bool cmd_done;

    source_queue *q; /* every kind but SOURCE_BZ2, once source_open started it */

    /* A slice: the compressed bytes left to read, and how much of the
     * framing was handed out (source_slice). */
    const source_slice *slice;
    uint64_t remaining;
    size_t head_pos, tail_pos;
    bool data_done;

    /* The first decoded byte, read by source_open to tell empty input. */
    bool have_peek;
    uint8_t peek;
};

void source_options_init(source_options *opts) {
    memset(opts, 0, sizeof *opts);
}

/* Waits until in_fd is readable: 0, or -1 with read_errno set when
 * source_close wakes the thread or poll fails. */
static int wait_readable(source *s) {
    struct pollfd p[2] = {{.fd = s->in_fd, .events = POLLIN}, {.fd = s->wake_fd, .events = POLLIN}};
    for (;;) {
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[1].revents) {
            s->read_errno = r < 0 ? errno : ECANCELED;
            return -1;
        }
        return 0;
    }
}

/* read(2) from in_fd: the count, 0 at the end, -1 with read_errno set. */
static ssize_t read_into(source *s, uint8_t *buf, size_t n) {
    if (s->slice && s->kind != SOURCE_BZ2 && n > s->remaining)
        n = (size_t)s->remaining;
    if (s->slice && !n)
        return 0;
    for (;;) {
        if (s->wake_fd >= 0 && wait_readable(s))
            return -1;
        ssize_t r = read(s->in_fd, buf, n);
        if (r >= 0) {
            s->offset += (uint64_t)r;
            if (s->slice)
                s->remaining -= (uint64_t)r;
            return r;
        }
        if (errno != EINTR) {
            s->read_errno = errno;
            return -1;
        }
    }
}

/* read(2) into block at byte at. */
static ssize_t read_block(source *s, size_t at) {
    return read_into(s, s->block + at, SOURCE_BLOCK - at);
}

static int read_failed(source *s, sp_error *err) {
    errno = s->read_errno;
    return sp_errorf_errno(err, "%s: read failed near byte %llu", s->name,
                           (unsigned long long)s->offset);
}

/* ------------------------------------------------------------ libarchive */

/* libarchive, loaded by the first source that needs it
 * (stages/common/dynlib.h): it brings libxml2 and more, which commands
 * that read no dump should not load. */
/* clang-format off: one function a line */
#define LIBARCHIVE_FUNCTIONS(X, t)                                                                 \
    X(t, archive_read_new)                                                                         \
    X(t, archive_read_support_filter_all)                                                          \
    X(t, archive_read_support_format_raw)                                                          \
    X(t, archive_read_support_format_empty)                                                        \
    X(t, archive_read_open)                                                                        \
    X(t, archive_filter_name)                                                                      \
    X(t, archive_read_next_header)                                                                 \
    X(t, archive_error_string)                                                                     \
    X(t, archive_read_data)                                                                        \
    X(t, archive_read_free)                                                                        \
    X(t, archive_set_error)
/* clang-format on */
SP_DYNLIB_TABLE(la, libarchive, SP_SONAME_LIBARCHIVE, LIBARCHIVE_FUNCTIONS);

static la_ssize_t on_read(struct archive *a, void *ctx, const void **buf) {
    source *s = ctx;
    *buf = s->block;
    if (s->head_len) {
        la_ssize_t r = (la_ssize_t)s->head_len;
        s->head_len = 0;
        return r;
    }
    ssize_t r = read_block(s, 0);
    if (r < 0) {
        la.archive_set_error(a, s->read_errno, "read failed");
        return ARCHIVE_FATAL;
    }
    return r;
}

/* Turns a libarchive failure into the one-line error. */
static int archive_fail(source *s, sp_error *err) {
    if (s->read_errno)
        return read_failed(s, err);
    const char *why = la.archive_error_string(s->a);
    return sp_errorf(err, "%s: corrupt or truncated %s data near compressed byte %llu (%s)",
                     s->name, source_format(s), (unsigned long long)s->offset,
                     why ? why : "no detail");
}

static int archive_start(source *s, sp_error *err) {
    sp_error why = {0};
    if (sp_dynlib_load(&libarchive, &why))
        return sp_errorf(err, "%s: %s", s->name, why.msg);
    s->a = la.archive_read_new();
    if (!s->a)
        return sp_errorf(err, "%s: out of memory", s->name);
    /* ARCHIVE_WARN only says some rare filters would need an external
     * program; the formats we care about are built in. */
    la.archive_read_support_filter_all(s->a);
    la.archive_read_support_format_raw(s->a);
    la.archive_read_support_format_empty(s->a);
    struct archive_entry *entry;
    int rc = la.archive_read_open(s->a, s, NULL, on_read, NULL);
    if (rc == ARCHIVE_OK) {
        const char *format = la.archive_filter_name(s->a, 0);
        snprintf(s->format, sizeof s->format, "%s", format ? format : "unknown");
        rc = la.archive_read_next_header(s->a, &entry);
    }
    if (rc == ARCHIVE_OK)
        return 0;
    /* The "empty" format claims exactly the inputs with no data. */
    if (rc == ARCHIVE_EOF && s->offset == 0)
        return sp_errorf(err, "%s: empty input", s->name);
    if (rc == ARCHIVE_EOF)
        return sp_errorf(err, "%s: empty input (nothing after %s decompression)", s->name,
                         source_format(s));
    return archive_fail(s, err);
}

static ssize_t archive_read(source *s, void *buf, size_t n, sp_error *err) {
    if (s->at_end)
        return 0;
    la_ssize_t r = la.archive_read_data(s->a, buf, n);
    if (r < 0)
        return archive_fail(s, err);
    if ((size_t)r < n)
        s->at_end = true;
    return r;
}

/* ------------------------------------------------------------ gzip */

static int gz_fail(source *s, const char *why, sp_error *err) {
    return sp_errorf(err, "%s: corrupt or truncated gzip data near compressed byte %llu (%s)",
                     s->name, (unsigned long long)(s->offset - s->z.avail_in), why);
}

static int gz_start(source *s, sp_error *err) {
    /* 15 + 32: the largest window, gzip (or zlib) header detected. */
    if (inflateInit2(&s->z, 15 + 32) != Z_OK)
        return sp_errorf(err, "%s: out of memory", s->name);
    s->z_live = true;
    s->z.next_in = s->block;
    s->z.avail_in = (uInt)s->head_len;
    s->head_len = 0;
    return 0;
}

/* Inflates member after member (gzip files concatenate), each checked
 * against its CRC and length; anything after a member must be another. */
static ssize_t gz_read(source *s, uint8_t *buf, size_t n, sp_error *err) {
    size_t got = 0;
    while (got < n && !s->gz_done) {
        if (s->z.avail_in == 0 && !s->in_eof) {
            ssize_t r = read_block(s, 0);
            if (r < 0)
                return read_failed(s, err);
            s->in_eof = r == 0;
            s->z.next_in = s->block;
            s->z.avail_in = (uInt)r;
            continue;
        }
        if (s->member_done) {
            if (s->z.avail_in == 0) {
                s->gz_done = true;
                break;
            }
            inflateReset(&s->z);
            s->member_done = false;
        }
        size_t room = n - got < UINT_MAX ? n - got : UINT_MAX;
        s->z.next_out = buf + got;
        s->z.avail_out = (uInt)room;
        int rc = inflate(&s->z, Z_NO_FLUSH);
        got += room - s->z.avail_out;
        if (rc == Z_STREAM_END)
            s->member_done = true;
        else if (rc == Z_BUF_ERROR && s->z.avail_in == 0 && s->in_eof)
            return gz_fail(s, "unexpected end of data", err);
        else if (rc == Z_DATA_ERROR && s->z.msg && !strcmp(s->z.msg, "incorrect data check"))
            return gz_fail(s, "CRC mismatch", err);
        else if (rc == Z_DATA_ERROR && s->z.msg && !strcmp(s->z.msg, "incorrect length check"))
            return gz_fail(s, "length mismatch", err);
        else if (rc == Z_MEM_ERROR)
            return sp_errorf(err, "%s: out of memory", s->name);
        else if (rc != Z_OK && rc != Z_BUF_ERROR)
            return gz_fail(s, s->z.msg ? s->z.msg : "no detail", err);
    }
    return (ssize_t)got;
}

/* ------------------------------------------------------------ command */

static int command_read_failed(source *s, sp_error *err) {
    errno = s->read_errno;
    return sp_errorf_errno(err,
                           "%s: reading the output of the decompressor failed (compressed "
                           "offset unknown: external decompressor)",
                           s->name);
}

/* The command's output as it comes, straight into the queue's buffer; at
 * its end, its exit status decides whether that was the whole data. */
static ssize_t command_read(source *s, uint8_t *buf, size_t n, sp_error *err) {
    if (s->cmd_done)
        return 0;
    ssize_t r = read_into(s, buf, n);
    if (r < 0)
        return command_read_failed(s, err);
    if (r == 0) {
        if (source_command_finish(s->cmd, err))
            return -1;
        s->cmd_done = true;
    }
    return r;
}

/* ------------------------------------------------------------ source */

/* The producer side of the queue: one decoder's output and offset. */
static ssize_t queue_fill(void *ctx, uint8_t *buf, size_t n, uint64_t *offset, sp_error *err) {
    source *s = ctx;
    ssize_t r;
    switch (s->kind) {
    case SOURCE_GZIP:
        r = gz_read(s, buf, n, err);
        break;
    case SOURCE_COMMAND:
        r = command_read(s, buf, n, err);
        break;
    default:
        r = archive_read(s, buf, n, err);
        break;
    }
    off_t pos;
    if (s->kind != SOURCE_COMMAND)
        *offset = s->offset;
    else if (s->in_seekable && (pos = lseek(s->fd, 0, SEEK_CUR)) >= 0)
        *offset = (uint64_t)pos;
    return r;
}

static ssize_t own_read(source *s, uint8_t *buf, size_t n, sp_error *err) {
    if (s->kind == SOURCE_BZ2)
        return bz2_reader_read(s->bz, buf, n, err);
    return source_queue_read(s->q, buf, n, err);
}

source *source_open(const char *path, sp_error *err) {
    return source_open_with(path, NULL, err);
}

/* Picks the built-in decoder from the first bytes and starts it. */
static int start_builtin(source *s, const source_options *opts, sp_error *err) {
    /* A pipe may deliver the first bytes in pieces. */
    for (ssize_t r = 1; r > 0 && s->head_len < SP_COMPRESSION_HEAD; s->head_len += (size_t)r)
        if ((r = read_block(s, s->head_len)) < 0)
            return read_failed(s, err);
    /* Named here because libarchive knows the name too, but not when the
     * data is already damaged inside archive_read_open. */
    sp_compression c = sp_compression_sniff(s->block, s->head_len);
    if (c != SP_COMPRESSION_NONE)
        snprintf(s->format, sizeof s->format, "%s", sp_compression_name(c));
    if (sp_compression_bz2_stream(s->block, s->head_len)) {
        s->kind = SOURCE_BZ2;
        bz2_reader_range range = {.base = s->offset - s->head_len, .limit = s->remaining};
        s->bz = bz2_reader_open(s->fd, s->name, s->block, s->head_len, s->slice ? &range : NULL,
                                opts->threads, err);
        return s->bz ? 0 : -1;
    }
    if (c == SP_COMPRESSION_GZIP) {
        s->kind = SOURCE_GZIP;
        return gz_start(s, err);
    }
    s->kind = SOURCE_ARCHIVE;
    return archive_start(s, err);
}

static int start_command(source *s, const source_options *opts, sp_error *err) {
    unsigned threads = opts->threads ? opts->threads : sp_usable_cores();
    struct stat st;
    s->kind = SOURCE_COMMAND;
    s->in_seekable = fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode);
    snprintf(s->format, sizeof s->format, "external");
    s->cmd = source_command_start(opts->decompressor, threads, s->fd, s->name, opts->tmp_dir, err);
    if (!s->cmd)
        return -1;
    s->in_fd = source_command_fd(s->cmd);
    return 0;
}

/* The eventfd for reads that can block: not needed for regular files. */
static int make_wakeable(source *s, sp_error *err) {
    struct stat st;
    if (fstat(s->in_fd, &st) == 0 && S_ISREG(st.st_mode))
        return 0;
    s->wake_fd = eventfd(0, EFD_CLOEXEC);
    if (s->wake_fd < 0)
        return sp_errorf_errno(err, "%s: cannot create an eventfd", s->name);
    return 0;
}

/* Positions fd at the slice's start; read_into and the bz2 reader stop at
 * its end. */
static int start_slice(source *s, const source_slice *slice, bool command, sp_error *err) {
    struct stat st;
    if (command)
        return sp_errorf(err, "%s: a part of a file cannot be read through a decompressor command",
                         s->name);
    if (fstat(s->fd, &st) || !S_ISREG(st.st_mode) ||
        slice->start + slice->length > (uint64_t)st.st_size)
        return sp_errorf(err, "%s: bytes %llu to %llu are not part of this file", s->name,
                         (unsigned long long)slice->start,
                         (unsigned long long)(slice->start + slice->length));
    if (lseek(s->fd, (off_t)slice->start, SEEK_SET) < 0)
        return sp_errorf_errno(err, "%s: cannot seek to byte %llu", s->name,
                               (unsigned long long)slice->start);
    s->slice = slice;
    s->offset = slice->start;
    s->remaining = slice->length;
    return 0;
}

source *source_open_with(const char *path, const source_options *opts, sp_error *err) {
    source_options defaults;
    source_options_init(&defaults);
    if (!opts)
        opts = &defaults;
    source *s = calloc(1, sizeof *s);
    if (!s) {
        sp_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    s->fd = s->in_fd = s->wake_fd = -1;
    s->name = strdup(strcmp(path, "-") ? path : "stdin");
    s->block = sp_io_alloc(SOURCE_BLOCK);
    if (!s->name || !s->block) {
        sp_errorf(err, "%s: out of memory", path);
        source_close(s);
        return NULL;
    }
    if (sp_open_input(path, &s->fd, err))
        goto fail;
    s->in_fd = s->fd;
    bool command = opts->decompressor && *opts->decompressor;
    if (opts->slice && start_slice(s, opts->slice, command, err))
        goto fail;
    if (command ? start_command(s, opts, err) : start_builtin(s, opts, err))
        goto fail;
    if (s->kind != SOURCE_BZ2 &&
        (make_wakeable(s, err) || !(s->q = source_queue_start(queue_fill, s, s->name, err))))
        goto fail;
    /* One byte decides "empty input" here rather than in the parser. */
    ssize_t r = own_read(s, &s->peek, 1, err);
    if (r < 0)
        goto fail;
    if (r == 0) {
        sp_errorf(err, "%s: empty input (nothing after %s decompression)", s->name,
                  source_format(s));
        goto fail;
    }
    s->have_peek = true;
    return s;
fail:
    source_close(s);
    return NULL;
}

/* Copies what is left of a framing part (head or tail) into buf. */
static size_t frame_copy(const void *part, size_t len, size_t *pos, uint8_t *buf, size_t n) {
    size_t k = len - *pos < n ? len - *pos : n;
    if (k)
        memcpy(buf, (const uint8_t *)part + *pos, k);
    *pos += k;
    return k;
}

static ssize_t data_read(source *s, void *buf, size_t n, sp_error *err);

ssize_t source_read(source *s, void *buf, size_t n, sp_error *err) {
    const source_slice *sl = s->slice;
    if (!sl)
        return data_read(s, buf, n, err);
    uint8_t *p = buf;
    size_t got = frame_copy(sl->head, sl->head_len, &s->head_pos, p, n);
    while (got < n && !s->data_done) {
        /* After some bytes, an error waits for the next call (the decoder
         * fails again), so that the bytes before it go out first. */
        sp_error later;
        sp_error_clear(&later);
        ssize_t r = data_read(s, p + got, n - got, got ? &later : err);
        if (r < 0)
            return got ? (ssize_t)got : -1;
        s->data_done = r == 0;
        got += (size_t)r;
    }
    if (s->data_done)
        got += frame_copy(sl->tail, sl->tail_len, &s->tail_pos, p + got, n - got);
    return (ssize_t)got;
}

static ssize_t data_read(source *s, void *buf, size_t n, sp_error *err) {
    uint8_t *p = buf;
    size_t got = 0;
    if (s->have_peek && n) {
        p[got++] = s->peek;
        s->have_peek = false;
    }
    sp_error later; /* as in source_read: the peeked byte first */
    sp_error_clear(&later);
    ssize_t r = own_read(s, p + got, n - got, got ? &later : err);
    if (r < 0)
        return got ? (ssize_t)got : -1;
    return (ssize_t)got + r;
}

uint64_t source_stream_start(const source *s) {
    uint64_t at = s->bz ? bz2_reader_stream_start(s->bz) : 0;
    /* A slice's framing head comes before the decoder's bytes. */
    return at && s->slice ? at + s->slice->head_len : at;
}

uint64_t source_offset(const source *s) {
    if (s->bz)
        return bz2_reader_offset(s->bz);
    return s->q ? source_queue_offset(s->q) : s->offset;
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
    /* The decoding threads read the file: stop them before closing it. */
    if (s->wake_fd >= 0)
        eventfd_write(s->wake_fd, 1);
    source_queue_stop(s->q);
    bz2_reader_close(s->bz);
    /* Kills a command still running, after the thread reading its output
     * is gone, so that only one thread ever waits for it. */
    source_command_close(s->cmd);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    if (s->a)
        la.archive_read_free(s->a);
    if (s->z_live)
        inflateEnd(&s->z);
    if (s->fd > STDIN_FILENO)
        close(s->fd);
    free(s->block);
    free(s->name);
    free(s);
}
