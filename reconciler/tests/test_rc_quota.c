#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <string.h>

#include "../gate.h"
#include "../quota.h"
#include "../wlstatus.h"
#include "errf.h"
#include "jsonx.h"

static void test_pod_requests(void **state)
{
    (void)state;
    json_t *spec =
        tj_parse("{\"containers\":["
                 " {\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}},"
                 " {\"resources\":{\"limits\":{\"cpu\":\"1\",\"nvidia.com/gpu\":2}}},"
                 " {\"resources\":{\"requests\":{\"cpu\":\"100m\"},\"limits\":{\"cpu\":\"4\"}}}],"
                 "\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"3\"}}},"
                 " {\"resources\":{\"requests\":{\"memory\":\"10Mi\"}}}],"
                 "\"overhead\":{\"cpu\":\"10m\"}}");
    struct rc_res r;
    char err[128];
    assert_int_equal(rc_pod_requests(spec, &r, err, sizeof(err)), 0);
    /* containers: 500m + 1 (limit stands in) + 100m (request wins) = 1600m;
     * init max 3 > 1600m; + overhead 10m */
    assert_int_equal(rc_res_get(&r, "cpu", NULL), 3010);
    assert_int_equal(rc_res_get(&r, "memory", NULL), 1024LL * 1024 * 1024 * 1000);
    assert_int_equal(rc_res_get(&r, "nvidia.com/gpu", NULL), 2000);
    int present;
    rc_res_get(&r, "pods", &present);
    assert_false(present);
    json_decref(spec);

    spec = tj_parse("{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}");
    assert_int_equal(rc_pod_requests(spec, &r, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "cpu"));
    json_decref(spec);
}

static void test_workload_requests(void **state)
{
    (void)state;
    json_t *wl = tj_parse("{\"spec\":{\"podSets\":["
                          "{\"name\":\"a\",\"count\":3,\"template\":{\"spec\":{\"containers\":[{"
                          "\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}]}}},"
                          "{\"name\":\"b\",\"template\":{\"spec\":{\"containers\":[{\"resources\":{"
                          "\"requests\":{\"cpu\":\"1\"}}}]}}}]}}");
    struct rc_res r;
    char err[128];
    assert_int_equal(rc_workload_requests(wl, &r, err, sizeof(err)), 0);
    assert_int_equal(rc_res_get(&r, "cpu", NULL), 750 + 1000); /* count defaults to 1 */
    json_decref(wl);
    wl = tj_parse("{\"spec\":{\"podSets\":[{\"count\":-1,\"template\":{}}]}}");
    assert_int_equal(rc_workload_requests(wl, &r, err, sizeof(err)), MK_ERR_INVAL);
    json_decref(wl);
}

static void test_cq_quota_sums_flavors(void **state)
{
    (void)state;
    json_t *cq = tj_parse(
        "{\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"cpu\",\"nvidia.com/gpu\"],"
        "\"flavors\":[{\"name\":\"a\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":8},"
        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"4\"}]},"
        "{\"name\":\"b\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"500m\"}]}]}]}}");
    struct rc_res q;
    char err[128];
    assert_int_equal(rc_cq_quota(cq, NULL, &q, err, sizeof(err)), 0);
    assert_int_equal(rc_res_get(&q, "cpu", NULL), 8500);
    assert_int_equal(rc_res_get(&q, "nvidia.com/gpu", NULL), 4000);
    assert_string_equal(q.flavor[0], "a"); /* the first flavor covering cpu */
    json_decref(cq);
    cq = tj_parse("{\"spec\":{\"resourceGroups\":[{\"flavors\":[{\"name\":\"a\",\"resources\":[{"
                  "\"name\":\"cpu\",\"nominalQuota\":\"x\"}]}]}]}}");
    assert_int_equal(rc_cq_quota(cq, NULL, &q, err, sizeof(err)), MK_ERR_INVAL);
    json_decref(cq);
}

/* The compact requests of the items below: one resource each. */
static struct rc_req *reqs[16];
static int nreqs;

