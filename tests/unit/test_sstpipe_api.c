/*
 * test_sstpipe_api.c: libsstpipe through its public header only, mapped and
 * with direct I/O: every key found with its value and absent keys not
 * found; scans from any start and with any prefix (every key of the table,
 * keys between them, before and after all of them, block boundaries)
 * against a brute-force answer over the same records; the footer's counts;
 * block first keys as split points covering the table;
 * with direct I/O one read system call per lookup (the kernel's count);
 * batched lookups answering as single ones, mapped and with direct I/O,
 * reading each distinct block of a cold batch once (the kernel's count of
 * bytes read from the disk), with direct I/O in no read system call when
 * io_uring is there; absent keys a version 2 table's filter rules out
 * answered with no read at all (the kernel's count);
 * and failures: a file that is not a table, a corrupt block (-1 with a
 * message naming file, block and offset, other blocks still answering, an
 * iterator staying at the error), direct I/O where the file system has
 * none.
 */
#include "stages/sst/sstpipe.h"
#include "test_sst_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_get_many.h"
#include "test_syscr.h"

#include <liburing.h>

#define BS 4096u
#define CS 512u
#define MVB 40u

typedef struct fixture {
    char *dir, *path;
    trecs s;
    table_stats st;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_dir_make("sstpipe-api");
    f->path = t_path(f->dir, "t.sst");
    f->s = t_random(13, 4000, MVB);
    sp_error err = {0};
    *state = f;
    return t_write(f->path, BS, CS, MVB, &f->s, &f->st, &err);
}

/* The same records in a compressed (format version 2) table: the lookups,
 * batches and scans below hold for it as for version 1. */
static int setup_compressed(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_dir_make("sstpipe-api");
    f->path = t_path(f->dir, "t.sst");
    f->s = t_random(13, 4000, MVB);
    table_options o = {.block_size = BS,
                       .cluster_size = CS,
                       .max_value_bytes = MVB,
                       .compress = true,
                       .compression_level = 3,
                       .dictionary_size = 4096};
    sp_error err = {0};
    *state = f;
    if (t_write_opts(f->path, &o, &f->s, &f->st, &err))
        return -1;
    sstpipe_table *t = sstpipe_open(f->path, NULL);
    sstpipe_compression c;
    sstpipe_compression_get(t, &c);
    sstpipe_close(t);
    return strcmp(c.method, "zstd") == 0 && c.plain_bytes == f->st.plain_bytes ? 0 : -1;
}

