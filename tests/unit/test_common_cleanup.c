/*
 * test_common_cleanup.c: the signal cleanup's registry (stages/common/cleanup.h)
 * across threads. A signal may be handled on any thread that does not hold it,
 * so a path one thread is creating must still be removed when another
 * thread's handler runs in the middle of the creation: the handler waits for
 * the creation to be registered. Each case runs in a child process, which
 * the handler ends with 128 + the signal.
 */
#include "stages/common/cleanup.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static char path[128];
static atomic_int created;

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts))
        ;
}

/* Creates the file, then lingers before registering it: long enough for
 * the signal sent meanwhile to be handled on the main thread. */
static void create_slowly(void *arg) {
    (void)arg;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        _exit(2);
    close(fd);
    atomic_store(&created, 1);
    sleep_ms(300);
    sp_cleanup_add(path);
}

static void *creator(void *arg) {
    sp_cleanup_create(create_slowly, arg);
    return NULL;
}

static void test_handler_on_another_thread_waits_for_the_creation(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sstpipe-cleanup-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/named.tmp", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sp_cleanup_install();
        pthread_t t;
        if (pthread_create(&t, NULL, creator, NULL))
            _exit(3);
        while (!atomic_load(&created))
            sleep_ms(1);
        /* The creator holds every signal, so this one is handled here, on
         * the main thread, while the file exists but is not registered. */
        kill(getpid(), SIGTERM);
        sleep_ms(5000);
        _exit(4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 128 + SIGTERM);
    struct stat st;
    int left = stat(path, &st) == 0;
    unlink(path);
    rmdir(dir);
    assert_false(left);
}

/* A creation that would start while the handler waits never runs: the
 * handler has no way to find what it would make. */
static char late[128];

static void create_late(void *arg) {
    (void)arg;
    int fd = open(late, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

static void *late_creator(void *arg) {
    while (!atomic_load(&created))
        sleep_ms(1);
    sleep_ms(100);
    sp_cleanup_create(create_late, arg);
    return NULL;
}

static void test_no_creation_starts_while_the_handler_runs(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sstpipe-cleanup-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/first.tmp", dir);
    snprintf(late, sizeof late, "%s/late.tmp", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sp_cleanup_install();
        pthread_t a, b;
        if (pthread_create(&a, NULL, creator, NULL) || pthread_create(&b, NULL, late_creator, NULL))
            _exit(3);
        while (!atomic_load(&created))
            sleep_ms(1);
        kill(getpid(), SIGTERM);
        sleep_ms(5000);
        _exit(4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 128 + SIGTERM);
    struct stat st;
    int first_left = stat(path, &st) == 0, late_made = stat(late, &st) == 0;
    unlink(path);
    unlink(late);
    rmdir(dir);
    assert_false(first_left);
    assert_false(late_made);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handler_on_another_thread_waits_for_the_creation),
        cmocka_unit_test(test_no_creation_starts_while_the_handler_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
