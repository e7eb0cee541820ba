/* Calls made side by side (fanout.h): every index once, at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "clock.h"
#include "../fanout.h"

#define MANY 50

struct seen {
    int calls[MANY]; /* per index (each written by its one call) */
    int in_flight;   /* atomic */
    int all_met;     /* atomic: calls that saw every other one in flight */
    size_t n;
};

/* Each call waits (at most 5 s) until all n are in flight: they can only
 * all meet if they run at once. */
static void meet(void *arg, size_t i)
{
    struct seen *s = arg;
    s->calls[i]++;
    __atomic_add_fetch(&s->in_flight, 1, __ATOMIC_SEQ_CST);
    long long give_up = clk_now_ms() + 5000;
    while (__atomic_load_n(&s->in_flight, __ATOMIC_SEQ_CST) < (int)s->n && clk_now_ms() < give_up)
        clk_nap_ms(1);
    if (__atomic_load_n(&s->in_flight, __ATOMIC_SEQ_CST) >= (int)s->n)
        __atomic_add_fetch(&s->all_met, 1, __ATOMIC_SEQ_CST);
}

static void count(void *arg, size_t i)
{
    struct seen *s = arg;
    __atomic_add_fetch(&s->calls[i], 1, __ATOMIC_SEQ_CST);
}

static void test_calls_run_at_once(void **state)
{
    (void)state;
    struct seen s;
    memset(&s, 0, sizeof(s));
    s.n = RC_FANOUT_WIDTH;
    struct rc_fanout_stats st;
    rc_fanout(s.n, meet, &s, &st);
    assert_int_equal(st.threads, RC_FANOUT_WIDTH);
    assert_int_equal(s.all_met, RC_FANOUT_WIDTH); /* none waited for another to end */
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(s.calls[i], 1);
}

static void test_more_calls_than_threads_each_once(void **state)
{
    (void)state;
    struct seen s;
    memset(&s, 0, sizeof(s));
    struct rc_fanout_stats st;
    rc_fanout(MANY, count, &s, &st);
    assert_int_equal(st.threads, RC_FANOUT_WIDTH); /* bounded */
    for (size_t i = 0; i < MANY; i++)
        assert_int_equal(s.calls[i], 1);
}

static void test_one_call_in_the_caller_none_for_zero(void **state)
{
    (void)state;
    struct seen s;
    memset(&s, 0, sizeof(s));
    struct rc_fanout_stats st;
    rc_fanout(1, count, &s, &st);
    assert_int_equal(st.threads, 1);
    assert_int_equal(s.calls[0], 1);
    rc_fanout(0, count, &s, &st);
    assert_int_equal(st.threads, 1);
    assert_int_equal(s.calls[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_run_at_once),
        cmocka_unit_test(test_more_calls_than_threads_each_once),
        cmocka_unit_test(test_one_call_in_the_caller_none_for_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