static int teardown(void **state) {
    fixture *f = *state;
    t_free(&f->s);
    test_dir_remove(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static sstpipe_table *open_mode(const char *path, bool direct) {
    sstpipe_options *o = sstpipe_options_new();
    assert_non_null(o);
    sstpipe_options_set_direct_io(o, direct);
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open_with(path, o, &msg);
    sstpipe_options_free(o);
    if (!t)
        fail_msg("open %s: %s", path, msg);
    return t;
}

/* Index of the first record >= key (s->n when none). */
static size_t lower_bound(const trecs *s, const uint8_t *key, size_t klen) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t_key_cmp(s->r[mid].key, s->r[mid].klen, key, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool present(const trecs *s, const uint8_t *key, size_t klen) {
    size_t i = lower_bound(s, key, klen);
    return i < s->n && t_key_cmp(s->r[i].key, s->r[i].klen, key, klen) == 0;
}

static void gets_every_key(sstpipe_table *t, const trecs *s) {
    const void *v;
    size_t vlen;
    char *msg = NULL;
    for (size_t i = 0; i < s->n; i++) {
        const trec *r = &s->r[i];
        assert_int_equal(sstpipe_get(t, r->key, r->klen, &v, &vlen, &msg), 1);
        assert_int_equal(vlen, r->vlen);
        assert_memory_equal(v, r->val, vlen);
        uint8_t probe[SP_MAX_KEY_BYTES + 1];
        memcpy(probe, r->key, r->klen);
        probe[r->klen] = 0;
        assert_int_equal(sstpipe_get(t, probe, r->klen + 1, &v, &vlen, &msg), 0);
        if (r->klen > 1)
            assert_int_equal(sstpipe_get(t, r->key, r->klen - 1, &v, &vlen, &msg),
                             present(s, r->key, r->klen - 1));
    }
    assert_int_equal(sstpipe_get(t, "\x01", 1, &v, &vlen, &msg), 0);
    assert_int_equal(sstpipe_get(t, "\xff\xff", 2, &v, &vlen, &msg), 0);
    assert_int_equal(sstpipe_get(t, "", 0, &v, &vlen, &msg), 0);
    uint8_t huge[SP_MAX_KEY_BYTES + 10];
    memset(huge, 'A', sizeof huge);
    assert_int_equal(sstpipe_get(t, huge, sizeof huge, &v, &vlen, &msg), 0);
    assert_null(msg);
}

static void test_get_mapped(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, false);
    gets_every_key(t, &f->s);
    sstpipe_close(t);
}

static void test_get_direct(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, true);
    gets_every_key(t, &f->s);
    /* One read system call per lookup of a stored key, as the kernel counts
     * them (less the measured cost of reading the count). */
    unsigned long c0 = read_syscalls(), c1 = read_syscalls();
    for (size_t i = 0; i < f->s.n; i++) {
        const void *v;
        size_t vlen;
        assert_int_equal(sstpipe_get(t, f->s.r[i].key, f->s.r[i].klen, &v, &vlen, NULL), 1);
    }
    assert_int_equal(read_syscalls() - c1 - (c1 - c0), f->s.n);
    /* The value lives in the thread's buffer until its next lookup. */
    const void *v1, *v2;
    size_t n1, n2;
    const trec *a = &f->s.r[0], *b = &f->s.r[f->s.n - 1];
    assert_int_equal(sstpipe_get(t, a->key, a->klen, &v1, &n1, NULL), 1);
    assert_memory_equal(v1, a->val, n1);
    assert_int_equal(sstpipe_get(t, b->key, b->klen, &v2, &n2, NULL), 1);
    assert_memory_equal(v2, b->val, n2);
    sstpipe_close(t);
}

/* Absent keys of a version 2 table with direct I/O, where every block
 * read is a read system call, counted by the kernel: a key the filter
 * rules out is answered without one, by sstpipe_get, sstpipe_get_many and
 * sstpipe_lookup alike, and the filter rules out all but a few. Each key
 * sorts inside the table (a stored key and a byte no key has), so that
 * without the filter each would read its block. */
static void test_absent_keys_read_nothing(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, true);
    enum { N = 300 };
    static uint8_t absent[N][SP_MAX_KEY_BYTES];
    const void *keys[N], *values[N];
    size_t klens[N], vlens[N], n = 0, read = 0;
    for (size_t i = 0; i < f->s.n && n < N; i += f->s.n / N) {
        const trec *r = &f->s.r[i];
        if (r->klen == SP_MAX_KEY_BYTES)
            continue;
        memcpy(absent[n], r->key, r->klen);
        absent[n][r->klen] = 1;
        unsigned long c0 = read_syscalls(), c1 = read_syscalls();
        const void *v;
        size_t vlen;
        assert_int_equal(sstpipe_get(t, absent[n], r->klen + 1, &v, &vlen, NULL), 0);
        if (read_syscalls() - c1 - (c1 - c0) == 0) {
            keys[n] = absent[n];
            klens[n++] = r->klen + 1;
        } else {
            read++;
        }
    }
    assert_true(n + read > N * 9 / 10);
    assert_true(read * 30 <= n + read);
    unsigned long b0 = disk_read_bytes(), c0 = read_syscalls(), c1 = read_syscalls();
    char *msg = NULL;
    if (sstpipe_get_many(t, n, keys, klens, values, vlens, &msg) != 0)
        fail_msg("%s", msg);
    for (size_t i = 0; i < n; i++) {
        assert_null(values[i]);
        sstpipe_lookup_result res;
        assert_int_equal(sstpipe_lookup(t, keys[i], klens[i], 0, &res, NULL), 0);
    }
    assert_int_equal(read_syscalls() - c1 - (c1 - c0), 0);
    assert_int_equal(disk_read_bytes() - b0, 0);
    sstpipe_close(t);
}

static void test_get_many_mapped(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, false);
    get_many_as_get(t, &f->s, 5);
    char *msg = NULL;
    assert_int_equal(sstpipe_get_many(t, 0, NULL, NULL, NULL, NULL, &msg), 0);
    sstpipe_close(t);
}

static void test_get_many_direct(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, true);
    get_many_as_get(t, &f->s, 6);
    sstpipe_close(t);
}

/* Keys of known blocks: the first key of every other block twice, and the
 * record after it where that is in the same block. Returns the number of
 * keys; *nd the number of distinct blocks. */
