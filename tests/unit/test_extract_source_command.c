/*
 * test_extract_source_command.c: the failures of an external decompressor
 * ([input] decompressor) and every early stop, which must end without a
 * hang, a zombie or a leaked fd: a command that fails with and without a
 * message on its stderr, one that is not installed, one killed midway, one
 * that closes its output but lingers, a parse error while the command keeps
 * writing, a consumer that stops after one read, and (built-in decoders,
 * plain and bz2) a stop while the decoding thread waits on a pipe that
 * never ends. A command killed midway hands out all of its output before
 * the error. Each test runs under alarm(), so a hang fails.
 */
#include "stages/extract/extract.h"
#include "stages/extract/source.h"

#include <bzlib.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_dir.h"

/* Seconds any one test may take before it counts as hung. */
#define HANG_SECONDS 60

static char *tmpdir;
static char xml_path[PATH_MAX]; /* the corpus as plain XML */
static char zst_path[PATH_MAX];
static char pid_path[PATH_MAX]; /* where commands write their pid */

static void tmp_path(char *out, const char *name) {
    snprintf(out, PATH_MAX, "%s/%s", tmpdir, name);
}

static int setup(void **state) {
    (void)state;
    const char *corpora = getenv("SSTPIPE_CORPORA");
    if (!(tmpdir = test_dir_make("test_extract_source_command")) || !corpora || !*corpora)
        return -1;
    tmp_path(xml_path, "d.xml");
    tmp_path(zst_path, "d.xml.zst");
    tmp_path(pid_path, "pid");
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "set -e; cd '%s'; bzip2 -dc '%s/enwiki-206pages.xml.bz2' > d.xml; zstd -qf d.xml",
             tmpdir, corpora);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return test_dir_remove(tmpdir);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test hung: alarm fired\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
        _exit(3);
    _exit(2);
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Before each test: the fd count to compare with afterwards. */
static int fds_before;

static int test_setup(void **state) {
    (void)state;
    signal(SIGALRM, on_alarm);
    alarm(HANG_SECONDS);
    unlink(pid_path);
    fds_before = count_fds();
    return 0;
}

/* After each test: no child left, reaped or not, and no fd left open. */
static int test_teardown(void **state) {
    (void)state;
    alarm(0);
    errno = 0;
    if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD) {
        fprintf(stderr, "a child process is left\n");
        return -1;
    }
    if (count_fds() != fds_before) {
        fprintf(stderr, "fds: %d before, %d after\n", fds_before, count_fds());
        return -1;
    }
    return 0;
}

/* The pid a command wrote to pid_path is gone: killed and reaped (kill(2)
 * still finds a zombie). */
static void assert_pid_gone(void) {
    FILE *f = fopen(pid_path, "r");
    assert_non_null(f);
    long pid = 0;
    assert_int_equal(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    assert_true(pid > 1);
    assert_int_equal(kill((pid_t)pid, 0), -1);
    assert_int_equal(errno, ESRCH);
}

static source_options command(const char *cmd, unsigned threads) {
    source_options o;
    source_options_init(&o);
    o.decompressor = cmd;
    o.threads = threads;
    return o;
}

/* Opens and reads everything; returns the error (the test fails if none). */
static sp_error read_all_fails(const char *path, const source_options *o, size_t *got) {
    sp_error err = {0};
    *got = 0;
    source *s = source_open_with(path, o, &err);
    if (s) {
        static uint8_t buf[1 << 16];
        ssize_t n;
        while ((n = source_read(s, buf, sizeof buf, &err)) > 0)
            *got += (size_t)n;
        source_close(s);
        if (n == 0)
            fail_msg("'%s' succeeded", o->decompressor);
    }
    assert_true(err.set);
    return err;
}

static void assert_contains(const char *msg, const char *want) {
    if (!strstr(msg, want))
        fail_msg("error '%s' lacks '%s'", msg, want);
}

/* ------------------------------------------------------------ failures */

static void test_false(void **state) {
    (void)state;
    source_options o = command("false", 2);
    size_t got;
    sp_error err = read_all_fails(zst_path, &o, &got);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "%s: decompressor 'false' failed (exit 1)", zst_path);
    assert_contains(err.msg, want);
    assert_null(strstr(err.msg, "compressed byte"));
}

