/*
 * tune_sample.c: the head of a dump as a plain XML sample; see
 * tune_sample.h. The bytes are copied as they come and scanned for
 * "</page>" on the way (one byte at a time, so a tag split across two
 * reads is still seen), then the file is cut back to the last one. Inside
 * page text a '<' is always escaped as "&lt;", so "</page>" is only ever
 * the tag.
 */
#include "pipeline/tune/tune_sample.h"

#include "stages/common/fileio.h"
#include "stages/common/size.h"
#include "stages/extract/source.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static const char end_tag[] = "</page>";
static const char closing[] = "\n</mediawiki>\n";

typedef struct scan {
    size_t matched; /* bytes of end_tag matched so far */
    uint64_t last_end, pages;
} scan;

static void scan_bytes(scan *s, const uint8_t *p, size_t n, uint64_t base) {
    const size_t tag_len = sizeof end_tag - 1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == (uint8_t)end_tag[s->matched])
            s->matched++;
        else
            s->matched = p[i] == '<';
        if (s->matched == tag_len) {
            s->matched = 0;
            s->pages++;
            s->last_end = base + i + 1;
        }
    }
}

static int copy_head(source *src, int fd, const char *out_path, uint64_t limit, scan *sc,
                     bool *whole, sp_error *err) {
    uint8_t *buf = malloc(CHUNK);
    if (!buf)
        return sp_errorf(err, "out of memory for the sample buffer");
    uint64_t total = 0;
    int rc = 0;
    *whole = false;
    while (rc == 0) {
        size_t want = limit - total < CHUNK ? (size_t)(limit - total) : CHUNK;
        if (want == 0) {
            /* The limit is reached: one more byte tells whether that was all. */
            uint8_t probe;
            ssize_t k = source_read(src, &probe, 1, err);
            rc = k < 0 ? -1 : 0;
            *whole = k == 0;
            break;
        }
        ssize_t k = source_read(src, buf, want, err);
        if (k < 0) {
            rc = -1;
        } else if (k == 0) {
            *whole = true;
            break;
        } else {
            scan_bytes(sc, buf, (size_t)k, total);
            rc = sp_write_all(fd, buf, (size_t)k, out_path, err);
            total += (uint64_t)k;
        }
    }
    free(buf);
    return rc;
}

int tune_write_sample(const char *input, uint64_t limit, const char *out_path,
                      tune_sample_stats *st, sp_error *err) {
    memset(st, 0, sizeof *st);
    source *src = source_open(input, err);
    if (!src)
        return -1;
    int fd = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        source_close(src);
        return sp_errorf_errno(err, "%s: cannot create the sample", out_path);
    }
    scan sc = {0};
    int rc = copy_head(src, fd, out_path, limit, &sc, &st->whole, err);
    st->pages = sc.pages;
    if (rc == 0 && st->whole) {
        off_t end = lseek(fd, 0, SEEK_CUR);
        st->xml_bytes = end < 0 ? 0 : (uint64_t)end;
    } else if (rc == 0 && sc.pages == 0) {
        char size[32];
        rc = sp_errorf(err, "%s: the first %s of XML hold no whole page; use a larger --sample",
                       input, sp_format_size(limit, size, sizeof size));
    } else if (rc == 0) {
        if (ftruncate(fd, (off_t)sc.last_end))
            rc = sp_errorf_errno(err, "%s: cannot cut the sample at byte %llu", out_path,
                                 (unsigned long long)sc.last_end);
        else
            rc = sp_pwrite_all(fd, closing, sizeof closing - 1, sc.last_end, out_path, err);
        st->xml_bytes = sc.last_end + sizeof closing - 1;
    }
    if (close(fd) && rc == 0)
        rc = sp_errorf_errno(err, "%s: cannot close the sample", out_path);
    source_close(src);
    if (rc)
        unlink(out_path);
    return rc;
}
