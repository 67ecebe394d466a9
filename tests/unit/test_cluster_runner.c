/*
 * test_cluster_runner.c: the three cluster runners (local, GNU
 * parallel, Slurm) on the same generic tasks, a sh script told by files in a
 * scratch directory to succeed, fail N times, always fail or hang until it is
 * killed: a stage of tasks runs, stages run in order, a task failing once is
 * retried, one always failing fails the run with one line quoting its log's
 * last line and path, a task killed (kill -9) or cancelled (scancel) while it
 * runs is retried, and SIGTERM to the process running the stages leaves no
 * task running and nothing in squeue. Slurm's tests run on a real
 * single-node cluster: tests/run's for the whole suite (its slurm.conf in
 * SSTPIPE_TEST_SLURM_CONF), or, run alone, one that tests/cluster/slurm-up
 * starts for this program and slurm-down stops. Other tests may share it, so
 * this program's jobs carry a comment of their own and only they are looked
 * at in squeue.
 */
#include "pipeline/cluster/cluster_runner_internal.h"

#include "stages/common/cleanup.h"

#include "test_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Tasks of the first stage: one more than jobs (2), so that one waits for
 * a free place, as does a failed task's retry. Each wave of jobs costs a
 * Slurm run seconds. */
#define FIRST_TASKS 3

/* Generous bounds on waiting for an event (a task's pid file): on the suite's shared
 * Slurm cluster a task may wait behind other tests' jobs for its CPU. */
#define WAIT_MS 600000

/* $0 the scratch dir, $1 the stage, then --task I. Files in the dir steer
 * it: <stage>.always.<i> (always exit 3), <stage>.fail.<i> holding N (exit
 * 4 the first N times), <stage>.hang.<i> (on its first attempt, write its
 * pid and Slurm array task, JOB_INDEX, to <stage>.pid.<i> and sleep until
 * killed), hangall (every task does that). <stage>.count.<i> counts its attempts; a task that
 * succeeds creates <stage>.done.<i>, and a task of stage "second" fails
 * unless every task of stage "first" is done. */
static const char task_script[] =
    "d=$0 s=$1 i=$3\n"
    "n=$(cat \"$d/$s.count.$i\" 2>/dev/null || echo 0); n=$((n+1)); echo $n >\"$d/$s.count.$i\"\n"
    "echo \"$s task $i attempt $n\"\n"
    "if [ -e \"$d/$s.always.$i\" ]; then echo \"$s task $i: always fails\" >&2; exit 3; fi\n"
    "if [ -e \"$d/$s.fail.$i\" ] && [ $n -le $(cat \"$d/$s.fail.$i\") ]; then\n"
    "  echo \"$s task $i: fails on attempt $n\" >&2; exit 4; fi\n"
    "if [ -e \"$d/hangall\" ] || { [ -e \"$d/$s.hang.$i\" ] && [ $n -eq 1 ]; }; then\n"
    "  p=\"$d/$s.pid.$i\"; echo \"$$ ${SLURM_ARRAY_JOB_ID:-0}_${SLURM_ARRAY_TASK_ID:-0}\" "
    ">\"$p.tmp\"\n"
    "  mv \"$p.tmp\" \"$p\"\n"
    "  exec sleep 300; fi\n"
    "if [ \"$s\" = second ]; then\n"
    "  k=0; for f in \"$d\"/first.done.*; do [ -e \"$f\" ] && k=$((k+1)); done\n"
    "  [ \"$k\" = \"$(cat \"$d/first.ntasks\")\" ] || { echo \"second before first\" >&2; exit 5; "
    "}\n"
    "fi\n"
    "touch \"$d/$s.done.$i\"\n";

typedef struct fixture {
    sp_runner_kind kind;
    char *slurm_dir; /* the test cluster's, for slurm */
    char *dir;       /* this test's scratch dir */
    char logs[TEST_DIR_CAP];
    char *argv_first[6], *argv_second[6];
    cluster_stage stages[2];
    cluster_runner_options o;
} fixture;

