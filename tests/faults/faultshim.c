/*
 * faultshim.c: an LD_PRELOAD library that makes one chosen I/O call of a
 * process fail, so tests can watch sstpipe meet a full or failing disk at
 * every write, fsync and rename it makes.
 *
 * It wraps write (and writev, counted as "write": the table writer's gathered
 * writes), pwrite, "clone" (ioctl FICLONERANGE: merge sharing blocks), fsync,
 * fdatasync, rename, renameat(2), ftruncate and close; "open", the calls that create a file (open
 * and openat with O_CREAT or O_TMPFILE, mkstemp, mkostemp); linkat (and link); symlink (and
 * symlinkat); mkdir (and mkdirat); sync_file_range; and "stdio", the writes
 * a stdio stream makes to its file. For the readers (`serve`, `get`), which
 * write nothing, "pread" (pread, pread64: every block a table read makes
 * without the map) and "open_read" (open and openat of an existing file,
 * without O_CREAT or O_TMPFILE: a table being opened), and "uring_read": the
 * reads handed to an io_uring through liburing's submit calls (profile
 * --queue-depth), each counted on the file its entry reads; a fault there
 * fails the submit, before anything is submitted. glibc's stdio writes through internal
 * calls no preload sees, so fopen of a file under SSTPIPE_FAULT_DIR for
 * writing returns a stream (fopencookie) whose writes come through here:
 * each one (a flush) counts as one "stdio" call, its open as an "open" and
 * its fclose as a "close". Environment:
 *
 *   SSTPIPE_FAULT=OP:N:ACTION[:sticky]
 *       the Nth call (from 1) of OP that matches SSTPIPE_FAULT_DIR fails
 *       with errno ACTION (ENOSPC, EIO, EDQUOT, EROFS, EFBIG), or, when
 *       ACTION is SIGKILL, the process kills itself just before that call;
 *       with SIGSTOP it stops itself there (a test then finds it stopped at
 *       a known point) and, if continued, makes the call as usual; with
 *       HOLD the calling thread alone waits there, the others running on,
 *       until a writer has opened the FIFO SSTPIPE_FAULT_HOLD and closed
 *       it, then makes the call as usual (a test sees what the rest of the
 *       process does while the work is held at a known point).
 *       With "sticky", every matching call from the Nth on fails too (a
 *       disk that stays full). Without SSTPIPE_FAULT nothing fails.
 *   SSTPIPE_FAULT_DIR=DIR
 *       only calls on files (for fd calls: the file the fd names, per
 *       /proc/self/fd) or paths under DIR are counted and failed.
 *   SSTPIPE_FAULT_HOLD=FIFO
 *       the FIFO a HOLD waits on.
 *   SSTPIPE_FAULT_LOG=FILE
 *       appends "fired OP N PATH" when a fault is injected, and at exit one
 *       "count OP N" line per operation, so a driver can first count the
 *       calls a run makes and then hit each one; then, so a test can tell
 *       which calls were whose, "threads OP N": those of them made by
 *       threads other than the process's first (profile's lookups), and
 *       "direct OP N": those on descriptors opened with O_DIRECT (cold
 *       lookups).
 *   SSTPIPE_FAULT_TRACE=1
 *       with SSTPIPE_FAULT_LOG, also "call OP N PATH" for every counted
 *       call, so a driver can hit only the calls on some paths (a sweep
 *       narrowed to what another sweep does not reach).
 *
 * Only closes of descriptors that can write, and of directories, are
 * counted. A failed close still closes the descriptor, as Linux's close
 * does when it reports an error; the other calls do nothing when they fail.
 * Other calls that glibc makes internally (mkstemp's own open, counted at
 * mkstemp instead) bypass any preload and are not seen.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
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
    OP_OPEN,
    OP_LINKAT,
    OP_SYMLINK,
    OP_MKDIR,
    OP_SYNC_FILE_RANGE,
    OP_STDIO,
    OP_CLONE,
    OP_PREAD,
    OP_OPEN_READ,
    OP_URING_READ,
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "write",           "pwrite", "fsync", "fdatasync", "rename",    "renameat",
    "ftruncate",       "close",  "open",  "linkat",    "symlink",   "mkdir",
    "sync_file_range", "stdio",  "clone", "pread",     "open_read", "uring_read"};

/* An action that is neither an errno (positive) nor a signal (negative). */
#define HOLD INT_MIN

