/* Calls in flight per worker (inflight.h): the cap, a suspect worker's
 * single slot, and that a full worker refuses at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "../inflight.h"

static void test_cap(void **state)
{
    (void)state;
    assert_int_equal(rc_inflight_cap(4, 0), 3); /* one thread is always left */
    assert_int_equal(rc_inflight_cap(2, 0), 1);
    assert_int_equal(rc_inflight_cap(1, 0), 1);
    assert_int_equal(rc_inflight_cap(16, 1), 1);
}

static void test_full_worker_refuses_other_worker_not(void **state)
{
    (void)state;
    struct rc_inflight *f = rc_inflight_new(4);
    assert_non_null(f);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rc_inflight_enter(f, "worker-2"), 0);
    assert_int_equal(rc_inflight_enter(f, "worker-2"), -1); /* full: refused, not waiting */
    assert_int_equal(rc_inflight_enter(f, "worker-1"), 0);  /* another worker: its own slots */
    int n, s;
    assert_int_equal(rc_inflight_get(f, "worker-2", &n, &s), 0);
    assert_int_equal(n, 3);
    assert_int_equal(s, 0);
    assert_int_equal(rc_inflight_leave(f, "worker-2", RC_ANSWER_YES), 0);
    assert_int_equal(rc_inflight_enter(f, "worker-2"), 0);
    assert_int_equal(rc_inflight_get(f, "nobody", &n, &s), -1);
    rc_inflight_free(f);
}

static void test_suspect_gets_one_slot_until_it_answers(void **state)
{
    (void)state;
    struct rc_inflight *f = rc_inflight_new(4);
    assert_int_equal(rc_inflight_enter(f, "w"), 0);
    assert_int_equal(rc_inflight_enter(f, "w"), 0);
    /* a call ends without an answer: suspect (a change, reported once) */
    assert_int_equal(rc_inflight_leave(f, "w", RC_ANSWER_NONE), 1);
    int n, s;
    rc_inflight_get(f, "w", &n, &s);
    assert_int_equal(n, 1);
    assert_int_equal(s, 1);
    /* the other call is still out: no second one */
    assert_int_equal(rc_inflight_enter(f, "w"), -1);
    assert_int_equal(rc_inflight_leave(f, "w", RC_ANSWER_NONE), 0);
    assert_int_equal(rc_inflight_enter(f, "w"), 0);
    assert_int_equal(rc_inflight_enter(f, "w"), -1);
    /* an unknown outcome changes nothing; an answer ends the suspicion */
    assert_int_equal(rc_inflight_leave(f, "w", RC_ANSWER_UNKNOWN), 0);
    assert_int_equal(rc_inflight_enter(f, "w"), 0);
    assert_int_equal(rc_inflight_leave(f, "w", RC_ANSWER_YES), 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rc_inflight_enter(f, "w"), 0);
    assert_int_equal(rc_inflight_enter(f, "w"), -1);
    rc_inflight_free(f);
}

/* Each hung worker gets one thread; all of them together never every thread. */
static void test_suspect_workers_together_leave_a_thread(void **state)
{
    (void)state;
    assert_int_equal(rc_inflight_suspect_cap(4), 3);
    assert_int_equal(rc_inflight_suspect_cap(2), 1);
    assert_int_equal(rc_inflight_suspect_cap(1), 1);
    struct rc_inflight *f = rc_inflight_new(3);
    const char *hung[] = {"h1", "h2", "h3"};
    for (int i = 0; i < 3; i++) { /* each answered nothing once: suspect */
        assert_int_equal(rc_inflight_enter(f, hung[i]), 0);
        assert_int_equal(rc_inflight_leave(f, hung[i], RC_ANSWER_NONE), 1);
    }
    assert_int_equal(rc_inflight_enter(f, "h1"), 0);
    assert_int_equal(rc_inflight_enter(f, "h2"), 0);
    assert_int_equal(rc_inflight_enter(f, "h3"), -1);     /* 2 of 3 threads held by suspects */
    assert_int_equal(rc_inflight_enter(f, "healthy"), 0); /* the last thread: others' work */
    assert_int_equal(rc_inflight_leave(f, "h1", RC_ANSWER_NONE), 0);
    assert_int_equal(rc_inflight_enter(f, "h3"), 0); /* a suspect slot freed */
    /* a suspect that answers again is no longer counted */
    assert_int_equal(rc_inflight_leave(f, "h2", RC_ANSWER_YES), 1);
    assert_int_equal(rc_inflight_enter(f, "h1"), 0);
    int n, s;
    assert_int_equal(rc_inflight_get(f, "h2", &n, &s), 0);
    assert_int_equal(s, 0);
    rc_inflight_free(f);
}

static void test_bounded_names(void **state)
{
    (void)state;
    struct rc_inflight *f = rc_inflight_new(4);
    char name[32];
    for (int i = 0; i < RC_INFLIGHT_MAX_CLUSTERS; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        assert_int_equal(rc_inflight_enter(f, name), 0); /* all busy */
    }
    assert_int_equal(rc_inflight_enter(f, "one-more"), -1); /* nothing idle to forget */
    rc_inflight_leave(f, "c7", RC_ANSWER_YES);
    assert_int_equal(rc_inflight_enter(f, "one-more"), 0); /* c7 (idle) forgotten */
    int n, s;
    assert_int_equal(rc_inflight_get(f, "c7", &n, &s), -1);
    assert_int_equal(rc_inflight_enter(NULL, "x"), 0); /* no set: no limit */
    rc_inflight_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_full_worker_refuses_other_worker_not),
        cmocka_unit_test(test_suspect_gets_one_slot_until_it_answers),
        cmocka_unit_test(test_suspect_workers_together_leave_a_thread),
        cmocka_unit_test(test_bounded_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
