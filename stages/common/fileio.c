/* fileio.c: atomic output files and scratch files; see fileio.h (the whole-buffer
 * reads and writes it declares are in fullio.c). */
#include "stages/common/fileio.h"

#include "stages/common/cleanup.h"
#include "stages/common/publish.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool o_tmpfile_off;

static void read_no_o_tmpfile(void) {
    const char *v = getenv(SP_NO_O_TMPFILE_ENV);
    o_tmpfile_off = v && !strcmp(v, "1");
}

/* O_TMPFILE on dir, or -1 with errno EOPNOTSUPP when it is switched off
 * (SP_NO_O_TMPFILE_ENV, read once). */
static int open_tmpfile(const char *dir, mode_t mode) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_no_o_tmpfile);
    if (o_tmpfile_off) {
        errno = EOPNOTSUPP;
        return -1;
    }
    return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
}

/* Whether open_tmpfile failed for want of O_TMPFILE (a kernel or file
 * system without it), so a named file may stand in; any other error (a
 * full disk, EIO, a missing directory) is the caller's error. */
static bool no_o_tmpfile(int e) {
    return e == EOPNOTSUPP || e == EISDIR;
}

static void create_named(void *arg) {
    sp_outfile *f = arg;
    f->fd = mkostemp(f->tmp_path, O_CLOEXEC);
    if (f->fd >= 0)
        f->cleanup_slot = sp_cleanup_add(f->tmp_path);
}

static char *dir_of(const char *path) {
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    char *dir = strdup(dirname(copy));
    free(copy);
    return dir;
}

int sp_outfile_open(sp_outfile *f, const char *path, sp_error *err) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->cleanup_slot = -1;
    size_t n = strlen(path);
    f->path = strdup(path);
    size_t cap = n + sizeof SP_PUBLISH_TMP + SP_PUBLISH_OWNER_MAX + 8;
    f->tmp_path = malloc(cap);
    char *dir = dir_of(path);
    if (!f->path || !f->tmp_path || !dir) {
        free(dir);
        sp_outfile_abort(f);
        return sp_errorf(err, "%s: out of memory", path);
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        free(dir);
        free(f->tmp_path);
        f->tmp_path = NULL;
        f->direct = true;
        if ((f->fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
            sp_errorf_errno(err, "%s: cannot open output", path);
            sp_outfile_abort(f);
            return -1;
        }
        return 0;
    }
    /* Beside the target (same file system, so rename is atomic), and
     * recognisable as ours: its owner's part (publish.h) lets a later
     * sweep tell a dead process's leftover from a live one's. */
    char owner[SP_PUBLISH_OWNER_MAX];
    sp_publish_owner(owner, sizeof owner);
    snprintf(f->tmp_path, cap, "%s" SP_PUBLISH_TMP "%s.XXXXXX", path, owner);
    /* Preferably a file with no name until it is complete, so that even
     * kill -9 leaves nothing behind; file systems without O_TMPFILE get a
     * named temporary file, removed on errors and signals. */
    f->fd = open_tmpfile(dir, 0644);
    free(dir);
    if (f->fd >= 0) {
        f->anonymous = true;
    } else {
        if (no_o_tmpfile(errno))
            sp_cleanup_create(create_named, f);
        if (f->fd < 0) {
            int e = errno;
            free(f->tmp_path);
            f->tmp_path = NULL;
            sp_outfile_abort(f);
            errno = e;
            return sp_errorf_errno(err, "%s: cannot create output", path);
        }
    }
    if (fchmod(f->fd, 0644) != 0) {
        sp_errorf_errno(err, "%s: cannot set permissions", f->path);
        sp_outfile_abort(f);
        return -1;
    }
    return 0;
}

static void link_anonymous(void *arg) {
    sp_outfile *f = arg;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
    size_t n = strlen(f->tmp_path);
    for (int attempt = 0; attempt < 100; attempt++) {
        static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
        uint64_t r = ((uint64_t)getpid() << 20) ^ (uint64_t)attempt * 0x9E3779B97F4A7C15ull ^
                     (uint64_t)(uintptr_t)f;
        for (size_t i = n - 6; i < n; i++, r /= 36)
            f->tmp_path[i] = digits[r % 36];
        if (linkat(AT_FDCWD, proc, AT_FDCWD, f->tmp_path, AT_SYMLINK_FOLLOW) == 0) {
            f->cleanup_slot = sp_cleanup_add(f->tmp_path);
            f->anonymous = false;
            return;
        }
        if (errno != EEXIST)
            return;
    }
}

void *sp_io_alloc(size_t n) {
    void *p;
    return posix_memalign(&p, 4096, n ? n : 1) == 0 ? p : NULL;
}

