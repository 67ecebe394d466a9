/*
 * nightly_incr.c: the incremental nightly's plan (which dumps, in which
 * order, which days are missing), its table cache and the merge; see
 * nightly_incr.h.
 *
 * Wikimedia's adds/changes dumps hold every revision a day made, pages of
 * every namespace and new pages included; the extractor keeps a page's
 * last revision and applies [extract] as for a full dump, and a later
 * day's table wins a shared title in the merge, so the published table
 * holds the records of one build of the base and its increments
 * concatenated in date order.
 */
#include "pipeline/nightly/nightly_incr.h"

#include "pipeline/nightly/nightly_build.h"
#include "pipeline/nightly/nightly_dirs.h"
#include "pipeline/nightly/nightly_log.h"
#include "pipeline/nightly/nightly_state.h"
#include "pipeline/nightly/nightly_sums.h"
#include "stages/common/clock.h"
#include "stages/common/compression.h"
#include "stages/common/key.h"
#include "stages/common/publish.h"
#include "stages/common/record.h"
#include "stages/common/scratch.h"
#include "stages/sst/table_reader.h"
#include "stages/sst/table_set.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* ------------------------------------------------------------ dates */

static bool valid_date(uint32_t d) {
    static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    uint32_t y = d / 10000, m = d / 100 % 100, day = d % 100;
    if (y < 1900 || m < 1 || m > 12 || day < 1 || (int)day > days[m - 1])
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return !(m == 2 && day == 29 && !leap);
}

int nightly_dump_date(const char *path, uint32_t *date, sp_error *err) {
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    for (const char *p = name; *p;) {
        if (!isdigit((unsigned char)*p)) {
            p++;
            continue;
        }
        const char *q = p;
        uint32_t v = 0;
        while (isdigit((unsigned char)*q) && q - p < 9)
            v = v * 10 + (uint32_t)(*q++ - '0');
        size_t len = (size_t)(q - p);
        while (isdigit((unsigned char)*q))
            q++, len++;
        if (len == 8 && valid_date(v)) {
            *date = v;
            return 0;
        }
        p = q;
    }
    return sp_errorf(err, "%s: no date (YYYYMMDD) in the file name", path);
}

/* Days since 1970-01-01 of a valid YYYYMMDD, and back. */
static long day_number(uint32_t d) {
    struct tm tm = {.tm_year = (int)(d / 10000) - 1900,
                    .tm_mon = (int)(d / 100 % 100) - 1,
                    .tm_mday = (int)(d % 100),
                    .tm_hour = 12};
    return (long)(timegm(&tm) / 86400);
}

static uint32_t day_date(long n) {
    time_t t = (time_t)n * 86400 + 43200;
    struct tm tm;
    gmtime_r(&t, &tm);
    return (uint32_t)((tm.tm_year + 1900) * 10000 + (tm.tm_mon + 1) * 100 + tm.tm_mday);
}

static json_t *date_json(uint32_t d) {
    char buf[16];
    snprintf(buf, sizeof buf, "%04u-%02u-%02u", d / 10000, d / 100 % 100, d % 100);
    return json_string(buf);
}

/* ------------------------------------------------------------ plan */

static void dump_free(nightly_dump *d) {
    free(d->path);
    free(d->damaged);
    d->path = NULL;
    d->damaged = NULL;
}

void nightly_plan_destroy(nightly_plan *p) {
    dump_free(&p->base);
    for (size_t i = 0; i < p->n_incr; i++)
        dump_free(&p->incr[i]);
    for (size_t i = 0; i < p->n_skipped; i++)
        dump_free(&p->skipped[i]);
    free(p->incr);
    free(p->skipped);
    free(p->deletions_text);
    free(p->deletions);
    free(p->gaps);
    memset(p, 0, sizeof *p);
}

/* Fills d from path: its date, size, mtime and whether it is compressed. */
static int dump_open(nightly_dump *d, const char *path, sp_error *err) {
    memset(d, 0, sizeof *d);
    if (nightly_dump_date(path, &d->date, err))
        return -1;
    struct stat st;
    if (stat(path, &st))
        return sp_errorf_errno(err, "%s: cannot read input", path);
    if (!S_ISREG(st.st_mode))
        return sp_errorf(err, "%s: input is not a regular file", path);
    if (!(d->path = strdup(path)))
        return sp_errorf(err, "out of memory");
    d->size = (uint64_t)st.st_size;
    d->mtime = st.st_mtim.tv_sec;
    d->compressed = sp_compression_of_file(path) != SP_COMPRESSION_NONE;
    return 0;
}

