/*
 * test_common_child.c: the process supervisor (stages/common/child.h): how
 * an end is said, a child that ignores SIGTERM killed once its grace period
 * is over, nothing of its group left after a stop (a grandchild that
 * outlives its parent included), the lines quoted from a captured stderr, a
 * command's output collected, and the waits without a pidfd. Each test runs
 * under alarm(), so a hang fails.
 */
#include "stages/common/child.h"
#include "stages/common/fileio.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds any one test may take before it counts as hung. */
#define HANG_SECONDS 30
#define GRACE_MS 300

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test hung: alarm fired\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
        _exit(3);
    _exit(2);
}

static int arm(void **state) {
    (void)state;
    signal(SIGALRM, on_alarm);
    alarm(HANG_SECONDS);
    return 0;
}

static int disarm(void **state) {
    (void)state;
    alarm(0);
    return 0;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Starts sh -c script, its stdout into out (SP_CHILD_NULL: none) and its
 * stderr into err_fd. */
static void start(sp_child *c, const char *script, int out, int err_fd) {
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    sp_child_io io = {.in = SP_CHILD_NULL, .out = out, .err = err_fd};
    assert_int_equal(sp_child_spawn(c, "sh", argv, &io), 0);
}

/* The status of sh -c script, run to its end. */
static int status_of(const char *script) {
    sp_child c;
    start(&c, script, SP_CHILD_NULL, SP_CHILD_NULL);
    assert_int_equal(sp_child_wait(&c, -1), 1);
    return c.status;
}

static void test_status_described(void **state) {
    (void)state;
    char buf[64];
    sp_child_describe(status_of("exit 3"), false, buf, sizeof buf);
    assert_string_equal(buf, "exit 3");
    sp_child_describe(status_of("exit 3"), true, buf, sizeof buf);
    assert_string_equal(buf, "exit 3");
    int killed = status_of("kill -9 $$");
    sp_child_describe(killed, false, buf, sizeof buf);
    assert_string_equal(buf, "killed by signal 9");
    sp_child_describe(killed, true, buf, sizeof buf);
    assert_string_equal(buf, "killed by signal 9, SIGKILL");
    int missing = status_of("sstpipe-no-such-command 2>/dev/null");
    sp_child_describe(missing, true, buf, sizeof buf);
    assert_string_equal(buf, "exit 127, command not found");
    sp_child_describe(missing, false, buf, sizeof buf);
    assert_string_equal(buf, "exit 127");
}

/* Starts sh -c script and reads the first line it writes (when it is ready). */
static void start_reading(sp_child *c, const char *script, char *line, size_t size) {
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    start(c, script, p[1], SP_CHILD_NULL);
    close(p[1]);
    size_t n = 0;
    while (n + 1 < size && read(p[0], line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = '\0';
    close(p[0]);
}

/* Whether pid has gone (or is a zombie, its life over) within a second. */
static int gone(long pid) {
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    for (int i = 0; i < 100; i++) {
        FILE *f = fopen(path, "r");
        if (!f)
            return 1;
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = '\0';
        const char *s = strrchr(stat, ')');
        if (s && (s[2] == 'Z' || s[2] == 'X'))
            return 1;
        usleep(10000);
    }
    return 0;
}

/* SIGTERM ignored: SIGKILL once the grace period is over, not before. */
static void test_term_ignored_killed_after_grace(void **state) {
    (void)state;
    sp_child c;
    char line[32];
    start_reading(&c, "trap '' TERM; echo ready; while :; do sleep 1; done", line, sizeof line);
    assert_string_equal(line, "ready");
    long long t0 = now_ms();
    sp_child_stop(&c, SIGTERM, GRACE_MS);
    long long took = now_ms() - t0;
    assert_true(c.reaped);
    assert_true(WIFSIGNALED(c.status));
    assert_int_equal(WTERMSIG(c.status), SIGKILL);
    assert_true(took >= GRACE_MS);
    assert_true(took < 10 * GRACE_MS);
}

/* The leader dies of SIGTERM at once; its child, which ignores it, is killed
 * with the group all the same. */
static void test_group_gone_after_stop(void **state) {
    (void)state;
    sp_child c;
    char line[32];
    start_reading(&c, "(trap '' TERM; exec sleep 600) & echo $!; wait", line, sizeof line);
    long grandchild = atol(line);
    assert_true(grandchild > 1);
    /* Its trap is set before it execs sleep: wait until it has. */
    char comm[64], path[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", grandchild);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        if (!strcmp(comm, "sleep\n"))
            break;
        usleep(10000);
    }
    assert_string_equal(comm, "sleep\n");
    long long t0 = now_ms();
    sp_child_stop(&c, SIGTERM, 10000);
    assert_true(now_ms() - t0 < 10000); /* the leader went at SIGTERM */
    assert_true(WIFSIGNALED(c.status));
    assert_int_equal(WTERMSIG(c.status), SIGTERM);
    int ok = gone(grandchild);
    if (!ok)
        kill((pid_t)grandchild, SIGKILL);
    assert_true(ok);
}

/* The first and the last non-empty line of a captured stderr, printable. */
static void test_stderr_lines(void **state) {
    (void)state;
    sp_error err = {0};
    int fd = sp_tmpfile_open(NULL, &err);
    assert_true(fd >= 0);
    sp_child c;
    start(&c, "echo one >&2; printf 'two\\tthree\\n\\n' >&2; exit 3", SP_CHILD_NULL, fd);
    assert_int_equal(sp_child_wait(&c, -1), 1);
    char buf[64];
    assert_int_equal(sp_child_line(fd, true, buf, sizeof buf), 9);
    assert_string_equal(buf, "two three");
    assert_int_equal(sp_child_line(fd, false, buf, sizeof buf), 3);
    assert_string_equal(buf, "one");
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(sp_child_line(fd, true, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    close(fd);
}

/* A command run for its output: stdout whole, status, stderr's last line. */
static void test_output(void **state) {
    (void)state;
    char *argv[] = {"sh", "-c", "echo out; echo e1 >&2; echo e2 >&2; exit 4", NULL};
    char *out = NULL, errline[64];
    int status;
    sp_error err = {0};
    assert_int_equal(sp_child_output(argv, &out, &status, errline, sizeof errline, &err), 0);
    assert_string_equal(out, "out\n");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 4);
    assert_string_equal(errline, "e2");
    free(out);
    char *missing[] = {"sstpipe-no-such-command", NULL};
    assert_int_equal(sp_child_output(missing, &out, &status, errline, sizeof errline, &err), -1);
    assert_string_equal(err.msg, "cannot run sstpipe-no-such-command: No such file or directory");
}

/* Without a pidfd (a kernel before 5.3), a wait still honours its time. */
static void test_wait_without_pidfd(void **state) {
    (void)state;
    sp_child c;
    start(&c, "sleep 0.5", SP_CHILD_NULL, SP_CHILD_NULL);
    if (c.pidfd >= 0)
        close(c.pidfd);
    c.pidfd = -1;
    assert_int_equal(sp_child_poll_ms(&c) > 0, 1);
    assert_int_equal(sp_child_wait(&c, 100), 0);
    assert_false(c.reaped);
    assert_int_equal(sp_child_wait(&c, 5000), 1);
    assert_true(WIFEXITED(c.status));
    assert_int_equal(WEXITSTATUS(c.status), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_described, arm, disarm),
        cmocka_unit_test_setup_teardown(test_term_ignored_killed_after_grace, arm, disarm),
        cmocka_unit_test_setup_teardown(test_group_gone_after_stop, arm, disarm),
        cmocka_unit_test_setup_teardown(test_stderr_lines, arm, disarm),
        cmocka_unit_test_setup_teardown(test_output, arm, disarm),
        cmocka_unit_test_setup_teardown(test_wait_without_pidfd, arm, disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
