/* The reconciler's pure pieces: dispatchers, status helpers, status sync,
 * Workload construction, lease records, AdmissionCheck status, schema
 * detection, events and the metrics endpoint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/test_json.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "../admissioncheck.h"
#include "../dispatch.h"
#include "../dispatchers.h"
#include "../events.h"
#include "../jobsync.h"
#include "../leader.h"
#include "../pack.h"
#include "../rc_metrics.h"
#include "../schema.h"
#include "../specdiff.h"
#include "../wlstatus.h"
#include "../workload_create.h"
#include "buf.h"
#include "jsonx.h"
#include "kinds/adapters.h"

/* ---- dispatchers ------------------------------------------------------------ */

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

/* ---- status helpers ---------------------------------------------------------- */

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
                    "\"clusterName\":\"worker-1\","
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

static void test_earliest_and_spec(void **state)
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

    json_t *s1 =
        tj_parse("{\"podSets\":[1],\"priority\":1,\"preemptionGates\":[{\"name\":\"g\"}]}");
    json_t *s2 = tj_parse("{\"podSets\":[1],\"priority\":1}");
    json_t *s3 = tj_parse("{\"podSets\":[1],\"priority\":5}");
    json_t *s4 = tj_parse("{\"podSets\":[2],\"priority\":1}");
    int prio;
    assert_true(rc_spec_equal(s1, s2, &prio, NULL, 0));
    assert_false(rc_spec_equal(s2, s3, &prio, NULL, 0));
    assert_true(prio);
    assert_false(rc_spec_equal(s2, s4, &prio, NULL, 0));
    assert_false(prio);
    json_decref(s1);
    json_decref(s2);
    json_decref(s3);
    json_decref(s4);
}

/* ---- status sync ----------------------------------------------------------------- */

static void test_job_status_patch(void **state)
{
    (void)state;
    json_t *local = tj_parse("{\"spec\":{\"suspend\":false},\"status\":{\"active\":0,\"old\":1}}");
    json_t *remote = tj_parse("{\"spec\":{},\"status\":{\"active\":1,\"startTime\":\"T\"}}");
    int deferred;
    json_t *p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred);
    assert_false(deferred);
    json_t *want = tj_parse("{\"status\":{\"active\":1,\"startTime\":\"T\",\"old\":null}}");
    assert_true(json_equal(p, want));
    json_decref(want);
    json_decref(p);
    /* equal: nothing to write */
    assert_null(rc_job_status_patch(&mk_kind_job, remote, remote, 1, &deferred));
    /* the guard: a suspended local Job and a running remote */
    jx_set(local, "spec.suspend", json_true());
    assert_null(rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_true(deferred);
    /* ... not when the remote finished, nor when managedBy is not honoured */
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 0, &deferred));
    json_decref(p);
    jx_set(remote, "status.conditions", tj_parse("[{\"type\":\"Complete\",\"status\":\"True\"}]"));
    assert_true(rc_job_finished(remote));
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_false(deferred);
    json_decref(p);
    /* JobSet has no such guard */
    jx_del(remote, "status.conditions");
    assert_non_null(p = rc_job_status_patch(&mk_kind_jobset, local, remote, 1, &deferred));
    json_decref(p);
    json_decref(local);
    json_decref(remote);

    /* a running Job's startTime stays: the terminal status of a copy
     * re-created elsewhere (another startTime) still gets through */
    local = tj_parse("{\"spec\":{\"suspend\":false},\"status\":{\"startTime\":\"T1\"}}");
    remote = tj_parse("{\"spec\":{},\"status\":{\"startTime\":\"T2\",\"succeeded\":1,"
                      "\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_null(jx_get(p, "status.startTime"));
    assert_int_equal(jx_int(p, "status.succeeded", 0), 1);
    json_decref(p);
    jx_del(remote, "status.startTime"); /* nor is it cleared */
    assert_non_null(p = rc_job_status_patch(&mk_kind_job, local, remote, 1, &deferred));
    assert_null(json_object_get(json_object_get(p, "status"), "startTime"));
    json_decref(p);
    json_decref(local);
    json_decref(remote);
}

