/*
 * test_profile.c: profile_run against tables written with table_writer:
 * the figures are consistent (every lookup done, percentiles ordered, one
 * block per lookup and, as counted, one read of it, or none when mapped,
 * hits and misses as requested), warm and cold, with threads and with
 * batches (io_uring when cold); a compressed table's misses, cold, spared
 * their reads by its filter; the seed fixes the key sequence; the JSON
 * and SVG are well-formed; bad arguments fail with clear errors.
 *
 * The reads are counted here too, and those counts are what the figures
 * must match: this file's pread and io_uring_submit_and_wait come before
 * libc's and liburing's for libsstpipe, which profile_run calls, so every
 * pread of the table and every read handed to an io_uring is seen, by the
 * thread that made it (the lookup threads are all but the test's own),
 * apart from profile's own preads of the kernel's counts (/proc); and the
 * kernel's count of read system calls (/proc/self/io syscr) shows that no
 * read went around the counted ones.
 */
#include "stages/common/error.h"
#include "stages/common/key.h"
#include "stages/profile/profile.h"
#include "stages/profile/profile_keys.h"
#include "stages/sst/table_writer.h"

#include <dlfcn.h>
#include <liburing.h>
#include <libxml/parser.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test_syscr.h"

static char dir[64];
static char table[128];

