/* Workload status helpers (wlstatus.h): conditions and checks that keep
 * their transition times, bounded messages, the admission-status apply, the
 * earliest true condition and RFC 3339 times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../wlstatus.h"
#include "jsonx.h"

static void test_conditions_keep_transition_time(void **state)
{
    (void)state;
    json_t *c1 = rc_conds_with(NULL, "Admitted", "False", "NoReservation", "none", "T1");
    json_t *c2 = rc_conds_with(c1, "Admitted", "False", "Other", "still none", "T2");
    json_t *c3 = rc_conds_with(c2, "Admitted", "True", "Admitted", "yes", "T3");
    assert_string_equal(jx_str(c2, "0.lastTransitionTime"), "T1"); /* same status */
    assert_string_equal(jx_str(c2, "0.reason"), "Other");
    assert_string_equal(jx_str(c3, "0.lastTransitionTime"), "T3");
    assert_int_equal(json_array_size(c3), 1);
    json_decref(c1);
    json_decref(c2);
    json_decref(c3);

    json_t *k1 = rc_checks_with(NULL, "mk", "Pending", "", "T1", 0);
    json_t *k2 = rc_checks_with(k1, "mk", "Pending", "x", "T2", 1);
    assert_string_equal(jx_str(k2, "0.lastTransitionTime"), "T1");
    assert_int_equal(jx_int(k2, "0.retryCount", 0), 1);
    assert_string_equal(jx_str(k2, "0.message"), "x");
    json_decref(k1);
    json_decref(k2);

    char *m = rc_msg_previously("Admitting remote lost", "Ready");
    assert_string_equal(m, "Admitting remote lost, Previously: \"Ready\"");
    free(m);
    /* messages are bounded */
    char *big = malloc(RC_MAX_MSG + 100);
    memset(big, 'x', RC_MAX_MSG + 99);
    big[RC_MAX_MSG + 99] = '\0';
    m = rc_msg_previously(big, "Ready");
    assert_int_equal(strlen(m), RC_MAX_MSG);
    json_t *k3 = rc_checks_with(NULL, "mk", "Ready", big, "T", 0);
    assert_int_equal(strlen(jx_str(k3, "0.message")), RC_MAX_MSG);
    json_decref(k3);
    free(m);
    free(big);
}

/* got equals the JSON text want, or the test fails showing both */
static void tj_assert_eq(const json_t *got, const char *want)
{
    json_t *w = tj_parse(want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        fail_msg("got %s\nwant %s", g ? g : "(null)", want);
    }
    json_decref(w);
}

/* clusterName and nominatedClusterNames go in Kueue's admission-status
 * apply: the whole admission status again, the patch applied over it. */
