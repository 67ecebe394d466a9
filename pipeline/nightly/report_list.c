/*
 * report_list.c: the build directories of a nightly output directory, and
 * the temporary files a killed page writer left in them; see report.h.
 */
#include "pipeline/nightly/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Newest first: names start with their UTC time ("20260131T020000Z"), so
 * the name after "builds/" or "failed/" sorts in run order. */
static int newest_first(const void *a, const void *b) {
    const char *x = *(char *const *)a + 7, *y = *(char *const *)b + 7;
    int c = strcmp(y, x);
    return c ? c : strcmp(*(char *const *)a, *(char *const *)b);
}

void report_list_free(char **names, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int report_list_builds(const char *out_dir, char ***out, size_t *count, sp_error *err) {
    static const char *const subs[] = {"builds", "failed"};
    char **names = NULL;
    size_t n = 0, cap = 0, found = 0;
    for (size_t s = 0; s < 2; s++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", out_dir, subs[s]);
        DIR *d = opendir(path);
        if (!d) {
            if (errno == ENOENT)
                continue;
            report_list_free(names, n);
            return sp_errorf_errno(err, "%s: cannot list", path);
        }
        found++;
        struct dirent *e;
        while ((e = readdir(d))) {
            /* Build directories only: no dot entries, temporary files or links. */
            struct stat st;
            if (e->d_name[0] == '.' ||
                (e->d_type != DT_DIR &&
                 (e->d_type != DT_UNKNOWN ||
                  fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))))
                continue;
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 16;
                char **g = realloc(names, nc * sizeof *g);
                if (!g)
                    break;
                names = g;
                cap = nc;
            }
            if (asprintf(&names[n], "%s/%s", subs[s], e->d_name) < 0)
                break;
            n++;
        }
        closedir(d);
        if (e) {
            report_list_free(names, n);
            return sp_errorf(err, "%s: out of memory", path);
        }
    }
    if (!found) {
        report_list_free(names, n);
        return sp_errorf(err, "%s: not a nightly output directory (no builds/ or failed/)",
                         out_dir);
    }
    if (n)
        qsort(names, n, sizeof *names, newest_first);
    *out = names;
    *count = n;
    return 0;
}

/* Unlinks dir's entries named PAGE.tmp.*; the count, or -1. */
static int remove_temps(const char *dir, const char *page, sp_error *err) {
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : sp_errorf_errno(err, "%s: cannot list", dir);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s.tmp.", page);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) && errno != ENOENT) {
            sp_errorf_errno(err, "%s/%s: cannot remove", dir, e->d_name);
            n = -1;
            break;
        }
        n++;
    }
    closedir(d);
    return n;
}

int report_remove_stale(const char *out_dir, sp_error *err) {
    char **names;
    size_t n;
    if (report_list_builds(out_dir, &names, &n, err))
        return -1;
    int total = remove_temps(out_dir, REPORT_INDEX, err);
    for (size_t i = 0; i < n && total >= 0; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", out_dir, names[i]);
        int k = remove_temps(dir, REPORT_PAGE, err);
        total = k < 0 ? -1 : total + k;
    }
    report_list_free(names, n);
    return total;
}
