#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workqueue.h"

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Gets a key without blocking the test forever; fails the test on timeout. */
static char *get_now(struct wq *q)
{
    char *k = NULL;
    assert_int_equal(wq_get_timeout(q, &k, 2000), 0);
    assert_non_null(k);
    return k;
}

static void finish(struct wq *q, char *k)
{
    assert_int_equal(wq_done(q, k), 0);
    free(k);
}

static void test_dedupe_and_fifo(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    assert_non_null(q);
    assert_int_equal(wq_add(q, "a"), 0);
    assert_int_equal(wq_add(q, "b"), 0);
    assert_int_equal(wq_add(q, "a"), 0);
    assert_int_equal(wq_add(q, "c"), 0);
    assert_int_equal(wq_add(q, "b"), 0);
    assert_int_equal(wq_len(q), 3);
    const char *want[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        char *k = get_now(q);
        assert_string_equal(k, want[i]);
        finish(q, k);
    }
    assert_int_equal(wq_len(q), 0);
    char *k = NULL;
    assert_int_equal(wq_get_timeout(q, &k, 20), 1);
    assert_null(k);
    wq_free(q);
}

static void test_add_while_processing_requeues_on_done(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    wq_add(q, "a");
    char *k = get_now(q);
    /* While "a" is processed, adding it must not hand it out again... */
    wq_add(q, "a");
    wq_add(q, "a");
    assert_int_equal(wq_len(q), 0);
    char *other = NULL;
    assert_int_equal(wq_get_timeout(q, &other, 30), 1);
    /* ...but done queues it once more. */
    finish(q, k);
    assert_int_equal(wq_len(q), 1);
    k = get_now(q);
    assert_string_equal(k, "a");
    finish(q, k);
    assert_int_equal(wq_len(q), 0);
    assert_int_equal(wq_done(q, "a"), -1); /* not processing any more */
    wq_free(q);
}

/* Several workers, few keys added over and over: a key is never processed by
 * two workers at once, and a key added during processing is processed again. */
#define NKEYS    4
#define NWORKERS 4
struct conc {
    struct wq *q;
    int inflight[NKEYS];
    int processed[NKEYS];
    int overlap;
};

static void *worker(void *arg)
{
    struct conc *c = arg;
    char *k;
    while (wq_get(c->q, &k) == 0) {
        int i = k[0] - 'a';
        if (__atomic_add_fetch(&c->inflight[i], 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_store_n(&c->overlap, 1, __ATOMIC_SEQ_CST);
        usleep(200);
        __atomic_add_fetch(&c->processed[i], 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&c->inflight[i], 1, __ATOMIC_SEQ_CST);
        wq_done(c->q, k);
        free(k);
    }
    return NULL;
}

static void test_no_concurrent_processing(void **state)
{
    (void)state;
    struct conc c = {0};
    c.q = wq_new(NULL);
    pthread_t th[NWORKERS];
    for (int i = 0; i < NWORKERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, &c), 0);
    for (int round = 0; round < 300; round++) {
        char key[2] = {(char)('a' + round % NKEYS), 0};
        wq_add(c.q, key);
        if (round % 7 == 0)
            usleep(100);
    }
    /* The last add of each key must lead to one more processing. */
    int before[NKEYS];
    for (int i = 0; i < NKEYS; i++)
        before[i] = __atomic_load_n(&c.processed[i], __ATOMIC_SEQ_CST);
    for (int i = 0; i < NKEYS; i++) {
        char key[2] = {(char)('a' + i), 0};
        wq_add(c.q, key);
    }
    long deadline = now_ms() + 3000;
    int all = 0;
    while (!all && now_ms() < deadline) {
        all = 1;
        for (int i = 0; i < NKEYS; i++)
            if (__atomic_load_n(&c.processed[i], __ATOMIC_SEQ_CST) <= before[i])
                all = 0;
        usleep(1000);
    }
    assert_true(all);
    wq_shutdown(c.q);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(c.overlap, 0);
    wq_free(c.q);
}

static void test_add_after_not_before_delay(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    long t0 = now_ms();
    assert_int_equal(wq_add_after(q, "late", 80), 0);
    assert_int_equal(wq_add_after(q, "early", 30), 0);
    assert_int_equal(wq_len(q), 0);
    char *k = get_now(q);
    assert_string_equal(k, "early");
    assert_true(now_ms() - t0 >= 30);
    finish(q, k);
    k = get_now(q);
    assert_string_equal(k, "late");
    assert_true(now_ms() - t0 >= 80);
    finish(q, k);
    /* A second add_after keeps the earlier deadline. */
    t0 = now_ms();
    wq_add_after(q, "x", 40);
    wq_add_after(q, "x", 5000);
    k = get_now(q);
    long el = now_ms() - t0;
    assert_true(el >= 40 && el < 2000);
    finish(q, k);
    /* A non-positive delay is an immediate add. */
    wq_add_after(q, "now", 0);
    assert_int_equal(wq_len(q), 1);
    finish(q, get_now(q));
    wq_free(q);
}

struct getter {
    struct wq *q;
    int rc;
    char *key;
    long at_ms;
};

static void *getter_thread(void *arg)
{
    struct getter *g = arg;
    g->rc = wq_get(g->q, &g->key);
    g->at_ms = now_ms();
    return NULL;
}

static void test_delayed_wakes_blocked_getter(void **state)
{
    (void)state;
    /* The getter blocks with nothing pending at all; a delayed key added
     * afterwards must still be delivered on time, not only on the next add. */
    struct wq *q = wq_new(NULL);
    struct getter g = {.q = q, .rc = 99};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, getter_thread, &g), 0);
    usleep(20000);
    long t0 = now_ms();
    wq_add_after(q, "d", 30);
    pthread_join(th, NULL);
    assert_int_equal(g.rc, 0);
    assert_string_equal(g.key, "d");
    assert_true(g.at_ms - t0 >= 30);
    assert_true(g.at_ms - t0 < 2000);
    finish(q, g.key);
    wq_free(q);
}