static int commit(sp_outfile *f, unsigned flags, sp_published *pub, sp_error *err) {
    if (pub)
        memset(pub, 0, sizeof *pub);
    if (f->direct) {
        /* Nothing to sync or rename: a device or pipe takes the bytes as
         * they are written. */
        int rc = close(f->fd) == 0 ? 0 : sp_errorf_errno(err, "%s: close failed", f->path);
        f->fd = -1;
        sp_outfile_abort(f);
        return rc;
    }
    if (fsync(f->fd) != 0) {
        sp_errorf_errno(err, "%s: fsync failed", f->path);
        sp_outfile_abort(f);
        return -1;
    }
    /* An anonymous file gets a temporary name only now, complete and
     * synced, for the moment until rename puts it in place. */
    if (f->anonymous) {
        sp_cleanup_create(link_anonymous, f);
        if (f->anonymous) {
            sp_errorf_errno(err, "%s: cannot name the new file", f->path);
            sp_outfile_abort(f);
            return -1;
        }
    }
    if (close(f->fd) != 0) {
        f->fd = -1;
        sp_errorf_errno(err, "%s: close failed", f->path);
        sp_outfile_abort(f);
        return -1;
    }
    f->fd = -1;
    /* Renamed (not exchanged), too late to undo: the old file is gone.
     * Say exactly what is known. */
    sp_error pub_err = {0};
    int rc = sp_publish(f->tmp_path, f->path, flags, pub, &pub_err);
    if (rc == -1) {
        if (flags & SP_PUBLISH_UNDO)
            sp_errorf(err, "%s: not put in place: %s", f->path, pub_err.msg);
        else
            sp_errorf_errno(err, "%s: cannot rename into place", f->path);
        sp_outfile_abort(f);
        return -1;
    }
    f->placed = true;
    sp_cleanup_remove(f->cleanup_slot);
    f->cleanup_slot = -1;
    free(f->tmp_path);
    f->tmp_path = NULL;
    if (rc)
        sp_errorf(err, "%s: complete and in place, but its name may not survive a crash (%s)",
                  f->path, pub_err.msg);
    sp_outfile_abort(f);
    return rc ? -1 : 0;
}

int sp_outfile_commit(sp_outfile *f, sp_error *err) {
    return commit(f, 0, NULL, err);
}

int sp_outfile_commit_undoable(sp_outfile *f, sp_published *pub, sp_error *err) {
    return commit(f, SP_PUBLISH_EXCHANGE | SP_PUBLISH_UNDO, pub, err);
}

void sp_outfile_abort(sp_outfile *f) {
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp_path && !f->anonymous)
        unlink(f->tmp_path);
    sp_cleanup_remove(f->cleanup_slot);
    f->cleanup_slot = -1;
    free(f->tmp_path);
    free(f->path);
    f->tmp_path = f->path = NULL;
    f->anonymous = f->direct = false;
}

typedef struct scratch_named {
    char *path;
    int fd;
    int error;
} scratch_named;

static void create_scratch_named(void *arg) {
    scratch_named *s = arg;
    s->fd = mkostemp(s->path, O_CLOEXEC);
    s->error = errno;
    if (s->fd >= 0 && unlink(s->path) != 0) {
        s->error = errno;
        close(s->fd);
        s->fd = -1;
    }
}

int sp_tmpfile_open(const char *dir, sp_error *err) {
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open_tmpfile(dir, 0600);
    if (fd >= 0)
        return fd;
    if (!no_o_tmpfile(errno))
        return sp_errorf_errno(err, "%s: cannot create a scratch file", dir);
    /* File systems without O_TMPFILE: create, then unlink at once, with
     * sp_cleanup_create, so that no handler runs while the name exists. */
    size_t n = strlen(dir) + 32;
    scratch_named s = {malloc(n), -1, 0};
    if (!s.path)
        return sp_errorf(err, "%s: out of memory", dir);
    snprintf(s.path, n, "%s/" SP_SCRATCH_PREFIX "XXXXXX", dir);
    sp_cleanup_create(create_scratch_named, &s);
    free(s.path);
    if (s.fd < 0) {
        errno = s.error;
        return sp_errorf_errno(err, "%s: cannot create a scratch file", dir);
    }
    return s.fd;
}

int sp_outfile_scratch_open(const sp_outfile *f, sp_error *err) {
    if (f->direct)
        return sp_tmpfile_open(NULL, err);
    char *dir = dir_of(f->path);
    if (!dir)
        return sp_errorf(err, "%s: out of memory", f->path);
    int fd = sp_tmpfile_open(dir, err);
    free(dir);
    return fd;
}