/* The first line of its stderr is quoted; {threads} was replaced. */
static void test_exit_3_with_message(void **state) {
    (void)state;
    source_options o =
        command("zstd -dc; echo \"bad news {threads}\" >&2; echo more >&2; exit 3", 3);
    size_t got;
    sp_error err = read_all_fails(zst_path, &o, &got);
    /* Only the first line of its stderr, at the end of ours. */
    const char *tail = "failed (exit 3): bad news 3";
    assert_contains(err.msg, tail);
    assert_string_equal(err.msg + strlen(err.msg) - strlen(tail), tail);
    /* All of the output before the failure was handed out first. */
    assert_true(got > 0);
}

static void test_not_installed(void **state) {
    (void)state;
    source_options o = command("sstpipe-no-such-decompressor -dc", 1);
    size_t got;
    sp_error err = read_all_fails(zst_path, &o, &got);
    assert_contains(err.msg, "decompressor 'sstpipe-no-such-decompressor -dc' failed (exit 127, "
                             "command not found)");
    assert_contains(err.msg, "not found");
    assert_int_equal(got, 0);
}

/* A command that closes its output but stays alive is killed after the
 * grace period, and that is an error, not a hang or a success. */
static void test_closes_output_but_lingers(void **state) {
    (void)state;
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "zstd -dc; exec >&-; echo $$ > '%s'; exec sleep 600", pid_path);
    source_options o = command(cmd, 1);
    size_t got;
    sp_error err = read_all_fails(zst_path, &o, &got);
    assert_contains(err.msg, "closed its output but had not exited 10 s later; killed it");
    assert_true(got > 0);
    assert_pid_gone();
}

/* Killed after part of its output: the data is incomplete, which only its
 * exit status tells. */
static void test_killed_midway(void **state) {
    (void)state;
    source_options o = command("echo $$ > pid; head -c 300000; kill -9 $$", 1);
    char old[PATH_MAX];
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(tmpdir), 0);
    size_t got;
    sp_error err = read_all_fails(xml_path, &o, &got);
    assert_int_equal(chdir(old), 0);
    assert_contains(err.msg, "failed (killed by signal 9, SIGKILL)");
    assert_int_equal(got, 300000);
    assert_pid_gone();
}

/* ------------------------------------------------------------ early stops */

static int count_records(void *ctx, const sp_record *rec, sp_error *err) {
    (void)rec;
    (void)err;
    (*(int *)ctx)++;
    return 0;
}

/* A parse error while the command would write forever: extract fails on
 * the XML line, the command is killed and reaped. */
static void test_parse_error_while_writing(void **state) {
    (void)state;
    char cmd[PATH_MAX + 200];
    snprintf(cmd, sizeof cmd,
             "echo $$ > '%s'; printf '<mediawiki>\\n<page><title>x</titl>'; exec yes '<junk>'",
             pid_path);
    extract_options opts;
    extract_options_init(&opts);
    opts.decompressor = cmd;
    int records = 0;
    sp_sink sink = {.put = count_records, .ctx = &records};
    sp_error err = {0};
    extract_stats stats;
    assert_int_equal(extract_file(xml_path, &opts, &sink, &stats, &err), -1);
    assert_contains(err.msg, "XML error at line 2");
    assert_null(strstr(err.msg, "compressed byte"));
    assert_pid_gone();
}

/* The consumer stops after one read, the command still writing. */
static void test_close_after_one_read(void **state) {
    (void)state;
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "echo $$ > '%s'; exec yes", pid_path);
    source_options o = command(cmd, 1);
    sp_error err = {0};
    source *s = source_open_with(xml_path, &o, &err);
    assert_non_null(s);
    uint8_t buf[4096];
    assert_int_equal(source_read(s, buf, sizeof buf, &err), (ssize_t)sizeof buf);
    assert_memory_equal(buf, "y\ny\n", 4);
    source_close(s);
    assert_pid_gone();
}

