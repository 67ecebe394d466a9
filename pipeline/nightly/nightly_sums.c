/*
 * nightly_sums.c: the incremental nightly's checksum cache; see
 * nightly_sums.h.
 */
#include "pipeline/nightly/nightly_sums.h"

#include "pipeline/nightly/nightly_dirs.h"
#include "pipeline/nightly/nightly_state.h"
#include "stages/common/publish.h"
#include "stages/common/report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct sums_entry {
    char *path;
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns;
    uint64_t xxh3;
    bool used; /* looked up or recorded by this run */
} sums_entry;

struct nightly_sums {
    char *path;
    sums_entry *e;
    size_t n, cap;
    bool dirty; /* an entry recorded or changed by this run */
};

static int64_t ns_of(struct timespec t) {
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static sums_entry *add_entry(nightly_sums *s, const char *path) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        sums_entry *grown = realloc(s->e, cap * sizeof *grown);
        if (!grown)
            return NULL;
        s->e = grown;
        s->cap = cap;
    }
    sums_entry *e = &s->e[s->n];
    *e = (sums_entry){.path = strdup(path)};
    if (!e->path)
        return NULL;
    s->n++;
    return e;
}

static json_int_t num(json_t *o, const char *key, bool *ok) {
    json_t *v = json_object_get(o, key);
    *ok = *ok && json_is_integer(v);
    return *ok ? json_integer_value(v) : 0;
}

/* The entries of a cache file; false when it is not one. */
static bool parse(nightly_sums *s, json_t *root) {
    json_t *files = json_object_get(root, "files");
    if (!json_is_array(files))
        return false;
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        const char *path = json_string_value(json_object_get(f, "path"));
        const char *hex = json_string_value(json_object_get(f, "xxh3_64"));
        char *end = NULL;
        unsigned long long h = hex ? strtoull(hex, &end, 16) : 0;
        if (!path || !hex || strlen(hex) != 16 || *end)
            return false;
        bool ok = true;
        sums_entry t = {.dev = (uint64_t)num(f, "dev", &ok),
                        .ino = (uint64_t)num(f, "ino", &ok),
                        .size = (uint64_t)num(f, "size", &ok),
                        .mtime_ns = (int64_t)num(f, "mtime_ns", &ok),
                        .ctime_ns = (int64_t)num(f, "ctime_ns", &ok),
                        .xxh3 = h};
        sums_entry *e = ok ? add_entry(s, path) : NULL;
        if (!e)
            return false;
        t.path = e->path;
        *e = t;
    }
    return true;
}

static void clear(nightly_sums *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->e[i].path);
    s->n = 0;
}

nightly_sums *nightly_sums_load(const char *path, nightly_log *log) {
    nightly_sums *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return NULL;
    }
    struct stat st;
    if (stat(path, &st))
        return s; /* none yet */
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root || !parse(s, root)) {
        clear(s);
        nightly_logf(log, "warning: %s: not a checksum cache (%s); every input is hashed", path,
                     root ? "unexpected fields" : jerr.text);
        s->dirty = true;
    }
    json_decref(root);
    return s;
}

static sums_entry *find(nightly_sums *s, const char *path) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->e[i].path, path))
            return &s->e[i];
    return NULL;
}

static bool same_file(const sums_entry *e, const struct stat *st) {
    return e->dev == (uint64_t)st->st_dev && e->ino == (uint64_t)st->st_ino &&
           e->size == (uint64_t)st->st_size && e->mtime_ns == ns_of(st->st_mtim) &&
           e->ctime_ns == ns_of(st->st_ctim);
}

int nightly_sums_hash(nightly_sums *s, const char *path, uint64_t *size, uint64_t *hash,
                      bool *reused, _Atomic uint64_t *done, sp_error *err) {
    *reused = false;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct stat before;
    if (stat(path, &before))
        return sp_errorf_errno(err, "%s: cannot read input", path);
    sums_entry *e = find(s, path);
    if (e && same_file(e, &before)) {
        e->used = true;
        *size = e->size;
        *hash = e->xxh3;
        *reused = true;
        return 0;
    }
    if (nightly_hash_file(path, size, hash, done, err))
        return -1;
    /* Recorded only when the file did not change while it was read and
     * had not changed for a while before (nightly_sums.h). */
    struct stat after;
    bool stable = stat(path, &after) == 0 && ns_of(before.st_ctim) == ns_of(after.st_ctim) &&
                  before.st_ino == after.st_ino && (uint64_t)after.st_size == *size &&
                  ns_of(before.st_ctim) + SUMS_RACY_NS <= ns_of(now);
    if (e) { /* stale: replaced below, or dropped */
        free(e->path);
        *e = s->e[--s->n];
        s->dirty = true;
    }
    if (!stable)
        return 0;
    if (!(e = add_entry(s, path)))
        return sp_errorf(err, "out of memory");
    e->dev = (uint64_t)after.st_dev;
    e->ino = (uint64_t)after.st_ino;
    e->size = *size;
    e->mtime_ns = ns_of(after.st_mtim);
    e->ctime_ns = ns_of(after.st_ctim);
    e->xxh3 = *hash;
    e->used = true;
    s->dirty = true;
    return 0;
}

int nightly_sums_save(nightly_sums *s, const char *staged, sp_error *err) {
    json_t *files = json_array();
    for (size_t i = 0; i < s->n; i++) {
        const sums_entry *e = &s->e[i];
        if (!e->used) {
            s->dirty = true;
            continue;
        }
        char hex[24];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)e->xxh3);
        json_array_append_new(files, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:s}", "path",
                                               e->path, "dev", (json_int_t)e->dev, "ino",
                                               (json_int_t)e->ino, "size", (json_int_t)e->size,
                                               "mtime_ns", (json_int_t)e->mtime_ns, "ctime_ns",
                                               (json_int_t)e->ctime_ns, "xxh3_64", hex));
    }
    if (!s->dirty) {
        json_decref(files);
        return 0;
    }
    json_t *root = json_pack("{s:i, s:o}", "checksums_version", 1, "files", files);
    if (sp_report_write_json(root, staged, err))
        return -1;
    if (sp_publish(staged, s->path, 0, NULL, err))
        return -1;
    s->dirty = false;
    return 0;
}

void nightly_sums_destroy(nightly_sums *s) {
    if (!s)
        return;
    clear(s);
    free(s->e);
    free(s->path);
    free(s);
}
