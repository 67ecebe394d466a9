/*
 * fuzz_file.c: memory files for fuzz inputs; see fuzz_file.h.
 */
#include "fuzz_file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void fuzz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void fuzz_file_init(fuzz_file *f, const uint8_t *data, size_t size) {
    f->fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (f->fd < 0)
        fuzz_fail("memfd_create failed");
    for (size_t done = 0; done < size;) {
        ssize_t n = write(f->fd, data + done, size - done);
        if (n <= 0)
            fuzz_fail("write to memfd failed");
        done += (size_t)n;
    }
    if (lseek(f->fd, 0, SEEK_SET) != 0)
        fuzz_fail("lseek on memfd failed");
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
}

void fuzz_file_destroy(fuzz_file *f) {
    close(f->fd);
    f->fd = -1;
}

void fuzz_check_error(const sp_error *err, const char *path) {
    if (!err->set || !err->msg[0])
        fuzz_fail("a call failed without an error message");
    if (strchr(err->msg, '\n'))
        fuzz_fail("error message is not one line: %s", err->msg);
    if (path && !strstr(err->msg, path))
        fuzz_fail("error message does not name %s: %s", path, err->msg);
}
