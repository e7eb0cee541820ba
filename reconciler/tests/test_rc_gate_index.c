/* The gate's index of each ClusterQueue's Workloads (gate_index.h): moves,
 * removals, the copies it hands out, and each queue's pass time. */
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

/* cq's keys, sorted and joined by ',' into out ("" when none). */
static const char *keys_of(struct rc_gix *g, const char *cq, char *out, size_t outlen)
{
    char **keys;
    size_t n;
    assert_int_equal(rc_gix_keys(g, cq, &keys, &n), 0);
    if (n)
        qsort(keys, n, sizeof(*keys), cmp);
    out[0] = 0;
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), outlen - strlen(out), "%s%s", i ? "," : "", keys[i]);
    rc_gix_keys_free(keys, n);
    return out;
}

static void test_members_move_and_leave(void **state)
{
    (void)state;
    char buf[256];
    struct rc_gix *g = rc_gix_new();
    assert_non_null(g);
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "");
    rc_gix_set(g, "ns/w1", "cq-a");
    rc_gix_set(g, "ns/w2", "cq-a");
    rc_gix_set(g, "ns/w3", "cq-b");
    rc_gix_set(g, "ns/w1", "cq-a"); /* again: unchanged */
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "ns/w1,ns/w2");
    assert_string_equal(keys_of(g, "cq-b", buf, sizeof(buf)), "ns/w3");
    /* its LocalQueue now points elsewhere: it leaves its old queue */
    rc_gix_set(g, "ns/w2", "cq-b");
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "ns/w1");
    assert_string_equal(keys_of(g, "cq-b", buf, sizeof(buf)), "ns/w2,ns/w3");
    /* deleted, or its queue unknown */
    rc_gix_set(g, "ns/w1", NULL);
    rc_gix_set(g, "ns/w3", "");
    rc_gix_set(g, "ns/never", NULL);
    assert_string_equal(keys_of(g, "cq-a", buf, sizeof(buf)), "");
    assert_string_equal(keys_of(g, "cq-b", buf, sizeof(buf)), "ns/w2");
    assert_int_equal(rc_gix_lost(g), 0);
    rc_gix_free(g);
}

static void test_pass_time_per_queue(void **state)
{
    (void)state;
    struct rc_gix *g = rc_gix_new();
    rc_gix_set(g, "ns/w1", "big");
    rc_gix_set(g, "ns/w2", "small");
    assert_int_equal(rc_gix_last_ms(g, "big"), 0);
    rc_gix_set_last_ms(g, "big", 40);
    rc_gix_set_last_ms(g, "small", 1);
    rc_gix_set_last_ms(g, "none", 9); /* no Workloads: nothing kept */
    assert_int_equal(rc_gix_last_ms(g, "big"), 40);
    assert_int_equal(rc_gix_last_ms(g, "small"), 1);
    assert_int_equal(rc_gix_last_ms(g, "none"), 0);
    /* the queue's entry goes with its last Workload, its time too */
    rc_gix_set(g, "ns/w1", NULL);
    assert_int_equal(rc_gix_last_ms(g, "big"), 0);
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
        rc_gix_set(g, key, cq);
    }
    for (int i = 0; i < 5000; i += 2) { /* the even ones finish and go */
        snprintf(key, sizeof(key), "ns/w%d", i);
        rc_gix_set(g, key, NULL);
    }
    size_t total = 0;
    for (int q = 0; q < 3; q++) {
        char **keys;
        size_t n;
        snprintf(cq, sizeof(cq), "cq-%d", q);
        assert_int_equal(rc_gix_keys(g, cq, &keys, &n), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members_move_and_leave),
        cmocka_unit_test(test_pass_time_per_queue),
        cmocka_unit_test(test_many_workloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
