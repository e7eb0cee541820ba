/* What the gate keeps per ClusterQueue (gate_index.h): members as they
 * move and go, when a pass may read only the dirty keys (and when it must
 * read all), the status recount's spacing, each queue's pass time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gate_index.h"

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys a pass of cq reads at now_ms, sorted and joined by ',' into out
 * ("" when none); *pass what kind of pass. */
static const char *take(struct rc_gix *g, const char *cq, long long now_ms, enum rc_gix_pass *pass,
                        char *out, size_t outlen)
{
    char **keys;
    size_t n;
    struct rc_res used;
    size_t nredo;
    *pass = rc_gix_take(g, cq, now_ms, &keys, &n, &nredo, &used);
    if (n)
        qsort(keys, n, sizeof(*keys), cmp);
    out[0] = 0;
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), outlen - strlen(out), "%s%s", i ? "," : "", keys[i]);
    rc_gix_keys_free(keys, n);
    return out;
}

/* Every member of cq (a full pass's keys). */
static const char *keys_of(struct rc_gix *g, const char *cq, char *out, size_t outlen)
{
    enum rc_gix_pass pass;
    take(g, cq, 1, &pass, out, outlen);
    assert_int_equal(pass, RC_GIX_FULL); /* never settled here */
    return out;
}

static void test_members_move_and_leave(void **state)
{
    (void)state;
    char buf[256];
    struct rc_gix *g = rc_gix_new();
    assert_non_null(g);
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "");
    rc_gix_note(g, "ns/w1", "cq-a", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/w2", "cq-a", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/w3", "cq-b", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/w1", "cq-a", RC_GIX_SAME); /* again: unchanged */
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "ns/w1,ns/w2");
    assert_string_equal(keys_of(g, "cq-b", buf, sizeof(buf)), "ns/w3");
    /* its LocalQueue now points elsewhere: it leaves its old queue */
    rc_gix_note(g, "ns/w2", "cq-b", RC_GIX_CHANGED);
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "ns/w1");
    assert_string_equal(keys_of(g, "cq-b", buf, sizeof(buf)), "ns/w2,ns/w3");
    /* deleted, or its queue unknown */
    rc_gix_note(g, "ns/w1", NULL, RC_GIX_CHANGED);
    rc_gix_note(g, "ns/w3", "", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/never", NULL, RC_GIX_CHANGED);
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "");
    assert_string_equal(keys_of(g, "cq-b", buf, sizeof(buf)), "ns/w2");
    rc_gix_free(g);
}

