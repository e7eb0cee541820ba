/* Nomination of worker clusters by dispatcher (dispatchers.h): AllAtOnce,
 * Incremental rounds, External. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include "../dispatchers.h"
#include "jsonx.h"

static void test_all_at_once(void **state)
{
    (void)state;
    json_t *clusters = tj_parse("[\"zeta\",\"alpha\",\"mid\"]");
    int connected[] = {1, 1, 0};
    struct rc_nomination n;
    assert_int_equal(
        rc_nominate(RC_DISPATCH_ALL_AT_ONCE, clusters, connected, NULL, 3, 1000, 0, 5000, &n), 0);
    json_t *want = tj_parse("[\"alpha\",\"zeta\"]"); /* connected ones, by name */
    assert_true(json_equal(n.clusters, want));
    assert_int_equal(n.requeue_ms, -1);
    rc_nomination_clear(&n);
    json_decref(want);
    json_decref(clusters);
}

static void test_incremental_rounds(void **state)
{
    (void)state;
    json_t *clusters = tj_parse("[\"onprem\",\"aws\",\"gcp\"]");
    int connected[] = {1, 1, 1};
    struct rc_nomination n;
    /* t0: the first one by name (not config order, as Kueue); a round starts */
    assert_int_equal(
        rc_nominate(RC_DISPATCH_INCREMENTAL, clusters, connected, NULL, 1, 300000, 0, 1000, &n), 0);
    json_t *want = tj_parse("[\"aws\"]");
    assert_true(json_equal(n.clusters, want));
    assert_true(n.new_round);
    assert_int_equal(n.requeue_ms, 300000);
    json_decref(want);
    json_t *cur = json_incref(n.clusters);
    rc_nomination_clear(&n);
    /* within the round: unchanged, look again when it ends */
    assert_int_equal(
        rc_nominate(RC_DISPATCH_INCREMENTAL, clusters, connected, cur, 1, 300000, 1000, 61000, &n),
        0);
    assert_true(json_equal(n.clusters, cur));
    assert_false(n.new_round);
    assert_int_equal(n.requeue_ms, 240000);
    rc_nomination_clear(&n);
    /* round over: the next one by name is appended, disconnected or not */
    connected[2] = 0;
    assert_int_equal(
        rc_nominate(RC_DISPATCH_INCREMENTAL, clusters, connected, cur, 1, 300000, 1000, 301000, &n),
        0);
    want = tj_parse("[\"aws\",\"gcp\"]");
    assert_true(json_equal(n.clusters, want));
    json_decref(want);
    json_decref(cur);
    cur = json_incref(n.clusters);
    rc_nomination_clear(&n);
    connected[0] = 0;
    assert_int_equal(rc_nominate(RC_DISPATCH_INCREMENTAL, clusters, connected, cur, 1, 300000,
                                 301000, 700000, &n),
                     0);
    want = tj_parse("[\"aws\",\"gcp\",\"onprem\"]");
    assert_true(json_equal(n.clusters, want));
    json_decref(want);
    json_decref(cur);
    cur = json_incref(n.clusters);
    rc_nomination_clear(&n);
    /* none left */
    assert_int_equal(rc_nominate(RC_DISPATCH_INCREMENTAL, clusters, connected, cur, 1, 300000,
                                 700000, 1100000, &n),
                     0);
    assert_string_equal(n.error, "no more workers to nominate");
    assert_false(n.new_round);
    rc_nomination_clear(&n);
    /* a step of 3 takes three at once */
    assert_int_equal(
        rc_nominate(RC_DISPATCH_INCREMENTAL, clusters, connected, NULL, 3, 300000, 0, 1, &n), 0);
    assert_int_equal(json_array_size(n.clusters), 3);
    rc_nomination_clear(&n);
    json_decref(cur);
    json_decref(clusters);
}

static void test_external(void **state)
{
    (void)state;
    json_t *clusters = tj_parse("[\"a\",\"b\"]");
    int connected[] = {1, 1};
    json_t *cur = tj_parse("[\"b\",\"not-in-config\",\"b\"]");
    struct rc_nomination n;
    assert_int_equal(rc_nominate(RC_DISPATCH_EXTERNAL, clusters, connected, cur, 3, 1000, 0, 1, &n),
                     0);
    json_t *want = tj_parse("[\"b\"]");
    assert_true(json_equal(n.clusters, want));
    rc_nomination_clear(&n);
    assert_int_equal(
        rc_nominate(RC_DISPATCH_EXTERNAL, clusters, connected, NULL, 3, 1000, 0, 1, &n), 0);
    assert_int_equal(json_array_size(n.clusters), 0);
    rc_nomination_clear(&n);
    assert_true(rc_names_equal(NULL, n.clusters));
    assert_false(rc_names_equal(want, cur));
    json_decref(want);
    json_decref(cur);
    json_decref(clusters);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_at_once),
        cmocka_unit_test(test_incremental_rounds),
        cmocka_unit_test(test_external),
    };
    return cmocka_run_group_tests_name("rc_dispatchers", tests, NULL, NULL);
}