static void test_admission_apply(void **state)
{
    (void)state;
    json_t *p1 = tj_parse("{\"clusterName\":\"worker-1\",\"nominatedClusterNames\":null}");
    json_t *p2 = tj_parse("{\"nominatedClusterNames\":[\"worker-1\"]}");
    json_t *p3 = tj_parse("{\"admissionChecks\":[]}");
    json_t *p4 = tj_parse("{\"clusterName\":null,\"metadata\":{}}");
    assert_true(rc_admission_patch(p1));
    assert_true(rc_admission_patch(p2));
    assert_false(rc_admission_patch(p3)); /* no cluster names: a merge patch */
    assert_false(rc_admission_patch(p4)); /* not only admission status */
    json_t *wl = tj_parse(
        "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\","
        "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\",\"uid\":\"u1\","
        "\"resourceVersion\":\"7\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"queueName\":\"q\"},"
        "\"status\":{\"admission\":{\"clusterQueue\":\"cq\"},"
        "\"resourceRequests\":[{\"name\":\"main\"}],\"requeueState\":{},"
        "\"reclaimablePods\":[{\"name\":\"main\",\"count\":1}],"
        "\"conditions\":[{\"type\":\"PodsReady\",\"status\":\"False\"},"
        "{\"type\":\"Admitted\",\"status\":\"True\"},"
        "{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":\"QuotaReserved\"}],"
        "\"nominatedClusterNames\":[\"worker-1\",\"worker-2\"],\"unhealthyNodes\":[],"
        "\"schedulingStats\":{\"evictions\":[{\"reason\":\"x\",\"count\":1}]},"
        "\"admissionChecks\":[{\"name\":\"mk\",\"state\":\"Pending\",\"retryCount\":1}]}}");
    json_t *a = rc_admission_apply(wl, p1);
    assert_non_null(a);
    tj_assert_eq(a, "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\","
                    "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\",\"uid\":\"u1\","
                    "\"resourceVersion\":\"7\"},"
                    "\"status\":{\"admission\":{\"clusterQueue\":\"cq\"},"
                    "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\","
                    "\"reason\":\"QuotaReserved\"},{\"type\":\"Admitted\",\"status\":\"True\"}],"
                    "\"schedulingStats\":{\"evictions\":[{\"reason\":\"x\",\"count\":1}]},"
                    "\"clusterName\":\"worker-1\",\"nominatedClusterNames\":[],"
                    "\"admissionChecks\":[{\"name\":\"mk\",\"state\":\"Pending\","
                    "\"retryCount\":1}]}}");
    json_decref(a);
    /* without an admission the resource requests are part of it */
    json_t *bare = tj_parse("{\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\"},"
                            "\"status\":{\"resourceRequests\":[{\"name\":\"main\"}]}}");
    a = rc_admission_apply(bare, p2);
    tj_assert_eq(a, "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\","
                    "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\"},"
                    "\"status\":{\"resourceRequests\":[{\"name\":\"main\"}],"
                    "\"nominatedClusterNames\":[\"worker-1\"]}}");
    json_decref(a);
    json_decref(bare);
    json_decref(wl);
    json_decref(p1);
    json_decref(p2);
    json_decref(p3);
    json_decref(p4);
}

