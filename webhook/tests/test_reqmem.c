/* Request-scoped memory for jansson (reqmem.h): what a scope carves, that a
 * scope's block is reused whole, and that a value outliving its scope is
 * kept (its block retired) and can still be freed, on any thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "reqmem.h"

static const char doc[] = "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\"}},"
                          "\"spec\":{\"list\":[1,2,3],\"s\":\"some string\"}}";

static void test_scope_carves_and_reuses(void **state)
{
    (void)state;
    json_t *outside = json_loads(doc, 0, NULL);
    assert_false(wh_reqmem_owns(outside)); /* no scope: malloc */

    assert_int_equal(wh_reqmem_begin(), 1);
    assert_int_equal(wh_reqmem_begin(), 0); /* one scope at a time */
    json_t *in = json_loads(doc, 0, NULL);
    assert_non_null(in);
    assert_true(wh_reqmem_owns(in));
    assert_true(json_equal(in, outside));
    json_decref(outside); /* a malloc'd value freed inside a scope */
    json_decref(in);
    assert_int_equal(wh_reqmem_end(), 0);

    /* the next scope starts at the block's beginning again */
    assert_int_equal(wh_reqmem_begin(), 1);
    json_t *again = json_loads(doc, 0, NULL);
    assert_ptr_equal(again, in);
    json_decref(again);
    assert_int_equal(wh_reqmem_end(), 0);
}

static void test_full_block_falls_back_to_malloc(void **state)
{
    (void)state;
    size_t n = WH_REQMEM_BLOCK / 16;
    assert_int_equal(wh_reqmem_begin(), 1);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        assert_int_equal(json_array_append_new(arr, json_string("a string value")), 0);
    json_t *last = json_array_get(arr, n - 1);
    assert_true(wh_reqmem_owns(arr));
    assert_false(wh_reqmem_owns(last)); /* carved until full, then malloc */
    assert_int_equal(json_array_size(arr), n);
    json_decref(arr);
    assert_int_equal(wh_reqmem_end(), 0);
}

static void *free_it(void *v)
{
    json_decref(v);
    return NULL;
}

static void test_value_outliving_its_scope(void **state)
{
    (void)state;
    size_t blocks, retired, blocks2, retired2;
    wh_reqmem_counts(&blocks, &retired);
    assert_int_equal(wh_reqmem_begin(), 1);
    json_t *kept = json_loads(doc, 0, NULL);
    json_t *dropped = json_string("x");
    json_decref(dropped);
    FILE *log = tmpfile();
    log_set_stream(log);
    assert_true(wh_reqmem_end() > 0); /* kept is still alive */
    log_set_stream(stderr);
    char line[512] = "";
    rewind(log);
    assert_non_null(fgets(line, sizeof(line), log));
    assert_non_null(strstr(line, "outlived their admission review"));
    fclose(log);
    wh_reqmem_counts(&blocks2, &retired2);
    assert_int_equal(retired2, retired + 1);

    /* a new scope gets a new block: kept is never overwritten */
    assert_int_equal(wh_reqmem_begin(), 1);
    json_t *next = json_loads("{\"other\":[\"values\",\"here\"]}", 0, NULL);
    assert_true(wh_reqmem_owns(next));
    assert_string_equal(json_string_value(json_object_get(json_object_get(kept, "spec"), "s")),
                        "some string");
    json_decref(next);
    assert_int_equal(wh_reqmem_end(), 0);
    wh_reqmem_counts(&blocks2, &retired2);
    assert_int_equal(blocks2, blocks + 1);

    /* freed later on another thread: recognized, not passed to free() */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_it, kept), 0);
    pthread_join(t, NULL);
}

static void *scope_on_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++) {
        if (wh_reqmem_begin() != 1)
            return "no scope";
        json_t *v = json_loads(doc, 0, NULL);
        int ok = v && wh_reqmem_owns(v);
        json_decref(v);
        if (!ok || wh_reqmem_end() != 0)
            return "not carved or not freed";
    }
    return NULL;
}

static void test_threads_have_their_own_blocks(void **state)
{
    (void)state;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, scope_on_thread, NULL), 0);
    for (int i = 0; i < 3; i++) {
        void *res;
        pthread_join(t[i], &res);
        assert_null(res);
    }
}

static void *one_scope(void *arg)
{
    int *carved = arg;
    *carved = -1;
    if (wh_reqmem_begin() != 1)
        return NULL; /* no block for this thread */
    json_t *v = json_loads(doc, 0, NULL);
    *carved = v && wh_reqmem_owns(v);
    json_decref(v);
    wh_reqmem_end();
    return NULL;
}

/* Every exiting thread keeps its block registered (a server thread lives as
 * long as the process): past WH_REQMEM_MAX_BLOCKS, no scope, and jansson
 * goes on with malloc. Last: it leaves no block for later tests. */
static void test_registry_full_falls_back_to_malloc(void **state)
{
    (void)state;
    size_t blocks, retired;
    wh_reqmem_counts(&blocks, &retired);
    for (size_t i = blocks; i < WH_REQMEM_MAX_BLOCKS + 2; i++) {
        pthread_t t;
        int carved;
        assert_int_equal(pthread_create(&t, NULL, one_scope, &carved), 0);
        pthread_join(t, NULL);
        assert_int_equal(carved, i < WH_REQMEM_MAX_BLOCKS ? 1 : -1);
    }
    wh_reqmem_counts(&blocks, &retired);
    assert_int_equal(blocks, WH_REQMEM_MAX_BLOCKS);
    json_t *v = json_loads(doc, 0, NULL); /* this thread's own block still works */
    assert_non_null(v);
    json_decref(v);
}

int main(void)
{
    wh_reqmem_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scope_carves_and_reuses),
        cmocka_unit_test(test_full_block_falls_back_to_malloc),
        cmocka_unit_test(test_value_outliving_its_scope),
        cmocka_unit_test(test_threads_have_their_own_blocks),
        cmocka_unit_test(test_registry_full_falls_back_to_malloc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
