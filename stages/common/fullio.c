/*
 * fullio.c: whole-buffer reads and writes (retrying short transfers and
 * EINTR), declared in fileio.h. Apart from the output and scratch files of
 * fileio.c because libsstpipe needs these and nothing of those: a reader
 * links no temporary-file cleanup.
 */
#include "stages/common/fileio.h"

#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

int sp_write_all(int fd, const void *buf, size_t n, const char *name, sp_error *err) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return sp_errorf_errno(err, "%s: write failed", name);
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int sp_writev_all(int fd, struct iovec *iov, int n, const char *name, sp_error *err) {
    while (n) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return sp_errorf_errno(err, "%s: write failed", name);
        }
        /* A short write: on past the pieces written whole, into the one cut. */
        size_t k = (size_t)w;
        while (n && k >= iov->iov_len) {
            k -= iov->iov_len;
            iov++;
            n--;
        }
        if (n) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= k;
        }
    }
    return 0;
}

int sp_pwrite_all(int fd, const void *buf, size_t n, uint64_t off, const char *name,
                  sp_error *err) {
    const char *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return sp_errorf_errno(err, "%s: write at byte %llu failed", name,
                                   (unsigned long long)off);
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

ssize_t sp_read_full(int fd, void *buf, size_t n, const char *name, sp_error *err) {
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return sp_errorf_errno(err, "%s: read failed", name);
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int sp_pread_exact(int fd, void *buf, size_t n, uint64_t off, const char *name, sp_error *err) {
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return sp_errorf_errno(err, "%s: read at byte %llu failed", name,
                                   (unsigned long long)off);
        }
        if (r == 0)
            return sp_errorf(err, "%s: unexpected end of file at byte %llu", name,
                             (unsigned long long)off);
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}
