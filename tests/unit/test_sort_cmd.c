/*
 * test_sort_cmd.c: `sstpipe sort` as a command: the stream it writes
 * (RS_SORTED, the input's value bound, sorted and deduplicated records),
 * its flag checking, and failures that leave no output and no scratch files.
 */
#include "pipeline/command/commands.h"
#include "stages/common/recstream.h"
#include "stages/sort/sorter.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64], scratch[96], in_path[96], out_path[96];

static int setup(void **state) {
    (void)state;
    strcpy(dir, "/tmp/sp-test-sortcmd-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(scratch, sizeof scratch, "%s/scratch", dir);
    snprintf(in_path, sizeof in_path, "%s/in.rs", dir);
    snprintf(out_path, sizeof out_path, "%s/out.rs", dir);
    assert_int_equal(mkdir(scratch, 0700), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(in_path);
    unlink(out_path);
    assert_int_equal(rmdir(scratch), 0); /* fails if a scratch file was left */
    assert_int_equal(rmdir(dir), 0);     /* fails if a temp output was left */
    return 0;
}

/* n records keyed "k<i % distinct>", value "v<i>" padded to pad bytes; bound in the header. */
static void write_input(uint32_t n, uint32_t distinct, uint32_t pad, uint32_t bound) {
    sp_error err = {0};
    int fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    rs_header h = {.flags = 0, .max_value_bytes = bound};
    rs_writer *w = rs_writer_init(fd, in_path, &h, &err);
    assert_non_null(w);
    char key[32];
    char *val = calloc(1, pad + 32);
    for (uint32_t i = 0; i < n; i++) {
        int kl = snprintf(key, sizeof key, "k%07u", (i * 7919u) % distinct);
        int vl = snprintf(val, pad + 32, "v%u", i);
        memset(val + vl, '.', pad > (uint32_t)vl ? pad - (uint32_t)vl : 0);
        sp_record rec = {.key = (const uint8_t *)key,
                         .key_len = (uint32_t)kl,
                         .value = (const uint8_t *)val,
                         .value_len = pad > (uint32_t)vl ? pad : (uint32_t)vl,
                         .value_fd = -1};
        assert_int_equal(rs_writer_put(w, &rec, &err), 0);
    }
    assert_int_equal(rs_writer_finish(w, &err), 0);
    rs_writer_destroy(w);
    free(val);
    close(fd);
}

/* Runs sort_cmd with stderr captured; the first line it printed goes to line. */
static int sort_cmd_stats(int argc, char **argv, char *line, size_t cap) {
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    int rc = sp_command_main(&sort_command, argc, argv);
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    ssize_t n = pread(fd, line, cap - 1, 0);
    close(fd);
    unlink(path);
    line[n > 0 ? n : 0] = '\0';
    return rc;
}

static void test_sorts_and_marks_sorted(void **state) {
    (void)state;
    /* 6000 records over 5000 keys of ~1 KiB: spills under 1M, merges with fan-in 2. */
    write_input(6000, 5000, 1000, 1024);
    char *argv[] = {"sort",     in_path, "--memory", "1M",     "--tmp", scratch,
                    "--fan-in", "2",     "-o",       out_path, "-v",    NULL};
    char stats[512];
    assert_int_equal(sort_cmd_stats(11, argv, stats, sizeof stats), 0);
    /* The -v line shows it did what the comment says: runs spilled and
     * merged two at a time, one pass per halving until two runs are left,
     * then the final merge. */
    unsigned long long in, out, dups, runs, passes, spilled;
    assert_int_equal(sscanf(stats,
                            "sort: records_in=%llu records_out=%llu duplicates_replaced=%llu "
                            "runs=%llu merge_passes=%llu spilled_bytes=%llu",
                            &in, &out, &dups, &runs, &passes, &spilled),
                     6);
    assert_int_equal(in, 6000);
    assert_int_equal(out, 5000);
    assert_int_equal(dups, 1000);
    assert_true(runs >= 3);
    unsigned long long want_passes = 1;
    for (unsigned long long left = runs; left > 2; left = (left + 1) / 2)
        want_passes++;
    assert_int_equal(passes, want_passes);
    assert_true(spilled >= 6000ull * 1000);

    sp_error err = {0};
    int fd = open(out_path, O_RDONLY);
    assert_true(fd >= 0);
    rs_reader *r = rs_reader_init(fd, out_path, &err);
    assert_non_null(r);
    assert_int_equal(rs_reader_header(r)->flags, RS_SORTED);
    assert_int_equal(rs_reader_header(r)->max_value_bytes, 1024);
    sp_record rec;
    char want[32];
    for (uint32_t k = 0; k < 5000; k++) {
        assert_int_equal(rs_reader_next(r, 0, &rec, &err), 1);
        snprintf(want, sizeof want, "k%07u", k);
        assert_int_equal(rec.key_len, strlen(want));
        assert_memory_equal(rec.key, want, rec.key_len);
        /* Key k came from i with i*7919 = k (mod 5000); the later i (>= 5000) wins when it exists.
         */
        uint32_t i = 0;
        while ((i * 7919u) % 5000 != k)
            i++;
        if (i + 5000 < 6000)
            i += 5000;
        int vl = snprintf(want, sizeof want, "v%u", i);
        assert_memory_equal(rec.value, want, (size_t)vl);
        assert_int_equal(rec.value[vl], '.');
    }
    assert_int_equal(rs_reader_next(r, 0, &rec, &err), 0);
    rs_reader_destroy(r);
    close(fd);
}

static void test_flag_errors(void **state) {
    (void)state;
    write_input(10, 10, 8, 0);
    char *bad[][3] = {
        {"--memory", "512K", NULL}, {"--memory", "lots", NULL}, {"--fan-in", "1", NULL},
        {"--fan-in", "x", NULL},    {"--fan-in", "-3", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {"sort", in_path, bad[i][0], bad[i][1], "-o", out_path, NULL};
        assert_int_equal(sp_command_main(&sort_command, 6, argv), 2);
        assert_int_equal(access(out_path, F_OK), -1);
    }
    char *unknown[] = {"sort", in_path, "--bogus", NULL};
    assert_int_equal(sp_command_main(&sort_command, 3, unknown), 2);
    char *no_arg[] = {"sort", in_path, "--memory", NULL};
    assert_int_equal(sp_command_main(&sort_command, 3, no_arg), 2);
    char *help[] = {"sort", "--help", NULL};
    assert_int_equal(sp_command_main(&sort_command, 2, help), 0);
}

static void test_failures_leave_nothing(void **state) {
    (void)state;
    write_input(10, 10, 8, 0);
    /* A scratch directory that does not exist: refused before any output. */
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no-such-dir", dir);
    char *argv[] = {"sort", in_path, "--tmp", missing, "-o", out_path, NULL};
    assert_int_equal(sp_command_main(&sort_command, 6, argv), 1);
    assert_int_equal(access(out_path, F_OK), -1);

    /* A record over a quarter of the budget. */
    write_input(3, 3, 300 << 10, 0);
    char *argv2[] = {"sort", in_path, "--memory", "1M", "--tmp", scratch, "-o", out_path, NULL};
    assert_int_equal(sp_command_main(&sort_command, 8, argv2), 1);
    assert_int_equal(access(out_path, F_OK), -1);

    /* Input cut short (no end marker) after enough records to have spilled. */
    write_input(3000, 3000, 1000, 0);
    int fd = open(in_path, O_WRONLY);
    assert_int_equal(ftruncate(fd, lseek(fd, 0, SEEK_END) - 9), 0);
    close(fd);
    char *argv3[] = {"sort", in_path, "--memory", "1M", "--tmp", scratch, "-o", out_path, NULL};
    assert_int_equal(sp_command_main(&sort_command, 8, argv3), 1);
    assert_int_equal(access(out_path, F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sorts_and_marks_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flag_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_leave_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
