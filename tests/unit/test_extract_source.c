/*
 * test_extract_source.c: every decompression path behind source.h gives
 * the same bytes and the same records, with 1, 2 and 4 threads where the
 * thread count reaches the path or the parse pool: plain, gzip,
 * xz and zstd (decoded on the source_queue thread), single- and
 * multistream bz2 (the parallel decoder), and external decompressors
 * (zstd -dc, bzip2 -dc, cat), from a file and from a pipe on stdin. The
 * input is the real corpus ($SSTPIPE_CORPORA/enwiki-206pages.xml.bz2),
 * recompressed here with the command-line tools. Also: reads of odd sizes
 * across the queue's buffer boundaries, and the compressed offset at the end.
 */
#include "stages/extract/extract.h"
#include "stages/extract/source.h"

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cmocka.h>

#include "test_dir.h"

static char *tmpdir;
static char xml_path[PATH_MAX];
static const unsigned thread_counts[] = {1, 2, 4};

/* One input file and how to decompress it. */
typedef struct path_case {
    const char *file;         /* in tmpdir */
    const char *decompressor; /* NULL: built in */
    const char *format;       /* source_format */
    bool threaded;            /* the thread count reaches its decoding: the parallel bz2
                                 decoder, or a command's {threads} (source.h) */
} path_case;

static const path_case cases[] = {
    {"d.xml", NULL, "none", false},
    {"d.xml.gz", NULL, "gzip", false},
    {"d.xml.xz", NULL, "xz", false},
    {"d.xml.zst", NULL, "zstd", false},
    {"d.xml.bz2", NULL, "bzip2", true},
    {"d-multi.xml.bz2", NULL, "bzip2", true},
    {"d.xml.zst", "zstd -dc -T{threads}", "external", true},
    {"d.xml.bz2", "bzip2 -dc", "external", false},
    {"d-multi.xml.bz2", "bzip2 -dc", "external", false},
    {"d.xml", "cat", "external", false},
};

static void tmp_path(char *out, const char *name) {
    snprintf(out, PATH_MAX, "%s/%s", tmpdir, name);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/* The whole XML, read without source.h. */
static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = (size_t)file_size(path);
    uint8_t *p = malloc(cap + 1);
    assert_non_null(p);
    *len = fread(p, 1, cap, f);
    fclose(f);
    return p;
}

static int setup(void **state) {
    (void)state;
    if (!(tmpdir = test_dir_make("test_extract_source")))
        return -1;
    const char *corpora = getenv("SSTPIPE_CORPORA");
    if (!corpora || !*corpora)
        return -1;
    tmp_path(xml_path, "d.xml");
    char cmd[4 * PATH_MAX];
    /* The multistream file: the XML cut into four pieces, each its own
     * bz2 stream, as in Wikipedia's multistream dumps. xz -1: the format of
     * any level, at a fraction of the default's compression time. */
    snprintf(cmd, sizeof cmd,
             "set -e; cd '%s'; bzip2 -dc '%s/enwiki-206pages.xml.bz2' > d.xml; "
             "gzip -kf d.xml; xz -1kf -T1 d.xml; zstd -qf d.xml; bzip2 -kf d.xml; "
             "split -n 4 d.xml part.; for p in part.*; do bzip2 -c $p; done > d-multi.xml.bz2; "
             "rm part.*",
             tmpdir, corpora);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(tmpdir);
}

static source *open_case(const path_case *c, const char *path, unsigned threads) {
    source_options opts;
    source_options_init(&opts);
    opts.threads = threads;
    opts.decompressor = c->decompressor;
    sp_error err = {0};
    source *s = source_open_with(path, &opts, &err);
    if (!s)
        fail_msg("%s (%s): %s", path, c->decompressor ? c->decompressor : "built in", err.msg);
    return s;
}

/* ------------------------------------------------------------ bytes */

/* Reads with sizes that cross the 1 MiB buffers at every phase. A source
 * gives the thread count only to the parallel bz2 decoder and to a command's
 * {threads} (source.h): the other cases, which never see it, are read once. */
static void test_bytes_identical(void **state) {
    (void)state;
    size_t want_len;
    uint8_t *want = slurp(xml_path, &want_len);
    static const size_t sizes[] = {1, 4095, 65536, 1000003, 3 << 20};
    uint8_t *buf = malloc(3 << 20);
    assert_non_null(buf);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[PATH_MAX];
        tmp_path(path, cases[c].file);
        size_t nthreads = cases[c].threaded ? sizeof thread_counts / sizeof thread_counts[0] : 1;
        for (size_t t = 0; t < nthreads; t++) {
            source *s = open_case(&cases[c], path, thread_counts[t]);
            assert_string_equal(source_format(s), cases[c].format);
            size_t got = 0;
            ssize_t n;
            sp_error err = {0};
            for (size_t i = 0; (n = source_read(s, buf, sizes[i % 5], &err)) > 0; i++) {
                assert_true(got + (size_t)n <= want_len);
                if (memcmp(buf, want + got, (size_t)n))
                    fail_msg("%s (%s), %u threads: bytes differ after %zu", cases[c].file,
                             cases[c].format, thread_counts[t], got);
                got += (size_t)n;
            }
            if (n < 0)
                fail_msg("%s: %s", cases[c].file, err.msg);
            assert_int_equal(got, want_len);
            /* Every byte of the file was consumed: built in, by us; external,
             * by the command reading the same open file. */
            assert_int_equal(source_offset(s), file_size(path));
            source_close(s);
        }
    }
    free(buf);
    free(want);
}