static size_t block_keys(sstpipe_table *t, const trecs *s, const void **keys, size_t *klens,
                         size_t *nd) {
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    size_t n = 0;
    *nd = 0;
    for (uint64_t b = 0; b < info.data_blocks; b += 2) {
        size_t kl, nl = 0;
        const uint8_t *k = sstpipe_block_first_key(t, b, &kl);
        const uint8_t *next = sstpipe_block_first_key(t, b + 1, &nl);
        keys[n] = keys[n + 1] = k;
        klens[n] = klens[n + 1] = kl;
        n += 2;
        size_t i = lower_bound(s, k, kl) + 1;
        if (i < s->n && (!next || t_key_cmp(s->r[i].key, s->r[i].klen, next, nl) < 0)) {
            keys[n] = s->r[i].key;
            klens[n++] = s->r[i].klen;
        }
        ++*nd;
    }
    return n;
}

/* A cold batch reads each distinct block once: the disk's bytes are the
 * blocks' (the file's pages dropped from the cache first, for the mapped
 * table); with direct I/O through io_uring, in no read system call. */
static void test_get_many_reads(void **state) {
    fixture *f = *state;
    struct io_uring ring;
    bool uring = io_uring_queue_init(2, &ring, 0) == 0;
    if (uring)
        io_uring_queue_exit(&ring);
    int fd = open(f->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fsync(fd), 0);
    for (int direct = 0; direct < 2; direct++) {
        assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        sstpipe_table *t = open_mode(f->path, direct);
        const void *keys[256], *values[256];
        size_t klens[256], vlens[256], nd;
        size_t n = block_keys(t, &f->s, keys, klens, &nd);
        assert_true(nd > 2 && n <= 256);
        unsigned long b0 = disk_read_bytes();
        unsigned long c0 = read_syscalls(), c1 = read_syscalls();
        char *msg = NULL;
        if (sstpipe_get_many(t, n, keys, klens, values, vlens, &msg) != 0)
            fail_msg("%s", msg);
        unsigned long calls = read_syscalls() - c1 - (c1 - c0);
        assert_int_equal(disk_read_bytes() - b0, nd * BS);
        if (direct && uring)
            assert_int_equal(calls, 0);
        for (size_t i = 0; i < n; i++)
            assert_non_null(values[i]);
        sstpipe_close(t);
    }
    close(fd);
}

static bool has_prefix(const trec *r, const uint8_t *p, size_t plen) {
    return r->klen >= plen && memcmp(r->key, p, plen) == 0;
}

/* The scan (from, prefix) against the records: the ones >= from with the
 * prefix, in order; all of them, or the first limit (more than a block
 * holds, so a limited scan still crosses into the next block). */
static void check_scan_n(sstpipe_table *t, const trecs *s, const uint8_t *from, size_t flen,
                         const uint8_t *prefix, size_t plen, size_t limit) {
    size_t i = from ? lower_bound(s, from, flen) : 0;
    if (prefix && plen) {
        size_t j = lower_bound(s, prefix, plen);
        if (j > i)
            i = j;
    }
    sstpipe_iter *it = sstpipe_iter_new(t, from, flen, prefix, plen);
    assert_non_null(it);
    const void *k, *v;
    size_t kl, vl;
    char *msg = NULL;
    int rc;
    size_t got = 0;
    while (got < limit && (rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1) {
        got++;
        assert_true(i < s->n);
        assert_true(!plen || has_prefix(&s->r[i], prefix, plen));
        assert_int_equal(kl, s->r[i].klen);
        assert_memory_equal(k, s->r[i].key, kl);
        assert_int_equal(vl, s->r[i].vlen);
        assert_memory_equal(v, s->r[i].val, vl);
        i++;
    }
    if (got == limit) {
        sstpipe_iter_free(it);
        return;
    }
    assert_int_equal(rc, 0);
    assert_null(msg);
    /* Ended exactly where the records say: at the table's end or at the
     * first key without the prefix. */
    assert_true(i == s->n || (plen && !has_prefix(&s->r[i], prefix, plen)));
    assert_int_equal(sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg), 0);
    sstpipe_iter_free(it);
}

static void check_scan(sstpipe_table *t, const trecs *s, const uint8_t *from, size_t flen,
                       const uint8_t *prefix, size_t plen) {
    check_scan_n(t, s, from, flen, prefix, plen, SIZE_MAX);
}

#define NEAR 300 /* records a limited scan checks: about three blocks */

