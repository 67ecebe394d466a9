/*
 * test_sort_parts.c: a sorter split into parts (sorter_split), each fed by
 * its own thread, as the parallel build feeds it, gives what one sorter fed
 * in document order gives, and stays within the budget.
 *
 * A "document" here is a row of stretches (the parse pool's chunks); each
 * stretch is a few records of a small key space, so keys repeat within a
 * stretch, across stretches of one part and across parts. Stretch j goes
 * to part j % n, whose thread adds its stretches in order after
 * sort_part_begin(j). The reference sorter gets every stretch in order.
 * Output and counts must be equal, for budgets that keep everything in
 * memory, that spill many runs (some stretches split by a spill), that
 * merge in several passes (fan-in 2), and with parts too small for some
 * records (a run of their own). Then the peak RSS of 8 threads feeding 4
 * times the budget: the parts share the budget. And the scratch files, as
 * the kernel counts them: one per part that spilled, none more for a sort
 * in memory.
 */
#include "stages/sort/sorter.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_dir.h"
#include "test_rss.h"

#define MIB (1ull << 20)

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct doc {
    unsigned stretches;
    unsigned keys;      /* key space */
    unsigned big_every; /* every so many records a large value (0: none) */
    uint32_t big_len;
} doc;

/* Stretch j's length: mostly short, every seventh long (longer than a
 * part's chunk under a small budget, so a spill splits it). */
static unsigned stretch_len(unsigned j) {
    return j % 7 == 3 ? 3000 : 1 + (unsigned)(mix(j) % 60);
}

/* Record r of stretch j: key from a small space; the value says where it
 * came from, so the winner of a duplicate is visible. */
static sp_record make(const doc *d, unsigned j, unsigned r, char *key, uint8_t *value) {
    uint64_t h = mix((uint64_t)j << 32 | r);
    int klen = sprintf(key, "k%05u", (unsigned)(h % d->keys));
    uint32_t vlen = (uint32_t)sprintf((char *)value, "stretch %u record %u;", j, r);
    if (d->big_every && h % d->big_every == 0) {
        memset(value + vlen, 'x', d->big_len - vlen);
        vlen = d->big_len;
    } else {
        uint32_t pad = (uint32_t)(h >> 40) % 200;
        memset(value + vlen, 'a' + (char)(h % 26), pad);
        vlen += pad;
    }
    return (sp_record){.key = (const uint8_t *)key,
                       .key_len = (uint32_t)klen,
                       .value = value,
                       .value_len = vlen,
                       .value_fd = -1};
}

/* The sorter's output as one growing buffer of key '=' value '\n'. */
typedef struct dumped {
    char *buf;
    size_t len, cap;
} dumped;

static int dump_put(void *ctx, const sp_record *rec, sp_error *err) {
    (void)err;
    dumped *d = ctx;
    size_t need = rec->key_len + rec->value_len + 2;
    if (d->cap - d->len < need) {
        d->cap = (d->cap + need) * 2;
        d->buf = realloc(d->buf, d->cap);
        assert_non_null(d->buf);
    }
    memcpy(d->buf + d->len, rec->key, rec->key_len);
    d->len += rec->key_len;
    d->buf[d->len++] = '=';
    memcpy(d->buf + d->len, rec->value, rec->value_len);
    d->len += rec->value_len;
    d->buf[d->len++] = '\n';
    return 0;
}

typedef struct feeder {
    const doc *d;
    sort_part *part;
    unsigned i, n;
    uint32_t big_len;
} feeder;