static const struct rc_req *one_req(const char *name, long long milli)
{
    struct rc_res r = {0};
    *rc_res_slot(&r, name) = milli;
    assert_true(nreqs < 16);
    reqs[nreqs] = rc_req_of(&r);
    assert_non_null(reqs[nreqs]);
    return reqs[nreqs++];
}

static int free_reqs(void **state)
{
    (void)state;
    while (nreqs > 0)
        free(reqs[--nreqs]);
    return 0;
}

static void item(struct rc_gate_item *it, const char *key, long long prio, const char *created,
                 long long gpu_milli, int reserved)
{
    memset(it, 0, sizeof(*it));
    it->key = key;
    it->priority = prio;
    it->created = created;
    it->reserved = reserved;
    it->req = one_req("nvidia.com/gpu", gpu_milli);
}

/* A fast pass (gate_index.h): after a pass that reserved nothing, the
 * Workloads that change are planned alone against the quota the others
 * hold, and decide as a pass over the whole queue would. */
static void test_gate_plan_from_held_quota_matches_whole_queue(void **state)
{
    (void)state;
    struct rc_res nominal = {0};
    *rc_res_slot(&nominal, "nvidia.com/gpu") = 8000;
    struct rc_gate_item all[4], some[2];
    item(&all[0], "ns/running", 0, "2024-01-01T00:00:00Z", 6000, 1);
    item(&all[1], "ns/old", 0, "2024-01-01T00:00:01Z", 4000, 0);
    item(&all[2], "ns/mid", 0, "2024-01-01T00:00:05Z", 3000, 0);
    item(&all[3], "ns/new", 0, "2024-01-01T00:00:06Z", 2000, 0);
    rc_gate_plan("q", &nominal, 0, all, 4);
    /* the settled state before mid and new came: running holds 6, old waits */
    struct rc_res held = {0};
    assert_int_equal(rc_gate_plan_from("q", &nominal, 0, &held, all, 2), 0);
    assert_int_equal(all[1].decision, RC_GATE_WAIT);
    assert_int_equal(rc_res_get(&held, "nvidia.com/gpu", NULL), 6000);
    item(&some[0], "ns/mid", 0, "2024-01-01T00:00:05Z", 3000, 0);
    item(&some[1], "ns/new", 0, "2024-01-01T00:00:06Z", 2000, 0);
    struct rc_res used = held;
    assert_int_equal(rc_gate_plan_from("q", &nominal, 0, &used, some, 2), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(some[i].decision, all[2 + i].decision);
        assert_string_equal(some[i].message ? some[i].message : "",
                            all[2 + i].message ? all[2 + i].message : "");
    }
    assert_int_equal(some[1].decision, RC_GATE_RESERVE);
    assert_string_equal(some[0].message,
                        "Waiting for quota: ClusterQueue q: 6 of 8 nvidia.com/gpu in use, the "
                        "workload requests 3");
    assert_int_equal(rc_res_get(&used, "nvidia.com/gpu", NULL), 8000); /* what new took */
    rc_gate_release(all, 4);
    rc_gate_release(some, 2);
}

static void test_gate_order_and_messages(void **state)
{
    (void)state;
    struct rc_res nominal = {0};
    *rc_res_slot(&nominal, "nvidia.com/gpu") = 8000;
    struct rc_gate_item it[5];
    item(&it[0], "ns/running", 0, "2024-01-01T00:00:00Z", 6000, 1);
    item(&it[1], "ns/old", 0, "2024-01-01T00:00:01Z", 4000, 0);   /* does not fit: 6+4 > 8 */
    item(&it[2], "ns/small", 0, "2024-01-01T00:00:02Z", 2000, 0); /* fits (best effort) */
    item(&it[3], "ns/urgent", 10, "2024-01-01T00:00:09Z", 1000, 0);
    item(&it[4], "ns/huge", 0, "2024-01-01T00:00:00Z", 9000, 0);
    rc_gate_plan("team-a", &nominal, 0, it, 5);
    assert_int_equal(it[0].decision, RC_GATE_HOLDS);
    /* priority first: urgent takes 1 (7 of 8 used), then small no longer fits */
    assert_int_equal(it[3].decision, RC_GATE_RESERVE);
    assert_int_equal(it[1].decision, RC_GATE_WAIT);
    assert_string_equal(it[1].reason, "WaitingForQuota");
    assert_string_equal(it[1].message, "Waiting for quota: ClusterQueue team-a: 7 of 8 "
                                       "nvidia.com/gpu in use, the workload requests 4");
    assert_int_equal(it[2].decision, RC_GATE_WAIT);
    assert_int_equal(it[4].decision, RC_GATE_WAIT);
    assert_string_equal(it[4].reason, "ExceedsMaxQuota");
    assert_non_null(strstr(it[4].message, "more than the nominal quota of 8"));
    rc_gate_release(it, 5);
}