static const char *tmp_path(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Records in pairs where one key extends the other, as titles do ("Foo",
 * "Foo b"), with values of varied length; compress: in format version 2. */
static void write_table_as(const char *path, unsigned n, uint32_t block_size, bool compress) {
    table_options opts;
    table_options_init(&opts);
    opts.compress = compress;
    opts.block_size = block_size;
    opts.cluster_size = 4096;
    opts.max_value_bytes = 1024;
    sp_error err = {0};
    table_writer *w = table_writer_init(path, &opts, &err);
    assert_non_null(w);
    char val[1024];
    memset(val, 'v', sizeof val);
    for (unsigned i = 0; i < n; i++) {
        char key[64];
        int len = snprintf(key, sizeof key, "title %05u", i / 2);
        if (i % 2)
            len = snprintf(key, sizeof key, "title %05u b", i / 2);
        sp_record r = {.key = (const uint8_t *)key,
                       .key_len = (uint32_t)len,
                       .value = (const uint8_t *)val,
                       .value_len = (i * 37) % 1000,
                       .value_fd = -1};
        assert_int_equal(table_writer_add(w, &r, &err), 0);
    }
    assert_int_equal(table_writer_finish(w, &err), 0);
    table_writer_destroy(w);
}

static void write_table(const char *path, unsigned n, uint32_t block_size) {
    write_table_as(path, n, block_size, false);
}

static pid_t test_tid; /* the thread the tests run in; lookups run in others */
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static int (*real_submit_and_wait)(struct io_uring *, unsigned);

/* Calls seen since the last run() began: [0] by the test's thread (opening
 * the table, drawing the keys), [1] by the lookup threads; and the preads
 * of files under /proc (profile reading the kernel's counts). */
static atomic_ulong preads_seen[2], uring_reads_seen[2], proc_preads_seen;

static bool under_proc(int fd) {
    char link[64], path[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    return n > 6 && memcmp(path, "/proc/", 6) == 0;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    if (under_proc(fd))
        atomic_fetch_add(&proc_preads_seen, 1);
    else
        atomic_fetch_add(&preads_seen[gettid() != test_tid], 1);
    return real_pread(fd, buf, n, off);
}

/* The reads among the entries about to be submitted. */
int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr) {
    unsigned long reads = 0;
    for (unsigned h = ring->sq.sqe_head; h != ring->sq.sqe_tail; h++)
        reads += ring->sq.sqes[h & ring->sq.ring_mask].opcode == IORING_OP_READ;
    atomic_fetch_add(&uring_reads_seen[gettid() != test_tid], reads);
    return real_submit_and_wait(ring, wait_nr);
}

/* What a run of profile_run read, as seen outside it. */
static struct {
    unsigned long preads[2], uring_reads[2], proc_preads;
    unsigned long syscalls; /* read system calls, less those of reading the count */
} seen;

static int run(const char *path, const profile_options *o, profile_result *res, sp_error *err) {
    profile_result_init(res);
    sp_error_clear(err);
    /* Reading the count is itself counted: its cost, measured now. */
    unsigned long a = read_syscalls(), b = read_syscalls();
    for (int t = 0; t < 2; t++) {
        atomic_store(&preads_seen[t], 0);
        atomic_store(&uring_reads_seen[t], 0);
    }
    atomic_store(&proc_preads_seen, 0);
    int rc = profile_run(path, o, res, err);
    seen.syscalls = read_syscalls() - b - (b - a);
    for (int t = 0; t < 2; t++) {
        seen.preads[t] = atomic_load(&preads_seen[t]);
        seen.uring_reads[t] = atomic_load(&uring_reads_seen[t]);
    }
    seen.proc_preads = atomic_load(&proc_preads_seen);
    return rc;
}

static void assert_consistent(const profile_result *r, const profile_options *o) {
    assert_int_equal(r->lookups, o->n);
    assert_int_equal(r->hits + r->misses, o->n);
    assert_int_equal(r->misses, r->misses_requested);
    assert_true(r->min_ns <= r->p50_ns);
    assert_true(r->p50_ns <= r->p90_ns);
    assert_true(r->p90_ns <= r->p99_ns);
    assert_true(r->p99_ns <= r->p999_ns);
    assert_true(r->p999_ns <= r->max_ns);
    assert_true((double)r->min_ns <= r->avg_ns && r->avg_ns <= (double)r->max_ns);
    assert_true(r->min_ns > 0);
    for (uint64_t i = 1; i < r->lookups; i++)
        assert_true(r->latencies_ns[i - 1] <= r->latencies_ns[i]);
    assert_int_equal(r->latencies_ns[0], r->min_ns);
    assert_int_equal(r->latencies_ns[r->lookups - 1], r->max_ns);
    /* Every key sorts at or after the first key, so every lookup needs
     * exactly one block. Warm it is read in place (no read call); cold
     * one at a time, by one pread returning the whole block; cold in
     * batches, through io_uring, each distinct block of a batch once (so
     * at most one read per lookup). */
    assert_int_equal(r->blocks_searched, r->lookups);
    bool uring = o->cold && o->queue_depth > 1;
    assert_string_equal(r->io, !o->cold ? "mapped" : uring ? "io_uring" : "pread");
    uint64_t per = o->cold ? 1 : 0;
    if (uring) {
        assert_true(r->reads > 0 && r->reads <= r->lookups);
        assert_true(r->max_reads_per_lookup <= 1);
    } else {
        assert_int_equal(r->reads, per * r->lookups);
        assert_true(r->min_reads_per_lookup == (double)per);
        assert_true(r->max_reads_per_lookup == (double)per);
    }
    /* The disk's bytes: cold, exactly the blocks read (warm, whatever the
     * mapping's page faults found uncached). */
    if (o->cold)
        assert_int_equal(r->bytes_read, r->reads * r->block_size);
    assert_true(r->lookups_per_sec > 0 && r->seconds > 0);
    /* And as seen here: the lookup threads made exactly those reads, by
     * pread or through io_uring as the mode says, and nothing else; every
     * read system call of the run was one of the preads seen. */
    assert_int_equal(seen.preads[1], uring ? 0 : per * r->lookups);
    assert_int_equal(seen.preads[1] + seen.uring_reads[1], r->reads);
    assert_int_equal(seen.uring_reads[0], 0);
    assert_int_equal(seen.syscalls, seen.preads[0] + seen.preads[1] + seen.proc_preads);
    /* The kernel's count was read around each call, cold; warm, around
     * each thread's whole run only, so that no system call falls between
     * two warm lookups (profile_io.c). */
    unsigned long samples = 0;
    for (unsigned k = 0; k < o->threads; k++) {
        uint64_t keys = o->n * (k + 1) / o->threads - o->n * k / o->threads;
        samples += !o->cold ? keys > 0 : (keys + o->queue_depth - 1) / o->queue_depth;
    }
    assert_int_equal(seen.proc_preads, 2 * samples);
}

static void test_warm_with_misses(void **state) {
    (void)state;
    profile_options o;
    profile_options_init(&o);
    o.n = 5000;
    o.misses_pct = 20;
    o.seed = 42;
    profile_result r;
    sp_error err;
    assert_int_equal(run(table, &o, &r, &err), 0);
    assert_consistent(&r, &o);
    assert_int_equal(r.misses, 1000);
    assert_int_equal(r.hits, 4000);
    assert_int_equal(r.records, 4000);
    assert_int_equal(r.block_size, 4096);
    profile_result_destroy(&r);

    o.misses_pct = 100;
    o.n = 300;
    assert_int_equal(run(table, &o, &r, &err), 0);
    assert_consistent(&r, &o);
    assert_int_equal(r.misses, 300);
    profile_result_destroy(&r);
}

static void test_seed_fixes_the_key_sequence(void **state) {
    (void)state;
    profile_options o;
    profile_options_init(&o);
    o.n = 2000;
    o.misses_pct = 10;
    o.seed = 7;
    profile_result a, b, c;
    sp_error err;
    assert_int_equal(run(table, &o, &a, &err), 0);
    o.threads = 2; /* the sequence does not depend on how it is run */
    assert_int_equal(run(table, &o, &b, &err), 0);
    o.seed = 8;
    assert_int_equal(run(table, &o, &c, &err), 0);
    assert_true(a.key_sequence_hash == b.key_sequence_hash);
    assert_true(a.key_sequence_hash != c.key_sequence_hash);
    assert_int_equal(a.misses, b.misses);
    profile_result_destroy(&a);
    profile_result_destroy(&b);
    profile_result_destroy(&c);
}

/* The block of key: the last whose first key is at or before it. */
static uint64_t block_of(sstpipe_table *t, uint64_t blocks, const uint8_t *key, size_t len) {
    uint64_t lo = 0, hi = blocks;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        size_t flen = 0;
        const void *first = sstpipe_block_first_key(t, mid, &flen);
        if (sp_key_cmp(first, flen, key, len) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Keys many times the blocks: every block is drawn from, each read about
 * once (its keys kept for its later draws), not once a key. */
static void test_keys_from_every_block_each_read_once(void **state) {
    (void)state;
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(table, &msg);
    assert_non_null(t);
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    uint64_t blocks = info.data_blocks, n = 20 * blocks;
    assert_true(blocks > 100);
    atomic_store(&preads_seen[0], 0);
    profile_keys keys;
    sp_error err = {0};
    assert_int_equal(profile_keys_draw(t, n, 0, 5, &keys, &err), 0);
    unsigned long reads = atomic_load(&preads_seen[0]);
    assert_true(reads <= 4 * blocks);
    bool *drawn = calloc(blocks, sizeof *drawn);
    assert_non_null(drawn);
    for (uint64_t i = 0; i < n; i++)
        drawn[block_of(t, blocks, keys.bytes + keys.start[i],
                       (size_t)(keys.start[i + 1] - keys.start[i]))] = true;
    for (uint64_t b = 0; b < blocks; b++)
        assert_true(drawn[b]);
    free(drawn);
    profile_keys_destroy(&keys);
    sstpipe_close(t);
}

static void test_cold_one_read_per_hit(void **state) {
    (void)state;
    profile_options o;
    profile_options_init(&o);
    o.n = 500;
    o.cold = true;
    o.seed = 3;
    profile_result r;
    sp_error err;
    int rc = run(table, &o, &r, &err);
    if (rc)
        fail_msg("cold profile failed: %s", err.msg);
    assert_consistent(&r, &o);
    assert_int_equal(r.hits, 500);
    profile_result_destroy(&r);
}

/* A compressed table's misses, cold: the filter spares nearly every one
 * its read, as the kernel and this file count them, and the report says
 * so with the filter's size. */
static void test_cold_misses_read_nothing(void **state) {
    (void)state;
    const char *path = tmp_path("compressed.sst");
    write_table_as(path, 2000, 4096, true);
    profile_options o;
    profile_options_init(&o);
    o.n = 300;
    o.cold = true;
    o.misses_pct = 100;
    o.seed = 3;
    profile_result r;
    sp_error err;
    if (run(path, &o, &r, &err))
        fail_msg("cold profile failed: %s", err.msg);
    assert_int_equal(r.misses, 300);
    assert_true(r.reads * 30 <= r.lookups);
    assert_int_equal(seen.preads[1], r.reads);
    assert_true(r.reads_per_miss == (double)r.reads / (double)r.misses);
    assert_int_equal(r.filter_bytes, 64 * ((10 * 2000 + 511) / 512));
    assert_true(r.filter_bits_per_key > 10 && r.filter_bits_per_key < 10.3);
    profile_result_destroy(&r);
}

static void test_threads_and_queue_depth(void **state) {
    (void)state;
    profile_options o;
    profile_options_init(&o);
    o.n = 1001; /* not a multiple of the thread count */
    o.threads = 3;
    o.misses_pct = 5;
    o.seed = 11;
    profile_result r;
    sp_error err;
    assert_int_equal(run(table, &o, &r, &err), 0);
    assert_consistent(&r, &o);
    profile_result_destroy(&r);

    o.queue_depth = 8;
    o.threads = 2;
    int rc = run(table, &o, &r, &err);
    if (rc)
        fail_msg("batched profile failed: %s", err.msg);
    assert_consistent(&r, &o);
    profile_result_destroy(&r);

    o.cold = true;
    rc = run(table, &o, &r, &err);
    if (rc)
        fail_msg("cold batched profile failed: %s", err.msg);
    assert_consistent(&r, &o);
    profile_result_destroy(&r);
}

static void test_bad_arguments(void **state) {
    (void)state;
    profile_options o;
    profile_options_init(&o);
    profile_result r;
    sp_error err;
    o.n = 0;
    assert_int_equal(run(table, &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "at least 1"));
    profile_result_destroy(&r);

    o.n = 10;
    o.cold = true; /* a cold batch's reads go through an io_uring of its depth */
    o.queue_depth = 1u << 20;
    assert_int_equal(run(table, &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "queue depth 1048576"));
    profile_result_destroy(&r);

    o.cold = false;
    o.queue_depth = 1;
    assert_int_equal(run(tmp_path("missing.sst"), &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "missing.sst"));
    profile_result_destroy(&r);

    FILE *f = fopen(tmp_path("text.txt"), "w");
    for (int i = 0; i < 1000; i++)
        fputs("not an sstable\n", f);
    fclose(f);
    assert_int_equal(run(tmp_path("text.txt"), &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "text.txt"));
    profile_result_destroy(&r);

    write_table(tmp_path("empty.sst"), 0, 4096);
    assert_int_equal(run(tmp_path("empty.sst"), &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "no records"));
    profile_result_destroy(&r);
}

static void test_json_and_svg(void **state) {
    (void)state;
    profile_options o;
    profile_options_init(&o);
    o.n = 3000;
    o.misses_pct = 10;
    o.seed = 5;
    profile_result r;
    sp_error err;
    assert_int_equal(run(table, &o, &r, &err), 0);
    assert_int_equal(profile_write_json(&r, tmp_path("p.json"), &err), 0);
    assert_int_equal(profile_write_svg(&r, tmp_path("p.svg"), &err), 0);

    json_error_t jerr;
    json_t *root = json_load_file(tmp_path("p.json"), 0, &jerr);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "lookups")), 3000);
    assert_int_equal(json_integer_value(json_object_get(root, "misses")), 300);
    assert_string_equal(json_string_value(json_object_get(root, "mode")), "warm");
    json_t *lat = json_object_get(root, "latency_ns");
    assert_int_equal(json_integer_value(json_object_get(lat, "p99")), r.p99_ns);
    assert_int_equal(json_integer_value(json_object_get(lat, "max")), r.max_ns);
    json_decref(root);

    xmlDocPtr doc = xmlReadFile(tmp_path("p.svg"), NULL, XML_PARSE_NONET | XML_PARSE_NOERROR);
    assert_non_null(doc);
    xmlNodePtr svg = xmlDocGetRootElement(doc);
    assert_string_equal((const char *)svg->name, "svg");
    xmlFreeDoc(doc);
    FILE *f = fopen(tmp_path("p.svg"), "r");
    char text[200000];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_non_null(strstr(text, "lookup latency (log scale)"));
    assert_non_null(strstr(text, ">p99.9 "));
    assert_non_null(strstr(text, "<polyline"));

    char *out = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&out, &len);
    profile_print(&r, mem);
    fclose(mem);
    assert_non_null(strstr(out, "Profile results for 3000 lookups:\nAverage time: "));
    assert_non_null(strstr(out, "\nMin time: "));
    assert_non_null(strstr(out, "\nMax time: "));
    assert_non_null(strstr(out, "seed 5"));
    free(out);
    profile_result_destroy(&r);
}

/* The table every test reads (written once; the tests only read it). */
static int write_shared_table(void **state) {
    (void)state;
    write_table(table, 4000, 4096);
    return 0;
}

int main(void) {
    test_tid = gettid();
    real_pread = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
    real_submit_and_wait =
        (int (*)(struct io_uring *, unsigned))dlsym(RTLD_NEXT, "io_uring_submit_and_wait");
    if (!real_pread || !real_submit_and_wait)
        return 1;
    snprintf(dir, sizeof dir, "/tmp/test_profile.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(table, sizeof table, "%s/t.sst", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warm_with_misses),
        cmocka_unit_test(test_seed_fixes_the_key_sequence),
        cmocka_unit_test(test_keys_from_every_block_each_read_once),
        cmocka_unit_test(test_cold_one_read_per_hit),
        cmocka_unit_test(test_cold_misses_read_nothing),
        cmocka_unit_test(test_threads_and_queue_depth),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_json_and_svg),
    };
    int failed = cmocka_run_group_tests(tests, write_shared_table, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return failed;
}