static void scans(sstpipe_table *t, const trecs *s) {
    check_scan(t, s, NULL, 0, NULL, 0);
    check_scan(t, s, (const uint8_t *)"", 0, (const uint8_t *)"", 0);
    check_scan(t, s, (const uint8_t *)"\x01", 1, NULL, 0);
    check_scan(t, s, (const uint8_t *)"\xff", 1, NULL, 0);
    check_scan(t, s, NULL, 0, (const uint8_t *)"\xff", 1);
    check_scan(t, s, NULL, 0, (const uint8_t *)"\x01", 1);
    /* Every letter of the shared-prefix pool, and the prefix of a run that
     * sorts between two of them. */
    for (char c = 'A'; c <= 'Q'; c++) {
        uint8_t p[3] = {(uint8_t)c, (uint8_t)c, (uint8_t)c};
        check_scan(t, s, NULL, 0, p, 1);
        check_scan(t, s, NULL, 0, p, 3);
        check_scan(t, s, (const uint8_t *)"B", 1, p, 2);
        check_scan(t, s, (const uint8_t *)"Z", 1, p, 2);
    }
    uint8_t buf[SP_MAX_KEY_BYTES + 1];
    for (size_t i = 0; i < s->n; i += 7) {
        const trec *r = &s->r[i];
        check_scan_n(t, s, r->key, r->klen, NULL, 0, NEAR); /* exactly a key */
        memcpy(buf, r->key, r->klen);
        buf[r->klen] = 0;
        check_scan_n(t, s, buf, r->klen + 1, NULL, 0, NEAR);          /* just after it */
        check_scan_n(t, s, r->key, r->klen - 1, NULL, 0, NEAR);       /* just before it */
        check_scan(t, s, NULL, 0, r->key, r->klen < 4 ? r->klen : 4); /* its prefix */
        check_scan(t, s, r->key, r->klen, r->key, r->klen > 1 ? 1 : r->klen);
        check_scan(t, s, NULL, 0, r->key, r->klen); /* the key as a prefix */
    }
}

static void test_scan_mapped(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, false);
    scans(t, &f->s);
    sstpipe_close(t);
}

static void test_scan_direct(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, true);
    scans(t, &f->s);
    sstpipe_close(t);
}

/* A block's first and last keys as scan starts: the seek's edge inside a
 * block and across blocks, found by walking the table. */
static void test_scan_block_edges(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, false);
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    assert_true(info.data_blocks > 10);
    /* The first key of block b is a record some lookup's block search
     * starts at; every record is a start here, so the edges are among
     * them; the full sweep is affordable at this size. */
    for (size_t i = 0; i < f->s.n; i++)
        check_scan_n(t, &f->s, f->s.r[i].key, f->s.r[i].klen, NULL, 0, NEAR);
    sstpipe_close(t);
}

static void test_info_version_path(void **state) {
    fixture *f = *state;
    sstpipe_table *t = sstpipe_open(f->path, NULL);
    assert_non_null(t);
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    uint64_t kb = 0, vb = 0;
    for (size_t i = 0; i < f->s.n; i++) {
        kb += f->s.r[i].klen;
        vb += f->s.r[i].vlen;
    }
    assert_int_equal(info.records, f->s.n);
    assert_int_equal(info.data_blocks, f->st.data_blocks);
    assert_int_equal(info.key_bytes, kb);
    assert_int_equal(info.value_bytes, vb);
    assert_int_equal(info.block_size, BS);
    assert_int_equal(info.cluster_size, CS);
    assert_int_equal(info.max_value_bytes, MVB);
    assert_int_equal(info.format_version, 1);
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(info.file_size, (uint64_t)st.st_size);
    assert_string_equal(sstpipe_path(t), f->path);
    unsigned a, b, c;
    assert_int_equal(sscanf(sstpipe_version(), "%u.%u.%u", &a, &b, &c), 3);
    assert_int_equal(a, 1);
    sstpipe_close(t);
    sstpipe_close(NULL);
    sstpipe_iter_free(NULL);
    sstpipe_free(NULL);
}

/* Block first keys as split points: block 0 starts at the smallest key,
 * they rise strictly, and scans from each to the next cover every record
 * exactly once, in order; past the last block there is none. */