static void *feed_part(void *arg) {
    feeder *f = arg;
    char key[32];
    uint8_t *value = malloc(f->d->big_len + 256);
    sp_sink sink = sort_part_sink(f->part);
    for (unsigned j = f->i; j < f->d->stretches; j += f->n) {
        sort_part_begin(f->part, j);
        for (unsigned r = 0; r < stretch_len(j); r++) {
            sp_record rec = make(f->d, j, r, key, value);
            sp_error err = {0};
            if (sp_sink_put(&sink, &rec, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                abort();
            }
        }
    }
    sort_part_end(f->part);
    free(value);
    return NULL;
}

static sorter *new_sorter_in(uint64_t memory, unsigned fan_in, const char *tmp_dir) {
    sort_options o;
    sort_options_init(&o);
    o.memory = memory;
    o.fan_in = fan_in;
    o.tmp_dir = tmp_dir;
    sp_error err = {0};
    sorter *s = sorter_init(&o, &err);
    assert_non_null(s);
    return s;
}

static sorter *new_sorter(uint64_t memory, unsigned fan_in) {
    return new_sorter_in(memory, fan_in, NULL);
}

/* Feeds d into n parts of s from n threads. */
static void feed_parts(sorter *s, const doc *d, unsigned n) {
    sp_error err = {0};
    assert_int_equal(sorter_split(s, n, &err), 0);
    pthread_t *t = calloc(n, sizeof *t);
    feeder *f = calloc(n, sizeof *f);
    for (unsigned i = 0; i < n; i++) {
        f[i] = (feeder){.d = d, .part = sorter_part(s, i), .i = i, .n = n};
        assert_int_equal(pthread_create(&t[i], NULL, feed_part, &f[i]), 0);
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
    free(f);
}

static void check_same(const doc *d, uint64_t memory, unsigned fan_in, unsigned n) {
    sp_error err = {0};
    sorter *ref = new_sorter(memory, fan_in);
    char key[32];
    uint8_t *value = malloc(d->big_len + 256);
    for (unsigned j = 0; j < d->stretches; j++)
        for (unsigned r = 0; r < stretch_len(j); r++) {
            sp_record rec = make(d, j, r, key, value);
            assert_int_equal(sorter_add(ref, &rec, &err), 0);
        }
    free(value);
    dumped want = {0}, got = {0};
    assert_int_equal(sorter_finish(ref, &(sp_sink){dump_put, &want}, &err), 0);

    sorter *s = new_sorter(memory, fan_in);
    feed_parts(s, d, n);
    assert_int_equal(sorter_finish(s, &(sp_sink){dump_put, &got}, &err), 0);
    const sort_stats *a = sorter_stats(ref), *b = sorter_stats(s);
    printf("budget %llu KiB, fan-in %u, %u parts: records_in=%llu duplicates=%llu runs=%llu "
           "(one sorter: %llu) merge_passes=%llu\n",
           (unsigned long long)(memory >> 10), fan_in, n, (unsigned long long)b->records_in,
           (unsigned long long)b->duplicates_replaced, (unsigned long long)b->runs,
           (unsigned long long)a->runs, (unsigned long long)b->merge_passes);
    assert_int_equal(b->records_in, a->records_in);
    assert_int_equal(b->records_out, a->records_out);
    assert_int_equal(b->duplicates_replaced, a->duplicates_replaced);
    assert_true(a->duplicates_replaced > a->records_out);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.buf, want.buf, want.len);
    if (memory <= MIB)
        assert_true(b->runs > n);
    free(want.buf);
    free(got.buf);
    sorter_destroy(ref);
    sorter_destroy(s);
}

static void test_parts_give_the_one_sorters_output(void **state) {
    (void)state;
    doc d = {.stretches = 400, .keys = 5000, .big_len = 64};
    for (unsigned n = 2; n <= 8; n *= 2) {
        check_same(&d, 64 * MIB, 0, n); /* in memory */
        check_same(&d, MIB, 0, n);      /* many runs, some stretches split */
        check_same(&d, MIB, 2, n);      /* passes of two runs */
    }
    check_same(&d, MIB, 0, 3);
}

static void test_records_too_large_for_a_part(void **state) {
    (void)state;
    /* 1 MiB over 16 parts: 64 KiB each, and records of 100 KB (below the
     * budget's quarter) do not fit a part's chunk. */
    doc d = {.stretches = 200, .keys = 800, .big_every = 50, .big_len = 100000};
    check_same(&d, MIB, 0, 16);
    check_same(&d, 2 * MIB, 0, 4);
}

static int count_put(void *ctx, const sp_record *rec, sp_error *err) {
    (void)rec, (void)err;
    (*(uint64_t *)ctx)++;
    return 0;
}

/* First in the file: VmHWM is the process's. 8 threads feed 4 times the
 * budget of unique-ish records; a part with a budget of its own would
 * touch up to 8 times as much. */
static void test_parts_share_the_budget(void **state) {
    (void)state;
    const uint64_t budget = 16 * MIB;
    uint64_t before = status_bytes("VmRSS");
    doc d = {.stretches = 250, .keys = 1000000, .big_every = 2, .big_len = 1000};
    sorter *s = new_sorter(budget, 0);
    feed_parts(s, &d, 8);
    uint64_t out = 0;
    sp_error err = {0};
    assert_int_equal(sorter_finish(s, &(sp_sink){count_put, &out}, &err), 0);
    const sort_stats *st = sorter_stats(s);
    uint64_t peak = status_bytes("VmHWM");
    printf("8 parts under %llu MiB: records_in=%llu runs=%llu spilled=%.1f MiB, peak RSS growth "
           "%.2f MiB (budget + %.2f MiB)\n",
           (unsigned long long)(budget >> 20), (unsigned long long)st->records_in,
           (unsigned long long)st->runs, (double)st->spilled_bytes / MIB,
           (double)(peak - before) / MIB, ((double)(peak - before) - (double)budget) / MIB);
#ifndef __SANITIZE_ADDRESS__ /* its shadow and quarantine are not the sorter's */
    const uint64_t slack = 4 * MIB;
    assert_true(peak - before <= budget + slack);
#endif
    assert_true(st->spilled_bytes > 3 * budget);
    sorter_destroy(s);
}

/* The process's open files in dir that have no name: the sort's scratch
 * files (anonymous, or named and unlinked at once). */
static unsigned scratch_files(const char *dir) {
    char real[PATH_MAX], link[PATH_MAX + 32];
    assert_non_null(realpath(dir, real));
    size_t n = strlen(real);
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    unsigned count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        ssize_t len = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = 0;
        const char *del = " (deleted)";
        if (!strncmp(link, real, n) && link[n] == '/' && (size_t)len > strlen(del) &&
            !strcmp(link + len - strlen(del), del))
            count++;
    }
    closedir(d);
    return count;
}

