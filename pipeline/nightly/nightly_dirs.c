/* nightly_dirs.c: lock, cleanup, publishing and retention for nightly; see nightly_dirs.h. */
#include "pipeline/nightly/nightly_dirs.h"

#include "stages/common/cleanup.h"
#include "stages/common/scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int nightly_lock(const char *dir, int *fd, pid_t *holder, sp_error *err) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.lock", dir);
    *holder = 0;
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0)
        return sp_errorf_errno(err, "%s: cannot open lock file", path);
    if (flock(f, LOCK_EX | LOCK_NB)) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            char buf[32] = {0};
            if (pread(f, buf, sizeof buf - 1, 0) > 0)
                *holder = (pid_t)strtol(buf, NULL, 10);
            close(f);
            return 1;
        }
        close(f);
        errno = e;
        return sp_errorf_errno(err, "%s: cannot lock", path);
    }
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(f, 0) || pwrite(f, buf, (size_t)n, 0) != n) {
        sp_errorf_errno(err, "%s: cannot write pid", path);
        close(f);
        return -1;
    }
    *fd = f;
    return 0;
}

int nightly_clean_stale(const char *dir, void (*note)(void *ctx, const char *name), void *ctx,
                        sp_error *err) {
    DIR *d = opendir(dir);
    if (!d)
        return sp_errorf_errno(err, "%s: cannot open", dir);
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, NIGHTLY_STAGING_PREFIX, strlen(NIGHTLY_STAGING_PREFIX)))
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (sp_remove_tree(path, err)) {
            closedir(d);
            return -1;
        }
        if (note)
            note(ctx, e->d_name);
        removed++;
    }
    closedir(d);
    char cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s/current", dir);
    int links = sp_publish_sweep_beside(cur);
    if (links > 0 && note)
        note(ctx, "current" SP_PUBLISH_TMP "*");
    return removed + (links > 0 ? links : 0);
}

/* The greatest entry name in path (not starting with '.'), or "" when empty. */
static void greatest_name(const char *path, char *out, size_t cap) {
    out[0] = '\0';
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strcmp(e->d_name, out) > 0)
            snprintf(out, cap, "%s", e->d_name);
    closedir(d);
}

int nightly_unique_name(const char *dir, const char *sub, const char *stamp, const char *base,
                        char *out, size_t cap, sp_error *err) {
    char subdir[PATH_MAX - 512], greatest[NAME_MAX + 1];
    snprintf(subdir, sizeof subdir, "%s/%s", dir, sub);
    greatest_name(subdir, greatest, sizeof greatest);
    /* Retention goes by name, so a new name must sort after every existing
     * one: two runs in one second get <stamp>-x, then <stamp>.002-x ('-'
     * sorts before '.'). Only a clock set back defeats that; then any free
     * name will do. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 1; i < 1000; i++) {
            if (i == 1)
                snprintf(out, cap, "%s-%s", stamp, base);
            else
                snprintf(out, cap, "%s.%03d-%s", stamp, i, base);
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", subdir, out);
            struct stat st;
            if ((pass == 1 || strcmp(out, greatest) > 0) && lstat(path, &st) && errno == ENOENT)
                return 0;
        }
    }
    return sp_errorf(err, "%s: no free name for %s-%s", subdir, stamp, base);
}

int nightly_move(const char *dir, const char *staging, const char *sub, const char *name,
                 sp_published *moved, sp_error *err) {
    char to[PATH_MAX];
    snprintf(to, sizeof to, "%s/%s/%s", dir, sub, name);
    /* A move that may not survive a power cut is undone: it leaves the
     * caller where a failed rename would have, with staging to record. */
    return sp_publish(staging, to, SP_PUBLISH_SYNC | SP_PUBLISH_SYNC_FROM_DIR | SP_PUBLISH_UNDO,
                      moved, err)
               ? -1
               : 0;
}

int nightly_swap_current(const char *dir, const char *target, sp_error *err) {
    char tmp[PATH_MAX], cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s/current", dir);
    if (sp_publish_temp(cur, tmp, sizeof tmp, err))
        return -1;
    /* Registered before it exists: a signal at any point of the swap
     * removes it (the new link before the exchange, the old one after). */
    int slot = sp_cleanup_add(tmp);
    unlink(tmp);
    int rc = -1;
    if (symlink(target, tmp))
        sp_errorf_errno(err, "%s: cannot create symlink", tmp);
    else
        /* Exchanged in one step, a reader of current sees the old build or
         * the new one, never neither; a swap that may not survive a power
         * cut is undone, reported as failed: a failed publish leaves
         * current as it found it. */
        rc = sp_publish(tmp, cur, SP_PUBLISH_EXCHANGE | SP_PUBLISH_UNDO, NULL, err) ? -1 : 0;
    /* The old link after an exchange; the new one after a failure. */
    unlink(tmp);
    sp_cleanup_remove(slot);
    return rc;
}