static void test_block_first_keys(void **state) {
    fixture *f = *state;
    sstpipe_table *t = open_mode(f->path, false);
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    assert_true(info.data_blocks > 10);
    size_t seen = 0, klen = 0;
    const void *first = sstpipe_block_first_key(t, 0, &klen);
    assert_non_null(first);
    assert_int_equal(klen, f->s.r[0].klen);
    assert_memory_equal(first, f->s.r[0].key, klen);
    for (uint64_t b = 0; b < info.data_blocks; b++) {
        size_t lo_len = 0, hi_len = 0;
        const void *lo = sstpipe_block_first_key(t, b, &lo_len);
        const void *hi = sstpipe_block_first_key(t, b + 1, &hi_len);
        assert_non_null(lo);
        assert_true(hi || b + 1 == info.data_blocks);
        if (hi)
            assert_true(t_key_cmp(lo, lo_len, hi, hi_len) < 0);
        sstpipe_iter *it = sstpipe_iter_new(t, lo, lo_len, NULL, 0);
        const void *k, *v;
        size_t kl, vl;
        size_t in_block = 0;
        while (sstpipe_iter_next(it, &k, &kl, &v, &vl, NULL) == 1 &&
               (!hi || t_key_cmp(k, kl, hi, hi_len) < 0)) {
            assert_true(seen < f->s.n);
            if (in_block == 0) { /* a split key is its block's first record's key */
                assert_int_equal(kl, lo_len);
                assert_memory_equal(k, lo, kl);
            }
            assert_int_equal(kl, f->s.r[seen].klen);
            assert_memory_equal(k, f->s.r[seen].key, kl);
            seen++;
            in_block++;
        }
        assert_true(in_block > 0);
        sstpipe_iter_free(it);
    }
    assert_int_equal(seen, f->s.n);
    klen = 77;
    assert_null(sstpipe_block_first_key(t, info.data_blocks, &klen));
    assert_null(sstpipe_block_first_key(t, UINT64_MAX, &klen));
    assert_int_equal(klen, 77);
    sstpipe_close(t);
}

static void test_empty_table(void **state) {
    fixture *f = *state;
    char *path = t_path(f->dir, "empty.sst");
    trecs none = {0};
    sp_error err = {0};
    assert_int_equal(t_write(path, BS, CS, MVB, &none, NULL, &err), 0);
    for (int direct = 0; direct < 2; direct++) {
        sstpipe_table *t = open_mode(path, direct);
        const void *k, *v;
        size_t kl, vl;
        assert_int_equal(sstpipe_get(t, "a", 1, &v, &vl, NULL), 0);
        const void *keys[] = {"a", "b"}, *values[2];
        size_t klens[] = {1, 1}, vlens[2];
        assert_int_equal(sstpipe_get_many(t, 2, keys, klens, values, vlens, NULL), 0);
        assert_null(values[0]);
        assert_null(values[1]);
        sstpipe_iter *it = sstpipe_iter_new(t, "a", 1, NULL, 0);
        assert_int_equal(sstpipe_iter_next(it, &k, &kl, &v, &vl, NULL), 0);
        sstpipe_iter_free(it);
        sstpipe_info info;
        sstpipe_info_get(t, &info);
        assert_int_equal(info.records, 0);
        sstpipe_close(t);
    }
    free(path);
}

static void test_open_failures(void **state) {
    fixture *f = *state;
    char *msg = NULL;
    char *missing = t_path(f->dir, "missing.sst");
    assert_null(sstpipe_open(missing, &msg));
    assert_non_null(msg);
    assert_non_null(strstr(msg, missing));
    assert_non_null(strstr(msg, "No such file"));
    sstpipe_free(msg);
    msg = NULL;
    assert_null(sstpipe_open(missing, NULL)); /* no message wanted */
    assert_null(sstpipe_open(f->dir, &msg));
    assert_non_null(strstr(msg, "not a regular file"));
    sstpipe_free(msg);
    free(missing);
}

/* A file system without O_DIRECT (tmpfs before Linux 6.6, some FUSE and
 * network file systems) refuses the open with EINVAL. This kernel's tmpfs
 * has it, so the refusal is made here: the test's own open() comes before
 * libc's for the library's calls too. */
static bool refuse_direct;

int open(const char *path, int flags, ...) {
    static int (*real_open)(const char *, int, ...);
    if (!real_open)
        real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    if (refuse_direct && (flags & O_DIRECT)) {
        errno = EINVAL;
        return -1;
    }
    return real_open(path, flags, mode);
}

