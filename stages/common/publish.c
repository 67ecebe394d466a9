/* publish.c: temporary names, their sweep, and the rename that publishes;
 * see publish.h. */
#include "stages/common/publish.h"

#include "stages/common/scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sp_sync_dir(const char *dir, sp_error *err) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sp_errorf_errno(err, "%s: cannot sync directory", dir);
    int rc = fsync(fd) ? sp_errorf_errno(err, "%s: cannot sync directory", dir) : 0;
    close(fd);
    return rc;
}

/* The directory part of path ("." when it has none). */
static void parent_of(const char *path, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash)
        snprintf(buf, cap, ".");
    else
        *(slash == buf ? slash + 1 : slash) = '\0';
}

int sp_sync_parent(const char *path, sp_error *err) {
    char dir[PATH_MAX];
    parent_of(path, dir, sizeof dir);
    return sp_sync_dir(dir, err);
}

static void host_name(char *buf, size_t cap) {
    snprintf(buf, cap, "host");
    gethostname(buf, cap - 1);
    buf[cap - 1] = '\0';
    for (char *c = buf; *c; c++)
        if (*c == '/' || *c == '-')
            *c = '_';
}

void sp_publish_owner(char *buf, size_t cap) {
    char host[SP_PUBLISH_OWNER_MAX - 24];
    host_name(host, sizeof host);
    snprintf(buf, cap, "%s-%ld", host, (long)getpid());
}

int sp_publish_temp(const char *target, char *buf, size_t cap, sp_error *err) {
    char owner[SP_PUBLISH_OWNER_MAX];
    sp_publish_owner(owner, sizeof owner);
    int n = snprintf(buf, cap, "%s" SP_PUBLISH_TMP "%s", target, owner);
    if (n < 0 || (size_t)n >= cap)
        return sp_errorf(err, "%s: the path is too long", target);
    return 0;
}

/* Whether name (after the prefix) is "<host>-<pid>[.anything]" of this
 * host and a process that is gone. */
static bool dead_owner(const char *rest, const char *host) {
    size_t h = strlen(host);
    if (strncmp(rest, host, h) || rest[h] != '-')
        return false;
    char *end;
    long pid = strtol(rest + h + 1, &end, 10);
    if (pid <= 0 || end == rest + h + 1 || (*end && *end != '.'))
        return false;
    return kill((pid_t)pid, 0) && errno == ESRCH;
}

int sp_publish_sweep(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char host[SP_PUBLISH_OWNER_MAX - 24];
    host_name(host, sizeof host);
    size_t plen = strlen(prefix);
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, plen) || !dead_owner(e->d_name + plen, host))
            continue;
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path &&
            sp_remove_tree(path, NULL) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int sp_publish_sweep_beside(const char *target) {
    char dir[PATH_MAX], prefix[NAME_MAX + sizeof SP_PUBLISH_TMP];
    parent_of(target, dir, sizeof dir);
    const char *slash = strrchr(target, '/');
    snprintf(prefix, sizeof prefix, "%s" SP_PUBLISH_TMP, slash ? slash + 1 : target);
    return sp_publish_sweep(dir, prefix);
}

/* fsyncs what is at path: a file's data or a directory's entries (a
 * symlink has nothing to sync). */
static int sync_entry(const char *path, sp_error *err) {
    struct stat st;
    if (lstat(path, &st))
        return sp_errorf_errno(err, "%s: cannot stat", path);
    if (S_ISLNK(st.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sp_errorf_errno(err, "%s: cannot open", path);
    int rc = fsync(fd) ? sp_errorf_errno(err, "%s: fsync failed", path) : 0;
    close(fd);
    return rc;
}

/* The fsyncs after the rename: to's directory, and from's with
 * SP_PUBLISH_SYNC_FROM_DIR. */
static int sync_after(const char *from, const char *to, unsigned flags, sp_error *err) {
    if (sp_sync_parent(to, err))
        return -1;
    return flags & SP_PUBLISH_SYNC_FROM_DIR ? sp_sync_parent(from, err) : 0;
}

/* Puts from at to: exchanged with to's entry when flags ask for it and
 * there is one (1), renamed otherwise (0); -1 with errno when neither. A
 * file system without RENAME_EXCHANGE gets the rename, which still
 * replaces anything but a directory with entries. */
static int put_in_place(const char *from, const char *to, unsigned flags) {
    if (flags & SP_PUBLISH_EXCHANGE) {
        if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE) == 0)
            return 1;
        if (errno != ENOENT && errno != EINVAL)
            return -1;
    }
    return rename(from, to) ? -1 : 0;
}

int sp_publish(const char *from, const char *to, unsigned flags, sp_published *pub, sp_error *err) {
    sp_published local;
    if (!pub)
        pub = &local;
    snprintf(pub->from, sizeof pub->from, "%s", from);
    snprintf(pub->to, sizeof pub->to, "%s", to);
    pub->exchanged = false;
    if ((flags & SP_PUBLISH_SYNC) && sync_entry(from, err))
        return -1;
    int how = put_in_place(from, to, flags);
    if (how < 0) {
        if ((flags & SP_PUBLISH_KEEP) && (errno == EEXIST || errno == ENOTEMPTY))
            return 1;
        return sp_errorf_errno(err, "%s: cannot rename to %s", from, to);
    }
    pub->exchanged = how == 1;
    sp_error sync_err = {0};
    if (sync_after(from, to, flags, &sync_err) == 0)
        return 0;
    int e = errno;
    if (flags & SP_PUBLISH_UNDO) {
        /* Put back as it was: the caller gets a failed publish, which it
         * handles as it would a failed rename. */
        sp_publish_undo(pub, NULL);
        errno = e;
        return sp_errorf(err, "%s", sync_err.msg);
    }
    errno = e;
    sp_errorf(err, "%s", sync_err.msg);
    return SP_PUBLISH_UNSYNCED;
}

int sp_publish_undo(const sp_published *pub, sp_error *err) {
    int rc = pub->exchanged ? renameat2(AT_FDCWD, pub->from, AT_FDCWD, pub->to, RENAME_EXCHANGE)
                            : rename(pub->to, pub->from);
    if (rc)
        return sp_errorf_errno(err, "%s: cannot put back as %s", pub->to, pub->from);
    /* Best effort: a crash that loses the undo finds the publish, as
     * consistent a state as the one put back. */
    (void)sp_sync_parent(pub->to, NULL);
    return 0;
}
