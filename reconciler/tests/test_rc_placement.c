/* Layer 2 of why a job is Pending (placement.h): the pods of a dispatched
 * job on its worker, summarised per reason into the Placement condition and
 * one Event per reason; podwatch's cut of a Pod; the Events' limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../placement.h"
#include "../podwatch.h"
#include "../why.h"
#include "../wlstatus.h"
#include "jsonx.h"

#define NOW "2024-01-01T01:00:00Z"
#define UNSCHED                                                                                    \
    "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: "   \
    "0/2 nodes are available: 2 Preemption is not helpful for scheduling."

static json_t *pod_unschedulable(const char *msg)
{
    json_t *p =
        json_pack("{s:{s:s,s:s},s:{s:s,s:[{s:s,s:s,s:s,s:s}]}}", "metadata", "name", "p",
                  "namespace", "ns", "status", "phase", "Pending", "conditions", "type",
                  "PodScheduled", "status", "False", "reason", "Unschedulable", "message", msg);
    assert_non_null(p);
    return p;
}

static json_t *pod_waiting(const char *reason, const char *image, const char *msg)
{
    json_t *p = json_pack("{s:{s:s},s:{s:s,s:[{s:s,s:s},{s:s,s:s}],s:[{s:s,s:s,s:{s:{s:s,s:s}}}]}}",
                          "metadata", "name", "p", "status", "phase", "Pending", "conditions",
                          "type", "PodScheduled", "status", "True", "type", "Ready", "status",
                          "False", "containerStatuses", "name", "main", "image", image, "state",
                          "waiting", "reason", reason, "message", msg);
    assert_non_null(p);
    return p;
}

static json_t *pod_phase(const char *phase)
{
    json_t *p = json_pack("{s:{s:s},s:{s:s}}", "metadata", "name", "p", "status", "phase", phase);
    assert_non_null(p);
    return p;
}

static json_t *wl_new(void)
{
    json_t *wl =
        json_pack("{s:{s:s,s:s},s:{s:[{s:s,s:s,s:s,s:s,s:s}]}}", "metadata", "name", "job-a-1",
                  "namespace", "ns", "status", "conditions", "type", "QuotaReserved", "status",
                  "True", "reason", "QuotaReserved", "message", "ok", "lastTransitionTime", NOW);
    assert_non_null(wl);
    return wl;
}

static void test_unschedulable_pods_summarised_as_one_reason(void **state)
{
    (void)state;
    json_t *pods = json_pack("[o,o,o,o]", pod_unschedulable(UNSCHED), pod_unschedulable(UNSCHED),
                             pod_unschedulable(UNSCHED), pod_phase("Running"));
    struct rc_place_sum s;
    rc_place_summarise(pods, &s);
    assert_int_equal(s.total, 4);
    assert_int_equal(s.started, 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.g[0].pods, 3);
    char m[RC_PLACE_MSG_MAX];
    rc_place_group_msg("worker-1", &s, 0, m, sizeof(m));
    assert_string_equal(m, "worker-1: 3/4 pods Pending: " UNSCHED);

    json_t *wl = wl_new();
    struct rc_place_plan p;
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_non_null(p.conds);
    assert_int_equal(p.nev, 1); /* one Event for three pods */
    assert_string_equal(p.ev[0].reason, "Unschedulable");
    assert_string_equal(p.ev[0].message, m);
    assert_int_equal(jx_set(wl, "status.conditions", json_incref(p.conds)), 0);
    json_t *c = rc_cond_find(wl, RC_PLACE_COND);
    assert_string_equal(jx_str(c, "status"), "False");
    assert_string_equal(jx_str(c, "reason"), "Unschedulable");
    assert_string_equal(jx_str(c, "message"), m);
    assert_true(rc_cond_true(wl, "QuotaReserved")); /* the others kept */
    rc_place_plan_clear(&p);

    /* the same again: no write, the Events still offered (the executor limits them) */
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_null(p.conds);
    assert_int_equal(p.nev, 1);
    rc_place_plan_clear(&p);

    /* all running now: True, once */
    json_decref(pods);
    pods = json_pack("[o,o]", pod_phase("Running"), pod_phase("Succeeded"));
    rc_place_summarise(pods, &s);
    assert_int_equal(s.n, 0);
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_non_null(p.conds);
    assert_int_equal(p.nev, 0);
    assert_int_equal(jx_set(wl, "status.conditions", json_incref(p.conds)), 0);
    c = rc_cond_find(wl, RC_PLACE_COND);
    assert_string_equal(jx_str(c, "status"), "True");
    assert_string_equal(jx_str(c, "reason"), RC_PLACE_OK_REASON);
    assert_string_equal(jx_str(c, "message"),
                        "worker-1: no pod is held back (2/2 running or ended)");
    rc_place_plan_clear(&p);
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_null(p.conds);
    json_decref(pods);
    json_decref(wl);
}