int nightly_current_target(const char *dir, char *out, size_t cap, sp_error *err) {
    char cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s/current", dir);
    ssize_t n = readlink(cur, out, cap - 1);
    if (n < 0) {
        out[0] = '\0';
        return errno == ENOENT ? 0 : sp_errorf_errno(err, "%s: cannot read link", cur);
    }
    out[n] = '\0';
    return 0;
}

json_t *nightly_current_manifest(const char *dir, char *out, size_t cap) {
    sp_error ignored = {0};
    if (nightly_current_target(dir, out, cap, &ignored) || !out[0])
        return NULL;
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s/manifest.json", dir, out);
    json_t *m = json_load_file(path, 0, NULL);
    const char *status = json_string_value(json_object_get(m, "status"));
    if (status && !strcmp(status, "published"))
        return m;
    json_decref(m);
    return NULL;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int nightly_retain(const char *dir, const char *sub, uint64_t keep, const char *protect,
                   void (*note)(void *ctx, const char *name), void *ctx, sp_error *err) {
    char subdir[PATH_MAX - 512];
    snprintf(subdir, sizeof subdir, "%s/%s", dir, sub);
    DIR *d = opendir(subdir);
    if (!d)
        return errno == ENOENT ? 0 : sp_errorf_errno(err, "%s: cannot open", subdir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) {
                rc = sp_errorf(err, "%s: out of memory", subdir);
                break;
            }
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = sp_errorf(err, "%s: out of memory", subdir);
            break;
        }
        n++;
    }
    closedir(d);
    int removed = 0;
    if (rc == 0) {
        qsort(names, n, sizeof *names, by_name);
        for (size_t i = 0; i + keep < n; i++) {
            if (protect && !strcmp(names[i], protect))
                continue;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", subdir, names[i]);
            if (sp_remove_tree(path, err)) {
                rc = -1;
                break;
            }
            if (note)
                note(ctx, names[i]);
            removed++;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc ? -1 : removed;
}

/* The directory glob(3) could not read, and why: glob's error callback
 * takes no context. */
static _Thread_local struct {
    char path[PATH_MAX];
    int errnum;
} glob_failure;

static int note_glob_failure(const char *path, int errnum) {
    snprintf(glob_failure.path, sizeof glob_failure.path, "%s", path);
    glob_failure.errnum = errnum;
    return 1;
}

int nightly_glob(const char *pattern, glob_t *g, sp_error *err) {
    glob_failure.path[0] = '\0';
    glob_failure.errnum = 0;
    int rc = glob(pattern, GLOB_ERR, note_glob_failure, g);
    if (rc == GLOB_NOMATCH)
        return 1;
    if (!rc)
        return 0;
    if (rc == GLOB_ABORTED && glob_failure.errnum == ENOENT)
        return sp_errorf(err, "'%s': directory %s does not exist", pattern, glob_failure.path);
    if (rc == GLOB_ABORTED && glob_failure.errnum) {
        errno = glob_failure.errnum;
        return sp_errorf_errno(err, "'%s': cannot read directory %s", pattern, glob_failure.path);
    }
    return sp_errorf(err, "'%s': cannot search for matches", pattern);
}

int nightly_newest_match(const char *pattern, char **out, sp_error *err) {
    glob_t g;
    int rc = nightly_glob(pattern, &g, err);
    if (rc < 0)
        return -1;
    if (rc > 0)
        return sp_errorf(err, "no file matches '%s'", pattern);
    const char *best = NULL;
    struct timespec best_t = {0};
    for (size_t i = 0; i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) || !S_ISREG(st.st_mode))
            continue;
        /* glob sorts by name, so on equal mtimes the later name wins. */
        if (!best || st.st_mtim.tv_sec > best_t.tv_sec ||
            (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec >= best_t.tv_nsec)) {
            best = g.gl_pathv[i];
            best_t = st.st_mtim;
        }
    }
    if (!best) {
        globfree(&g);
        return sp_errorf(err, "no regular file matches '%s'", pattern);
    }
    *out = strdup(best);
    globfree(&g);
    return *out ? 0 : sp_errorf(err, "out of memory");
}

int nightly_mkdirs(const char *path, sp_error *err) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST)
            return sp_errorf_errno(err, "%s: cannot create directory", buf);
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST)
        return sp_errorf_errno(err, "%s: cannot create directory", buf);
    return 0;
}