/* ---- Workload construction --------------------------------------------------- */

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
    json_t *wl = rc_build_workload(&mk_kind_job, job, "team-a", "high", 1000, err, sizeof(err));
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
    assert_int_equal(jx_int(wl, "spec.priority", -1), 1000);
    assert_string_equal(jx_str(wl, "spec.priorityClassRef.name"), "high");
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
    assert_null(rc_build_workload(&mk_kind_job, job, "team-a", NULL, 0, err, sizeof(err)));
    json_decref(job);

    json_t *checks = tj_parse("[\"mk\",\"other\"]");
    json_t *st = rc_initial_status(checks, "T0");
    assert_int_equal(json_array_size(jx_get(st, "admissionChecks")), 2);
    assert_string_equal(jx_str(st, "admissionChecks.1.state"), "Pending");
    assert_string_equal(jx_str(st, "admissionChecks.1.message"), "");
    assert_string_equal(jx_str(st, "conditions.0.type"), "QuotaReserved");
    assert_string_equal(jx_str(st, "conditions.0.status"), "False");
    json_decref(st);
    json_decref(checks);
}

/* ---- leases -------------------------------------------------------------------------- */

static void test_lease_election(void **state)
{
    (void)state;
    struct rc_lease_obs obs = {0};
    assert_int_equal(rc_lease_may_acquire(NULL, "me", 15000, 1000, &obs), 1);
    json_t *l = rc_lease_record(NULL, "ns", "lease", "other", 15000, 0);
    assert_string_equal(jx_str(l, "spec.holderIdentity"), "other");
    assert_int_equal(jx_int(l, "spec.leaseDurationSeconds", 0), 15);
    assert_int_equal(jx_int(l, "spec.leaseTransitions", -1), 0);
    assert_non_null(jx_str(l, "spec.renewTime"));
    jx_set_new_str(l, "metadata.resourceVersion", "1");
    /* held by another: wait a full lease duration on OUR clock since it last changed */
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 1000, &obs), 0);
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 15999, &obs), 0);
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 16000, &obs), 1);
    /* a renewal restarts the wait */
    jx_set_new_str(l, "metadata.resourceVersion", "2");
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 17000, &obs), 0);
    assert_int_equal(rc_lease_may_acquire(l, "me", 15000, 31999, &obs), 0);
    /* taking over counts a transition */
    json_t *mine = rc_lease_record(l, "ns", "lease", "me", 15000, 0);
    assert_string_equal(jx_str(mine, "spec.holderIdentity"), "me");
    assert_int_equal(jx_int(mine, "spec.leaseTransitions", -1), 1);
    assert_string_equal(jx_str(mine, "metadata.resourceVersion"), "2"); /* optimistic lock */
    assert_int_equal(rc_lease_may_acquire(mine, "me", 15000, 40000, &obs), 1);
    /* released: anyone may take it at once */
    json_t *rel = rc_lease_record(mine, "ns", "lease", "me", 15000, 1);
    assert_string_equal(jx_str(rel, "spec.holderIdentity"), "");
    struct rc_lease_obs fresh = {0};
    assert_int_equal(rc_lease_may_acquire(rel, "other", 15000, 1, &fresh), 1);
    json_decref(l);
    json_decref(mine);
    json_decref(rel);
}

/* ---- AdmissionCheck status ------------------------------------------------------- */

