/* The allocator in one place (heap.h) as the reconciler binary links it:
 * with jemalloc. Built and run in the plain variant only (`make unit`):
 * the ASan builds bring their own malloc (test_rc_heap.c covers glibc's).
 * What a regression here would cost is speed, not behaviour: a reconcile
 * worker without its thread cache, or every informer with one. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "../heap.h"

extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

#define BLOCK (4u << 20)

/* Whether the calling thread has a jemalloc thread cache: 1 or 0, -1 when
 * jemalloc cannot say. Called on the test's own threads, so it asserts
 * nothing (cmocka's failures jump to the main thread's frame). */
static int tcache_on(void)
{
    bool on = true;
    size_t len = sizeof(on);
    return mallctl("thread.tcache.enabled", &on, &len, NULL, 0) == 0 ? on : -1;
}

static void test_names_jemalloc_and_its_configuration(void **state)
{
    (void)state;
    assert_string_equal(rc_heap_allocator(), "jemalloc");
    /* heap.c's malloc_conf was read: caches only where asked for */
    assert_string_equal(rc_heap_thread_caches(), "workers");
    unsigned narenas = 0;
    size_t len = sizeof(narenas);
    assert_int_equal(mallctl("opt.narenas", &narenas, &len, NULL, 0), 0);
    assert_int_equal(narenas, 2);
}

struct seen {
    int before, after; /* tcache_on() before and after the thread's own step */
};

static void *a_worker(void *arg)
{
    struct seen *s = arg;
    s->before = tcache_on();
    rc_heap_thread_cache(); /* what every reconcile worker calls first */
    s->after = tcache_on();
    return NULL;
}

static void *an_informer(void *arg)
{
    struct seen *s = arg;
    s->before = tcache_on();
    free(malloc(64)); /* allocating does not bring a cache */
    s->after = tcache_on();
    return NULL;
}

static void test_only_the_threads_that_ask_get_a_cache(void **state)
{
    (void)state;
    struct seen w = {-1, -1}, i = {-1, -1};
    pthread_t tw, ti;
    assert_int_equal(pthread_create(&tw, NULL, a_worker, &w), 0);
    assert_int_equal(pthread_create(&ti, NULL, an_informer, &i), 0);
    assert_int_equal(pthread_join(tw, NULL), 0);
    assert_int_equal(pthread_join(ti, NULL), 0);
    assert_int_equal(w.before, 0);
    assert_int_equal(w.after, 1);
    assert_int_equal(i.before, 0);
    assert_int_equal(i.after, 0);
}

static void test_in_use_follows_an_allocation(void **state)
{
    (void)state;
    rc_heap_tune(); /* a no-op under jemalloc */
    size_t before = rc_heap_in_use();
    assert_true(before > 0);
    char *p = malloc(BLOCK);
    assert_non_null(p);
    memset(p, 1, BLOCK);
    assert_true(rc_heap_in_use() >= before + BLOCK);
    free(p);
    rc_heap_release();
    assert_true(rc_heap_in_use() < before + BLOCK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_jemalloc_and_its_configuration),
        cmocka_unit_test(test_only_the_threads_that_ask_get_a_cache),
        cmocka_unit_test(test_in_use_follows_an_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