static void test_window_per_queue_and_kind(void **state)
{
    (void)state;
    char buf[64];
    enum rc_gix_pass pass;
    struct rc_res held = {0};
    struct rc_gix *g = rc_gix_new();
    rc_gix_note(g, "ns/w1", "big", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/w2", "small", RC_GIX_CHANGED);
    assert_int_equal(rc_gix_window_ms(g, "big", 1), RC_GIX_WINDOW_MIN_MS);
    rc_gix_timed(g, "big", RC_GIX_FULL, 150, 1);
    rc_gix_timed(g, "big", RC_GIX_FAST, 3, 1);
    rc_gix_timed(g, "small", RC_GIX_FULL, 1, 1);
    rc_gix_timed(g, "none", RC_GIX_FULL, 900, 1); /* no Workloads: nothing kept */
    /* not settled: the next pass is full, twice the last full one */
    assert_int_equal(rc_gix_window_ms(g, "big", 1), 300);
    assert_int_equal(rc_gix_window_ms(g, "small", 1), RC_GIX_WINDOW_MIN_MS);
    assert_int_equal(rc_gix_window_ms(g, "none", 1), RC_GIX_WINDOW_MIN_MS);
    /* settled: the next is fast, not held back by the full one's time */
    take(g, "big", 1, &pass, buf, sizeof(buf));
    rc_gix_settle(g, "big", &held);
    assert_int_equal(rc_gix_window_ms(g, "big", 1), RC_GIX_WINDOW_MIN_MS);
    /* a recount asked for: 1.5 s after the full pass began at 1 (ten times
     * its 150 ms of CPU, more than the 1 s asked); still fast a second
     * away, full once due within the window */
    assert_int_equal(rc_gix_recount(g, "big", 10, 1000), 1491);
    assert_int_equal(rc_gix_window_ms(g, "big", 10), RC_GIX_WINDOW_MIN_MS);
    assert_int_equal(rc_gix_window_ms(g, "big", 995), RC_GIX_WINDOW_MIN_MS);
    assert_int_equal(rc_gix_window_ms(g, "big", 1485), 300);
    rc_gix_note(g, "ns/w1", "big", RC_GIX_QUOTA);
    assert_int_equal(rc_gix_window_ms(g, "big", 10), 300);
    /* the queue's entry goes with its last Workload, its times too */
    rc_gix_note(g, "ns/w1", NULL, RC_GIX_CHANGED);
    assert_int_equal(rc_gix_window_ms(g, "big", 1), RC_GIX_WINDOW_MIN_MS);
    rc_gix_free(g);
}

/* The window counts from the end of the last pass: a Workload arriving at
 * an idle queue is passed at once, one arriving just after a pass waits
 * what is left of the window, one arriving during a pass the whole of it. */
static void test_window_from_the_last_pass(void **state)
{
    (void)state;
    char buf[64];
    enum rc_gix_pass pass;
    struct rc_gix *g = rc_gix_new();
    rc_gix_note(g, "ns/w1", "q", RC_GIX_CHANGED);
    take(g, "q", 100, &pass, buf, sizeof(buf));
    assert_int_equal(rc_gix_window_ms(g, "q", 101), RC_GIX_WINDOW_MIN_MS); /* running */
    rc_gix_timed(g, "q", pass, 4, 104);
    assert_int_equal(rc_gix_window_ms(g, "q", 104), RC_GIX_WINDOW_MIN_MS);
    assert_int_equal(rc_gix_window_ms(g, "q", 110), RC_GIX_WINDOW_MIN_MS - 6);
    assert_int_equal(rc_gix_window_ms(g, "q", 104 + RC_GIX_WINDOW_MIN_MS), 0);
    assert_int_equal(rc_gix_window_ms(g, "q", 5000), 0);
    /* a long full pass: twice its time from its end */
    take(g, "q", 5000, &pass, buf, sizeof(buf));
    assert_int_equal(rc_gix_window_ms(g, "q", 5001), RC_GIX_WINDOW_MIN_MS); /* running */
    rc_gix_timed(g, "q", RC_GIX_FULL, 100, 5100);
    assert_int_equal(rc_gix_window_ms(g, "q", 5150), 150);
    assert_int_equal(rc_gix_window_ms(g, "q", 5400), 0);
    rc_gix_free(g);
}

static void test_many_workloads(void **state)
{
    (void)state;
    struct rc_gix *g = rc_gix_new();
    char key[32], cq[16];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "ns/w%d", i);
        snprintf(cq, sizeof(cq), "cq-%d", i % 3);
        rc_gix_note(g, key, cq, RC_GIX_CHANGED);
    }
    for (int i = 0; i < 5000; i += 2) { /* the even ones finish and go */
        snprintf(key, sizeof(key), "ns/w%d", i);
        rc_gix_note(g, key, NULL, RC_GIX_CHANGED);
    }
    size_t total = 0;
    for (int q = 0; q < 3; q++) {
        char **keys;
        size_t n, nredo;
        struct rc_res used;
        snprintf(cq, sizeof(cq), "cq-%d", q);
        assert_int_equal(rc_gix_take(g, cq, 1, &keys, &n, &nredo, &used), RC_GIX_FULL);
        for (size_t i = 0; i < n; i++) {
            int k = atoi(keys[i] + strlen("ns/w"));
            assert_true(k % 2 == 1 && k % 3 == q);
        }
        total += n;
        rc_gix_keys_free(keys, n);
    }
    assert_int_equal(total, 2500);
    rc_gix_free(g);
}