static void test_admission_check_status(void **state)
{
    (void)state;
    struct kcache *mkcs = kcache_new();
    kcache_upsert(mkcs, tj_parse("{\"metadata\":{\"name\":\"w1\"},\"status\":{\"conditions\":"
                                 "[{\"type\":\"Active\",\"status\":\"True\"}]}}"));
    kcache_upsert(mkcs, tj_parse("{\"metadata\":{\"name\":\"w2\"},\"status\":{\"conditions\":"
                                 "[{\"type\":\"Active\",\"status\":\"False\"}]}}"));
    json_t *ac = tj_parse("{\"spec\":{\"controllerName\":\"kueue.x-k8s.io/multikueue\","
                          "\"parameters\":{\"apiGroup\":\"kueue.x-k8s.io\",\"kind\":"
                          "\"MultiKueueConfig\",\"name\":\"cfg\"}}}");
    json_t *cfg = tj_parse("{\"spec\":{\"clusters\":[\"w1\"]}}");
    struct rc_ac_state s;
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.status, "True");
    assert_string_equal(s.reason, "Active");
    assert_string_equal(s.message, "The admission check is active");
    json_decref(cfg);
    cfg = tj_parse("{\"spec\":{\"clusters\":[\"w1\",\"w2\",\"w3\"]}}");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.status, "True");
    assert_string_equal(s.reason, "SomeActiveClusters");
    assert_string_equal(s.message, "Missing clusters: [w3], Inactive clusters: [w2]");
    json_decref(cfg);
    cfg = tj_parse("{\"spec\":{\"clusters\":[\"w2\"]}}");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.status, "False");
    assert_string_equal(s.reason, "NoUsableClusters");
    assert_string_equal(s.message, "Inactive clusters: [w2]");
    rc_ac_compute(ac, NULL, mkcs, &s);
    assert_string_equal(s.reason, "BadConfig");
    assert_string_equal(s.message, "Cannot load the AdmissionChecks parameters: "
                                   "MultiKueueConfig.kueue.x-k8s.io \"cfg\" not found");
    jx_set_new_str(ac, "spec.parameters.kind", "Other");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.message, "Cannot load the AdmissionChecks parameters: wrong kind "
                                   "\"Other\", expecting \"MultiKueueConfig\": bad parameters "
                                   "reference");
    jx_del(ac, "spec.parameters");
    rc_ac_compute(ac, cfg, mkcs, &s);
    assert_string_equal(s.message,
                        "Cannot load the AdmissionChecks parameters: missing parameters reference");
    json_decref(cfg);
    json_decref(ac);
    kcache_free(mkcs);
}

/* ---- schema, events ------------------------------------------------------------- */

static void test_schema_managed_by(void **state)
{
    (void)state;
    json_t *old = tj_parse("{\"definitions\":{\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":"
                           "{\"parallelism\":{}}}}}");
    json_t *now = tj_parse("{\"definitions\":{\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":"
                           "{\"managedBy\":{}}}}}");
    assert_int_equal(rc_schema_keeps_managed_by(old, &mk_kind_job), 0);
    assert_int_equal(rc_schema_keeps_managed_by(now, &mk_kind_job), 1);
    assert_int_equal(rc_schema_keeps_managed_by(old, &mk_kind_jobset), 1);
    assert_int_equal(rc_schema_keeps_managed_by(NULL, &mk_kind_job), 1);
    json_decref(old);
    json_decref(now);
}

/* Issue 11 item 9: the schema comes from the batch/v1 OpenAPI v3 document,
 * read under a cap and decoded with bounds. */
static void test_schema_v3_capped(void **state)
{
    (void)state;
    char err[600];
    static const char v3[] = "{\"openapi\":\"3.0.0\",\"components\":{\"schemas\":{"
                             "\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":{"
                             "\"managedBy\":{\"type\":\"string\"}}}}}}";
    json_t *doc = rc_schema_parse(v3, sizeof(v3) - 1, 0, err, sizeof(err));
    assert_non_null(doc);
    assert_int_equal(rc_schema_keeps_managed_by(doc, &mk_kind_job), 1);
    json_decref(doc);
    static const char v3old[] = "{\"components\":{\"schemas\":{"
                                "\"io.k8s.api.batch.v1.JobSpec\":{\"properties\":{"
                                "\"parallelism\":{}}}}}}";
    doc = rc_schema_parse(v3old, sizeof(v3old) - 1, 0, err, sizeof(err));
    assert_int_equal(rc_schema_keeps_managed_by(doc, &mk_kind_job), 0);
    json_decref(doc);
    /* more than the cap arrived: refused, whatever was kept */
    assert_null(rc_schema_parse(v3, sizeof(v3) - 1, 1, err, sizeof(err)));
    assert_string_equal(err, "/openapi/v3/apis/batch/v1 is larger than 4194304 bytes");
    assert_null(rc_schema_parse(NULL, 0, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "empty answer"));
    assert_null(rc_schema_parse("{\"a\":", 5, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "/openapi/v3/apis/batch/v1: "));
    assert_null(rc_schema_parse("[1]", 3, 0, err, sizeof(err)));
    assert_non_null(strstr(err, "not a JSON object"));
    /* nesting past RC_OPENAPI_MAX_DEPTH */
    char deep[2 * (RC_OPENAPI_MAX_DEPTH + 1) + 1];
    for (int i = 0; i <= RC_OPENAPI_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * (RC_OPENAPI_MAX_DEPTH + 1) - 1 - i] = ']';
    }
    deep[sizeof(deep) - 1] = '\0';
    assert_null(rc_schema_parse(deep, sizeof(deep) - 1, 0, err, sizeof(err)));
}

