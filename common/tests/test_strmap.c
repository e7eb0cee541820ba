#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

static int sum_vals(const char *key, void *val, void *ud)
{
    (void)key;
    *(long *)ud += (long)(intptr_t)val;
    return 0;
}

static int stop_at_first(const char *key, void *val, void *ud)
{
    (void)key;
    (void)val;
    (*(int *)ud)++;
    return 7;
}

static void test_put_get_del_grow(void **state)
{
    (void)state;
    struct smap *m = smap_new();
    assert_non_null(m);
    char key[32];
    for (long i = 1; i <= 1000; i++) {
        snprintf(key, sizeof(key), "ns/obj-%ld", i);
        assert_int_equal(smap_put(m, key, (void *)(intptr_t)i, NULL), 0);
    }
    assert_int_equal(smap_len(m), 1000);
    assert_int_equal((intptr_t)smap_get(m, "ns/obj-777"), 777);
    assert_null(smap_get(m, "ns/obj-1001"));
    void *old = NULL;
    assert_int_equal(smap_put(m, "ns/obj-5", (void *)(intptr_t)50, &old), 0);
    assert_int_equal((intptr_t)old, 5);
    assert_int_equal(smap_len(m), 1000);
    assert_int_equal((intptr_t)smap_del(m, "ns/obj-5"), 50);
    assert_null(smap_del(m, "ns/obj-5"));
    assert_int_equal(smap_len(m), 999);
    long sum = 0;
    assert_int_equal(smap_foreach(m, sum_vals, &sum), 0);
    assert_int_equal(sum, 1000L * 1001 / 2 - 5);
    int calls = 0;
    assert_int_equal(smap_foreach(m, stop_at_first, &calls), 7);
    assert_int_equal(calls, 1);
    smap_free(m, NULL);
}

static void test_free_values(void **state)
{
    (void)state;
    struct smap *m = smap_new();
    assert_int_equal(smap_put(m, "a", strdup("x"), NULL), 0);
    assert_int_equal(smap_put(m, "", strdup("empty key"), NULL), 0);
    assert_string_equal(smap_get(m, ""), "empty key");
    smap_free(m, free); /* ASan reports a leak if values are not freed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_del_grow),
        cmocka_unit_test(test_free_values),
    };
    return cmocka_run_group_tests_name("strmap", tests, NULL, NULL);
}