/* A silent writer on stdin: a child writes n bytes of p into a pipe that
 * becomes our stdin, then holds it open without writing more. Returns the
 * child; *saved is the old stdin, for silent_writer_end. */
static pid_t silent_writer_start(const void *p, size_t n, int *saved) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        /* Gone with the test, even when the alarm ends it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(fds[0]);
        if (write(fds[1], p, n) != (ssize_t)n)
            _exit(1);
        pause();
        _exit(0);
    }
    close(fds[1]);
    *saved = dup(STDIN_FILENO);
    assert_int_equal(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
    close(fds[0]);
    return writer;
}

static void silent_writer_end(pid_t writer, int saved) {
    assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
    close(saved);
    kill(writer, SIGKILL);
    assert_int_equal(waitpid(writer, NULL, 0), writer);
}

/* Opens stdin, which starts with want, reads a little and closes. */
static void read_some_and_close(const char *format, const void *want, size_t want_len) {
    sp_error err = {0};
    source *s = source_open_with("-", NULL, &err);
    if (!s)
        fail_msg("%s", err.msg);
    assert_string_equal(source_format(s), format);
    uint8_t buf[100];
    assert_int_equal(source_read(s, buf, sizeof buf, &err), (ssize_t)sizeof buf);
    assert_memory_equal(buf, want, want_len < sizeof buf ? want_len : sizeof buf);
    source_close(s);
}

/* Built-in decoders on stdin: the decoding thread waits in a read that no
 * data will end (the writer holds the pipe open); close must still return.
 * Plain XML: 2 MB, more than libarchive looks at before it starts (it
 * waits for that much), less than the queue holds. */
static void test_close_while_pipe_blocks(void **state) {
    (void)state;
    static const char page[] = "<page><title>T</title><text>some text</text></page>\n";
    size_t n = 40000 * (sizeof page - 1);
    char *xml = malloc(n);
    assert_non_null(xml);
    for (size_t at = 0; at < n; at += sizeof page - 1)
        memcpy(xml + at, page, sizeof page - 1);
    int saved;
    pid_t writer = silent_writer_start(xml, n, &saved);
    read_some_and_close("none", page, sizeof page - 1);
    silent_writer_end(writer, saved);
    free(xml);
}

/* The same for the parallel bz2 decoder, whose scanner thread reads ahead:
 * half of a level-9 stream is two blocks, fewer than its slots, so the
 * scanner ends up waiting in read(), not for a free slot. */
static void test_close_while_bz2_pipe_blocks(void **state) {
    (void)state;
    size_t n = 4u << 20, zcap = n + n / 50 + 1000;
    char *data = malloc(n), *z = malloc(zcap);
    assert_true(data && z);
    uint64_t x = 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        data[i] = (char)('a' + (x >> 60));
    }
    unsigned zlen = (unsigned)zcap;
    assert_int_equal(BZ2_bzBuffToBuffCompress(z, &zlen, data, (unsigned)n, 9, 0, 0), BZ_OK);
    int saved;
    pid_t writer = silent_writer_start(z, zlen / 2, &saved);
    read_some_and_close("bzip2", data, n);
    silent_writer_end(writer, saved);
    free(z);
    free(data);
}

/* The decompressor's stdout is a pipe, but a failure to start is ours. */
static void test_missing_input(void **state) {
    (void)state;
    char path[PATH_MAX];
    tmp_path(path, "no-such.xml.zst");
    source_options o = command("zstd -dc", 1);
    sp_error err = {0};
    assert_null(source_open_with(path, &o, &err));
    assert_contains(err.msg, "no-such.xml.zst: cannot open");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_false, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_exit_3_with_message, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_not_installed, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_killed_midway, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_closes_output_but_lingers, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_parse_error_while_writing, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_close_after_one_read, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_close_while_pipe_blocks, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_close_while_bz2_pipe_blocks, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_missing_input, test_setup, test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