static void test_direct_io_unsupported(void **state) {
    fixture *f = *state;
    /* The names kept for compatibility (sstpipe.h, "Names") still work. */
    sstpipe_options *o = sstpipe_options_init();
    sstpipe_options_set_direct_io(o, true);
    char *msg = NULL;
    refuse_direct = true;
    sstpipe_table *t = sstpipe_open_with(f->path, o, &msg);
    refuse_direct = false;
    assert_null(t);
    assert_non_null(strstr(msg, f->path));
    assert_non_null(strstr(msg, "direct I/O (O_DIRECT) is not supported"));
    sstpipe_free(msg);
    assert_non_null(t = sstpipe_open_with(f->path, o, NULL)); /* and with it, it opens */
    sstpipe_close(t);
    sstpipe_options_destroy(o);
}

/* Block 3 with one byte of its entries flipped: lookups there and a scan
 * through it fail naming file, block and byte offset, and the checksum;
 * other blocks answer. */
static void corrupt_block(fixture *f, bool direct) {
    size_t n;
    uint8_t *bytes = t_read_file(f->path, &n);
    const uint64_t block = 3;
    bytes[block * BS + 10] ^= 0x40;
    char *bad = t_path(f->dir, "bad.sst");
    assert_int_equal(t_write_file(bad, bytes, n), 0);
    free(bytes);

    sstpipe_table *t = open_mode(bad, direct);
    char want[64];
    snprintf(want, sizeof want, "block %llu at byte %llu", (unsigned long long)block,
             (unsigned long long)(block * BS));
    size_t in_block = 0, elsewhere = 0;
    const void *k, *v;
    size_t kl, vl;
    for (size_t i = 0; i < f->s.n; i++) {
        char *msg = NULL;
        int rc = sstpipe_get(t, f->s.r[i].key, f->s.r[i].klen, &v, &vl, &msg);
        if (rc < 0) {
            assert_non_null(strstr(msg, bad));
            assert_non_null(strstr(msg, want));
            assert_non_null(strstr(msg, "checksum mismatch"));
            sstpipe_free(msg);
            in_block++;
        } else {
            assert_int_equal(rc, 1);
            assert_null(msg);
            elsewhere++;
        }
    }
    assert_true(in_block > 0);
    assert_true(elsewhere > 0);
    /* A batch with a key in the block fails the same way. */
    const void *keys[f->s.n], *values[f->s.n];
    size_t klens[f->s.n], vlens[f->s.n];
    for (size_t i = 0; i < f->s.n; i++) {
        keys[i] = f->s.r[i].key;
        klens[i] = f->s.r[i].klen;
    }
    char *bmsg = NULL;
    assert_int_equal(sstpipe_get_many(t, f->s.n, keys, klens, values, vlens, &bmsg), -1);
    assert_non_null(strstr(bmsg, want));
    sstpipe_free(bmsg);
    /* A scan returns blocks 0..2, then the error, and stays at it. */
    sstpipe_iter *it = sstpipe_iter_new(t, NULL, 0, NULL, 0);
    size_t got = 0;
    char *msg = NULL;
    int rc;
    while ((rc = sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg)) == 1)
        got++;
    assert_int_equal(rc, -1);
    assert_true(got > 0 && got < f->s.n);
    assert_non_null(strstr(msg, want));
    /* Found by the block source's check, as a lookup's is. */
    assert_non_null(strstr(msg, "checksum mismatch"));
    sstpipe_free(msg);
    msg = NULL;
    assert_int_equal(sstpipe_iter_next(it, &k, &kl, &v, &vl, &msg), -1);
    assert_non_null(strstr(msg, want));
    sstpipe_free(msg);
    sstpipe_iter_free(it);
    sstpipe_close(t);
    unlink(bad);
    free(bad);
}

static void test_corrupt_block_mapped(void **state) {
    corrupt_block(*state, false);
}

static void test_corrupt_block_direct(void **state) {
    corrupt_block(*state, true);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
#define Z(name) cmocka_unit_test_setup_teardown(name, setup_compressed, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_get_mapped),
        T(test_get_direct),
        T(test_scan_mapped),
        T(test_scan_direct),
        T(test_scan_block_edges),
        T(test_info_version_path),
        T(test_empty_table),
        T(test_open_failures),
        T(test_direct_io_unsupported),
        T(test_corrupt_block_mapped),
        T(test_corrupt_block_direct),
        T(test_block_first_keys),
        T(test_get_many_mapped),
        T(test_get_many_direct),
        T(test_get_many_reads),
        Z(test_get_mapped),
        Z(test_get_direct),
        Z(test_scan_mapped),
        Z(test_scan_direct),
        Z(test_scan_block_edges),
        Z(test_get_many_mapped),
        Z(test_get_many_direct),
        Z(test_get_many_reads),
        Z(test_absent_keys_read_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
