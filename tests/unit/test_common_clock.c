/*
 * test_common_clock.c: the one clock (stages/common/clock.h): its seconds
 * and nanoseconds are one monotonic clock (the cluster build subtracts the
 * runners' stage ends, taken in one, from its own start, taken in the
 * other), a sleep passes on it, and the process's CPU time counts every
 * thread's work but not a sleep, where the thread's counts its own only.
 */
#include "stages/common/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <time.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts))
        ;
}

/* Spins until the calling thread has used `seconds` of CPU. */
static void *spin(void *arg) {
    double until = sp_thread_cpu_seconds() + *(const double *)arg;
    volatile uint64_t x = 0;
    while (sp_thread_cpu_seconds() < until)
        x++;
    return NULL;
}

static void test_seconds_and_ns_are_one_clock(void **state) {
    (void)state;
    for (int i = 0; i < 1000; i++) {
        uint64_t a = sp_clock_ns();
        double s = sp_clock_seconds();
        uint64_t b = sp_clock_ns();
        /* A double of nanoseconds in seconds may round by a nanosecond. */
        assert_true(s >= (double)a / 1e9 - 1e-9);
        assert_true(s <= (double)b / 1e9 + 1e-9);
    }
}

static void test_a_sleep_passes(void **state) {
    (void)state;
    uint64_t a = sp_clock_ns();
    double s = sp_clock_seconds();
    sleep_ms(30);
    assert_true(sp_clock_ns() - a >= 30000000u);
    double d = sp_clock_seconds() - s;
    assert_true(d >= 0.030);
    assert_true(d < 30.0);
}

static void test_process_cpu_counts_every_thread_not_sleep(void **state) {
    (void)state;
    double p0 = sp_process_cpu_seconds(), t0 = sp_thread_cpu_seconds();
    sleep_ms(60);
    assert_true(sp_process_cpu_seconds() - p0 < 0.030);
    double work = 0.08;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, spin, &work), 0);
    pthread_join(t, NULL);
    /* The other thread's CPU is the process's, not this thread's. */
    assert_true(sp_process_cpu_seconds() - p0 >= work);
    assert_true(sp_thread_cpu_seconds() - t0 < work / 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seconds_and_ns_are_one_clock),
        cmocka_unit_test(test_a_sleep_passes),
        cmocka_unit_test(test_process_cpu_counts_every_thread_not_sleep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
