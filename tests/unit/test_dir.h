/*
 * test_dir.h: scratch directories for the unit tests: a fresh one under
 * $TMPDIR (or /tmp), its removal with everything in it, and a count of its
 * entries (to show that nothing was left behind). Header-only so each test
 * stays one self-contained executable.
 */
#ifndef SSTPIPE_TEST_DIR_H
#define SSTPIPE_TEST_DIR_H

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_DIR_CAP 4096

/* A fresh directory $TMPDIR/NAME.XXXXXX, malloc'd; NULL on failure. */
static inline char *test_dir_make(const char *name) {
    const char *base = getenv("TMPDIR");
    char *d = malloc(TEST_DIR_CAP);
    if (!d)
        return NULL;
    snprintf(d, TEST_DIR_CAP, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
    if (!mkdtemp(d)) {
        free(d);
        return NULL;
    }
    return d;
}

static inline int test_dir_rm(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* Removes dir and everything in it, and frees it; 0, or -1 when something
 * could not be removed. */
static inline int test_dir_remove(char *dir) {
    int rc = dir && nftw(dir, test_dir_rm, 16, FTW_DEPTH | FTW_PHYS) != 0 ? -1 : 0;
    free(dir);
    return rc;
}

/* The entries of dir, "." and ".." aside; -1 when it cannot be read. */
static inline int test_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

#endif