static void test_gate_best_effort_vs_strict(void **state)
{
    (void)state;
    struct rc_res nominal = {0};
    *rc_res_slot(&nominal, "nvidia.com/gpu") = 4000;
    struct rc_gate_item it[3];
    item(&it[0], "ns/a", 0, "2024-01-01T00:00:01Z", 3000, 0);
    item(&it[1], "ns/b", 0, "2024-01-01T00:00:02Z", 3000, 0);
    item(&it[2], "ns/c", 0, "2024-01-01T00:00:03Z", 1000, 0);
    rc_gate_plan("q", &nominal, 0, it, 3);
    assert_int_equal(it[0].decision, RC_GATE_RESERVE);
    assert_int_equal(it[1].decision, RC_GATE_WAIT);
    assert_int_equal(it[2].decision, RC_GATE_RESERVE); /* skips past b */
    rc_gate_release(it, 3);

    item(&it[0], "ns/a", 0, "2024-01-01T00:00:01Z", 3000, 0);
    item(&it[1], "ns/b", 0, "2024-01-01T00:00:02Z", 3000, 0);
    item(&it[2], "ns/c", 0, "2024-01-01T00:00:03Z", 1000, 0);
    rc_gate_plan("q", &nominal, 1, it, 3);
    assert_int_equal(it[0].decision, RC_GATE_RESERVE);
    assert_int_equal(it[1].decision, RC_GATE_WAIT);
    assert_int_equal(it[2].decision, RC_GATE_WAIT); /* StrictFIFO: behind b */
    assert_non_null(strstr(it[2].message, "ns/b is ahead"));
    rc_gate_release(it, 3);
}

static void test_gate_uncovered_and_ties(void **state)
{
    (void)state;
    struct rc_res nominal = {0};
    *rc_res_slot(&nominal, "cpu") = 1000;
    struct rc_gate_item it[3];
    item(&it[0], "ns/gpu", 0, "2024-01-01T00:00:00Z", 1000, 0);
    /* same priority and time: the key decides, so the outcome is stable */
    memset(&it[1], 0, sizeof(it[1]));
    it[1].key = "ns/b";
    it[1].created = "2024-01-01T00:00:05Z";
    it[1].req = one_req("cpu", 1000);
    memset(&it[2], 0, sizeof(it[2]));
    it[2].key = "ns/a";
    it[2].created = "2024-01-01T00:00:05Z";
    it[2].req = one_req("cpu", 1000);
    rc_gate_plan("q", &nominal, 1, it, 3);
    assert_int_equal(it[0].decision, RC_GATE_WAIT);
    assert_string_equal(it[0].reason, "NoMatchingFlavor");
    assert_string_equal(it[0].message, "ClusterQueue q does not cover resource nvidia.com/gpu");
    assert_int_equal(it[2].decision,
                     RC_GATE_RESERVE); /* a before b; uncovered gpu does not block */
    assert_int_equal(it[1].decision, RC_GATE_WAIT);
    rc_gate_release(it, 3);
    rc_gate_plan("q", &nominal, 0, NULL, 0); /* nothing to do is fine */
}

/* Issue 11 item 6: sums and products of requests never wrap. Twice
 * INT64_MAX milli-CPU plus 3m used to come out as 1m. */
