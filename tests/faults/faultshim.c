/*
 * faultshim.c: an LD_PRELOAD library that makes one chosen I/O call of a
 * process fail, so tests can watch sstpipe meet a full or failing disk at
 * every write, fsync and rename it makes.
 *
 * It wraps write, pwrite, copy_file_range (merge's block copies), fsync,
 * fdatasync, rename, renameat(2), ftruncate and close. Environment:
 *
 *   SSTPIPE_FAULT=OP:N:ACTION[:sticky]
 *       the Nth call (from 1) of OP that matches SSTPIPE_FAULT_DIR fails
 *       with errno ACTION (ENOSPC, EIO, EDQUOT, EROFS, EFBIG), or, when
 *       ACTION is SIGKILL, the process kills itself just before that call;
 *       with SIGSTOP it stops itself there (a test then finds it stopped at
 *       a known point) and, if continued, makes the call as usual.
 *       With "sticky", every matching call from the Nth on fails too (a
 *       disk that stays full). Without SSTPIPE_FAULT nothing fails.
 *   SSTPIPE_FAULT_DIR=DIR
 *       only calls on files (for fd calls: the file the fd names, per
 *       /proc/self/fd) or paths under DIR are counted and failed.
 *   SSTPIPE_FAULT_LOG=FILE
 *       appends "fired OP N PATH" when a fault is injected, and at exit one
 *       "count OP N" line per operation, so a driver can first count the
 *       calls a run makes and then hit each one.
 *
 * A failed close still closes the descriptor, as Linux's close does when it
 * reports an error; the other calls do nothing when they fail. Calls that
 * glibc makes internally (stdio's flushes) bypass any preload and so are
 * not seen: sstpipe's own output goes through write(2) directly.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

enum op {
    OP_WRITE,
    OP_PWRITE,
    OP_FSYNC,
    OP_FDATASYNC,
    OP_RENAME,
    OP_RENAMEAT,
    OP_FTRUNCATE,
    OP_CLOSE,
    OP_COPY_FILE_RANGE,
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {"write",     "pwrite", "fsync",
                                               "fdatasync", "rename", "renameat",
                                               "ftruncate", "close",  "copy_file_range"};

static const struct {
    const char *name;
    int value;
} actions[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO},          {"EDQUOT", EDQUOT},   {"EROFS", EROFS},
               {"EFBIG", EFBIG},   {"SIGKILL", -SIGKILL}, {"SIGSTOP", -SIGSTOP}};

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned);
static int (*real_ftruncate)(int, off_t);
static int (*real_close)(int);
static ssize_t (*real_copy_file_range)(int, off_t *, int, off_t *, size_t, unsigned);

static char dir[PATH_MAX]; /* canonical SSTPIPE_FAULT_DIR, "" for every file */
static size_t dir_len;
static int log_fd = -1;
static int fault_op = -1;
static long fault_n;
static int fault_action; /* errno, or -signal */
static bool fault_sticky;
static atomic_long counts[OP_COUNT];

static void *next_symbol(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        static const char msg[] = "faultshim: a libc symbol is missing\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    return p;
}

static void log_line(const char *fmt, ...) {
    if (log_fd < 0)
        return;
    char line[PATH_MAX + 96];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!real_write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void bad_spec(const char *spec) {
    fprintf(stderr, "faultshim: bad SSTPIPE_FAULT '%s' (want OP:N:ACTION[:sticky])\n", spec);
    _exit(99);
}

static void parse_fault(const char *spec) {
    char buf[128];
    if (strlen(spec) >= sizeof buf)
        bad_spec(spec);
    strcpy(buf, spec);
    char *save = NULL, *op = strtok_r(buf, ":", &save), *n = strtok_r(NULL, ":", &save),
         *act = strtok_r(NULL, ":", &save), *mode = strtok_r(NULL, ":", &save);
    if (!op || !n || !act)
        bad_spec(spec);
    for (int i = 0; i < OP_COUNT; i++)
        if (!strcmp(op, op_names[i]))
            fault_op = i;
    char *end;
    fault_n = strtol(n, &end, 10);
    fault_action = 0;
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
        if (!strcmp(act, actions[i].name))
            fault_action = actions[i].value;
    fault_sticky = mode && !strcmp(mode, "sticky");
    if (fault_op < 0 || *end || fault_n < 1 || !fault_action || (mode && !fault_sticky))
        bad_spec(spec);
}

static void shim_setup(void) {
    real_write = next_symbol("write");
    real_pwrite = next_symbol("pwrite");
    real_fsync = next_symbol("fsync");
    real_fdatasync = next_symbol("fdatasync");
    real_rename = next_symbol("rename");
    real_renameat = next_symbol("renameat");
    real_renameat2 = next_symbol("renameat2");
    real_ftruncate = next_symbol("ftruncate");
    real_close = next_symbol("close");
    real_copy_file_range = next_symbol("copy_file_range");
    const char *d = getenv("SSTPIPE_FAULT_DIR");
    if (d && *d) {
        if (!realpath(d, dir)) {
            fprintf(stderr, "faultshim: SSTPIPE_FAULT_DIR %s: %s\n", d, strerror(errno));
            _exit(99);
        }
        dir_len = strlen(dir);
    }
    const char *l = getenv("SSTPIPE_FAULT_LOG");
    if (l && *l)
        log_fd = open(l, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const char *f = getenv("SSTPIPE_FAULT");
    if (f && *f)
        parse_fault(f);
}

/* Another library's constructor may write before ours runs, so every
 * wrapper makes sure the shim is set up first. */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

__attribute__((constructor)) static void shim_init(void) {
    pthread_once(&setup_once, shim_setup);
}

__attribute__((destructor)) static void shim_fini(void) {
    for (int i = 0; i < OP_COUNT; i++)
        log_line("count %s %ld\n", op_names[i], atomic_load(&counts[i]));
}

static bool under_dir(const char *path) {
    return !dir_len || (!strncmp(path, dir, dir_len) && (path[dir_len] == '/' || !path[dir_len]));
}

/* The file an fd names ("" when it has none). */
static void fd_path(int fd, char *out, size_t cap) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
}

/* path made absolute against dirfd (AT_FDCWD: the working directory). */
static void abs_path(int dirfd, const char *path, char *out, size_t cap) {
    if (path[0] == '/') {
        snprintf(out, cap, "%s", path);
        return;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base))
            base[0] = '\0';
    } else {
        fd_path(dirfd, base, sizeof base);
    }
    snprintf(out, cap, "%s/%s", base, path);
}

