/* The queues' status in standalone mode (qstatus.h), as Kueue's core writes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <string.h>

#include "../qstatus.h"
#include "../quota.h"
#include "jsonx.h"

static json_t *cq(void)
{
    json_t *q = json_loads("{\"metadata\":{\"name\":\"cq\",\"generation\":3},\"spec\":{"
                           "\"resourceGroups\":[{\"coveredResources\":[\"cpu\",\"memory\"],"
                           "\"flavors\":[{\"name\":\"a\",\"resources\":[{\"name\":\"cpu\","
                           "\"nominalQuota\":8},{\"name\":\"memory\",\"nominalQuota\":\"4Gi\"}]},"
                           "{\"name\":\"b\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":2},"
                           "{\"name\":\"memory\",\"nominalQuota\":\"1Gi\"}]}]}]}}",
                           0, NULL);
    assert_non_null(q);
    return q;
}

/* the gate's compact requests (free() them) */
static struct rc_req *req(int64_t cpu_milli, int64_t mem)
{
    struct rc_res r;
    memset(&r, 0, sizeof(r));
    *rc_res_slot(&r, "cpu") = cpu_milli;
    *rc_res_slot(&r, "memory") = mem * 1000;
    struct rc_req *out = rc_req_of(&r);
    assert_non_null(out);
    return out;
}

static void test_counts_and_flavors(void **state)
{
    (void)state;
    json_t *q = cq();
    struct rc_res nominal;
    char err[128];
    assert_int_equal(rc_cq_quota(q, NULL, &nominal, err, sizeof(err)), 0);
    struct rc_req *r1 = req(1500, 1024), *r2 = req(2000, 0), *r3 = req(500, 0);
    struct rc_qs_item items[] = {
        {"ns1", "lq", 1, 1, r1}, /* admitted */
        {"ns1", "lq", 1, 0, r2}, /* reserving, checks not ready */
        {"ns2", "lq", 0, 0, r3}, /* pending */
        {"ns1", "lq", 0, 0, r3}, /* pending */
    };
    json_t *u = rc_queue_usage(q, &nominal, items, 4, NULL, NULL);
    assert_non_null(u);
    assert_int_equal(jx_int(u, "pendingWorkloads", -1), 2);
    assert_int_equal(jx_int(u, "reservingWorkloads", -1), 2);
    assert_int_equal(jx_int(u, "admittedWorkloads", -1), 1);
    /* every flavor and resource listed; usage on the first flavor covering it */
    assert_string_equal(jx_str(u, "flavorsReservation.0.name"), "a");
    assert_string_equal(jx_str(u, "flavorsReservation.0.resources.0.name"), "cpu");
    assert_string_equal(jx_str(u, "flavorsReservation.0.resources.0.total"), "3500m");
    assert_string_equal(jx_str(u, "flavorsReservation.0.resources.0.borrowed"), "0");
    assert_string_equal(jx_str(u, "flavorsReservation.0.resources.1.total"), "1024");
    assert_string_equal(jx_str(u, "flavorsReservation.1.name"), "b");
    assert_string_equal(jx_str(u, "flavorsReservation.1.resources.0.total"), "0");
    assert_string_equal(jx_str(u, "flavorsUsage.0.resources.0.total"), "1500m");
    json_decref(u);
    /* a LocalQueue: its own Workloads only, no borrowed */
    u = rc_queue_usage(q, &nominal, items, 4, "ns2", "lq");
    assert_int_equal(jx_int(u, "pendingWorkloads", -1), 1);
    assert_int_equal(jx_int(u, "reservingWorkloads", -1), 0);
    assert_int_equal(jx_int(u, "admittedWorkloads", -1), 0);
    assert_string_equal(jx_str(u, "flavorsReservation.0.resources.0.total"), "0");
    assert_null(jx_get(u, "flavorsReservation.0.resources.0.borrowed"));
    json_decref(u);
    json_decref(q);
    free(r1);
    free(r2);
    free(r3);
}

static void test_written_only_when_changed(void **state)
{
    (void)state;
    json_t *q = cq();
    struct rc_res nominal;
    char err[128];
    assert_int_equal(rc_cq_quota(q, NULL, &nominal, err, sizeof(err)), 0);
    json_t *u = rc_queue_usage(q, &nominal, NULL, 0, NULL, NULL);
    assert_non_null(u);
    int oom;
    json_t *p = rc_queue_status_patch(q, u, RC_CQ_ACTIVE_MSG, &oom);
    assert_non_null(p);
    assert_int_equal(jx_int(p, "status.pendingWorkloads", -1), 0);
    assert_string_equal(jx_str(p, "status.conditions.0.type"), "Active");
    assert_string_equal(jx_str(p, "status.conditions.0.status"), "True");
    assert_string_equal(jx_str(p, "status.conditions.0.reason"), "Ready");
    assert_string_equal(jx_str(p, "status.conditions.0.message"), "Can admit new workloads");
    assert_int_equal(jx_int(p, "status.conditions.0.observedGeneration", -1), 3);
    /* the queue now says so: nothing to write */
    assert_int_equal(jx_set(q, "status", json_deep_copy(json_object_get(p, "status"))), 0);
    json_decref(p);
    assert_null(rc_queue_status_patch(q, u, RC_CQ_ACTIVE_MSG, &oom));
    assert_int_equal(oom, 0);
    json_decref(u);
    /* one more pending Workload: a patch with the new count */
    struct rc_req *r = req(100, 0);
    struct rc_qs_item one = {"ns", "lq", 0, 0, r};
    u = rc_queue_usage(q, &nominal, &one, 1, NULL, NULL);
    p = rc_queue_status_patch(q, u, RC_CQ_ACTIVE_MSG, &oom);
    assert_non_null(p);
    assert_int_equal(jx_int(p, "status.pendingWorkloads", -1), 1);
    assert_null(jx_get(p, "status.conditions")); /* the condition is unchanged */
    json_decref(p);
    json_decref(u);
    json_decref(q);
    free(r);
}

/* A quiet queue is written at once; within a batch period the wait runs to
 * its end, after it nothing waits. */
static void test_batch_wait(void **state)
{
    (void)state;
    assert_int_equal(rc_qstatus_wait(0, 5000), 0); /* never written */
    assert_int_equal(rc_qstatus_wait(5000, 5000), RC_QSTATUS_BATCH_MS);
    assert_int_equal(rc_qstatus_wait(5000, 5250), RC_QSTATUS_BATCH_MS - 250);
    assert_int_equal(rc_qstatus_wait(5000, 5000 + RC_QSTATUS_BATCH_MS - 1), 1);
    assert_int_equal(rc_qstatus_wait(5000, 5000 + RC_QSTATUS_BATCH_MS), 0);
    assert_int_equal(rc_qstatus_wait(5000, 90000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_flavors),
        cmocka_unit_test(test_written_only_when_changed),
        cmocka_unit_test(test_batch_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