static void test_request_overflow(void **state)
{
    (void)state;
    struct rc_res r;
    char err[256];
    json_t *spec = tj_parse("{\"containers\":["
                            "{\"resources\":{\"requests\":{\"cpu\":\"9223372036854775807m\"}}},"
                            "{\"resources\":{\"requests\":{\"cpu\":\"9223372036854775807m\"}}},"
                            "{\"resources\":{\"requests\":{\"cpu\":\"3m\"}}}]}");
    assert_int_equal(rc_pod_requests(spec, &r, err, sizeof(err)), MK_ERR_INVAL);
    assert_string_equal(err, "resource cpu: summed requests overflow (more than "
                             "9223372036854775807m)");
    json_decref(spec);
    /* the same through a Workload, and overhead on top of a full sum */
    json_t *wl = tj_parse("{\"spec\":{\"podSets\":[{\"name\":\"main\",\"template\":{\"spec\":{"
                          "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":"
                          "\"9223372036854775807m\"}}}],\"overhead\":{\"cpu\":\"1m\"}}}}]}}");
    assert_int_equal(rc_workload_requests(wl, &r, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "resource cpu: summed requests overflow"));
    json_decref(wl);
    /* pod count x requests */
    wl = tj_parse("{\"spec\":{\"podSets\":[{\"name\":\"main\",\"count\":1000,\"template\":{"
                  "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"8Pi\"}}}]"
                  "}}}]}}");
    assert_int_equal(rc_workload_requests(wl, &r, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "resource memory: podSets[0] count 1000 times the pod's requests "
                                "overflows"));
    json_decref(wl);
    /* podSets summed: each fits, together they do not */
    wl = tj_parse("{\"spec\":{\"podSets\":["
                  "{\"name\":\"a\",\"count\":2,\"template\":{\"spec\":{\"containers\":[{"
                  "\"resources\":{\"requests\":{\"cpu\":\"4611686018427387903m\"}}}]}}},"
                  "{\"name\":\"b\",\"template\":{\"spec\":{\"containers\":[{"
                  "\"resources\":{\"requests\":{\"cpu\":\"2m\"}}}]}}}]}}");
    assert_int_equal(rc_workload_requests(wl, &r, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "resource cpu: summed requests overflow"));
    json_decref(wl);
    /* nominal quota summed over flavors */
    json_t *cq = tj_parse("{\"spec\":{\"resourceGroups\":[{\"flavors\":["
                          "{\"name\":\"a\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":"
                          "\"9223372036854775807m\"}]},"
                          "{\"name\":\"b\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":"
                          "\"1m\"}]}]}]}}");
    assert_int_equal(rc_cq_quota(cq, NULL, &r, err, sizeof(err)), MK_ERR_INVAL);
    assert_non_null(strstr(err, "resource cpu: nominal quota summed over flavors overflows"));
    json_decref(cq);

    /* the gate: an unreadable workload waits with the reason on it, blocks
     * nobody (StrictFIFO included), and huge in-use sums do not wrap */
    struct rc_res nominal = {0};
    *rc_res_slot(&nominal, "nvidia.com/gpu") = INT64_MAX;
    struct rc_gate_item it[4];
    item(&it[0], "ns/held", 0, "2024-01-01T00:00:00Z", INT64_MAX, 1);
    item(&it[1], "ns/held2", 0, "2024-01-01T00:00:00Z", INT64_MAX, 1);
    item(&it[2], "ns/small", 0, "2024-01-01T00:00:02Z", 2000, 0);
    memset(&it[3], 0, sizeof(it[3]));
    it[3].key = "ns/bad";
    it[3].created = "2024-01-01T00:00:01Z";
    it[3].invalid = "resource cpu: summed requests overflow (more than 9223372036854775807m)";
    rc_gate_plan("q", &nominal, 1, it, 4);
    assert_int_equal(it[2].decision, RC_GATE_WAIT); /* the queue is full, not 2 - 2 = 0 */
    assert_string_equal(it[2].reason, "WaitingForQuota");
    assert_int_equal(it[3].decision, RC_GATE_WAIT);
    assert_string_equal(it[3].reason, "InvalidRequests");
    assert_string_equal(it[3].message,
                        "ClusterQueue q cannot count the workload's requests: resource cpu: "
                        "summed requests overflow (more than 9223372036854775807m)");
    assert_null(strstr(it[2].message, "ns/bad is ahead"));
    rc_gate_release(it, 4);
}

