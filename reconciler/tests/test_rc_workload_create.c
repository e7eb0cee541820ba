/* Workload construction (workload_create.h): name, owner, labels, pod sets
 * and initial status of a job's Workload, and its remote copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <stdio.h>
#include <string.h>

#include "../dispatch.h"
#include "../podgroup.h"
#include "../wlstatus.h"
#include "../workload_create.h"
#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/podgroup.h"

static const char *job_json =
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"sample\","
    "\"namespace\":\"ml\",\"uid\":\"u-1\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-a\"},"
    "\"annotations\":{\"note\":\"kept\"}},"
    "\"spec\":{\"parallelism\":3,\"completions\":2,\"ttlSecondsAfterFinished\":5,"
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}";

static void test_build_workload(void **state)
{
    (void)state;
    json_t *job = tj_parse(job_json);
    char err[256];
    json_t *wl = rc_build_workload(&mk_kind_job, job, "team-a", err, sizeof(err));
    assert_non_null(wl);
    char name[300];
    assert_int_equal(mk_workload_name("Job", "batch", "sample", "u-1", name, sizeof(name)), 0);
    assert_string_equal(jx_str(wl, "metadata.name"), name);
    assert_int_equal(strncmp(name, "job-sample-", 11), 0);
    assert_string_equal(jx_str(wl, "metadata.namespace"), "ml");
    assert_string_equal(jx_str(wl, "metadata.finalizers.0"), RC_FINALIZER);
    assert_string_equal(jx_str(wl, "metadata.labels[kueue.x-k8s.io/job-uid]"), "u-1");
    json_t *owner = rc_wl_owner(wl);
    assert_string_equal(jx_str(owner, "apiVersion"), "batch/v1");
    assert_string_equal(jx_str(owner, "kind"), "Job");
    assert_string_equal(jx_str(owner, "uid"), "u-1");
    assert_true(jx_bool(owner, "controller", 0));
    assert_string_equal(jx_str(wl, "spec.queueName"), "team-a");
    assert_int_equal(jx_int(wl, "spec.priority", -1), 0); /* priority.h sets it */
    assert_null(jx_get(wl, "spec.priorityClassRef"));
    assert_string_equal(jx_str(wl, "spec.podSets.0.name"), "main");
    assert_int_equal(jx_int(wl, "spec.podSets.0.count", 0), 2); /* min(parallelism, completions) */

    /* the remote copy: origin label, no job-uid, no owner, no finalizer */
    jx_set(wl, "status", tj_parse("{\"clusterName\":\"x\"}"));
    jx_set_new_str(wl, "metadata.annotations.a", "b");
    json_t *r = rc_remote_workload(wl, "mine");
    assert_string_equal(jx_str(r, "metadata.labels[" MK_ORIGIN_LABEL "]"), "mine");
    assert_null(jx_get(r, "metadata.labels[kueue.x-k8s.io/job-uid]"));
    assert_null(jx_get(r, "metadata.ownerReferences"));
    assert_null(jx_get(r, "metadata.finalizers"));
    assert_null(jx_get(r, "status"));
    assert_string_equal(jx_str(r, "metadata.annotations.a"), "b");
    assert_true(json_equal(jx_get(r, "spec"), jx_get(wl, "spec")));
    json_decref(r);
    json_decref(wl);

    /* a job without uid cannot get a Workload */
    jx_del(job, "metadata.uid");
    assert_null(rc_build_workload(&mk_kind_job, job, "team-a", err, sizeof(err)));
    json_decref(job);

    json_t *checks = tj_parse("[\"mk\",\"other\"]");
    json_t *st = rc_initial_status(checks, "WaitingForQuota", "why", "T0");
    assert_int_equal(json_array_size(jx_get(st, "admissionChecks")), 2);
    assert_string_equal(jx_str(st, "admissionChecks.1.state"), "Pending");
    assert_string_equal(jx_str(st, "admissionChecks.1.message"), "");
    assert_string_equal(jx_str(st, "conditions.0.type"), "QuotaReserved");
    assert_string_equal(jx_str(st, "conditions.0.status"), "False");
    assert_string_equal(jx_str(st, "conditions.0.reason"), "WaitingForQuota");
    assert_string_equal(jx_str(st, "conditions.0.message"), "why");
    json_decref(st);
    json_decref(checks);
}

/* A pod group's Workload: named after the group, owned by each pod, no
 * controller and no job-uid, pod sets by role; none while a pod is missing. */
static void test_build_group_workload(void **state)
{
    (void)state;
    json_t *pods = json_array();
    const char *names[] = {"b", "a", "c", "d"};
    for (int i = 0; i < 4; i++) {
        char s[512];
        snprintf(s, sizeof(s),
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\","
                 "\"creationTimestamp\":\"2026-01-01T00:00:0%dZ\","
                 "\"labels\":{\"kueue.x-k8s.io/pod-group-name\":\"grp\",\"kueue.x-k8s.io/"
                 "queue-name\":\"team-a\"},\"annotations\":{\"kueue.x-k8s.io/pod-group-total-"
                 "count\":\"3\",\"kueue.x-k8s.io/role-hash\":\"%s\"}},\"spec\":{}}",
                 names[i], names[i], i, i == 1 ? "leader00" : "worker00");
        json_array_append_new(pods, tj_parse(s));
    }
    /* the newest of four is past the count: out before the Workload is built */
    json_t *excess = mk_pod_group_excess(pods, NULL);
    assert_int_equal(json_array_size(excess), 1);
    rc_group_drop(pods, excess);
    json_decref(excess);
    assert_int_equal(json_array_size(pods), 3);
    assert_null(rc_group_find(pods, "d"));
    char err[256] = "";
    json_t *wl = rc_build_group_workload(pods, "team-a", err, sizeof(err));
    assert_non_null(wl);
    assert_string_equal(jx_str(wl, "metadata.name"), "grp");
    assert_string_equal(jx_str(wl, "metadata.annotations[kueue.x-k8s.io/is-group-workload]"),
                        "true");
    assert_null(jx_get(wl, "metadata.labels[kueue.x-k8s.io/job-uid]"));
    assert_int_equal(json_array_size(jx_get(wl, "metadata.ownerReferences")), 3);
    assert_string_equal(jx_str(wl, "metadata.ownerReferences.1.kind"), "Pod");
    assert_null(jx_get(wl, "metadata.ownerReferences.0.controller"));
    assert_string_equal(jx_str(wl, "spec.podSets.0.name"), "leader00");
    assert_int_equal(jx_int(wl, "spec.podSets.0.count", 0), 1);
    assert_string_equal(jx_str(wl, "spec.podSets.1.name"), "worker00");
    assert_int_equal(jx_int(wl, "spec.podSets.1.count", 0), 2);
    json_decref(wl);
    json_array_remove(pods, 2);
    assert_null(rc_build_group_workload(pods, "team-a", err, sizeof(err)));
    assert_string_equal(err, "'grp' group has fewer runnable pods than expected");
    json_decref(pods);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_workload),
        cmocka_unit_test(test_build_group_workload),
    };
    return cmocka_run_group_tests_name("rc_workload_create", tests, NULL, NULL);
}