/* The matches of pattern that are regular files, each with its date,
 * sorted by date (then mtime, then name, as glob gives them). */
static int list_dumps(const char *pattern, const char *key, nightly_dump **out, size_t *n,
                      sp_error *err) {
    *out = NULL;
    *n = 0;
    glob_t g;
    int rc = nightly_glob(pattern, &g, err);
    if (rc > 0)
        return 0;
    if (rc < 0) {
        sp_error e = *err;
        sp_error_clear(err);
        return sp_errorf(err, "[input] %s: %s", key, e.msg);
    }
    nightly_dump *list = calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *list);
    if (!list) {
        globfree(&g);
        return sp_errorf(err, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) || !S_ISREG(st.st_mode))
            continue;
        if (dump_open(&list[k], g.gl_pathv[i], err)) {
            sp_error e = *err;
            sp_error_clear(err);
            sp_errorf(err, "[input] %s (%s): %s", key, pattern, e.msg);
            for (size_t j = 0; j < k; j++)
                dump_free(&list[j]);
            free(list);
            globfree(&g);
            return -1;
        }
        /* Insertion by date keeps glob's name order among equal dates. */
        size_t j = k++;
        while (j > 0 && (list[j - 1].date > list[j].date ||
                         (list[j - 1].date == list[j].date && list[j - 1].mtime > list[j].mtime))) {
            nightly_dump t = list[j - 1];
            list[j - 1] = list[j];
            list[j] = t;
            j--;
        }
    }
    globfree(&g);
    *out = list;
    *n = k;
    return 0;
}

static int by_key(const void *a, const void *b) {
    const table_merge_key *x = a, *y = b;
    return sp_key_cmp(x->key, x->len, y->key, y->len);
}

/* [input] deletions: one title a line, exactly as in <title> (trailing
 * CR and empty lines ignored), sorted and without repeats for the merge. */