static char *path(const fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *path(const fixture *f, const char *fmt, ...) {
    static __thread char buf[8][TEST_DIR_CAP];
    static __thread int next;
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    char *b = buf[next++ % 8];
    snprintf(b, TEST_DIR_CAP, "%s/%s", f->dir, name);
    return b;
}

static void put(const char *p, const char *text) {
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static bool exists(const char *p) {
    return access(p, F_OK) == 0;
}

static int count(const fixture *f, const char *stage, int i) {
    FILE *fp = fopen(path(f, "%s.count.%d", stage, i), "r");
    int n = 0;
    if (fp) {
        if (fscanf(fp, "%d", &n) != 1)
            n = -1;
        fclose(fp);
    }
    return n;
}

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

/* Waits (bounded) for p to exist. */
static bool wait_for(const char *p) {
    for (long end = now_ms() + WAIT_MS; now_ms() < end; usleep(10000))
        if (exists(p))
            return true;
    return false;
}

/* Whether pid is a live process (a zombie is not). */
static bool alive(pid_t pid) {
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z';
}

/* Runs a shell command for its output's first line. */
static void shell_line(const char *cmd, char *out, size_t size) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    out[0] = '\0';
    if (!fgets(out, (int)size, p))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    pclose(p);
}

static char *slurm_dir;        /* the group's own test cluster (NULL: tests/run's) */
static char slurm_comment[64]; /* sbatch --comment of this program's jobs */

static int fixture_setup(void **state, sp_runner_kind kind, const char *slurm_dir) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->kind = kind;
    f->slurm_dir = (char *)slurm_dir;
    assert_non_null(f->dir = test_dir_make("cluster_runner"));
    snprintf(f->logs, sizeof f->logs, "%s/logs", f->dir);
    char *first[] = {"/bin/sh", "-c", (char *)task_script, f->dir, "first", NULL};
    char *second[] = {"sh", "-c", (char *)task_script, f->dir, "second", NULL};
    memcpy(f->argv_first, first, sizeof first);
    memcpy(f->argv_second, second, sizeof second);
    f->stages[0] = (cluster_stage){.name = "first", .argv = f->argv_first, .ntasks = FIRST_TASKS};
    f->stages[1] = (cluster_stage){.name = "second", .argv = f->argv_second, .ntasks = 3};
    char ntasks[16];
    snprintf(ntasks, sizeof ntasks, "%d\n", FIRST_TASKS);
    put(path(f, "first.ntasks"), ntasks);
    cluster_runner_options_init(&f->o);
    f->o.kind = kind;
    f->o.jobs = 2;
    f->o.retries = 1;
    f->o.log_dir = f->logs;
    if (kind == SP_RUNNER_PARALLEL) {
        /* A login file of this machine alone, as the tests ask. */
        put(path(f, "sshlogin"), ":\n");
        f->o.parallel_sshlogin = strdup(path(f, "sshlogin"));
    }
    if (kind == SP_RUNNER_SLURM) {
        f->o.slurm_partition = "test";
        static char args[128];
        snprintf(args, sizeof args, "--time=30 --job-name='sstpipe test' --comment=%s",
                 slurm_comment);
        f->o.slurm_args = args;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    free((char *)f->o.parallel_sshlogin);
    assert_int_equal(test_dir_remove(f->dir), 0);
    free(f);
    return 0;
}

static int setup_local(void **state) {
    return fixture_setup(state, SP_RUNNER_LOCAL, NULL);
}
static int setup_parallel(void **state) {
    return fixture_setup(state, SP_RUNNER_PARALLEL, NULL);
}
static int setup_slurm(void **state) {
    return fixture_setup(state, SP_RUNNER_SLURM, slurm_dir);
}

static int slurm_group_setup(void **state) {
    (void)state;
    snprintf(slurm_comment, sizeof slurm_comment, "sstpipe-unit-%d", (int)getpid());
    const char *shared = getenv("SSTPIPE_TEST_SLURM_CONF");
    if (shared && *shared)
        return setenv("SLURM_CONF", shared, 1);
    const char *src = getenv("SSTPIPE_SOURCE");
    /* munged wants its socket's every ancestor searchable by all. */
    if (!src || !(slurm_dir = test_dir_make("slurm")) || chmod(slurm_dir, 0755))
        return -1;
    char cmd[3 * TEST_DIR_CAP];
    snprintf(cmd, sizeof cmd, "%s/tests/cluster/slurm-up %s/cluster >&2", src, slurm_dir);
    if (system(cmd) != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "%s/cluster/slurm.conf", slurm_dir);
    return setenv("SLURM_CONF", cmd, 1);
}

static int slurm_group_teardown(void **state) {
    (void)state;
    if (!slurm_dir)
        return 0;
    char cmd[3 * TEST_DIR_CAP];
    snprintf(cmd, sizeof cmd, "%s/tests/cluster/slurm-down %s/cluster", getenv("SSTPIPE_SOURCE"),
             slurm_dir);
    int rc = system(cmd);
    test_dir_remove(slurm_dir);
    return rc == 0 ? 0 : -1;
}

/* Every task of both stages runs once, the second stage after the first;
 * each attempt's output is in its own log. */
static void test_stages_in_order(void **state) {
    fixture *f = *state;
    sp_error err = {0};
    assert_int_equal(cluster_run(&f->o, f->stages, 2, &err), 0);
    for (int i = 0; i < FIRST_TASKS; i++) {
        assert_true(exists(path(f, "first.done.%d", i)));
        assert_int_equal(count(f, "first", i), 1);
        char line[256], want[64];
        char *log = runner_log_path(f->logs, "first", i, 0);
        runner_log_last_line(log, line, sizeof line);
        snprintf(want, sizeof want, "first task %d attempt 1", i);
        assert_string_equal(line, want);
        free(log);
    }
    for (int i = 0; i < 3; i++) {
        assert_true(exists(path(f, "second.done.%d", i)));
        assert_int_equal(count(f, "second", i), 1);
    }
}

/* A task failing once succeeds on its retry (task 0: a task waits behind
 * it); its first log keeps why. */
static void test_retry_once(void **state) {
    fixture *f = *state;
    put(path(f, "first.fail.0"), "1\n");
    put(path(f, "second.fail.0"), "1\n");
    sp_error err = {0};
    assert_int_equal(cluster_run(&f->o, f->stages, 2, &err), 0);
    assert_int_equal(count(f, "first", 0), 2);
    assert_int_equal(count(f, "first", 2), 1);
    assert_int_equal(count(f, "second", 0), 2);
    assert_true(exists(path(f, "first.done.0")));
    char line[256];
    char *log = runner_log_path(f->logs, "first", 0, 0);
    runner_log_last_line(log, line, sizeof line);
    assert_string_equal(line, "first task 0: fails on attempt 1");
    free(log);
    assert_true(exists(path(f, "logs/first-0.1.log")));
}

/* A task that always fails fails the run with the one line, after retries
 * + 1 attempts; the next stage never starts. */
static void test_always_fails(void **state) {
    fixture *f = *state;
    put(path(f, "first.always.2"), "");
    sp_error err = {0};
    assert_int_equal(cluster_run(&f->o, f->stages, 2, &err), -1);
    char want[2 * TEST_DIR_CAP];
    snprintf(want, sizeof want,
             "first task 2 (of 3): exit 3, attempt 2 of 2: first task 2: always fails "
             "(log: %s/first-2.1.log)",
             f->logs);
    assert_string_equal(err.msg, want);
    assert_int_equal(count(f, "first", 2), 2);
    assert_false(exists(path(f, "logs/first-2.2.log")));
    for (int i = 0; i < 3; i++)
        assert_int_equal(count(f, "second", i), 0);
}

/* Kills the task whose pid file appears: kill -9, or scancel of its job. */
typedef struct killer {
    fixture *f;
    const char *pid_file;
    bool done;
} killer;

static void *kill_task(void *arg) {
    killer *k = arg;
    if (!wait_for(k->pid_file))
        return NULL;
    FILE *fp = fopen(k->pid_file, "r");
    long pid = 0;
    char job[64] = "";
    if (fp) {
        if (fscanf(fp, "%ld %63s", &pid, job) != 2)
            pid = 0;
        fclose(fp);
    }
    if (k->f->kind == SP_RUNNER_SLURM) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "scancel %s", job);
        k->done = pid > 0 && system(cmd) == 0;
    } else if (pid > 0) {
        k->done = kill((pid_t)pid, SIGKILL) == 0;
    }
    return NULL;
}