/* Issue 10 item 9: admission checks limited to some flavors (onFlavors), as
 * Kueue's AdmissionChecksForWorkload applies them. */
/* 1 when a equals the JSON text want */
static int json_is(const json_t *a, const char *want)
{
    json_t *w = tj_parse(want);
    int eq = json_equal(a, w);
    json_decref(w);
    return eq;
}

static const char *ONFLAVORS_CQ =
    "{\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"cpu\"],\"flavors\":["
    "{\"name\":\"local\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"100\"}]},"
    "{\"name\":\"remote\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"8\"}]}]}],"
    "\"admissionChecksStrategy\":{\"admissionChecks\":["
    "{\"name\":\"mk\",\"onFlavors\":[\"remote\"]},"
    "{\"name\":\"prov\",\"onFlavors\":[\"local\"]},"
    "{\"name\":\"all\"},"
    "{\"name\":\"both\",\"onFlavors\":[\"remote\",\"local\"]}]}}}";

static void test_on_flavors(void **state)
{
    (void)state;
    json_t *cq = tj_parse(ONFLAVORS_CQ);
    char err[128];
    json_t *fl = rc_check_flavors(cq, "mk");
    assert_int_equal(json_array_size(fl), 1);
    assert_string_equal(json_string_value(json_array_get(fl, 0)), "remote");
    json_decref(fl);
    fl = rc_check_flavors(cq, "all"); /* empty onFlavors: every flavor of the queue */
    assert_int_equal(json_array_size(fl), 2);
    json_decref(fl);
    assert_null(rc_check_flavors(cq, "unknown"));

    /* the quota the gate may reserve: only the flavors of the MultiKueue check */
    struct rc_res q;
    fl = rc_check_flavors(cq, "mk");
    assert_int_equal(rc_cq_quota(cq, fl, &q, err, sizeof(err)), 0);
    assert_int_equal(rc_res_get(&q, "cpu", NULL), 8000);
    assert_string_equal(q.flavor[0], "remote");
    json_decref(fl);
    assert_int_equal(rc_cq_quota(cq, NULL, &q, err, sizeof(err)), 0);
    assert_int_equal(rc_res_get(&q, "cpu", NULL), 108000);

    /* before admission: only checks on every flavor */
    json_t *names = rc_checks_for_workload(cq, NULL);
    assert_true(json_is(names, "[\"all\",\"both\"]"));
    json_decref(names);
    /* admitted on "remote": mk applies, prov does not */
    json_t *adm = tj_parse("{\"clusterQueue\":\"q\",\"podSetAssignments\":[{\"name\":\"main\","
                           "\"flavors\":{\"cpu\":\"remote\"}}]}");
    names = rc_checks_for_workload(cq, adm);
    assert_true(json_is(names, "[\"mk\",\"all\",\"both\"]"));
    json_decref(names);
    json_decref(adm);
    /* the v1beta1 flat list applies to every flavor */
    json_t *flat = tj_parse("{\"spec\":{\"resourceGroups\":[{\"flavors\":[{\"name\":\"a\"}]}],"
                            "\"admissionChecks\":[\"mk\"]}}");
    names = rc_checks_for_workload(flat, NULL);
    assert_true(json_is(names, "[\"mk\"]"));
    json_decref(names);
    json_decref(flat);

    /* the reservation lists the checks of the assigned flavor: states kept,
     * new ones Pending, those of other flavors gone */
    json_t *wl = tj_parse(
        "{\"spec\":{\"podSets\":[{\"name\":\"main\",\"count\":1,\"template\":{\"spec\":{"
        "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}]},"
        "\"status\":{\"admissionChecks\":[{\"name\":\"all\",\"state\":\"Ready\",\"message\":\"ok\","
        "\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"},{\"name\":\"both\",\"state\":\"Pending\","
        "\"message\":\"\",\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}}");
    fl = rc_check_flavors(cq, "mk");
    assert_int_equal(rc_cq_quota(cq, fl, &q, err, sizeof(err)), 0);
    json_decref(fl);
    json_t *p = rc_reserve_patch(wl, "q", cq, &q, "2024-02-02T00:00:00Z");
    assert_non_null(p);
    assert_string_equal(jx_str(p, "admission.podSetAssignments.0.flavors.cpu"), "remote");
    json_t *acs = jx_get(p, "admissionChecks");
    assert_int_equal(json_array_size(acs), 3);
    assert_string_equal(jx_str(json_array_get(acs, 0), "name"), "mk");
    assert_string_equal(jx_str(json_array_get(acs, 0), "state"), "Pending");
    assert_string_equal(jx_str(json_array_get(acs, 0), "lastTransitionTime"),
                        "2024-02-02T00:00:00Z");
    assert_string_equal(jx_str(json_array_get(acs, 1), "name"), "all");
    assert_string_equal(jx_str(json_array_get(acs, 1), "state"), "Ready");
    assert_string_equal(jx_str(json_array_get(acs, 2), "name"), "both");
    json_decref(p);
    json_decref(wl);
    json_decref(cq);
}

