/*
 * report_list.c: the build directories of a nightly output directory, and
 * the sweep of the temporary files a killed page writer left in them
 * (sp_publish_sweep_beside, as every publish's); see report.h.
 */
#include "pipeline/nightly/report.h"

#include "stages/common/publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int report_remove_stale(const char *out_dir, sp_error *err) {
    char **names;
    size_t n;
    if (report_list_builds(out_dir, &names, &n, err))
        return -1;
    char page[PATH_MAX];
    snprintf(page, sizeof page, "%s/%s", out_dir, REPORT_INDEX);
    int total = sp_publish_sweep_beside(page);
    for (size_t i = 0; i < n; i++) {
        snprintf(page, sizeof page, "%s/%s/%s", out_dir, names[i], REPORT_PAGE);
        total += sp_publish_sweep_beside(page);
    }
    report_list_free(names, n);
    return total;
}