static int load_deletions(nightly_run_state *r) {
    nightly_plan *p = r->plan;
    const char *path = r->o->deletions;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sp_errorf_errno(&r->err, "[input] deletions: %s: cannot open", path);
    size_t cap = 0, len = 0;
    char *text = NULL;
    for (;;) {
        if (len + 65536 > cap) {
            char *grown = realloc(text, cap = 2 * cap + 65536);
            if (!grown) {
                free(text);
                fclose(f);
                return sp_errorf(&r->err, "[input] deletions: %s: out of memory", path);
            }
            text = grown;
        }
        size_t n = fread(text + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        return sp_errorf_errno(&r->err, "[input] deletions: %s: read failed", path);
    }
    text[len] = '\n';
    size_t lines = 0;
    for (size_t i = 0; i <= len; i++)
        lines += text[i] == '\n';
    p->deletions_text = text;
    if (!(p->deletions = calloc(lines ? lines : 1, sizeof *p->deletions)))
        return sp_errorf(&r->err, "[input] deletions: %s: out of memory", path);
    for (size_t start = 0, i = 0, line = 1; i <= len; i++) {
        if (text[i] != '\n')
            continue;
        size_t end = i;
        if (end > start && text[end - 1] == '\r')
            end--;
        if (end > start) {
            if (end - start > SP_MAX_KEY_BYTES)
                return sp_errorf(&r->err,
                                 "[input] deletions: %s:%zu: a title of %zu bytes "
                                 "(a key holds at most %u)",
                                 path, line, end - start, SP_MAX_KEY_BYTES);
            p->deletions[p->n_deletions++] =
                (table_merge_key){(const uint8_t *)text + start, (uint32_t)(end - start)};
        }
        start = i + 1;
        line++;
    }
    qsort(p->deletions, p->n_deletions, sizeof *p->deletions, by_key);
    size_t k = 0;
    for (size_t i = 0; i < p->n_deletions; i++)
        if (!k || by_key(&p->deletions[k - 1], &p->deletions[i]))
            p->deletions[k++] = p->deletions[i];
    p->n_deletions = k;
    nightly_logf(&r->log, "deletions %s: %zu titles to leave out", path, k);
    return 0;
}

int nightly_incr_plan(nightly_run_state *r, const char *base_arg) {
    nightly_plan *p = r->plan;
    sp_error *err = &r->err;
    if (base_arg) {
        if (dump_open(&p->base, base_arg, err))
            return -1;
    } else {
        nightly_dump *full;
        size_t n;
        if (!r->o->input_glob)
            return sp_errorf(err, "no INPUT given and [input] path is not set");
        if (list_dumps(r->o->input_glob, "path", &full, &n, err))
            return -1;
        if (!n) {
            free(full);
            return sp_errorf(err, "[input] path (%s): no file matches '%s'",
                             r->o->input_glob_origin, r->o->input_glob);
        }
        p->base = full[n - 1]; /* the newest date; of one date, the newest file */
        for (size_t i = 0; i + 1 < n; i++)
            dump_free(&full[i]);
        free(full);
    }
    nightly_dump *all;
    size_t n;
    if (list_dumps(r->o->incremental, "incremental", &all, &n, err))
        return -1;
    p->incr = calloc(n ? n : 1, sizeof *p->incr);
    p->skipped = calloc(n ? n : 1, sizeof *p->skipped);
    if (!p->incr || !p->skipped) {
        for (size_t i = 0; i < n; i++)
            dump_free(&all[i]);
        free(all);
        return sp_errorf(err, "out of memory");
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (all[i].date <= p->base.date) {
            p->skipped[p->n_skipped++] = all[i];
            continue;
        }
        if (p->n_incr && p->incr[p->n_incr - 1].date == all[i].date && !rc)
            rc = sp_errorf(err,
                           "[input] incremental: %s and %s are both dated %u: which one "
                           "holds that day's changes?",
                           p->incr[p->n_incr - 1].path, all[i].path, all[i].date);
        p->incr[p->n_incr++] = all[i];
    }
    free(all);
    if (rc || (r->o->deletions && load_deletions(r)))
        return -1;

    nightly_logf(&r->log, "base %s (%llu bytes, dated %u)", p->base.path,
                 (unsigned long long)p->base.size, p->base.date);
    for (size_t i = 0; i < p->n_skipped; i++)
        nightly_logf(&r->log, "increment %s skipped: dated %u, on or before the base",
                     p->skipped[i].path, p->skipped[i].date);
    long next = day_number(p->base.date) + 1;
    for (size_t i = 0; i < p->n_incr; i++) {
        for (long d = next; d < day_number(p->incr[i].date); d++) {
            uint32_t *grown = realloc(p->gaps, (p->n_gaps + 1) * sizeof *p->gaps);
            if (!grown)
                return sp_errorf(err, "out of memory");
            p->gaps = grown;
            p->gaps[p->n_gaps++] = day_date(d);
            nightly_logf(&r->log,
                         "warning: no increment dated %u: that day's changes are not in the table",
                         day_date(d));
        }
        nightly_logf(&r->log, "increment %s (%llu bytes, dated %u)", p->incr[i].path,
                     (unsigned long long)p->incr[i].size, p->incr[i].date);
        next = day_number(p->incr[i].date) + 1;
    }
    return 0;
}

/* ------------------------------------------------------------ keys */

static int hash_dump(nightly_run_state *r, nightly_sums *sums, nightly_dump *d, uint64_t *read) {
    uint64_t size;
    if (nightly_sums_hash(sums, d->path, &size, &d->xxh3, &d->checksum_reused,
                          &r->log.progress.in_bytes, &r->err))
        return -1;
    d->size = size;
    if (!d->checksum_reused)
        *read += size;
    nightly_logf(&r->log, "%s: xxh3_64 %016llx%s", d->path, (unsigned long long)d->xxh3,
                 d->checksum_reused ? " (reused from " NIGHTLY_CACHE_DIR "/" NIGHTLY_SUMS_FILE
                                      ": the same size, times and inode as when it was hashed)"
                                    : "");
    return 0;
}

/* Whether the base is built as a table set ([cluster] shards > 1): then
 * the night publishes a set too, one shard for each of the base's. */
static bool base_is_set(const nightly_run_state *r) {
    return r->o->cluster && r->o->cluster_build.plan.shards > 1;
}

/* A set's name says its shard count: another count is another base. */
static void name_table(nightly_dump *d, const char *kind, uint64_t opts, uint64_t shards) {
    if (shards > 1)
        snprintf(d->table, sizeof d->table, "%s-%u-%016llx-%016llx-%llushards.set", kind, d->date,
                 (unsigned long long)d->xxh3, (unsigned long long)opts, (unsigned long long)shards);
    else
        snprintf(d->table, sizeof d->table, "%s-%u-%016llx-%016llx.sst", kind, d->date,
                 (unsigned long long)d->xxh3, (unsigned long long)opts);
}

int nightly_incr_checksum(nightly_run_state *r) {
    nightly_plan *p = r->plan;
    uint64_t total = p->base.size;
    for (size_t i = 0; i < p->n_incr; i++)
        total += p->incr[i].size;
    nightly_stage_begin(&r->log, "checksum", total);
    double w = sp_clock_seconds(), c = sp_process_cpu_seconds();
    char sums_path[PATH_MAX * 2];
    snprintf(sums_path, sizeof sums_path, "%s/" NIGHTLY_CACHE_DIR "/" NIGHTLY_SUMS_FILE, r->dir);
    nightly_sums *sums = nightly_sums_load(sums_path, &r->log);
    uint64_t read = 0;
    int rc = sums ? hash_dump(r, sums, &p->base, &read) : sp_errorf(&r->err, "out of memory");
    for (size_t i = 0; rc == 0 && i < p->n_incr; i++)
        rc = hash_dump(r, sums, &p->incr[i], &read);
    char staged[PATH_MAX * 2];
    snprintf(staged, sizeof staged, "%s/" NIGHTLY_SUMS_FILE, r->staging);
    if (rc == 0)
        rc = nightly_sums_save(sums, staged, &r->err);
    nightly_sums_destroy(sums);
    if (rc == 0 && r->o->deletions)
        rc = nightly_hash_file(r->o->deletions, &p->deletions_size, &p->deletions_xxh3, NULL,
                               &r->err);
    nightly_stage_end(&r->log);
    if (rc)
        return -1;
    /* The manifest's input is the base. */
    r->input_size = p->base.size;
    r->input_xxh3 = p->base.xxh3;
    r->have_checksum = true;
    /* bytes_in: what was read, the inputs whose checksum was reused left out. */
    nightly_manifest_stage(r, "checksum", sp_clock_seconds() - w, sp_process_cpu_seconds() - c,
                           read, 0, -1, -1);

    p->options_key = r->o->table_key;
    name_table(&p->base, "base", p->options_key,
               base_is_set(r) ? r->o->cluster_build.plan.shards : 1);
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return sp_errorf(&r->err, "out of memory");
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, p->base.table, strlen(p->base.table));
    for (size_t i = 0; i < p->n_incr; i++) {
        name_table(&p->incr[i], "incr", p->options_key, 1);
        XXH3_64bits_update(st, p->incr[i].table, strlen(p->incr[i].table));
    }
    if (r->o->deletions) {
        char del[64];
        snprintf(del, sizeof del, "deletions-%016llx", (unsigned long long)p->deletions_xxh3);
        XXH3_64bits_update(st, del, strlen(del));
    }
    p->inputs_key = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return 0;
}