static void test_happy_path_writes_nothing(void **state)
{
    (void)state;
    json_t *pods = json_pack("[o,o]", pod_phase("Pending"), pod_phase("Running"));
    json_t *wl = wl_new();
    struct rc_place_sum s;
    rc_place_summarise(pods, &s);
    struct rc_place_plan p;
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_null(p.conds);
    assert_int_equal(p.nev, 0);
    /* no pod at all yet: nothing either */
    json_t *none = json_array();
    rc_place_summarise(none, &s);
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_null(p.conds);
    json_decref(none);
    json_decref(pods);
    json_decref(wl);
}

static void test_image_pull_and_mixed_reasons(void **state)
{
    (void)state;
    json_t *pods = json_pack(
        "[o,o,o,o]", pod_waiting("ImagePullBackOff", "registry.example/train:v3", "Back-off"),
        pod_waiting("ImagePullBackOff", "registry.example/train:v3", "Back-off again"),
        pod_waiting("ContainerCreating", "registry.example/train:v3", ""), /* only starting */
        pod_waiting("CreateContainerConfigError", "busybox", "configmap \"cfg\" not found"));
    struct rc_place_sum s;
    rc_place_summarise(pods, &s);
    assert_int_equal(s.n, 2); /* the two of one long message: one group */
    assert_int_equal(s.g[0].pods, 2);
    assert_string_equal(s.g[0].reason, "ImagePullBackOff");
    assert_int_equal(s.g[0].pods, 2); /* one group whatever the kubelet's message */
    char m[RC_PLACE_MSG_MAX];
    rc_place_group_msg("worker-2", &s, 0, m, sizeof(m));
    assert_string_equal(m, "worker-2: ImagePullBackOff for registry.example/train:v3 (2/4 pods)");
    rc_place_group_msg("worker-2", &s, 1, m, sizeof(m));
    assert_string_equal(
        m, "worker-2: 1/4 pods CreateContainerConfigError: configmap \"cfg\" not found");
    json_t *wl = wl_new();
    struct rc_place_plan p;
    assert_int_equal(rc_place_decide(wl, "worker-2", &s, NOW, &p), 0);
    assert_int_equal(p.nev, 2);
    assert_int_equal(jx_set(wl, "status.conditions", json_incref(p.conds)), 0);
    json_t *c = rc_cond_find(wl, RC_PLACE_COND);
    assert_string_equal(jx_str(c, "reason"), "ImagePullBackOff");
    assert_string_equal(
        jx_str(c, "message"),
        "worker-2: ImagePullBackOff for registry.example/train:v3 (2/4 pods); "
        "worker-2: 1/4 pods CreateContainerConfigError: configmap \"cfg\" not found");
    rc_place_plan_clear(&p);
    json_decref(pods);
    json_decref(wl);
}

