/* A LeaderWorkerSet's Workloads (components.h): Kueue's names, and where
 * each may go: none before all exist, the first chooses, the rest follow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <stdio.h>
#include <string.h>

#include "../components.h"
#include "jsonx.h"
#include "kinds/kinds.h"

/* component WORKLOAD INDEX [CLUSTER] of the LeaderWorkerSet with uid u-1 */
static json_t *component(const char *name, int index, const char *cluster)
{
    char s[512];
    snprintf(s, sizeof(s),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"labels\":{"
             "\"kueue.x-k8s.io/job-uid\":\"u-1\"},\"annotations\":{"
             "\"kueue.x-k8s.io/component-workload-index\":\"%d\"}},\"status\":{%s%s%s}}",
             name, index, cluster ? "\"clusterName\":\"" : "", cluster ? cluster : "",
             cluster ? "\"" : "");
    return tj_parse(s);
}

static void test_lws_workload_names_are_kueues(void **state)
{
    (void)state;
    json_t *lws = tj_parse("{\"metadata\":{\"name\":\"l\",\"uid\":\"u-1\"},\"spec\":{}}");
    char got[320], want[320];
    assert_int_equal(mk_lws_replicas(lws), 1);
    assert_int_equal(mk_lws_workload_name(lws, 2, got, sizeof(got)), 0);
    /* Kueue's workloadname.Get: GetWorkloadNameForOwnerWithGVK("<name>-<index>") */
    assert_int_equal(
        mk_workload_name("LeaderWorkerSet", "leaderworkerset.x-k8s.io", "l-2", "u-1", want, 320),
        0);
    assert_string_equal(got, want);
    assert_int_equal(strncmp(got, "leaderworkerset-l-2-", 20), 0);
    jx_set(lws, "spec.replicas", json_integer(1001));
    assert_int_equal(mk_lws_replicas(lws), -1);
    json_decref(lws);
}

static void test_first_chooses_the_rest_follow(void **state)
{
    (void)state;
    struct kcache *c = kcache_new();
    json_t *w0 = component("w0", 0, NULL), *w1 = component("w1", 1, NULL);
    json_t *w2 = component("w2", 2, NULL);
    struct rc_component_view v;
    kcache_upsert(c, json_incref(w0));
    kcache_upsert(c, json_incref(w1));
    /* two of three: every one waits, the first too, and nobody is woken */
    assert_int_equal(rc_component_place(c, w0, 3, &v), RC_COMPONENT_WAIT);
    assert_string_equal(v.first, "");
    json_decref(v.late);
    assert_int_equal(rc_component_place(c, w1, 3, &v), RC_COMPONENT_WAIT);
    assert_string_equal(v.first, "");
    json_decref(v.late);
    kcache_upsert(c, json_incref(w2));
    /* the last to arrive completes the group: it waits and wakes the first */
    assert_int_equal(rc_component_place(c, w2, 3, &v), RC_COMPONENT_WAIT);
    assert_string_equal(v.first, "ml/w0");
    json_decref(v.late);
    /* all there: the first chooses, the others wait for it */
    assert_int_equal(rc_component_place(c, w0, 3, &v), RC_COMPONENT_FREE);
    assert_string_equal(v.first, "");
    assert_int_equal(json_array_size(v.late), 2); /* ml/w1 and ml/w2, to reconcile later */
    json_decref(v.late);
    /* the first has a worker: the others follow it there, nobody is woken */
    json_decref(w0);
    w0 = component("w0", 0, "worker-2");
    kcache_upsert(c, json_incref(w0));
    assert_int_equal(rc_component_place(c, w1, 3, &v), RC_COMPONENT_FOLLOW);
    assert_string_equal(v.cluster, "worker-2");
    assert_string_equal(v.first, "");
    json_decref(v.late);
    /* components on two workers: nothing more is decided */
    kcache_upsert(c, component("w2", 2, "worker-1"));
    assert_int_equal(rc_component_place(c, w1, 3, &v), RC_COMPONENT_WAIT);
    assert_string_equal(v.first, "");
    json_decref(v.late);
    json_decref(w0);
    json_decref(w1);
    json_decref(w2);
    kcache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lws_workload_names_are_kueues),
        cmocka_unit_test(test_first_chooses_the_rest_follow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