/* Counts a call on path; true when this call is the one to fail (errno set). */
static bool hit(enum op op, const char *path) {
    if (!under_dir(path))
        return false;
    long n = atomic_fetch_add(&counts[op], 1) + 1;
    if ((int)op != fault_op || (fault_sticky ? n < fault_n : n != fault_n))
        return false;
    log_line("fired %s %ld %s\n", op_names[op], n, path);
    if (fault_action == -SIGSTOP) {
        kill(getpid(), SIGSTOP);
        return false;
    }
    if (fault_action < 0)
        kill(getpid(), -fault_action);
    errno = fault_action;
    return true;
}

static bool hit_fd(enum op op, int fd) {
    shim_init();
    char path[PATH_MAX];
    if (dir_len) {
        fd_path(fd, path, sizeof path);
    } else {
        snprintf(path, sizeof path, "fd %d", fd);
    }
    return hit(op, path);
}

static bool hit_rename(enum op op, int olddirfd, const char *oldpath, int newdirfd,
                       const char *newpath) {
    shim_init();
    char a[PATH_MAX], b[PATH_MAX];
    abs_path(olddirfd, oldpath, a, sizeof a);
    abs_path(newdirfd, newpath, b, sizeof b);
    return hit(op, under_dir(a) ? a : b);
}

ssize_t write(int fd, const void *buf, size_t n) {
    return hit_fd(OP_WRITE, fd) ? -1 : real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    return hit_fd(OP_PWRITE, fd) ? -1 : real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    return pwrite(fd, buf, n, off);
}

/* Counted on the file written to. */
ssize_t copy_file_range(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t n,
                        unsigned flags) {
    return hit_fd(OP_COPY_FILE_RANGE, fd_out)
               ? -1
               : real_copy_file_range(fd_in, off_in, fd_out, off_out, n, flags);
}

int fsync(int fd) {
    return hit_fd(OP_FSYNC, fd) ? -1 : real_fsync(fd);
}

int fdatasync(int fd) {
    return hit_fd(OP_FDATASYNC, fd) ? -1 : real_fdatasync(fd);
}

int rename(const char *oldpath, const char *newpath) {
    return hit_rename(OP_RENAME, AT_FDCWD, oldpath, AT_FDCWD, newpath)
               ? -1
               : real_rename(oldpath, newpath);
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    return hit_rename(OP_RENAMEAT, olddirfd, oldpath, newdirfd, newpath)
               ? -1
               : real_renameat(olddirfd, oldpath, newdirfd, newpath);
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned flags) {
    return hit_rename(OP_RENAMEAT, olddirfd, oldpath, newdirfd, newpath)
               ? -1
               : real_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
}

int ftruncate(int fd, off_t len) {
    return hit_fd(OP_FTRUNCATE, fd) ? -1 : real_ftruncate(fd, len);
}

int ftruncate64(int fd, off_t len) {
    return ftruncate(fd, len);
}

int close(int fd) {
    shim_init();
    if (fd == log_fd)
        return real_close(fd);
    if (hit_fd(OP_CLOSE, fd)) {
        int e = errno;
        real_close(fd);
        errno = e;
        return -1;
    }
    return real_close(fd);
}