static void test_many_reasons_are_bounded(void **state)
{
    (void)state;
    json_t *pods = json_array();
    char big[4000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (int i = 0; i < 200; i++) { /* 200 distinct messages: at most MAX_GROUPS told */
        char msg[64];
        snprintf(msg, sizeof(msg), "0/%d nodes are available", i);
        json_array_append_new(pods, pod_unschedulable(i == 0 ? big : msg));
    }
    struct rc_place_sum s;
    rc_place_summarise(pods, &s);
    assert_int_equal(s.total, 200);
    assert_int_equal(s.n, RC_PLACE_MAX_GROUPS);
    assert_int_equal(s.other, 200 - RC_PLACE_MAX_GROUPS);
    assert_true(strlen(s.g[0].detail) < RC_PLACE_DETAIL_MAX);
    json_t *wl = wl_new();
    struct rc_place_plan p;
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_int_equal(p.nev, RC_PLACE_MAX_GROUPS);
    assert_int_equal(jx_set(wl, "status.conditions", json_incref(p.conds)), 0);
    const char *msg = jx_str(rc_cond_find(wl, RC_PLACE_COND), "message");
    assert_non_null(msg);
    assert_true(strlen(msg) < RC_WHY_MAX);
    assert_non_null(strstr(msg, "more pods held back"));
    rc_place_plan_clear(&p);
    json_decref(pods);
    json_decref(wl);
}

/* A worker's texts are cut on a character and marked; a reason no
 * condition may carry gives the condition a fixed one, the texts keep it. */
static void test_worker_texts_stay_writable(void **state)
{
    (void)state;
    char e2[2 * RC_PLACE_DETAIL_MAX + 2] = "x"; /* 'x' then "é"s: a cut falls inside one */
    for (size_t i = 1; i + 2 < sizeof(e2); i += 2)
        memcpy(e2 + i, "\xc3\xa9", 3);
    json_t *pods = json_array();
    json_array_append_new(pods, pod_unschedulable(e2));
    json_array_append_new(pods, pod_waiting("Odd reason.", "img", e2));
    json_array_append_new(pods, pod_waiting("Odd reason.", "img", e2));
    struct rc_place_sum s;
    rc_place_summarise(pods, &s);
    assert_int_equal(s.n, 2); /* the two of one long message: one group */
    assert_int_equal(s.g[0].pods, 2);
    for (size_t i = 0; i < s.n; i++) {
        json_t *j = json_string(s.g[i].detail); /* NULL unless valid UTF-8 */
        assert_non_null(j);
        json_decref(j);
        assert_true(strlen(s.g[i].detail) < RC_PLACE_DETAIL_MAX);
    }
    assert_string_equal(s.g[0].detail + strlen(s.g[0].detail) - 4, " ...");
    json_t *wl = wl_new();
    struct rc_place_plan p;
    assert_int_equal(rc_place_decide(wl, "worker-1", &s, NOW, &p), 0);
    assert_non_null(p.conds);
    assert_int_equal(jx_set(wl, "status.conditions", json_incref(p.conds)), 0);
    json_t *c = rc_cond_find(wl, RC_PLACE_COND);
    assert_string_equal(jx_str(c, "reason"), RC_PLACE_WAITING_REASON);
    assert_non_null(strstr(jx_str(c, "message"), "pods Odd reason.: x"));
    assert_string_equal(p.ev[0].reason, "Odd reason."); /* the Event keeps the worker's word */
    rc_place_plan_clear(&p);
    json_decref(wl);
    json_decref(pods);
}

static void test_selector_from_the_remote_job(void **state)
{
    (void)state;
    char sel[256];
    json_t *job = json_pack("{s:{s:s},s:{s:{s:{s:s}}}}", "metadata", "name", "a", "spec",
                            "selector", "matchLabels", "batch.kubernetes.io/controller-uid", "u-1");
    assert_int_equal(rc_place_selector("Job", job, sel, sizeof(sel)), 0);
    assert_string_equal(sel, "batch.kubernetes.io/controller-uid=u-1");
    json_decref(job);
    job = json_pack("{s:{s:s}}", "metadata", "name", "js");
    assert_int_equal(rc_place_selector("JobSet", job, sel, sizeof(sel)), 0);
    assert_string_equal(sel, "jobset.sigs.k8s.io/jobset-name=js");
    assert_int_equal(rc_place_selector("Pod", job, sel, sizeof(sel)), RC_PLACE_ITSELF);
    assert_int_equal(rc_place_selector("Unknown", job, sel, sizeof(sel)), -1);
    assert_int_equal(rc_place_selector("JobSet", job, sel, 8), -1); /* does not fit */
    /* Ray's pods carry the RayCluster's name, known once the status names it */
    assert_int_equal(rc_place_selector("RayJob", job, sel, sizeof(sel)), -1);
    assert_int_equal(rc_place_selector("RayService", job, sel, sizeof(sel)), -1);
    json_decref(job);
    job = json_pack("{s:{s:s},s:{s:s}}", "metadata", "name", "rj", "status", "rayClusterName",
                    "rj-raycluster-x2");
    assert_int_equal(rc_place_selector("RayJob", job, sel, sizeof(sel)), 0);
    assert_string_equal(sel, "ray.io/cluster=rj-raycluster-x2");
    json_decref(job);
    job = json_pack("{s:{s:s},s:{s:{s:s}}}", "metadata", "name", "rs", "status",
                    "pendingServiceStatus", "rayClusterName", "rs-raycluster-p");
    assert_int_equal(rc_place_selector("RayService", job, sel, sizeof(sel)), 0);
    assert_string_equal(sel, "ray.io/cluster=rs-raycluster-p");
    assert_int_equal(jx_set(job, "status.activeServiceStatus",
                            json_pack("{s:s}", "rayClusterName", "rs-raycluster-a")),
                     0);
    assert_int_equal(rc_place_selector("RayService", job, sel, sizeof(sel)), 0);
    assert_string_equal(sel, "ray.io/cluster=rs-raycluster-a"); /* the one serving */
    json_decref(job);
    /* a Pod of a group: the group's label */
    job = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "name", "p-0", "labels",
                    "kueue.x-k8s.io/pod-group-name", "g1");
    assert_int_equal(rc_place_selector("Pod", job, sel, sizeof(sel)), 0);
    assert_string_equal(sel, "kueue.x-k8s.io/pod-group-name=g1");
    json_decref(job);
}