/* A task killed while it runs (kill -9; scancel on Slurm) runs again and
 * the run succeeds. */
static void test_killed_task_retried(void **state) {
    fixture *f = *state;
    put(path(f, "first.hang.1"), "");
    killer k = {.f = f, .pid_file = path(f, "first.pid.1")};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, kill_task, &k), 0);
    sp_error err = {0};
    int rc = cluster_run(&f->o, f->stages, 2, &err);
    pthread_join(t, NULL);
    assert_true(k.done);
    assert_int_equal(rc, 0);
    assert_int_equal(count(f, "first", 1), 2);
    assert_true(exists(path(f, "first.done.1")));
    assert_true(exists(path(f, "second.done.2")));
}

/* SIGTERM to a process in cluster_run: it exits as sstpipe's handler makes
 * it (143), and no task is left running or queued. */
static void test_sigterm_cancels(void **state) {
    fixture *f = *state;
    put(path(f, "hangall"), "");
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        sp_cleanup_install();
        sp_error err = {0};
        cluster_run(&f->o, f->stages, 2, &err);
        _exit(0); /* not reached: the signal is raised again */
    }
    pid_t tasks[2];
    for (int i = 0; i < 2; i++) {
        const char *p = path(f, "first.pid.%d", i);
        /* jobs = 2: tasks 0 and 1 run first on every runner. */
        assert_true(wait_for(p));
        FILE *fp = fopen(p, "r");
        long pid = 0;
        assert_non_null(fp);
        assert_int_equal(fscanf(fp, "%ld", &pid), 1);
        fclose(fp);
        tasks[i] = (pid_t)pid;
        assert_true(alive(tasks[i]));
    }
    assert_int_equal(kill(child, SIGTERM), 0);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 128 + SIGTERM);
    for (int i = 0; i < 2; i++)
        assert_false(alive(tasks[i]));
    for (int i = 2; i < FIRST_TASKS; i++)
        assert_int_equal(count(f, "first", i), 0);
    if (f->kind == SP_RUNNER_SLURM) {
        char line[256];
        char cmd[256];
        snprintf(cmd, sizeof cmd,
                 "squeue --noheader --format='%%i %%k' 2>&1 | grep -F ' %s' || true",
                 slurm_comment);
        shell_line(cmd, line, sizeof line);
        assert_string_equal(line, "");
    }
}