static const struct {
    const char *name;
    int value;
} actions[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO},          {"EDQUOT", EDQUOT},    {"EROFS", EROFS},
               {"EFBIG", EFBIG},   {"SIGKILL", -SIGKILL}, {"SIGSTOP", -SIGSTOP}, {"HOLD", HOLD}};

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned);
static int (*real_ftruncate)(int, off_t);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_mkstemp)(char *);
static int (*real_mkostemp)(char *, int);
static int (*real_link)(const char *, const char *);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int (*real_symlink)(const char *, const char *);
static int (*real_symlinkat)(const char *, int, const char *);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_sync_file_range)(int, off_t, off_t, unsigned);
static FILE *(*real_fopen)(const char *, const char *);
/* liburing's, when the program has it (else never called) */
static int (*real_uring_submit)(struct io_uring *);
static int (*real_uring_submit_and_wait)(struct io_uring *, unsigned);
static int (*real_uring_submit_and_wait_timeout)(struct io_uring *, struct io_uring_cqe **,
                                                 unsigned, struct __kernel_timespec *, sigset_t *);

static char dir[PATH_MAX]; /* canonical SSTPIPE_FAULT_DIR, "" for every file */
static size_t dir_len;
static int log_fd = -1;
static int fault_op = -1;
static long fault_n;
static int fault_action; /* errno, -signal, or HOLD */
static const char *hold_fifo;
static bool fault_sticky;
static bool trace;
static atomic_long counts[OP_COUNT];
static atomic_long thread_counts[OP_COUNT]; /* by threads other than the first */
static atomic_long direct_counts[OP_COUNT]; /* on O_DIRECT descriptors */

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
    hold_fifo = getenv("SSTPIPE_FAULT_HOLD");
    if (fault_action == HOLD && !(hold_fifo && *hold_fifo)) {
        fprintf(stderr, "faultshim: HOLD without SSTPIPE_FAULT_HOLD\n");
        _exit(99);
    }
}

static void shim_setup(void) {
    real_write = next_symbol("write");
    real_writev = next_symbol("writev");
    real_pwrite = next_symbol("pwrite");
    real_pread = next_symbol("pread");
    real_fsync = next_symbol("fsync");
    real_fdatasync = next_symbol("fdatasync");
    real_rename = next_symbol("rename");
    real_renameat = next_symbol("renameat");
    real_renameat2 = next_symbol("renameat2");
    real_ftruncate = next_symbol("ftruncate");
    real_close = next_symbol("close");
    real_ioctl = next_symbol("ioctl");
    real_open = next_symbol("open");
    real_openat = next_symbol("openat");
    real_mkstemp = next_symbol("mkstemp");
    real_mkostemp = next_symbol("mkostemp");
    real_link = next_symbol("link");
    real_linkat = next_symbol("linkat");
    real_symlink = next_symbol("symlink");
    real_symlinkat = next_symbol("symlinkat");
    real_mkdir = next_symbol("mkdir");
    real_mkdirat = next_symbol("mkdirat");
    real_sync_file_range = next_symbol("sync_file_range");
    real_fopen = next_symbol("fopen");
    real_uring_submit = dlsym(RTLD_NEXT, "io_uring_submit");
    real_uring_submit_and_wait = dlsym(RTLD_NEXT, "io_uring_submit_and_wait");
    real_uring_submit_and_wait_timeout = dlsym(RTLD_NEXT, "io_uring_submit_and_wait_timeout");
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
        log_fd = real_open(l, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const char *t = getenv("SSTPIPE_FAULT_TRACE");
    trace = t && !strcmp(t, "1");
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
    for (int i = 0; i < OP_COUNT; i++)
        log_line("threads %s %ld\n", op_names[i], atomic_load(&thread_counts[i]));
    for (int i = 0; i < OP_COUNT; i++)
        log_line("direct %s %ld\n", op_names[i], atomic_load(&direct_counts[i]));
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
    /* A path longer than PATH_MAX cannot be opened anyway (ENAMETOOLONG);
     * empty rather than cut, so it never matches the fault directory by a
     * prefix that is not its own. */
    int n = snprintf(out, cap, "%s/%s", base, path);
    if (n < 0 || (size_t)n >= cap)
        out[0] = '\0';
}

/* Waits, in the calling thread alone, until a writer has opened the hold
 * FIFO and closed it. */
static void hold(void) {
    int saved = errno;
    int fd = real_open(hold_fifo, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "faultshim: SSTPIPE_FAULT_HOLD %s: %s\n", hold_fifo, strerror(errno));
        _exit(99);
    }
    char c;
    ssize_t r;
    while ((r = read(fd, &c, 1)) > 0 || (r < 0 && errno == EINTR))
        ;
    real_close(fd);
    errno = saved;
}

/* Counts a call on path (on an O_DIRECT descriptor: direct); true when
 * this call is the one to fail (errno set). */