static void test_cut_keeps_what_the_summary_reads(void **state)
{
    (void)state;
    json_t *pod = pod_waiting("ImagePullBackOff", "registry.example/train:v3", "Back-off");
    assert_int_equal(jx_set(pod, "spec", json_pack("{s:s}", "nodeName", "n1")), 0);
    assert_int_equal(jx_set(pod, "metadata.resourceVersion", json_string("7")), 0);
    assert_int_equal(jx_set(pod, "metadata.namespace", json_string("ns")), 0);
    json_t *cut = rc_podwatch_cut(json_incref(pod), NULL);
    assert_non_null(cut);
    assert_null(jx_get(cut, "spec"));
    assert_string_equal(jx_str(cut, "metadata.resourceVersion"), "7");
    json_t *a = json_pack("[O]", pod), *b = json_pack("[O]", cut);
    struct rc_place_sum s1, s2;
    rc_place_summarise(a, &s1);
    rc_place_summarise(b, &s2);
    assert_int_equal(s2.n, 1);
    assert_memory_equal(&s1, &s2, sizeof(s1));
    json_decref(a), json_decref(b), json_decref(cut), json_decref(pod);
    pod = pod_unschedulable(UNSCHED);
    cut = rc_podwatch_cut(json_incref(pod), NULL);
    a = json_pack("[O]", pod), b = json_pack("[O]", cut);
    rc_place_summarise(a, &s1);
    rc_place_summarise(b, &s2);
    assert_memory_equal(&s1, &s2, sizeof(s1));
    json_decref(a), json_decref(b), json_decref(cut), json_decref(pod);
}

static void test_events_limited_per_cluster_and_reason(void **state)
{
    (void)state;
    struct rc_why *w = rc_why_new();
    assert_true(rc_why_event_allow_tag(w, "ns/a", "worker-1/Unschedulable", 1000));
    assert_false(rc_why_event_allow_tag(w, "ns/a", "worker-1/Unschedulable", 2000));
    assert_true(rc_why_event_allow_tag(w, "ns/a", "worker-1/ImagePullBackOff", 2000));
    assert_true(rc_why_event_allow(w, "ns/a", RC_WHY_WORKERS, 2000)); /* layer 1 apart */
    assert_false(rc_why_event_allow_tag(w, "ns/a", "worker-1/Unschedulable", 3000));
    assert_true(
        rc_why_event_allow_tag(w, "ns/a", "worker-1/Unschedulable", 1000 + RC_WHY_EVENT_PERIOD_MS));
    rc_why_free(w);
}

/* Layer 2 waits RC_PLACEMENT_DELAY_MS from the check's Ready, on the
 * manager's clock; nothing to wait for before Ready or without times */
static void test_watch_waits_for_the_delay(void **state)
{
    (void)state;
    json_t *wl = json_pack("{s:{s:[{s:s,s:s,s:s}]}}", "status", "admissionChecks", "name", "mk",
                           "state", "Ready", "lastTransitionTime", "2024-01-01T00:00:00Z");
    assert_non_null(wl);
    assert_int_equal(rc_place_wait_ms(wl, "mk", "2024-01-01T00:00:03Z"), 7000);
    assert_int_equal(rc_place_wait_ms(wl, "mk", "2024-01-01T00:00:10Z"), 0);
    assert_int_equal(rc_place_wait_ms(wl, "mk", "2024-01-01T01:00:00Z"), 0);
    /* a clock gone back: never more than the delay */
    assert_int_equal(rc_place_wait_ms(wl, "mk", "2023-12-31T23:00:00Z"), RC_PLACEMENT_DELAY_MS);
    assert_int_equal(rc_place_wait_ms(wl, "other", "2024-01-01T00:00:03Z"), 0);
    assert_int_equal(rc_place_wait_ms(wl, NULL, "2024-01-01T00:00:03Z"), 0);
    assert_int_equal(rc_place_wait_ms(wl, "mk", "not a time"), 0);
    json_object_set_new(json_array_get(jx_get(wl, "status.admissionChecks"), 0), "state",
                        json_string("Pending"));
    assert_int_equal(rc_place_wait_ms(wl, "mk", "2024-01-01T00:00:03Z"), 0);
    json_decref(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unschedulable_pods_summarised_as_one_reason),
        cmocka_unit_test(test_happy_path_writes_nothing),
        cmocka_unit_test(test_image_pull_and_mixed_reasons),
        cmocka_unit_test(test_many_reasons_are_bounded),
        cmocka_unit_test(test_worker_texts_stay_writable),
        cmocka_unit_test(test_selector_from_the_remote_job),
        cmocka_unit_test(test_cut_keeps_what_the_summary_reads),
        cmocka_unit_test(test_events_limited_per_cluster_and_reason),
        cmocka_unit_test(test_watch_waits_for_the_delay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