/* ------------------------------------------------------------ up to date */

bool nightly_incr_up_to_date(nightly_run_state *r) {
    nightly_plan *p = r->plan;
    char target[PATH_MAX];
    json_t *m = nightly_current_manifest(r->dir, target, sizeof target);
    if (!m)
        return false;
    char want[24];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)p->inputs_key);
    const char *key =
        json_string_value(json_object_get(json_object_get(m, "incremental"), "inputs_xxh3_64"));
    bool same = key && !strcmp(key, want);
    json_decref(m);
    if (same)
        snprintf(p->up_to_date_with, sizeof p->up_to_date_with, "%s", target);
    return same;
}

/* ------------------------------------------------------------ space */

/* The table a dump of size bytes gives at most (see nightly.c's estimate). */
static uint64_t table_estimate(const nightly_run_state *r, const nightly_dump *d) {
    return nightly_table_estimate(r->o->build.max_bytes, d->size, d->compressed);
}

static bool in_cache(const nightly_run_state *r, const nightly_dump *d) {
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/" NIGHTLY_CACHE_DIR "/%s", r->dir, d->table);
    return access(path, F_OK) == 0;
}

void nightly_incr_space(const nightly_run_state *r, uint64_t *need, uint64_t *largest) {
    const nightly_plan *p = r->plan;
    /* The merged table holds at most every input's records. */
    uint64_t merged = table_estimate(r, &p->base), build = 0;
    *largest = 0;
    for (size_t i = 0; i <= p->n_incr; i++) {
        const nightly_dump *d = i ? &p->incr[i - 1] : &p->base;
        uint64_t t = table_estimate(r, d);
        if (i)
            merged += t;
        if (!in_cache(r, d)) {
            build += t;
            if (t > *largest)
                *largest = t;
        }
    }
    *need = merged + build;
}