static void test_event(void **state)
{
    (void)state;
    json_t *wl = tj_parse("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\","
                          "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\",\"uid\":\"u\"}}");
    json_t *ev = rc_event_build(wl, "Normal", "MultiKueue", "msg", "T");
    assert_string_equal(jx_str(ev, "involvedObject.kind"), "Workload");
    assert_string_equal(jx_str(ev, "involvedObject.uid"), "u");
    assert_string_equal(jx_str(ev, "metadata.namespace"), "ns");
    assert_string_equal(jx_str(ev, "metadata.generateName"), "w.");
    assert_string_equal(jx_str(ev, "reason"), "MultiKueue");
    json_decref(ev);
    json_decref(wl);
}

/* ---- compact cache entries ---------------------------------------------------------- */

static void test_pack_round_trip(void **state)
{
    (void)state;
    json_t *job =
        tj_parse("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
                 "\"j\",\"namespace\":\"ns\",\"uid\":\"u\",\"resourceVersion\":\"7\","
                 "\"generation\":2,\"labels\":{\"a\":\"b\"},\"managedFields\":[{\"x\":1}],"
                 "\"annotations\":{\"keep\":\"1\",\"kubectl.kubernetes.io/"
                 "last-applied-configuration\":\"{...}\"}},\"spec\":{\"suspend\":true},"
                 "\"status\":{\"active\":1}}");
    json_t *packed = rc_pack(json_incref(job), NULL);
    assert_non_null(packed);
    /* the wrapper: what handlers read, and the text */
    assert_string_equal(jx_str(packed, "metadata.name"), "j");
    assert_string_equal(jx_str(packed, "metadata.resourceVersion"), "7");
    assert_null(jx_get(packed, "metadata.labels"));
    assert_null(jx_get(packed, "spec"));
    json_t *full = rc_unwrap(packed);
    assert_true(jx_bool(full, "spec.suspend", 0));
    assert_int_equal(jx_int(full, "status.active", 0), 1);
    assert_int_equal(jx_int(full, "metadata.generation", 0), 2);
    assert_string_equal(jx_str(full, "metadata.labels.a"), "b");
    assert_string_equal(jx_str(full, "kind"), "Job");
    assert_string_equal(jx_str(full, "metadata.annotations.keep"), "1");
    assert_null(jx_get(full, "metadata.managedFields"));
    assert_null(
        jx_get(full, "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]"));
    /* the input was not changed (it may be shared) */
    assert_non_null(jx_get(job, "metadata.managedFields"));
    /* a plain object unwraps to itself; packing twice is refused */
    json_t *same = rc_unwrap(job);
    assert_ptr_equal(same, job);
    json_decref(same);
    assert_null(rc_pack(json_incref(packed), NULL));
    assert_null(rc_unwrap(NULL));
    json_decref(full);
    json_decref(packed);
    json_decref(job);
}

static void test_pack_remote(void **state)
{
    (void)state;
    json_t *wl =
        tj_parse("{\"kind\":\"Job\",\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\","
                 "\"uid\":\"u1\",\"resourceVersion\":\"3\",\"deletionTimestamp\":\"t\","
                 "\"finalizers\":[\"f\"],\"labels\":{\"" MK_ORIGIN_LABEL "\":\"o\",\"x\":\"y\","
                 "\"" MK_PREBUILT "\":\"w1\"},\"annotations\":{\"" MK_PREBUILT "\":\"w2\","
                 "\"big\":\"z\"}},\"spec\":{\"a\":1}}");
    json_t *packed = rc_pack_remote(json_incref(wl), NULL);
    assert_non_null(packed);
    /* what the GC and the remote handlers read stays in the wrapper */
    assert_string_equal(jx_str(packed, "metadata.uid"), "u1");
    assert_string_equal(jx_str(packed, "metadata.deletionTimestamp"), "t");
    assert_string_equal(jx_str(packed, "metadata.finalizers[0]"), "f");
    assert_string_equal(jx_str(packed, "metadata.labels[" MK_ORIGIN_LABEL "]"), "o");
    assert_string_equal(jx_str(packed, "metadata.labels[" MK_PREBUILT "]"), "w1");
    assert_string_equal(jx_str(packed, "metadata.annotations[" MK_PREBUILT "]"), "w2");
    assert_null(jx_get(packed, "metadata.labels.x"));
    assert_null(jx_get(packed, "metadata.annotations.big"));
    assert_null(jx_get(packed, "spec"));
    json_t *full = rc_unwrap(packed);
    assert_true(json_equal(full, wl));
    json_decref(full);
    json_decref(packed);
    /* the manager variant keeps neither; no labels means none in the wrapper */
    packed = rc_pack(json_incref(wl), NULL);
    assert_null(jx_get(packed, "metadata.uid"));
    assert_null(jx_get(packed, "metadata.labels"));
    json_decref(packed);
    json_t *bare = tj_parse("{\"metadata\":{\"name\":\"n\"}}");
    packed = rc_pack_remote(json_incref(bare), NULL);
    assert_null(jx_get(packed, "metadata.labels"));
    assert_null(jx_get(packed, "metadata.annotations"));
    full = rc_unwrap(packed);
    assert_true(json_equal(full, bare));
    json_decref(full);
    json_decref(packed);
    json_decref(bare);
    json_decref(wl);
}

