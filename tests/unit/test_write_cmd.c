/*
 * test_write_cmd.c: `sstpipe write` as a user runs it (write_cmd in
 * process): a sorted, truncated record stream becomes a table holding the
 * same records; streams that skipped truncate or sort, block sizes too
 * small for the stream's bound, bad input and bad flags are refused with
 * the right exit code and message, and leave no output or temp file.
 */
#include "pipeline/command/commands.h"
#include "stages/common/recstream.h"
#include "stages/sst/table_reader.h"
#include "test_sst_util.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    char *dir, *in, *out;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_dir_make("sst-test");
    f->in = t_path(f->dir, "in.rs");
    f->out = t_path(f->dir, "out.sst");
    *state = f;
    return f->dir ? 0 : -1;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_dir_remove(f->dir);
    free(f->in);
    free(f->out);
    free(f);
    return 0;
}

/* Writes s as a record stream; end = false cuts it short inside the last
 * record, as a stage that died mid-pipe would. */
static void make_stream(const char *path, uint32_t flags, uint32_t mvb, const trecs *s, bool end) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    sp_error err = {0};
    rs_header h = {.flags = flags, .max_value_bytes = mvb};
    rs_writer *w = rs_writer_init(fd, path, &h, &err);
    assert_non_null(w);
    for (size_t i = 0; i < s->n; i++) {
        sp_record rec = {.key = s->r[i].key,
                         .key_len = s->r[i].klen,
                         .value = s->r[i].val,
                         .value_len = s->r[i].vlen,
                         .value_fd = -1};
        assert_int_equal(rs_writer_put(w, &rec, &err), 0);
    }
    assert_int_equal(rs_writer_finish(w, &err), 0);
    rs_writer_destroy(w);
    if (!end)
        assert_int_equal(ftruncate(fd, lseek(fd, 0, SEEK_END) - 12), 0);
    close(fd);
}

static char *last_stderr;