/* ------------------------------------------------------------ build */

/* Whether a cached table still opens (footer and index check out), or a
 * cached set's manifest reads with every shard file there at its size;
 * one that does not is removed so that it is built again. The merge
 * checks every block it reads. */
static bool cache_usable(nightly_run_state *r, const char *path) {
    sp_error err = {0};
    if (table_set_is_set_path(path)) {
        table_set *set = table_set_read(path, &err);
        table_set_free(set);
        if (set)
            return true;
    } else {
        sst_reader *t = sst_reader_open(path, &err);
        if (t) {
            sst_reader_close(t);
            return true;
        }
    }
    nightly_logf(&r->log, "warning: cached table unusable, building it again: %s", err.msg);
    sp_error ignored = {0};
    sp_remove_tree(path, &ignored);
    return false;
}

static int build_one(nightly_run_state *r, nightly_dump *d, const char *what) {
    char cached[PATH_MAX * 2], staged[PATH_MAX * 2], cache_dir[PATH_MAX];
    snprintf(cache_dir, sizeof cache_dir, "%s/" NIGHTLY_CACHE_DIR, r->dir);
    snprintf(cached, sizeof cached, "%s/%s", cache_dir, d->table);
    if (access(cached, F_OK) == 0 && cache_usable(r, cached)) {
        d->cached = true;
        nightly_logf(&r->log, "%s: cached table reused: %s/%s", what, NIGHTLY_CACHE_DIR, d->table);
        return 0;
    }
    snprintf(staged, sizeof staged, "%s/%s", r->staging, d->table);
    if (nightly_build_into(r, d->path, d->size, staged, d != &r->plan->base, &d->stats))
        return -1;
    d->built = true;
    /* Whole or not at all: the rename is the entry's commit. */
    if (sp_publish(staged, cached, 0, NULL, &r->err))
        return -1;
    nightly_logf(&r->log, "%s: built and cached as %s/%s", what, NIGHTLY_CACHE_DIR, d->table);
    return 0;
}