static void test_rate_limited_backoff(void **state)
{
    (void)state;
    struct wq_options o = {.base_delay_ms = 2, .max_delay_ms = 20};
    struct wq *q = wq_new(&o);
    long want[] = {2, 4, 8, 16, 20, 20};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(wq_add_rate_limited(q, "k"), want[i]);
        assert_int_equal(wq_num_requeues(q, "k"), i + 1);
        finish(q, get_now(q));
    }
    assert_int_equal(wq_num_requeues(q, "other"), 0);
    wq_forget(q, "k");
    assert_int_equal(wq_num_requeues(q, "k"), 0);
    long t0 = now_ms();
    assert_int_equal(wq_add_rate_limited(q, "k"), 2);
    finish(q, get_now(q));
    assert_true(now_ms() - t0 >= 2);
    wq_forget(q, "k");
    wq_free(q);
}

static void test_backoff_defaults_and_huge_counts(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    assert_int_equal(wq_add_rate_limited(q, "k"), 5);
    assert_int_equal(wq_add_rate_limited(q, "k"), 10);
    for (int i = 0; i < 100; i++)
        wq_add_rate_limited(q, "k");
    /* No overflow past 100 doublings: the cap holds. */
    assert_int_equal(wq_add_rate_limited(q, "k"), 300000);
    wq_free(q); /* frees the still-waiting key too */
}

static void test_shutdown_unblocks_getters(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    struct getter b[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        b[i] = (struct getter){.q = q, .rc = 99};
        assert_int_equal(pthread_create(&th[i], NULL, getter_thread, &b[i]), 0);
    }
    usleep(20000);
    wq_add_after(q, "never", 60000);
    wq_shutdown(q);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(b[i].rc, -1);
        assert_null(b[i].key);
    }
    assert_true(wq_shutting_down(q));
    assert_int_equal(wq_add(q, "x"), -1);
    char *k = NULL;
    assert_int_equal(wq_get(q, &k), -1);
    wq_free(q);
}

/* What the observer saw, in order: "+key", "<key wait_ms", ">key work_ms",
 * "!key" (a retry); times rounded down to 10 ms. */
struct seen {
    char log[512];
};