/* Each part spills into a scratch file of its own: in one shared file the
 * threads' spills queue on the file's lock. Part 0's is the file
 * sorter_init opens (a missing tmp_dir fails at once), another part's is
 * opened at its first spill, and a merge of several passes adds one. */
static void test_each_part_spills_into_its_own_file(void **state) {
    (void)state;
    char *dir = test_dir_make("sstpipe-test-sort-parts");
    assert_non_null(dir);
    doc d = {.stretches = 400, .keys = 5000, .big_len = 64};
    const struct {
        uint64_t memory;
        unsigned fan_in, fed, merged; /* scratch files after feeding, after the merge */
    } cases[] = {{64 * MIB, 0, 1, 1}, {4 * MIB, 0, 4, 4}, {MIB, 2, 4, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        sorter *s = new_sorter_in(cases[c].memory, cases[c].fan_in, dir);
        feed_parts(s, &d, 4);
        unsigned fed = scratch_files(dir);
        uint64_t out = 0;
        sp_error err = {0};
        assert_int_equal(sorter_finish(s, &(sp_sink){count_put, &out}, &err), 0);
        unsigned merged = scratch_files(dir);
        printf("4 parts under %llu KiB, fan-in %u: runs=%llu merge_passes=%llu, scratch files "
               "%u after feeding, %u after the merge\n",
               (unsigned long long)(cases[c].memory >> 10), cases[c].fan_in,
               (unsigned long long)sorter_stats(s)->runs,
               (unsigned long long)sorter_stats(s)->merge_passes, fed, merged);
        assert_int_equal(fed, cases[c].fed);
        assert_int_equal(merged, cases[c].merged);
        sorter_destroy(s);
        assert_int_equal(scratch_files(dir), 0);
        assert_int_equal(test_dir_entries(dir), 0);
    }
    assert_int_equal(test_dir_remove(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_share_the_budget),
        cmocka_unit_test(test_parts_give_the_one_sorters_output),
        cmocka_unit_test(test_records_too_large_for_a_part),
        cmocka_unit_test(test_each_part_spills_into_its_own_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