int nightly_incr_build(nightly_run_state *r) {
    nightly_plan *p = r->plan;
    if (build_one(r, &p->base, "base"))
        return -1;
    for (size_t i = 0; i < p->n_incr; i++) {
        char what[32];
        snprintf(what, sizeof what, "increment %u", p->incr[i].date);
        if (build_one(r, &p->incr[i], what))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ merge */

/* After a merge failed reading input i (-1: not an input's error): the
 * table in cache/ is damaged or unreadable, whatever its footer said when
 * it was opened. Unless it was built again already in this run, the
 * failure is logged, the table removed and built again from its dump, and
 * true returned for the merge to be tried again; else false, r->err
 * saying why the run fails. The merge reads and checks every block of
 * every input, so no damaged block reaches the merged table. */
static bool rebuild_damaged(nightly_run_state *r, int i, bool *rebuilt) {
    nightly_plan *p = r->plan;
    if (i < 0 || rebuilt[i])
        return false;
    rebuilt[i] = true;
    nightly_dump *d = i ? &p->incr[i - 1] : &p->base;
    char path[PATH_MAX * 2], what[32];
    snprintf(path, sizeof path, "%s/" NIGHTLY_CACHE_DIR "/%s", r->dir, d->table);
    if (i)
        snprintf(what, sizeof what, "increment %u", d->date);
    else
        snprintf(what, sizeof what, "base");
    nightly_logf(&r->log,
                 "warning: %s: cached table %s/%s is damaged, building it again from %s: %s", what,
                 NIGHTLY_CACHE_DIR, d->table, d->path, r->err.msg);
    free(d->damaged);
    d->damaged = strdup(r->err.msg);
    sp_error_clear(&r->err);
    if (sp_remove_tree(path, &r->err))
        return false;
    d->cached = false;
    return build_one(r, d, what) == 0;
}

int nightly_incr_merge(nightly_run_state *r) {
    nightly_plan *p = r->plan;
    size_t n = p->n_incr + 1;
    char **paths = calloc(n, sizeof *paths);
    if (!paths)
        return sp_errorf(&r->err, "out of memory");
    int rc = 0;
    uint64_t bytes_in = 0, base_bytes = 0;
    bool set = base_is_set(r);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const nightly_dump *d = i ? &p->incr[i - 1] : &p->base;
        if (asprintf(&paths[i], "%s/" NIGHTLY_CACHE_DIR "/%s", r->dir, d->table) < 0) {
            paths[i] = NULL;
            rc = sp_errorf(&r->err, "out of memory");
        }
        struct stat st;
        if (rc == 0 && (i || !set) && stat(paths[i], &st) == 0)
            bytes_in += (uint64_t)st.st_size;
    }
    table_merge_options o;
    table_merge_options_init(&o);
    o.block_size = r->o->build.table.block_size;
    o.cluster_size = r->o->build.table.cluster_size;
    /* The night's format, as its builds write it: a compressed base keeps
     * its dictionary (table_merge.h). */
    o.format_version = r->o->build.table.compress ? SST_FORMAT_VERSION_PACKED : SST_FORMAT_VERSION;
    o.compression_level = r->o->build.table.compression_level;
    o.dictionary_size = r->o->build.table.dictionary_size;
    o.drop = p->deletions;
    o.n_drop = p->n_deletions;
    bool *rebuilt = rc == 0 ? calloc(n, sizeof *rebuilt) : NULL;
    if (rc == 0 && !rebuilt)
        rc = sp_errorf(&r->err, "out of memory");
    if (rc == 0) {
        nightly_logf(&r->log, "merge: %zu table(s) -> %s", n, r->table_path);
        for (;;) {
            nightly_stage_begin(&r->log, "merge", 0);
            double w = sp_clock_seconds(), c = sp_process_cpu_seconds();
            rc = set ? nightly_incr_merge_set(r, (const char *const *)paths, (unsigned)n, &o,
                                              &base_bytes, &r->err)
                     : table_merge(r->table_path, (const char *const *)paths, (unsigned)n, &o,
                                   &p->merge, &r->err);
            nightly_stage_end(&r->log);
            if (rc == 0) {
                p->merged = true;
                nightly_manifest_stage(r, "merge", sp_clock_seconds() - w,
                                       sp_process_cpu_seconds() - c, bytes_in + base_bytes,
                                       p->merge.file_size, -1, (int64_t)p->merge.records);
                break;
            }
            if (!rebuild_damaged(r, p->merge.failed_input, rebuilt))
                break;
        }
    }
    free(rebuilt);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    if (rc)
        return -1;
    /* The published table's figures, as `info` gives them (a set's: the
     * merge summed its shards'). */
    if (!set) {
        sst_reader *t = sst_reader_open(r->table_path, &r->err);
        if (!t)
            return -1;
        const sst_footer *f = sst_reader_footer(t);
        r->build.table = (table_stats){.records = f->records,
                                       .data_blocks = f->data_blocks,
                                       .key_bytes = f->key_bytes,
                                       .value_bytes = f->value_bytes,
                                       .file_size = f->file_size};
        sst_reader_close(t);
    }
    r->build_ok = true;
    nightly_logf(&r->log,
                 "merge done: %llu records, %llu replaced by a later day, %llu deleted, %llu "
                 "blocks copied, %llu rebuilt, %llu bytes",
                 (unsigned long long)p->merge.records, (unsigned long long)p->merge.replaced,
                 (unsigned long long)p->merge.dropped, (unsigned long long)p->merge.blocks_copied,
                 (unsigned long long)p->merge.blocks_rebuilt,
                 (unsigned long long)p->merge.file_size);
    return 0;
}

/* ------------------------------------------------------------ retention */

/* Deletes the entries of cache/ matching pattern that this run did not use. */
static void retain_matching(nightly_run_state *r, const char *pattern) {
    nightly_plan *p = r->plan;
    glob_t g;
    if (glob(pattern, 0, NULL, &g))
        return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *name = strrchr(g.gl_pathv[i], '/') + 1;
        bool used = !strcmp(name, p->base.table);
        for (size_t k = 0; k < p->n_incr && !used; k++)
            used = !strcmp(name, p->incr[k].table);
        if (used)
            continue;
        sp_error err = {0};
        if (sp_remove_tree(g.gl_pathv[i], &err))
            nightly_logf(&r->log, "warning: cache: %s", err.msg);
        else
            nightly_logf(&r->log, "cache: deleted %s, not used by this build", name);
    }
    globfree(&g);
}