static void seen_add(struct seen *s, const char *fmt, const char *key, double secs)
{
    size_t n = strlen(s->log);
    snprintf(s->log + n, sizeof(s->log) - n, fmt, key, (long)(secs * 100) * 10);
}

static void on_added(void *ud, const char *key)
{
    seen_add(ud, "+%s ", key, 0);
}

static void on_started(void *ud, const char *key, double wait_s)
{
    seen_add(ud, "<%s %ld ", key, wait_s);
}

static void on_finished(void *ud, const char *key, double work_s)
{
    seen_add(ud, ">%s %ld ", key, work_s);
}

static void on_retried(void *ud, const char *key)
{
    seen_add(ud, "!%s ", key, 0);
}

static struct wq *observed_queue(struct seen *s)
{
    static struct wq_observer o = {on_added, on_started, on_finished, on_retried, NULL};
    o.ud = s;
    memset(s, 0, sizeof(*s));
    struct wq_options opt = {.base_delay_ms = 30, .observer = &o};
    struct wq *q = wq_new(&opt);
    assert_non_null(q);
    return q;
}

/* client-go's counts: one add per time a key becomes due, however often it
 * is added meanwhile; its wait from then to a worker taking it; the work
 * from then to wq_done; a retry per backoff. */
static void test_observer_counts_as_client_go(void **state)
{
    (void)state;
    struct seen s;
    struct wq *q = observed_queue(&s);
    assert_int_equal(wq_add(q, "a"), 0);
    assert_int_equal(wq_add(q, "a"), 0);
    usleep(50000);
    char *k = get_now(q);
    usleep(30000);
    assert_int_equal(wq_add(q, "a"), 0); /* while processing: due again */
    usleep(20000);
    finish(q, k);
    k = get_now(q);
    finish(q, k);
    /* "+a", waited >= 50 ms, worked >= 50 ms; due again while processing
     * and handed out 20 ms or more after that */
    long wait1, work1, wait2;
    assert_int_equal(sscanf(s.log, "+a <a %ld +a >a %ld", &wait1, &work1), 2);
    assert_true(wait1 >= 50 && wait1 < 2000);
    assert_true(work1 >= 50 && work1 < 2000);
    const char *second = strstr(s.log, ">a ");
    second = strstr(second, "<a ");
    assert_non_null(second);
    assert_int_equal(sscanf(second, "<a %ld", &wait2), 1);
    assert_true(wait2 >= 20 && wait2 < 2000);
    assert_int_equal(wq_add_rate_limited(q, "b"), 30);
    assert_non_null(strstr(s.log, "!b "));
    assert_null(strstr(s.log, "+b ")); /* not due before its backoff */
    usleep(40000);
    k = get_now(q);
    finish(q, k);
    /* a delayed key's wait counts from its deadline, not from the add */
    const char *b = strstr(s.log, "<b ");
    assert_non_null(b);
    long waitb;
    assert_int_equal(sscanf(b, "<b %ld", &waitb), 1);
    assert_true(waitb < 30);
    wq_free(q);
}

static void collect(void *ud, const char *key, double s)
{
    seen_add(ud, "%s %ld ", key, s);
}

static void test_foreach_processing(void **state)
{
    (void)state;
    struct seen s, now;
    struct wq *q = observed_queue(&s);
    wq_add(q, "a");
    wq_add(q, "b");
    wq_add(q, "c");
    char *a = get_now(q), *b = get_now(q);
    usleep(30000);
    memset(&now, 0, sizeof(now));
    wq_foreach_processing(q, collect, &now);
    long sa, sb;
    const char *pa = strstr(now.log, "a "), *pb = strstr(now.log, "b ");
    assert_non_null(pa);
    assert_non_null(pb);
    assert_null(strstr(now.log, "c "));
    assert_int_equal(sscanf(pa, "a %ld", &sa), 1);
    assert_int_equal(sscanf(pb, "b %ld", &sb), 1);
    assert_true(sa >= 30 && sb >= 30);
    finish(q, a);
    memset(&now, 0, sizeof(now));
    wq_foreach_processing(q, collect, &now);
    assert_null(strstr(now.log, "a "));
    assert_non_null(strstr(now.log, "b "));
    finish(q, b);
    memset(&now, 0, sizeof(now));
    wq_foreach_processing(q, collect, &now);
    assert_string_equal(now.log, "");
    wq_free(q);
}