static void test_reserve_patch(void **state)
{
    (void)state;
    json_t *wl =
        tj_parse("{\"spec\":{\"podSets\":[{\"name\":\"main\",\"count\":2,\"template\":{"
                 "\"spec\":{\"containers\":"
                 "[{\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}]}}}]},"
                 "\"status\":{\"conditions\":[{\"type\":\"Evicted\",\"status\":\"True\","
                 "\"reason\":\"AdmissionCheck\","
                 "\"message\":\"gone\",\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}}");
    struct rc_res nominal = {0};
    *rc_res_slot(&nominal, "cpu") = 4000;
    snprintf(nominal.flavor[0], sizeof(nominal.flavor[0]), "default-flavor");
    json_t *p = rc_reserve_patch(wl, "team-a", NULL, &nominal, "2024-02-02T00:00:00Z");
    assert_non_null(p);
    assert_string_equal(jx_str(p, "admission.clusterQueue"), "team-a");
    assert_string_equal(jx_str(p, "admission.podSetAssignments.0.flavors.cpu"), "default-flavor");
    assert_string_equal(jx_str(p, "admission.podSetAssignments.0.resourceUsage.cpu"), "500m");
    assert_int_equal(jx_int(p, "admission.podSetAssignments.0.count", 0), 2);
    json_t *doc = json_pack("{s:O}", "status", p);
    assert_true(rc_cond_true(doc, "QuotaReserved"));
    assert_false(rc_cond_true(doc, "Admitted"));
    assert_false(rc_cond_true(doc, "Evicted")); /* the old eviction became history */
    assert_string_equal(jx_str(rc_cond_find(doc, "QuotaReserved"), "message"),
                        "Quota reserved in ClusterQueue team-a");
    json_decref(doc);
    json_decref(p);
    json_decref(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_requests),
        cmocka_unit_test_teardown(test_gate_plan_from_held_quota_matches_whole_queue, free_reqs),
        cmocka_unit_test(test_workload_requests),
        cmocka_unit_test(test_cq_quota_sums_flavors),
        cmocka_unit_test_teardown(test_gate_order_and_messages, free_reqs),
        cmocka_unit_test_teardown(test_gate_best_effort_vs_strict, free_reqs),
        cmocka_unit_test_teardown(test_gate_uncovered_and_ties, free_reqs),
        cmocka_unit_test(test_reserve_patch),
        cmocka_unit_test_teardown(test_request_overflow, free_reqs),
        cmocka_unit_test(test_on_flavors),
    };
    return cmocka_run_group_tests_name("rc_quota", tests, NULL, NULL);
}