void nightly_incr_retain(nightly_run_state *r) {
    char pattern[PATH_MAX + 16];
    snprintf(pattern, sizeof pattern, "%s/" NIGHTLY_CACHE_DIR "/*.sst", r->dir);
    retain_matching(r, pattern);
    /* Bases built as table sets. */
    snprintf(pattern, sizeof pattern, "%s/" NIGHTLY_CACHE_DIR "/*.set", r->dir);
    retain_matching(r, pattern);
}

/* ------------------------------------------------------------ manifest */

static json_t *hex(uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
    return json_string(buf);
}

static json_t *dump_json(const nightly_dump *d, bool applied) {
    char *abs = realpath(d->path, NULL);
    json_t *j =
        json_pack("{s:s, s:I, s:o, s:o}", "path", abs ? abs : d->path, "size", (json_int_t)d->size,
                  "date", date_json(d->date), "xxh3_64", d->table[0] ? hex(d->xxh3) : json_null());
    free(abs);
    if (!applied)
        return j;
    json_object_set_new(
        j, "table", d->table[0] ? json_sprintf(NIGHTLY_CACHE_DIR "/%s", d->table) : json_null());
    json_object_set_new(j, "cached", json_boolean(d->cached));
    json_object_set_new(j, "checksum_reused", json_boolean(d->checksum_reused));
    json_object_set_new(j, "damaged", d->damaged ? json_string(d->damaged) : json_null());
    json_object_set_new(j, "counts", d->built ? nightly_counts_json(&d->stats) : json_null());
    return j;
}

json_t *nightly_incr_json(const nightly_run_state *r) {
    const nightly_plan *p = r->plan;
    if (!p)
        return json_null();
    json_t *j = json_object();
    json_object_set_new(j, "base", p->base.path ? dump_json(&p->base, true) : json_null());
    json_t *a = json_array();
    for (size_t i = 0; i < p->n_incr; i++)
        json_array_append_new(a, dump_json(&p->incr[i], true));
    json_object_set_new(j, "increments", a);
    a = json_array();
    for (size_t i = 0; i < p->n_skipped; i++)
        json_array_append_new(a, dump_json(&p->skipped[i], false));
    json_object_set_new(j, "skipped", a);
    a = json_array();
    for (size_t i = 0; i < p->n_gaps; i++)
        json_array_append_new(a, date_json(p->gaps[i]));
    json_object_set_new(j, "gaps", a);
    json_object_set_new(j, "options_xxh3_64", p->options_key ? hex(p->options_key) : json_null());
    json_object_set_new(j, "inputs_xxh3_64", p->inputs_key ? hex(p->inputs_key) : json_null());
    if (r->o->deletions) {
        char *abs = realpath(r->o->deletions, NULL);
        json_object_set_new(
            j, "deletions",
            json_pack("{s:s, s:I, s:o, s:I, s:o}", "path", abs ? abs : r->o->deletions, "size",
                      (json_int_t)p->deletions_size, "xxh3_64",
                      p->inputs_key ? hex(p->deletions_xxh3) : json_null(), "titles",
                      (json_int_t)p->n_deletions, "dropped",
                      p->merged ? json_integer((json_int_t)p->merge.dropped) : json_null()));
        free(abs);
    } else {
        json_object_set_new(j, "deletions", json_null());
    }
    const table_merge_stats *s = &p->merge;
    json_object_set_new(
        j, "merge",
        p->merged ? json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "inputs",
                              (json_int_t)s->inputs, "records", (json_int_t)s->records, "replaced",
                              (json_int_t)s->replaced, "dropped", (json_int_t)s->dropped,
                              "blocks_copied", (json_int_t)s->blocks_copied, "blocks_rebuilt",
                              (json_int_t)s->blocks_rebuilt, "data_blocks",
                              (json_int_t)s->data_blocks, "file_size", (json_int_t)s->file_size)
                  : json_null());
    json_t *mj = json_object_get(j, "merge");
    if (p->merged && p->shards) {
        json_object_set_new(mj, "shards", json_integer((json_int_t)p->shards));
        json_object_set_new(mj, "shards_reused", json_integer((json_int_t)p->shards_reused));
    }
    return j;
}
