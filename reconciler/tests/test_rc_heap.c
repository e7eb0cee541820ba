/* The allocator in one place (heap.h), as the unit tests link it: glibc's
 * malloc (jemalloc, as the reconciler binary links it: test_rc_heap_jemalloc.c,
 * and end to end e2e/tests/30-reconciler-job.bats). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "../heap.h"

#define BLOCK (4u << 20) /* above the mmap threshold rc_heap_tune sets */

static void test_names_the_linked_allocator(void **state)
{
    (void)state;
    assert_string_equal(rc_heap_allocator(), "glibc");
    assert_string_equal(rc_heap_thread_caches(), "glibc");
    rc_heap_thread_cache(); /* jemalloc's switch: nothing to do under glibc */
}

static void test_in_use_follows_an_allocation(void **state)
{
    (void)state;
    rc_heap_tune();
    size_t before = rc_heap_in_use();
    char *p = malloc(BLOCK);
    assert_non_null(p);
    memset(p, 1, BLOCK);
#ifndef __SANITIZE_ADDRESS__ /* ASan's own malloc: glibc's figures do not see it */
    assert_true(rc_heap_in_use() >= before + BLOCK);
#endif
    free(p);
    rc_heap_release();
#ifndef __SANITIZE_ADDRESS__
    assert_true(rc_heap_in_use() < before + BLOCK);
#endif
    (void)before;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_the_linked_allocator),
        cmocka_unit_test(test_in_use_follows_an_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
