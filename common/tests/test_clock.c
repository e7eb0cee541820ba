/* common/clock: monotonic time and stop-aware sleeps. The wall clock of this
 * test binary reads an hour ahead of the one the kernel's timers use (as
 * right after the clock was stepped back by an hour): a sleep computed on
 * CLOCK_REALTIME would then wait an hour, and alarm() ends the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define WALL_SKEW_S 3600

/* Interposes libc's clock_gettime for this binary (the library is linked in
 * statically): CLOCK_REALTIME reads WALL_SKEW_S ahead. */
int clock_gettime(clockid_t id, struct timespec *ts)
{
    long rc = syscall(SYS_clock_gettime, id, ts);
    if (rc == 0 && id == CLOCK_REALTIME)
        ts->tv_sec += WALL_SKEW_S;
    return (int)rc;
}

static void test_wall_clock_is_skewed(void **state)
{
    (void)state;
    /* the premise of the tests below */
    struct timespec ts;
    assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
    assert_true(ts.tv_sec > time(NULL) + WALL_SKEW_S / 2);
}

static void test_condattr_is_monotonic(void **state)
{
    (void)state;
    pthread_condattr_t ca;
    assert_int_equal(clk_condattr_init(&ca), 0);
    clockid_t id = CLOCK_REALTIME;
    assert_int_equal(pthread_condattr_getclock(&ca, &id), 0);
    assert_int_equal(id, CLOCK_MONOTONIC);
    pthread_condattr_destroy(&ca);
}

static void test_now_is_monotonic(void **state)
{
    (void)state;
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    long long a = clk_now_ms();
    assert_true(a >= (long long)ts.tv_sec * 1000);
    assert_true(clk_now_ms() >= a);
    assert_true(clk_now_ns() / 1000000 >= (uint64_t)a);
}

static void test_past_deadline_returns_at_once(void **state)
{
    (void)state;
    struct clk_stop s;
    assert_int_equal(clk_stop_init(&s), 0);
    /* a deadline read off the skewed wall clock would be an hour away */
    assert_int_equal(clk_sleep_until(&s, clk_now_ms() - 1000), 0);
    assert_int_equal(clk_sleep_until(&s, 0), 0);
    assert_int_equal(clk_sleep_ms(&s, 0), 0);
    assert_int_equal(clk_sleep_ms(&s, -5), 0);
    clk_stop_destroy(&s);
}

static void test_sleeps_until_the_deadline(void **state)
{
    (void)state;
    struct clk_stop s;
    assert_int_equal(clk_stop_init(&s), 0);
    long long deadline = clk_now_ms() + 30;
    assert_int_equal(clk_sleep_until(&s, deadline), 0);
    assert_true(clk_now_ms() >= deadline); /* never early */
    deadline = clk_now_ms() + 20;
    assert_int_equal(clk_sleep_ms(&s, 20), 0);
    assert_true(clk_now_ms() >= deadline);
    clk_stop_destroy(&s);
}

struct sleeper {
    struct clk_stop *s;
    pthread_mutex_t mu;
    int started;
    int result;
};

static void *sleep_an_hour(void *arg)
{
    struct sleeper *sl = arg;
    pthread_mutex_lock(&sl->mu);
    sl->started = 1;
    pthread_mutex_unlock(&sl->mu);
    sl->result = clk_sleep_ms(sl->s, 3600 * 1000L);
    return NULL;
}

static void test_stop_wakes_sleepers(void **state)
{
    (void)state;
    struct clk_stop s;
    assert_int_equal(clk_stop_init(&s), 0);
    struct sleeper sl[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        sl[i] = (struct sleeper){.s = &s, .result = -1};
        pthread_mutex_init(&sl[i].mu, NULL);
        assert_int_equal(pthread_create(&th[i], NULL, sleep_an_hour, &sl[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        for (int started = 0; !started;) {
            pthread_mutex_lock(&sl[i].mu);
            started = sl[i].started;
            pthread_mutex_unlock(&sl[i].mu);
            sched_yield();
        }
    clk_nap_ms(20); /* most likely asleep by now; if not, the flag stops them */
    assert_int_equal(clk_stopped(&s), 0);
    clk_stop_signal(&s);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(sl[i].result, 1);
        pthread_mutex_destroy(&sl[i].mu);
    }
    assert_int_equal(clk_stopped(&s), 1);
    /* once stopped, every sleep returns at once */
    assert_int_equal(clk_sleep_ms(&s, 3600 * 1000L), 1);
    assert_int_equal(clk_sleep_until(&s, clk_now_ms() - 1), 1);
    clk_stop_destroy(&s);
}

static void test_cond_wait_until(void **state)
{
    (void)state;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv;
    assert_int_equal(clk_cond_init(&cv), 0);
    pthread_mutex_lock(&mu);
    assert_int_equal(clk_cond_wait_until(&cv, &mu, clk_now_ms() - 1), 1);
    long long deadline = clk_now_ms() + 20;
    while (!clk_cond_wait_until(&cv, &mu, deadline))
        ;
    assert_true(clk_now_ms() >= deadline);
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cv);
}

static void test_nap(void **state)
{
    (void)state;
    long long deadline = clk_now_ms() + 10;
    clk_nap_ms(10);
    assert_true(clk_now_ms() >= deadline);
    clk_nap_ms(0);
    clk_nap_ms(-1);
}

/* The thread's CPU grows with work, not with a sleep. */
static void test_thread_cpu(void **state)
{
    (void)state;
    long long c0 = clk_thread_cpu_ms();
    clk_nap_ms(200);
    assert_true(clk_thread_cpu_ms() - c0 < 100);
    long long w0 = clk_now_ms();
    volatile unsigned long spin = 0;
    while (clk_thread_cpu_ms() - c0 < 30 && clk_now_ms() - w0 < 60000)
        spin++;
    assert_true(clk_thread_cpu_ms() - c0 >= 30);
}

int main(void)
{
    /* a sleep on the skewed wall clock would hang: fail instead */
    alarm(60);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wall_clock_is_skewed),
        cmocka_unit_test(test_condattr_is_monotonic),
        cmocka_unit_test(test_now_is_monotonic),
        cmocka_unit_test(test_past_deadline_returns_at_once),
        cmocka_unit_test(test_sleeps_until_the_deadline),
        cmocka_unit_test(test_stop_wakes_sleepers),
        cmocka_unit_test(test_cond_wait_until),
        cmocka_unit_test(test_nap),
        cmocka_unit_test(test_thread_cpu),
    };
    return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