static void test_fast_passes_read_what_changed(void **state)
{
    (void)state;
    char buf[256];
    enum rc_gix_pass pass;
    struct rc_gix *g = rc_gix_new();
    rc_gix_note(g, "ns/a", "cq", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/b", "cq", RC_GIX_CHANGED);
    /* a new queue's first pass reads all */
    assert_string_equal(take(g, "cq", 1000, &pass, buf, sizeof(buf)), "ns/a,ns/b");
    assert_int_equal(pass, RC_GIX_FULL);
    struct rc_res held = {0};
    *rc_res_slot(&held, "cpu") = 3000;
    rc_gix_settle(g, "cq", &held);
    /* settled: a waiting Workload that changes is read alone, against the
     * quota the others hold */
    rc_gix_note(g, "ns/c", "cq", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/a", "cq", RC_GIX_SAME); /* its own status write back: nothing */
    char **keys;
    size_t n, nredo;
    struct rc_res used = {0};
    assert_int_equal(rc_gix_take(g, "cq", 1100, &keys, &n, &nredo, &used), RC_GIX_FAST);
    assert_int_equal(n, 1);
    assert_string_equal(keys[0], "ns/c");
    assert_int_equal(rc_res_get(&used, "cpu", NULL), 3000);
    rc_gix_keys_free(keys, n);
    /* a pass that did not settle again (it reserved): the next reads all */
    assert_string_equal(take(g, "cq", 1200, &pass, buf, sizeof(buf)), "ns/a,ns/b,ns/c");
    assert_int_equal(pass, RC_GIX_FULL);
    /* a Workload that holds or held quota, the queue itself, a move: all */
    const char *why[] = {"quota", "invalidate", "gone"};
    for (int i = 0; i < 3; i++) {
        rc_gix_settle(g, "cq", &held);
        if (i == 0)
            rc_gix_note(g, "ns/b", "cq", RC_GIX_QUOTA);
        else if (i == 1)
            rc_gix_invalidate(g, "cq");
        else
            rc_gix_note(g, "ns/c", NULL, RC_GIX_CHANGED); /* deleted while waiting */
        take(g, "cq", 1300, &pass, buf, sizeof(buf));
        if (i < 2)
            assert_int_equal(pass, RC_GIX_FULL);
        else
            assert_int_equal(pass, RC_GIX_FAST); /* a waiting one gone: read alone */
        (void)why;
    }
    /* a second queue is not disturbed by the first's changes */
    rc_gix_note(g, "ns/x", "other", RC_GIX_CHANGED);
    take(g, "other", 1300, &pass, buf, sizeof(buf));
    rc_gix_settle(g, "other", &held);
    rc_gix_note(g, "ns/a", "cq", RC_GIX_QUOTA);
    rc_gix_note(g, "ns/y", "other", RC_GIX_CHANGED);
    assert_string_equal(take(g, "other", 1400, &pass, buf, sizeof(buf)), "ns/y");
    assert_int_equal(pass, RC_GIX_FAST);
    rc_gix_invalidate(NULL, "cq"); /* no index (with-kueue mode): nothing */
    rc_gix_free(g);
}

static void test_keys_to_do_again(void **state)
{
    (void)state;
    char buf[256];
    enum rc_gix_pass pass;
    struct rc_gix *g = rc_gix_new();
    struct rc_res held = {0};
    rc_gix_note(g, "ns/a", "cq", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/b", "cq", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/c", "cq", RC_GIX_CHANGED);
    take(g, "cq", 1000, &pass, buf, sizeof(buf));
    /* the pass left two unwritten, and settled; one changes meanwhile */
    rc_gix_redo(g, "cq", "ns/a");
    rc_gix_redo(g, "cq", "ns/b");
    rc_gix_redo(g, "cq", "ns/z"); /* not a member: its own queue's pass has it */
    rc_gix_settle(g, "cq", &held);
    rc_gix_note(g, "ns/b", "cq", RC_GIX_CHANGED);
    rc_gix_note(g, "ns/c", "cq", RC_GIX_CHANGED);
    char **keys;
    size_t n, nredo;
    struct rc_res used = {0};
    assert_int_equal(rc_gix_take(g, "cq", 1100, &keys, &n, &nredo, &used), RC_GIX_FAST);
    /* the changed first (b once), then the one only to do again */
    assert_int_equal(n, 3);
    assert_int_equal(nredo, 1);
    assert_string_equal(keys[2], "ns/a");
    rc_gix_keys_free(keys, n);
    /* taken: the next fast pass has none of them */
    rc_gix_settle(g, "cq", &held);
    assert_string_equal(take(g, "cq", 1200, &pass, buf, sizeof(buf)), "");
    assert_int_equal(pass, RC_GIX_FAST);
    /* a full pass reads every member: the keys to do again go with it */
    rc_gix_redo(g, "cq", "ns/c");
    rc_gix_invalidate(g, "cq");
    assert_string_equal(take(g, "cq", 1300, &pass, buf, sizeof(buf)), "ns/a,ns/b,ns/c");
    assert_int_equal(pass, RC_GIX_FULL);
    rc_gix_settle(g, "cq", &held);
    assert_string_equal(take(g, "cq", 1400, &pass, buf, sizeof(buf)), "");
    rc_gix_free(g);
}

static void test_status_recount_once_per_gap(void **state)
{
    (void)state;
    char buf[64];
    enum rc_gix_pass pass;
    struct rc_gix *g = rc_gix_new();
    struct rc_res held = {0};
    rc_gix_note(g, "ns/a", "cq", RC_GIX_CHANGED);
    take(g, "cq", 5000, &pass, buf, sizeof(buf)); /* the full pass at 5000 */
    rc_gix_settle(g, "cq", &held);
    /* a fast pass at 5200 asks for a recount: 1000 ms after the full one */
    assert_int_equal(rc_gix_recount(g, "cq", 5200, 1000), 800);
    assert_int_equal(rc_gix_recount(g, "cq", 5300, 1000), 700);   /* the same one */
    assert_int_equal(rc_gix_recount_pending(g, "cq", 5400), 600); /* still asked for */
    assert_int_equal(rc_gix_recount_pending(g, "other", 5400), -1);
    rc_gix_note(g, "ns/b", "cq", RC_GIX_CHANGED);
    take(g, "cq", 5500, &pass, buf, sizeof(buf));
    assert_int_equal(pass, RC_GIX_FAST); /* not due yet */
    rc_gix_settle(g, "cq", &held);
    take(g, "cq", 6000, &pass, buf, sizeof(buf));
    assert_int_equal(pass, RC_GIX_FULL); /* due: the status is counted again */
    assert_int_equal(rc_gix_recount_pending(g, "cq", 6000), -1); /* and asked for no more */
    rc_gix_settle(g, "cq", &held);
    /* after a quiet spell: at once */
    assert_int_equal(rc_gix_recount(g, "cq", 9000, 1000), 0);
    take(g, "cq", 9000, &pass, buf, sizeof(buf));
    assert_int_equal(pass, RC_GIX_FULL);
    /* a full pass of 300 ms of CPU: the next recount 3 s after its start */
    rc_gix_timed(g, "cq", RC_GIX_FULL, 300, 9300);
    rc_gix_settle(g, "cq", &held);
    assert_int_equal(rc_gix_recount(g, "cq", 9400, 1000), 2600);
    rc_gix_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members_move_and_leave),
        cmocka_unit_test(test_window_per_queue_and_kind),
        cmocka_unit_test(test_window_from_the_last_pass),
        cmocka_unit_test(test_many_workloads),
        cmocka_unit_test(test_fast_passes_read_what_changed),
        cmocka_unit_test(test_keys_to_do_again),
        cmocka_unit_test(test_status_recount_once_per_gap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