/* The shared parts, runner-independent. */
static void test_split_words(void **state) {
    (void)state;
    char **w;
    size_t n;
    sp_error err = {0};
    assert_int_equal(runner_split_words("  --account=a --time 1:00 'x y' \"a\\\"b $c\" c\\ d e\\",
                                        "slurm_args", &w, &n, &err),
                     0);
    const char *want[] = {"--account=a", "--time", "1:00", "x y", "a\"b $c", "c d", "e\\"};
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(w[i], want[i]);
    assert_null(w[n]);
    runner_words_free(w);
    assert_int_equal(runner_split_words("", "slurm_args", &w, &n, &err), 0);
    assert_int_equal(n, 0);
    runner_words_free(w);
    assert_int_equal(runner_split_words("--mem=1G 'open", "slurm_args", &w, &n, &err), -1);
    assert_string_equal(err.msg, "slurm_args: unterminated quote at offset 9 in '--mem=1G 'open'");
}

static void test_log_last_line(void **state) {
    (void)state;
    char *d = test_dir_make("cluster_runner_log");
    assert_non_null(d);
    char p[TEST_DIR_CAP + 16], line[64];
    snprintf(p, sizeof p, "%s/log", d);
    FILE *fp = fopen(p, "w");
    fputs("first\nthe\tlast one\n\n  \n", fp);
    fclose(fp);
    runner_log_last_line(p, line, sizeof line);
    assert_string_equal(line, "the last one");
    fp = fopen(p, "w");
    fclose(fp);
    runner_log_last_line(p, line, sizeof line);
    assert_string_equal(line, "(its log is empty)");
    unlink(p);
    runner_log_last_line(p, line, sizeof line);
    assert_string_equal(line, "(its log cannot be read)");
    test_dir_remove(d);
}

#define RUNNER_TESTS(setup)                                                                        \
    cmocka_unit_test_setup_teardown(test_stages_in_order, setup, teardown),                        \
        cmocka_unit_test_setup_teardown(test_retry_once, setup, teardown),                         \
        cmocka_unit_test_setup_teardown(test_always_fails, setup, teardown),                       \
        cmocka_unit_test_setup_teardown(test_killed_task_retried, setup, teardown),                \
        cmocka_unit_test_setup_teardown(test_sigterm_cancels, setup, teardown)

int main(void) {
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(test_split_words),
        cmocka_unit_test(test_log_last_line),
    };
    const struct CMUnitTest local[] = {RUNNER_TESTS(setup_local)};
    const struct CMUnitTest parallel[] = {RUNNER_TESTS(setup_parallel)};
    const struct CMUnitTest slurm[] = {RUNNER_TESTS(setup_slurm)};
    int failed = cmocka_run_group_tests_name("shared", shared, NULL, NULL);
    failed += cmocka_run_group_tests_name("local", local, NULL, NULL);
    failed += cmocka_run_group_tests_name("parallel", parallel, NULL, NULL);
    failed += cmocka_run_group_tests_name("slurm", slurm, slurm_group_setup, slurm_group_teardown);
    return failed ? 1 : 0;
}
