/* serve_pages.c: the nightly's HTML pages, read-only; see serve_pages.h. */
#include "stages/serve/serve_pages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool serve_page_path(const char *path) {
    return !strcmp(path, "/index.html") || !strncmp(path, "/builds/", 8) ||
           !strncmp(path, "/failed/", 8);
}

/* The files a build directory's page may be, each with its type. */
static const struct {
    const char *file, *type;
} build_files[] = {
    {"report.html", "text/html; charset=utf-8"},
    {"nightly.log", "text/plain; charset=utf-8"},
};

/* The file below dir the path names, as up to three components, and its
 * type; 0 when the path names no page. */
static int components(const char *path, char parts[3][256], const char **type) {
    *type = build_files[0].type;
    if (!strcmp(path, "/index.html")) {
        snprintf(parts[0], 256, "index.html");
        return 1;
    }
    const char *name = path + 8; /* after "/builds/" or "/failed/" */
    const char *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : 0;
    if (!slash || n == 0 || n > 255 || name[0] == '.')
        return 0;
    size_t f = 0;
    while (f < sizeof build_files / sizeof build_files[0] && strcmp(slash + 1, build_files[f].file))
        f++;
    if (f == sizeof build_files / sizeof build_files[0])
        return 0;
    snprintf(parts[0], 256, "%.6s", path + 1);
    snprintf(parts[1], 256, "%.*s", (int)n, name);
    snprintf(parts[2], 256, "%s", build_files[f].file);
    *type = build_files[f].type;
    return 3;
}

static unsigned fail(char reason[SERVE_REASON_CAP], unsigned status, const char *path,
                     const char *why) {
    snprintf(reason, SERVE_REASON_CAP, "%s: %.200s", why, path);
    return status;
}

static int hex(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The request path as libmicrohttpd hands it over, still percent-encoded,
 * decoded into out ('+' stays itself: it is a space only in a query). A
 * bad escape or an encoded NUL is -1. */
static int decode_path(const char *in, char *out, size_t cap) {
    size_t n = 0;
    for (; *in; in++) {
        int c = (unsigned char)*in;
        if (c == '%') {
            int hi = hex(in[1]), lo = hi < 0 ? -1 : hex(in[2]);
            if (lo < 0 || (hi == 0 && lo == 0))
                return -1;
            c = hi * 16 + lo;
            in += 2;
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return 0;
}

unsigned serve_page_read(const char *dir, const char *raw, char **body, size_t *len,
                         const char **type, char reason[SERVE_REASON_CAP]) {
    char path[1024];
    if (decode_path(raw, path, sizeof path))
        return fail(reason, 400, raw, "bad percent-encoding or too long");
    char parts[3][256];
    int n = components(path, parts, type);
    if (!n)
        return fail(reason, 404, path, "no such page");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < n && fd >= 0; i++) {
        /* Directories then the page, never through a symlink. */
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (i < n - 1 ? O_DIRECTORY : O_NONBLOCK);
        int next = openat(fd, parts[i], flags);
        close(fd);
        fd = next;
    }
    if (fd < 0)
        return errno == ENOENT || errno == ELOOP || errno == ENOTDIR
                   ? fail(reason, 404, path, "no such page")
                   : fail(reason, 500, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(reason, 404, path, "no such page");
    }
    if ((uint64_t)st.st_size > SERVE_PAGE_MAX) {
        close(fd);
        return fail(reason, 500, path, "page too large");
    }
    /* A page is replaced by rename, never rewritten in place: the open
     * file is one whole page. A log may still grow (a run's last lines):
     * what it held at the fstat is served. */
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size ? size : 1);
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        return fail(reason, 500, path, buf ? "cannot read the page" : "out of memory");
    }
    *body = buf;
    *len = size;
    return 200;
}