/* Runs write with args, capturing its stderr into last_stderr. */
static int run(int argc, ...) {
    char *argv[16];
    va_list ap;
    va_start(ap, argc);
    argv[0] = "write";
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    char cap[] = "/tmp/write-cmd-stderr.XXXXXX";
    int fd = mkstemp(cap);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    int rc = sp_command_main(&write_command, argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    size_t n;
    uint8_t *b = t_read_file(cap, &n);
    unlink(cap);
    b[n] = 0;
    free(last_stderr);
    last_stderr = (char *)b;
    return rc;
}

static void expect(int rc, int want_rc, const char *needle) {
    if (rc != want_rc || !strstr(last_stderr, needle))
        fail_msg("exit %d (want %d), stderr '%s' (want '%s')", rc, want_rc, last_stderr, needle);
}

static void test_writes_the_stream_records(void **state) {
    fixture *f = *state;
    trecs s = t_random(3, 5000, 1024);
    make_stream(f->in, RS_SORTED, 1024, &s, true);
    int rc = run(9, f->in, "-o", f->out, "--block-size", "16K", "--cluster-size", "512", "-v");
    char want[200];
    snprintf(want, sizeof want, "write: records=%zu data_blocks=", s.n);
    expect(rc, 0, want);
    sp_error err = {0};
    sst_reader *r = sst_reader_open(f->out, &err);
    assert_non_null(r);
    const sst_footer *ft = sst_reader_footer(r);
    assert_int_equal(ft->records, s.n);
    assert_int_equal(ft->block_size, 16384);
    assert_int_equal(ft->cluster_size, 512);
    assert_int_equal(ft->max_value_bytes, 1024);
    for (size_t i = 0; i < s.n; i++) {
        const void *v;
        size_t vlen;
        assert_int_equal(sst_reader_get(r, s.r[i].key, s.r[i].klen, &v, &vlen, &err), 1);
        assert_int_equal(vlen, s.r[i].vlen);
        if (vlen)
            assert_memory_equal(v, s.r[i].val, vlen);
    }
    sst_reader_close(r);
    t_free(&s);
}

static void test_reads_stdin_with_defaults(void **state) {
    fixture *f = *state;
    trecs s = t_random(4, 100, 1024);
    make_stream(f->in, RS_SORTED, 1024, &s, true);
    int in = open(f->in, O_RDONLY), saved = dup(0);
    dup2(in, 0);
    close(in);
    int rc = run(3, "-o", f->out);
    dup2(saved, 0);
    close(saved);
    expect(rc, 0, "");
    sp_error err = {0};
    sst_reader *r = sst_reader_open(f->out, &err);
    assert_non_null(r);
    assert_int_equal(sst_reader_footer(r)->block_size, 8192);
    assert_int_equal(sst_reader_footer(r)->cluster_size, 4096);
    assert_int_equal(sst_reader_footer(r)->records, s.n);
    sst_reader_close(r);
    t_free(&s);
}

static void test_refuses_untruncated_and_unsorted_streams(void **state) {
    fixture *f = *state;
    trecs s = t_random(5, 50, 100);
    make_stream(f->in, RS_SORTED, 0, &s, true);
    expect(run(4, f->in, "-o", f->out), 1,
           "in.rs: not truncated: pipe it through sstpipe truncate");
    make_stream(f->in, 0, 100, &s, true);
    expect(run(4, f->in, "-o", f->out), 1, "in.rs: not sorted: pipe it through sstpipe sort");
    assert_int_equal(test_dir_entries(f->dir), 1); /* the input only */
    t_free(&s);
}

static void test_refuses_block_size_too_small_for_bound(void **state) {
    fixture *f = *state;
    trecs s = t_random(6, 50, 1024);
    make_stream(f->in, RS_SORTED, 1024, &s, true);
    expect(run(6, f->in, "-o", f->out, "--block-size", "1K"), 2,
           "the smallest block size that fits it is 2K");
    assert_int_equal(test_dir_entries(f->dir), 1);
    t_free(&s);
}

static void test_bad_input_leaves_no_output(void **state) {
    fixture *f = *state;
    /* Claims sorted but is not. */
    trecs s = t_random(7, 200, 100);
    trec tmp = s.r[0];
    s.r[0] = s.r[150];
    s.r[150] = tmp;
    make_stream(f->in, RS_SORTED, 100, &s, true);
    expect(run(4, f->in, "-o", f->out), 1, "out.sst: record 2: key");
    assert_int_equal(test_dir_entries(f->dir), 1);
    t_free(&s);
    /* A stream cut short (a stage died mid-pipe). */
    s = t_random(8, 200, 100);
    make_stream(f->in, RS_SORTED, 100, &s, false);
    expect(run(4, f->in, "-o", f->out), 1, "in.rs: record stream truncated at byte");
    assert_int_equal(test_dir_entries(f->dir), 1);
    t_free(&s);
    /* Not a stream at all; a missing file. */
    assert_int_equal(t_write_file(f->in, (const uint8_t *)"<mediawiki>", 11), 0);
    expect(run(4, f->in, "-o", f->out), 1, "not a record stream");
    /* A missing INPUT is refused before any work. */
    expect(run(4, "/nonexistent/x.rs", "-o", f->out), 2, "/nonexistent/x.rs: cannot open");
    assert_int_equal(test_dir_entries(f->dir), 1);
}

static void test_flags(void **state) {
    fixture *f = *state;
    /* An INPUT that exists, so that each refusal below is the flag's. */
    assert_int_equal(t_write_file(f->in, (const uint8_t *)"<mediawiki>", 11), 0);
    expect(run(2, "--help"), 0, "");
    expect(run(2, f->in), 2, "-o FILE is required");
    expect(run(3, "-o", "-"), 2, "-o must name a file");
    expect(run(5, f->in, "-o", f->out, "--block-size=3000"), 2,
           "--block-size: '3000' must be a power of two from 512 to 1M");
    expect(run(5, f->in, "-o", f->out, "--block-size=2M"), 2, "--block-size");
    expect(run(6, f->in, "-o", f->out, "--cluster-size", "256"), 2,
           "--cluster-size: '256' must be a power of two from 512 to 1G");
    expect(run(5, f->in, "-o", f->out, "--bogus"), 2, "--bogus");
    expect(run(5, f->in, "other", "-o", f->out), 2, "at most one INPUT");
    assert_int_equal(test_dir_entries(f->dir), 1); /* the INPUT only */
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_writes_the_stream_records),
        T(test_reads_stdin_with_defaults),
        T(test_refuses_untruncated_and_unsorted_streams),
        T(test_refuses_block_size_too_small_for_bound),
        T(test_bad_input_leaves_no_output),
        T(test_flags),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    free(last_stderr);
    return failed;
}
