/*
 * test_common_clock.c: the one clock (stages/common/clock.h): its seconds
 * and nanoseconds are one monotonic clock (the cluster build subtracts the
 * runners' stage ends, taken in one, from its own start, taken in the
 * other), a sleep passes on it, and the process's CPU time counts every
 * thread's work but not a sleep, where the thread's counts its own only;
 * a deadline is a normalised time that far ahead, which a timed wait on
 * the monotonic clock keeps to.
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

static void test_deadline_is_a_normal_time_ahead(void **state) {
    (void)state;
    /* Each of these carries into tv_sec unless tv_nsec is read as 0. */
    const uint64_t ahead[] = {0, 1, 999999999u, 1500000000u, 2000000000u};
    for (size_t i = 0; i < sizeof ahead / sizeof ahead[0]; i++) {
        uint64_t a = sp_clock_ns();
        struct timespec d = sp_clock_deadline(ahead[i]);
        uint64_t b = sp_clock_ns();
        assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
        uint64_t at = (uint64_t)d.tv_sec * 1000000000u + (uint64_t)d.tv_nsec;
        assert_true(at >= a + ahead[i]);
        assert_true(at <= b + ahead[i]);
    }
}

static void test_a_timed_wait_waits_until_the_deadline(void **state) {
    (void)state;
    pthread_condattr_t ca;
    pthread_cond_t c;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c, &ca);
    pthread_mutex_lock(&mu);
    uint64_t a = sp_clock_ns();
    struct timespec d = sp_clock_deadline(30000000u);
    while (pthread_cond_timedwait(&c, &mu, &d) == 0)
        ;
    assert_true(sp_clock_ns() - a >= 30000000u);
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&c);
    pthread_condattr_destroy(&ca);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seconds_and_ns_are_one_clock),
        cmocka_unit_test(test_a_sleep_passes),
        cmocka_unit_test(test_process_cpu_counts_every_thread_not_sleep),
        cmocka_unit_test(test_deadline_is_a_normal_time_ahead),
        cmocka_unit_test(test_a_timed_wait_waits_until_the_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
