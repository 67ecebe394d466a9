/*
 * test_common_usage.c: the resource-usage reader (stages/common/usage.h):
 * a child's memory and CPU are the children's, not this process's, once
 * it has been waited for; this process's own peak covers what it touched,
 * in bytes, in both readings (the two are not compared: the kernel
 * counts them at different moments).
 */
#include "stages/common/usage.h"

#include "stages/common/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024u * 1024u)

/* Allocates and touches n bytes, so that they are resident. */
static char *touch(size_t n) {
    char *p = malloc(n);
    if (p)
        memset(p, 1, n);
    return p;
}

/* Runs first, while this process is small: a child's peak and CPU. */
static void test_children_are_their_own(void **state) {
    (void)state;
    sp_usage before, self, kids;
    assert_int_equal(sp_usage_get(SP_USAGE_CHILDREN, &before), 0);
    assert_true(before.peak_rss_bytes == 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *p = touch(128 * MIB);
        double until = sp_process_cpu_seconds() + 0.1;
        volatile uint64_t x = 0;
        while (sp_process_cpu_seconds() < until)
            x++;
        _exit(p && p[MIB] == 1 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(sp_usage_get(SP_USAGE_CHILDREN, &kids), 0);
    assert_int_equal(sp_usage_get(SP_USAGE_SELF, &self), 0);
    assert_true(kids.peak_rss_bytes >= 128 * MIB);
    assert_true(self.peak_rss_bytes < 64 * MIB);
    assert_true(kids.user_seconds + kids.system_seconds >= 0.1);
    assert_true(self.user_seconds + self.system_seconds < 0.1);
}

static void test_self_peak_in_bytes(void **state) {
    (void)state;
    char *p = touch(64 * MIB);
    assert_non_null(p);
    sp_usage self;
    assert_int_equal(sp_usage_get(SP_USAGE_SELF, &self), 0);
    uint64_t image = sp_usage_image_peak_rss();
    assert_true(self.peak_rss_bytes >= 64 * MIB);
    assert_true(self.peak_rss_bytes < 4096ull * MIB);
    assert_true(image >= 64 * MIB);
    assert_true(image < 4096ull * MIB);
    assert_int_equal(image % 1024, 0);
    free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_children_are_their_own),
        cmocka_unit_test(test_self_peak_in_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