static void test_earliest_true(void **state)
{
    (void)state;
    json_t *a = tj_parse("{\"status\":{\"conditions\":[{\"type\":\"Admitted\",\"status\":\"True\","
                         "\"lastTransitionTime\":\"2024-01-01T00:00:05Z\"}]}}");
    json_t *b = tj_parse("{\"status\":{\"conditions\":[{\"type\":\"Admitted\",\"status\":\"True\","
                         "\"lastTransitionTime\":\"2024-01-01T00:00:03Z\"}]}}");
    json_t *c = tj_parse("{\"status\":{\"conditions\":[{\"type\":\"Admitted\",\"status\":\"False\","
                         "\"lastTransitionTime\":\"2024-01-01T00:00:01Z\"}]}}");
    json_t *wls[] = {a, NULL, b, c};
    assert_int_equal(rc_earliest_true(wls, NULL, 4, "Admitted", 0), 2);
    assert_int_equal(rc_earliest_true(wls, NULL, 4, "Admitted", 7), 2); /* no tie: seed unused */
    int ok[] = {1, 1, 0, 1};
    assert_int_equal(rc_earliest_true(wls, ok, 4, "Admitted", 0), 0);
    assert_int_equal(rc_earliest_true(wls, NULL, 4, "Finished", 0), -1);
    /* a tie within the second is spread by the seed, not given to index 0 */
    json_t *d = tj_parse("{\"status\":{\"conditions\":[{\"type\":\"Admitted\",\"status\":\"True\","
                         "\"lastTransitionTime\":\"2024-01-01T00:00:03Z\"}]}}");
    json_t *tied[] = {b, c, d, a};
    assert_int_equal(rc_earliest_true(tied, NULL, 4, "Admitted", 0), 0);
    assert_int_equal(rc_earliest_true(tied, NULL, 4, "Admitted", 1), 2);
    assert_int_equal(rc_earliest_true(tied, NULL, 4, "Admitted", 2), 0);
    int not_d[] = {1, 1, 0, 1};
    assert_int_equal(rc_earliest_true(tied, not_d, 4, "Admitted", 1), 0);
    json_decref(d);
    assert_int_equal(rc_parse_time_ms("1970-01-01T00:00:01Z"), 1000);
    assert_int_equal(rc_parse_time_ms("1970-01-01T00:00:01.250Z"), 1250);
    assert_int_equal(rc_parse_time_ms("yesterday"), -1);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_object_helpers(void **state)
{
    (void)state;
    /* the finalizer comes off, the others stay, the resourceVersion guards it */
    json_t *wl = tj_parse("{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":"
                          "[\"a\",\"kueue.x-k8s.io/multikueue\",\"b\"],"
                          "\"labels\":{\"kueue.x-k8s.io/prebuilt-workload-name\":\"wl-1\"},"
                          "\"annotations\":{\"kueue.x-k8s.io/prebuilt-workload-name\":\"old\"}},"
                          "\"metadata2\":{}}");
    json_t *p = rc_finalizer_removal(wl, "kueue.x-k8s.io/multikueue");
    json_t *want =
        tj_parse("{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":[\"a\",\"b\"]}}");
    assert_true(json_equal(p, want));
    json_decref(p);
    json_decref(want);
    /* the label wins over the annotation older versions wrote */
    assert_string_equal(rc_prebuilt_name(wl), "wl-1");
    json_t *old = tj_parse("{\"metadata\":{\"annotations\":"
                           "{\"kueue.x-k8s.io/prebuilt-workload-name\":\"old\"}}}");
    assert_string_equal(rc_prebuilt_name(old), "old");
    assert_null(rc_prebuilt_name(json_object_get(wl, "metadata2")));
    json_decref(old);
    json_decref(wl);

    /* Active: a patch with observedGeneration when it changes, none when not */
    json_t *ac = tj_parse("{\"metadata\":{\"generation\":3},\"status\":{\"conditions\":["
                          "{\"type\":\"Active\",\"status\":\"False\",\"reason\":\"X\","
                          "\"message\":\"m\",\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}}");
    json_t *out = NULL;
    assert_int_equal(rc_active_patch(ac, "False", "X", "m", &out), 0);
    assert_null(out);
    assert_int_equal(rc_active_patch(ac, "True", "Active", "ok", &out), 0);
    assert_non_null(out);
    assert_string_equal(jx_str(out, "status.conditions[0].status"), "True");
    assert_string_equal(jx_str(out, "status.conditions[0].reason"), "Active");
    assert_int_equal(jx_int(out, "status.conditions[0].observedGeneration", 0), 3);
    json_decref(out);
    json_decref(ac);
}

/* rc_wl_awaits_dispatch of a Workload of metadata md and conditions conds. */
static int awaits(const char *md, const char *conds)
{
    char doc[512];
    snprintf(doc, sizeof(doc), "{\"metadata\":{%s},\"status\":{\"conditions\":[%s]}}", md, conds);
    json_t *wl = tj_parse(doc);
    int r = rc_wl_awaits_dispatch(wl);
    json_decref(wl);
    return r;
}

/* Which Workloads' keys go first in the work queue (main.c). */
static void test_awaits_dispatch(void **state)
{
    (void)state;
#define RESERVED "{\"type\":\"QuotaReserved\",\"status\":\"True\"}"
    assert_int_equal(awaits("", RESERVED), 1);
    assert_int_equal(awaits("", ""), 0); /* no quota yet */
    assert_int_equal(awaits("", RESERVED ",{\"type\":\"Finished\",\"status\":\"True\"}"), 0);
    assert_int_equal(awaits("\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"", RESERVED), 0);
#undef RESERVED
    json_t *wl = tj_parse("{\"status\":{\"clusterName\":\"worker-1\",\"conditions\":["
                          "{\"type\":\"QuotaReserved\",\"status\":\"True\"}]}}");
    assert_int_equal(rc_wl_awaits_dispatch(wl), 0); /* placed */
    json_decref(wl);
    assert_int_equal(rc_wl_awaits_dispatch(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conditions_keep_transition_time),
        cmocka_unit_test(test_admission_apply),
        cmocka_unit_test(test_earliest_true),
        cmocka_unit_test(test_object_helpers),
        cmocka_unit_test(test_awaits_dispatch),
    };
    return cmocka_run_group_tests_name("rc_wlstatus", tests, NULL, NULL);
}