/* Gets n keys in turn (each done at once) and checks their order. */
static void expect_order(struct wq *q, const char *const *want, int n)
{
    for (int i = 0; i < n; i++) {
        char *k = get_now(q);
        assert_string_equal(k, want[i]);
        finish(q, k);
    }
}

static void test_first_lane_goes_ahead(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    assert_non_null(q);
    wq_add(q, "r1");
    wq_add(q, "r2");
    wq_add(q, "r3");
    assert_int_equal(wq_add_first(q, "f1", 0), 0);
    assert_int_equal(wq_add_first(q, "r3", 0), 0); /* already queued: moves ahead */
    wq_add(q, "f1");                               /* a plain add keeps it first */
    assert_int_equal(wq_len(q), 4);
    /* the first lane in its order, WQ_FIRST_RUN_MAX (1) of it at a time */
    const char *want[] = {"f1", "r1", "r3", "r2"};
    expect_order(q, want, 4);
    assert_int_equal(wq_len(q), 0);
    wq_free(q);
}

static void test_first_lane_never_starves_the_rest(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    assert_non_null(q);
    wq_add(q, "r1");
    wq_add(q, "r2");
    char name[16];
    for (int i = 0; i < 2 * WQ_FIRST_RUN_MAX; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        wq_add_first(q, name, 0);
    }
    /* WQ_FIRST_RUN_MAX of the first lane, one of the rest, and again */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < WQ_FIRST_RUN_MAX; i++) {
            snprintf(name, sizeof(name), "f%d", round * WQ_FIRST_RUN_MAX + i);
            char *k = get_now(q);
            assert_string_equal(k, name);
            finish(q, k);
        }
        char *k = get_now(q);
        assert_string_equal(k, round ? "r2" : "r1");
        finish(q, k);
    }
    assert_int_equal(wq_len(q), 0);
    wq_free(q);
}

static void test_first_add_while_processing_and_delayed(void **state)
{
    (void)state;
    struct wq *q = wq_new(NULL);
    assert_non_null(q);
    wq_add(q, "p");
    char *p = get_now(q);
    wq_add(q, "r1");
    wq_add_first(q, "p", 0); /* being processed: ahead once done */
    finish(q, p);
    assert_int_equal(wq_add_first(q, "d", 500), 0); /* first once due */
    wq_add(q, "r2");
    const char *want[] = {"p", "r1"};
    expect_order(q, want, 2);
    usleep(600000);
    const char *later[] = {"d", "r2"};
    expect_order(q, later, 2);
    /* a key queued by a plain add moves ahead when its delayed first add is due */
    wq_add(q, "r4");
    wq_add(q, "e");
    assert_int_equal(wq_add_first(q, "e", 300), 0);
    usleep(400000);
    const char *moved[] = {"e", "r4"};
    expect_order(q, moved, 2);
    /* handed out, a key's next plain add is a plain one again */
    wq_add(q, "r3");
    wq_add(q, "d");
    const char *plain[] = {"r3", "d"};
    expect_order(q, plain, 2);
    wq_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dedupe_and_fifo),
        cmocka_unit_test(test_add_while_processing_requeues_on_done),
        cmocka_unit_test(test_no_concurrent_processing),
        cmocka_unit_test(test_add_after_not_before_delay),
        cmocka_unit_test(test_delayed_wakes_blocked_getter),
        cmocka_unit_test(test_rate_limited_backoff),
        cmocka_unit_test(test_backoff_defaults_and_huge_counts),
        cmocka_unit_test(test_shutdown_unblocks_getters),
        cmocka_unit_test(test_observer_counts_as_client_go),
        cmocka_unit_test(test_foreach_processing),
        cmocka_unit_test(test_first_lane_goes_ahead),
        cmocka_unit_test(test_first_lane_never_starves_the_rest),
        cmocka_unit_test(test_first_add_while_processing_and_delayed),
    };
    return cmocka_run_group_tests_name("workqueue", tests, NULL, NULL);
}