static bool hit_how(enum op op, const char *path, bool direct) {
    if (!under_dir(path))
        return false;
    long n = atomic_fetch_add(&counts[op], 1) + 1;
    if (trace)
        log_line("call %s %ld %s\n", op_names[op], n, path);
    if (gettid() != getpid())
        atomic_fetch_add(&thread_counts[op], 1);
    if (direct)
        atomic_fetch_add(&direct_counts[op], 1);
    if ((int)op != fault_op || (fault_sticky ? n < fault_n : n != fault_n))
        return false;
    log_line("fired %s %ld %s\n", op_names[op], n, path);
    if (fault_action == -SIGSTOP) {
        kill(getpid(), SIGSTOP);
        return false;
    }
    if (fault_action == HOLD) {
        hold();
        return false;
    }
    if (fault_action < 0)
        kill(getpid(), -fault_action);
    errno = fault_action;
    return true;
}

static bool hit(enum op op, const char *path) {
    return hit_how(op, path, false);
}

static bool hit_fd(enum op op, int fd) {
    shim_init();
    char path[PATH_MAX];
    if (dir_len) {
        fd_path(fd, path, sizeof path);
    } else {
        snprintf(path, sizeof path, "fd %d", fd);
    }
    int fl = fcntl(fd, F_GETFL);
    return hit_how(op, path, fl >= 0 && (fl & O_DIRECT));
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

ssize_t writev(int fd, const struct iovec *iov, int n) {
    return hit_fd(OP_WRITE, fd) ? -1 : real_writev(fd, iov, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    return hit_fd(OP_PWRITE, fd) ? -1 : real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    return pwrite(fd, buf, n, off);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    return hit_fd(OP_PREAD, fd) ? -1 : real_pread(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off) {
    return pread(fd, buf, n, off);
}

/* The reads among a ring's entries not yet submitted, each counted on its
 * file; -errno when one is the read to fail (then nothing is submitted). */
static int uring_reads(struct io_uring *ring) {
    shim_init();
    for (unsigned h = ring->sq.sqe_head; h != ring->sq.sqe_tail; h++) {
        const struct io_uring_sqe *sqe = &ring->sq.sqes[h & ring->sq.ring_mask];
        bool read = sqe->opcode == IORING_OP_READ || sqe->opcode == IORING_OP_READV ||
                    sqe->opcode == IORING_OP_READ_FIXED;
        if (read && !(sqe->flags & IOSQE_FIXED_FILE) && hit_fd(OP_URING_READ, sqe->fd))
            return -errno;
    }
    return 0;
}

int io_uring_submit(struct io_uring *ring) {
    int e = uring_reads(ring);
    return e ? e : real_uring_submit(ring);
}

int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr) {
    int e = uring_reads(ring);
    return e ? e : real_uring_submit_and_wait(ring, wait_nr);
}

int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe,
                                     unsigned wait_nr, struct __kernel_timespec *ts,
                                     sigset_t *sigmask) {
    int e = uring_reads(ring);
    return e ? e : real_uring_submit_and_wait_timeout(ring, cqe, wait_nr, ts, sigmask);
}

/* Only FICLONERANGE (merge sharing a base's blocks) is a fault point,
 * counted on the file written to; every other ioctl passes through. */
int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (request == FICLONERANGE && hit_fd(OP_CLONE, fd))
        return -1;
    return real_ioctl(fd, request, arg);
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

/* Whether a close of fd is one to count: of a descriptor that can write,
 * or of a directory (closed after its fsync). Closing a file that was only
 * read loses nothing, whatever it returns. */
static bool close_counts(int fd) {
    int fl = fcntl(fd, F_GETFL);
    struct stat st;
    return fl >= 0 &&
           ((fl & O_ACCMODE) != O_RDONLY || (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)));
}

int close(int fd) {
    shim_init();
    if (fd == log_fd || !close_counts(fd))
        return real_close(fd);
    if (hit_fd(OP_CLOSE, fd)) {
        int e = errno;
        real_close(fd);
        errno = e;
        return -1;
    }
    return real_close(fd);
}

/* Creating a file: open and openat with O_CREAT or O_TMPFILE (the path is
 * then the directory), mkstemp and mkostemp (the template). */
static bool creates(int flags) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

static bool hit_path(enum op op, int dirfd, const char *path) {
    shim_init();
    char a[PATH_MAX];
    abs_path(dirfd, path, a, sizeof a);
    return hit(op, a);
}

/* The mode argument of an open that creates, read by the wrapper itself
 * (a va_list cannot be handed on), and the fault check open and openat
 * share: a create counts as "open", any other open as "open_read". */