/* An external decompressor and the built-in decoders reading a pipe. */
static void test_stdin_pipe(void **state) {
    (void)state;
    size_t want_len;
    uint8_t *want = slurp(xml_path, &want_len);
    uint8_t *got = malloc(want_len + 1);
    assert_non_null(got);
    const path_case pipe_cases[] = {
        {"d.xml.zst", NULL, "zstd", false},
        {"d.xml.zst", "zstd -dc", "external", false},
        {"d.xml.gz", NULL, "gzip", false},
    };
    for (size_t c = 0; c < sizeof pipe_cases / sizeof pipe_cases[0]; c++) {
        char path[PATH_MAX];
        tmp_path(path, pipe_cases[c].file);
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            int fd = open(path, O_RDONLY);
            char b[65536];
            ssize_t n;
            while (fd >= 0 && (n = read(fd, b, sizeof b)) > 0)
                if (write(p[1], b, (size_t)n) != n)
                    _exit(1);
            _exit(0);
        }
        close(p[1]);
        int saved = dup(STDIN_FILENO);
        assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
        close(p[0]);
        source *s = open_case(&pipe_cases[c], "-", 2);
        sp_error err = {0};
        ssize_t n = source_read(s, got, want_len + 1, &err);
        if (n < 0)
            fail_msg("stdin %s: %s", pipe_cases[c].file, err.msg);
        assert_int_equal((size_t)n, want_len);
        assert_memory_equal(got, want, want_len);
        assert_string_equal(source_name(s), "stdin");
        source_close(s);
        assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
        close(saved);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
    }
    free(got);
    free(want);
}

/* ------------------------------------------------------------ records */

typedef struct digest {
    XXH64_state_t *h;
    uint64_t records;
} digest;

static int digest_put(void *ctx, const sp_record *r, sp_error *err) {
    (void)err;
    digest *d = ctx;
    assert_int_equal(r->value_fd, -1); /* value_cap keeps values in memory */
    uint64_t lens[2] = {r->key_len, r->value_len};
    XXH64_update(d->h, lens, sizeof lens);
    XXH64_update(d->h, r->key, r->key_len);
    XXH64_update(d->h, r->value, (size_t)r->value_len);
    d->records++;
    return 0;
}

static uint64_t extract_digest(const char *path, const char *decompressor, unsigned threads,
                               uint64_t *records, extract_stats *stats) {
    extract_options opts;
    extract_options_init(&opts);
    opts.value_cap = 1025;
    opts.threads = threads;
    opts.decompressor = decompressor;
    digest d = {.h = XXH64_createState()};
    assert_non_null(d.h);
    XXH64_reset(d.h, 0);
    sp_sink sink = {.put = digest_put, .ctx = &d};
    sp_error err = {0};
    if (extract_file(path, &opts, &sink, stats, &err))
        fail_msg("%s: %s", path, err.msg);
    uint64_t h = XXH64_digest(d.h);
    XXH64_freeState(d.h);
    *records = d.records;
    return h;
}

/* Records are the parse of a source's bytes, which test_bytes_identical
 * checks for every case: here every case goes through the parse pool (2
 * threads), and a plain and a multistream bz2 file, the pool reading the
 * parallel decoder, through every thread count. */
static void test_records_identical(void **state) {
    (void)state;
    uint64_t want_records;
    extract_stats want_stats;
    uint64_t want = extract_digest(xml_path, NULL, 1, &want_records, &want_stats);
    assert_int_equal(want_records, 206);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[PATH_MAX];
        tmp_path(path, cases[c].file);
        bool every = !cases[c].decompressor &&
                     (!strcmp(cases[c].file, "d.xml") || !strcmp(cases[c].file, "d-multi.xml.bz2"));
        /* thread_counts[1] is 2. */
        size_t from = every ? 0 : 1,
               to = every ? sizeof thread_counts / sizeof thread_counts[0] : 2;
        for (size_t t = from; t < to; t++) {
            uint64_t records;
            extract_stats stats;
            uint64_t got =
                extract_digest(path, cases[c].decompressor, thread_counts[t], &records, &stats);
            if (got != want || records != want_records)
                fail_msg("%s (%s), %u threads: other records", cases[c].file, cases[c].format,
                         thread_counts[t]);
            assert_int_equal(stats.xml_bytes, want_stats.xml_bytes);
            assert_int_equal(stats.pages, want_stats.pages);
            assert_int_equal(stats.input_bytes, file_size(path));
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_identical),
        cmocka_unit_test(test_stdin_pipe),
        cmocka_unit_test(test_records_identical),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
