/* scratch.c: scratch directories and tree removal; see scratch.h. */
#include "stages/common/scratch.h"

#include "stages/common/cleanup.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* nftw visits a directory's entries before the directory (FTW_DEPTH), so
 * every directory is empty by the time it is removed. An entry gone
 * already (removed by someone else meanwhile) is what was wanted. */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
    return rc && errno != ENOENT ? -1 : 0;
}

int sp_remove_tree(const char *path, sp_error *err) {
    struct stat st;
    if (lstat(path, &st))
        return errno == ENOENT ? 0 : sp_errorf_errno(err, "%s: cannot stat", path);
    if (!S_ISDIR(st.st_mode))
        return unlink(path) && errno != ENOENT ? sp_errorf_errno(err, "%s: cannot remove", path)
                                               : 0;
    /* FTW_PHYS: a symlink inside is removed itself, never followed. */
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
        return sp_errorf_errno(err, "%s: cannot remove", path);
    return 0;
}

typedef struct dir_made {
    sp_scratch_dir *dir;
    int error; /* mkdtemp's errno, 0 when it made the directory */
} dir_made;

static void create_registered(void *arg) {
    dir_made *m = arg;
    if (!mkdtemp(m->dir->path))
        m->error = errno;
    else
        m->dir->cleanup_slot = sp_cleanup_add(m->dir->path);
}

int sp_scratch_dir_create(sp_scratch_dir *d, const char *base, const char *prefix, sp_error *err) {
    d->path = NULL;
    d->cleanup_slot = -1;
    if (!base || !*base)
        base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    if (asprintf(&d->path, "%s/%s.XXXXXX", base, prefix) < 0) {
        d->path = NULL;
        return sp_errorf(err, "out of memory");
    }
    dir_made m = {d, 0};
    sp_cleanup_create(create_registered, &m);
    if (m.error) {
        free(d->path);
        d->path = NULL;
        errno = m.error;
        return sp_errorf_errno(err, "%s: cannot create the scratch directory", base);
    }
    return 0;
}

int sp_scratch_dir_remove(sp_scratch_dir *d, sp_error *err) {
    if (!d->path)
        return 0;
    sp_cleanup_remove(d->cleanup_slot);
    d->cleanup_slot = -1;
    int rc = sp_remove_tree(d->path, NULL);
    if (rc)
        sp_errorf_errno(err, "%s: cannot remove the scratch directory", d->path);
    free(d->path);
    d->path = NULL;
    return rc;
}