#define CREATE_MODE(flags, mode)                                                                   \
    do {                                                                                           \
        if (creates(flags)) {                                                                      \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            mode = (mode_t)va_arg(ap, int);                                                        \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

static bool open_hit(int dirfd, const char *path, int flags) {
    return hit_path(creates(flags) ? OP_OPEN : OP_OPEN_READ, dirfd, path);
}

int openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    CREATE_MODE(flags, mode);
    if (open_hit(dirfd, path, flags))
        return -1;
    return real_openat(dirfd, path, flags, mode);
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    CREATE_MODE(flags, mode);
    if (open_hit(AT_FDCWD, path, flags))
        return -1;
    return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int mkstemp(char *tmpl) {
    return hit_path(OP_OPEN, AT_FDCWD, tmpl) ? -1 : real_mkstemp(tmpl);
}

int mkostemp(char *tmpl, int flags) {
    return hit_path(OP_OPEN, AT_FDCWD, tmpl) ? -1 : real_mkostemp(tmpl, flags);
}

int mkstemp64(char *tmpl) __attribute__((alias("mkstemp")));
int mkostemp64(char *tmpl, int flags) __attribute__((alias("mkostemp")));

/* A link is counted at its new name. */
int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags) {
    return hit_path(OP_LINKAT, newdirfd, newpath)
               ? -1
               : real_linkat(olddirfd, oldpath, newdirfd, newpath, flags);
}

int link(const char *oldpath, const char *newpath) {
    return hit_path(OP_LINKAT, AT_FDCWD, newpath) ? -1 : real_link(oldpath, newpath);
}

int symlink(const char *target, const char *linkpath) {
    return hit_path(OP_SYMLINK, AT_FDCWD, linkpath) ? -1 : real_symlink(target, linkpath);
}

int symlinkat(const char *target, int newdirfd, const char *linkpath) {
    return hit_path(OP_SYMLINK, newdirfd, linkpath) ? -1
                                                    : real_symlinkat(target, newdirfd, linkpath);
}

int mkdir(const char *path, mode_t mode) {
    return hit_path(OP_MKDIR, AT_FDCWD, path) ? -1 : real_mkdir(path, mode);
}

int mkdirat(int dirfd, const char *path, mode_t mode) {
    return hit_path(OP_MKDIR, dirfd, path) ? -1 : real_mkdirat(dirfd, path, mode);
}

int sync_file_range(int fd, off_t off, off_t n, unsigned flags) {
    return hit_fd(OP_SYNC_FILE_RANGE, fd) ? -1 : real_sync_file_range(fd, off, n, flags);
}

/* ---- stdio streams on files under the directory */

static ssize_t cookie_read(void *c, char *buf, size_t n) {
    return read(*(int *)c, buf, n);
}

/* One call per flush: the whole buffer, or 0 (fopencookie's error) with
 * errno set. */
static ssize_t cookie_write(void *c, const char *buf, size_t n) {
    int fd = *(int *)c;
    if (hit_fd(OP_STDIO, fd))
        return 0;
    size_t done = 0;
    while (done < n) {
        ssize_t w = real_write(fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return (ssize_t)done;
        done += (size_t)w;
    }
    return (ssize_t)n;
}

static int cookie_seek(void *c, off64_t *off, int whence) {
    off_t r = lseek(*(int *)c, (off_t)*off, whence);
    if (r < 0)
        return -1;
    *off = r;
    return 0;
}

static int cookie_close(void *c) {
    int fd = *(int *)c;
    free(c);
    return close(fd); /* counted as a close */
}

/* open(2) flags for an fopen mode that writes, or -1 for one that only reads. */
static int mode_flags(const char *mode) {
    int flags;
    switch (mode[0]) {
    case 'w':
        flags = O_CREAT | O_TRUNC;
        break;
    case 'a':
        flags = O_CREAT | O_APPEND;
        break;
    case 'r':
        flags = 0;
        break;
    default:
        return -1;
    }
    bool plus = strchr(mode, '+') != NULL;
    if (mode[0] == 'r' && !plus)
        return -1;
    flags |= plus ? O_RDWR : O_WRONLY;
    if (strchr(mode, 'e'))
        flags |= O_CLOEXEC;
    if (strchr(mode, 'x'))
        flags |= O_EXCL;
    return flags;
}

FILE *fopen(const char *path, const char *mode) {
    shim_init();
    int flags = mode_flags(mode);
    char a[PATH_MAX];
    abs_path(AT_FDCWD, path, a, sizeof a);
    if (flags < 0 || !under_dir(a))
        return real_fopen(path, mode);
    int *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = open(path, flags, 0666); /* counted as an open when it creates */
    if (*c < 0) {
        free(c);
        return NULL;
    }
    FILE *f = fopencookie(
        c, mode, (cookie_io_functions_t){cookie_read, cookie_write, cookie_seek, cookie_close});
    if (!f) {
        int e = errno;
        real_close(*c);
        free(c);
        errno = e;
    }
    return f;
}

FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));