/* ---- metrics endpoint -------------------------------------------------------------- */

static size_t collect(char *p, size_t s, size_t n, void *ud)
{
    buf_append(ud, p, s * n);
    return s * n;
}

static long get(int port, const char *path, struct buf *body)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return code;
}

static int ready_flag;
static int is_ready(void *ud)
{
    (void)ud;
    return ready_flag;
}

static void test_metrics_endpoint(void **state)
{
    (void)state;
    struct rc_metrics m;
    char err[256];
    assert_int_equal(rc_metrics_init(&m), 0);
    rc_metrics_set_role("leader");
    rc_metric_dispatched(&m, "team-a", "worker-1");
    rc_metric_admitted(&m, "team-a", "worker-1");
    rc_metric_remote_error(&m, "worker-2", 0);
    rc_metric_remote_error(&m, "worker-2", 503);
    struct rc_http *h = rc_http_start("127.0.0.1:0", &m, is_ready, NULL, NULL, err, sizeof(err));
    assert_non_null(h);
    int port = rc_http_port(h);
    assert_true(port > 0);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(get(port, "/metrics", &b), 200);
    const char *text = buf_cstr(&b);
    assert_non_null(strstr(text, "multikueue_workloads_dispatched_total{cluster_queue=\"team-a\","
                                 "cluster=\"worker-1\",replica_role=\"leader\"} 1"));
    assert_non_null(strstr(text, "multikueue_workloads_admitted_total{cluster_queue=\"team-a\","
                                 "cluster=\"worker-1\",replica_role=\"leader\"} 1"));
    assert_non_null(
        strstr(text, "mkueue_remote_api_errors_total{cluster=\"worker-2\",code=\"transport\"} 1"));
    assert_non_null(
        strstr(text, "mkueue_remote_api_errors_total{cluster=\"worker-2\",code=\"503\"} 1"));
    buf_reset(&b);
    assert_int_equal(get(port, "/healthz", &b), 200);
    ready_flag = 0;
    assert_int_equal(get(port, "/readyz", &b), 503);
    ready_flag = 1;
    assert_int_equal(get(port, "/readyz", &b), 200);
    assert_int_equal(get(port, "/nope", &b), 404);
    buf_free(&b);
    rc_http_stop(h);
    assert_null(rc_http_start("nonsense", &m, NULL, NULL, NULL, err, sizeof(err)));
    assert_null(rc_http_start("example.com:80", &m, NULL, NULL, NULL, err, sizeof(err)));
    rc_metrics_set_role("standalone");
    rc_metrics_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_at_once),
        cmocka_unit_test(test_incremental_rounds),
        cmocka_unit_test(test_external),
        cmocka_unit_test(test_conditions_keep_transition_time),
        cmocka_unit_test(test_admission_apply),
        cmocka_unit_test(test_earliest_and_spec),
        cmocka_unit_test(test_job_status_patch),
        cmocka_unit_test(test_build_workload),
        cmocka_unit_test(test_lease_election),
        cmocka_unit_test(test_admission_check_status),
        cmocka_unit_test(test_schema_managed_by),
        cmocka_unit_test(test_schema_v3_capped),
        cmocka_unit_test(test_event),
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_pack_remote),
        cmocka_unit_test(test_metrics_endpoint),
    };
    return cmocka_run_group_tests_name("rc_parts", tests, NULL, NULL);
}
