/* The quota gate's pass (gate.h) on a real context: caches filled by the
 * test, the gate index of standalone mode, the work queue, and a scripted
 * API server for the writes (support/rc_gate_fixture.h). What a pass
 * writes for a Workload that fits and for one that waits, what it leaves
 * alone, the status recount a fast pass must not lose, a backlog told
 * in passes, and a batch window that its writes' waits do not stretch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/test_json.h"

#include "../dispatch.h"
#include "../echo.h"
#include "../gate.h"
#include "../pack.h"
#include "../wlstatus.h"
#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "patch.h"
#include "queue.h"
#include "support/rc_fixture.h"
#include "support/rc_gate_fixture.h"

#define T0      "2024-01-01T00:00:00Z"
#define CQ      "cq"
#define WL_PATH RCG_WORKLOAD_PREFIX "ns/workloads/"

/* ClusterQueue `name` with 8 cpu of flavor "default" and admission check
 * `check`. */
static json_t *cluster_queue(const char *name, const char *check)
{
    json_t *cq = tj_parse("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ClusterQueue\","
                          "\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"resourceGroups\":"
                          "[{\"coveredResources\":[\"cpu\"],\"flavors\":[{\"name\":\"default\","
                          "\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"8\"}]}]}]}}");
    assert_int_equal(jx_set_new_str(cq, "metadata.name", name), 0);
    json_t *checks = json_pack("[{s:s}]", "name", check);
    assert_int_equal(jx_set(cq, "spec.admissionChecksStrategy.admissionChecks", checks), 0);
    return cq;
}

static json_t *admission_check(const char *name, const char *controller)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2",
                     "kind", "AdmissionCheck", "metadata", "name", name, "resourceVersion", "1",
                     "spec", "controllerName", controller);
}

static json_t *local_queue(const char *name, const char *cq)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2",
                     "kind", "LocalQueue", "metadata", "name", name, "namespace", "ns",
                     "resourceVersion", "1", "spec", "clusterQueue", cq);
}

/* A pending Workload of LocalQueue lq in namespace "ns", one pod of `cpu`,
 * its admission check `check` Pending (as Kueue's first status has it). */
static json_t *workload(const char *name, const char *lq, const char *cpu, const char *check)
{
    json_t *wl = json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:s},s:{s:s,s:i,s:[{s:s,s:i,s:{s:{s:[{s:s,s:{s:{s:s}}}]}}}]},"
        "s:{s:[{s:s,s:s,s:s,s:s}]}}",
        "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name", name,
        "namespace", "ns", "uid", name, "resourceVersion", "10", "creationTimestamp", T0, "spec",
        "queueName", lq, "priority", 0, "podSets", "name", "main", "count", 1, "template", "spec",
        "containers", "name", "c", "resources", "requests", "cpu", cpu, "status", "admissionChecks",
        "name", check, "state", "Pending", "message", "", "lastTransitionTime", T0);
    assert_non_null(wl);
    return wl;
}

/* The queue "cq" (8 cpu, check "mk" of MultiKueue) and its LocalQueue "lq". */
static void mk_queue(struct rcg_fixture *f)
{
    assert_int_equal(rcg_put(f->x.admissionchecks, admission_check("mk", MKQ_CONTROLLER)), 0);
    assert_int_equal(rcg_put(f->x.clusterqueues, cluster_queue(CQ, "mk")), 0);
    assert_int_equal(rcg_put(f->x.localqueues, local_queue("lq", CQ)), 0);
}

static json_t *body_of(const struct th_request *r)
{
    assert_non_null(r);
    json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
    assert_non_null(j);
    return j;
}

static int setup(void **state)
{
    struct rcg_fixture *f = calloc(1, sizeof(*f));
    if (!f || rcg_setup(f) != 0) {
        if (f)
            rcg_teardown(f);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    rcg_teardown(*state);
    free(*state);
    return 0;
}

static void test_reserves_a_workload_that_fits(void **state)
{
    struct rcg_fixture *f = *state;
    char keys[512];
    mk_queue(f);
    assert_int_equal(rcg_put_workload(f, workload("wl-a", "lq", "2", "mk"), RC_GIX_CHANGED), 0);
    rc_enqueue(&f->x, 'w', "ns/upkeep"); /* a placed job's reconcile, waiting */

    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-a/status", 0), 1);
    const struct th_request *r = rcg_last(f, "PATCH", WL_PATH "wl-a/status");
    assert_string_equal(th_req_header(r, "Content-Type"), "application/merge-patch+json");
    json_t *body = body_of(r);
    /* written against the version read: a concurrent change conflicts */
    assert_string_equal(jx_str(body, "metadata.resourceVersion"), "10");
    json_t *qr = rc_cond_find(body, "QuotaReserved");
    assert_string_equal(jx_str(qr, "status"), "True");
    assert_string_equal(jx_str(qr, "reason"), "QuotaReserved");
    assert_string_equal(jx_str(qr, "message"), "Quota reserved in ClusterQueue cq");
    assert_string_equal(jx_str(body, "status.admission.clusterQueue"), CQ);
    assert_string_equal(jx_str(body, "status.admission.podSetAssignments.0.flavors.cpu"),
                        "default");
    assert_string_equal(jx_str(body, "status.admission.podSetAssignments.0.resourceUsage.cpu"),
                        "2");
    json_decref(body);
    /* the Workload's reconcile dispatches it next, ahead of the upkeep,
     * from the server's answer: the cache still shows version 10 */
    char *k = NULL;
    assert_int_equal(wq_get_timeout(f->x.queue, &k, 10000), 0);
    assert_string_equal(k, "w/ns/wl-a");
    wq_done(f->x.queue, k);
    free(k);
    assert_string_equal(rcg_drain_ready(f, keys, sizeof(keys)), "w/ns/upkeep");
    json_t *answer = rc_echo_take_answer(f->x.echo, "workloads/ns/wl-a", "10", clk_now_ms());
    json_t *reserved = rc_unwrap(answer);
    assert_non_null(reserved);
    assert_true(rc_rv_number(jx_str(reserved, "metadata.resourceVersion")) > 10);
    assert_string_equal(jx_str(rc_cond_find(reserved, "QuotaReserved"), "status"), "True");
    assert_string_equal(jx_str(reserved, "status.admission.clusterQueue"), CQ);
    json_decref(reserved);
    json_decref(answer);
    assert_int_equal(rc_echo_behind(f->x.echo, "workloads/ns/wl-a", "10", clk_now_ms()), 1);
    /* the queues' counts, written from the same pass */
    body = body_of(rcg_last(f, "PATCH", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq/status"));
    assert_int_equal(jx_int(body, "status.reservingWorkloads", -1), 1);
    json_decref(body);

    /* a pass before the cache shows the write: the reservation written is
     * assumed, not made twice */
    int before = th_nrequests(f->api);
    rc_gix_invalidate(f->x.gix, CQ);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-a/status", before), 0);
    assert_string_equal(rcg_drain_ready(f, keys, sizeof(keys)), "");
}

/* The cache as the watch would show it after request r: wl with r's
 * status merged in, at a later resourceVersion (steals wl). */
static json_t *echoed(json_t *wl, const struct th_request *r, const char *rv)
{
    json_t *body = body_of(r);
    json_object_del(body, "metadata");
    assert_int_equal(jp_merge_apply(wl, body), 0);
    assert_int_equal(jx_set_new_str(wl, "metadata.resourceVersion", rv), 0);
    json_decref(body);
    return wl;
}

/* Reconciles of Workload keys decided by `step` so far
 * (mkueue_workload_step_duration_seconds). */
static int step_count(struct rcg_fixture *f, const char *step)
{
    const char *v[] = {step};
    double n = 0;
    return mt_value(f->x.metrics.wl_steps, v, &n) == 0 ? (int)n : 0;
}

/* wl as the Workload of rcf_local_job's Job "a" (steals wl) */
static json_t *owned(json_t *wl)
{
    json_t *ref = json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion", "batch/v1", "kind", "Job",
                            "name", "a", "uid", "job-uid", "controller", 1);
    assert_int_equal(jx_set(wl, "metadata.ownerReferences", ref), 0);
    return wl;
}

/* The Workload's reconcile right after the reservation plans from the
 * server's answer, not from the cache that still shows it without quota:
 * a plan from the answer reaches its MultiKueueConfig (not cached here:
 * "group-unknown"), one from the cache would wait ("cache-behind"). Once. */
static void test_dispatch_plans_from_the_reservation(void **state)
{
    struct rcg_fixture *f = *state;
    long requeue;
    mk_queue(f);
    assert_int_equal(rcg_put(f->x.jobs[0], rcf_local_job(0)), 0);
    assert_int_equal(rcg_put_workload(f, owned(workload("wl-a", "lq", "2", "mk")), RC_GIX_CHANGED),
                     0);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(rc_reconcile_workload(&f->x, "ns/wl-a", &requeue), 0);
    assert_int_equal(step_count(f, "group-unknown"), 1);
    assert_int_equal(step_count(f, "cache-behind"), 0);

    /* the answer was used: until the watch shows the write, the next waits */
    assert_int_equal(rc_reconcile_workload(&f->x, "ns/wl-a", &requeue), 0);
    assert_int_equal(step_count(f, "cache-behind"), 1);
    const struct th_request *r = rcg_last(f, "PATCH", WL_PATH "wl-a/status");
    char rv[16];
    snprintf(rv, sizeof(rv), "%d", f->rv);
    assert_int_equal(rcg_put_workload(f, echoed(owned(workload("wl-a", "lq", "2", "mk")), r, rv),
                                      RC_GIX_CHANGED),
                     0);
    assert_int_equal(rc_reconcile_workload(&f->x, "ns/wl-a", &requeue), 0);
    assert_int_equal(step_count(f, "group-unknown"), 2);
    assert_int_equal(step_count(f, "cache-behind"), 1);
    /* none of the three wrote: the reservation is the Workload's only write */
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-a/status", 0), 1);
}

static void test_tells_a_workload_that_waits_once(void **state)
{
    struct rcg_fixture *f = *state;
    mk_queue(f);
    /* 6 of the 8 cpu held already */
    json_t *holder = workload("holder", "lq", "6", "mk");
    json_t *conds = rc_conds_with(NULL, "QuotaReserved", "True", "QuotaReserved", "", T0);
    assert_int_equal(jx_set(holder, "status.conditions", conds), 0);
    assert_int_equal(jx_set(holder, "status.admission",
                            json_pack("{s:s,s:[]}", "clusterQueue", CQ, "podSetAssignments")),
                     0);
    assert_int_equal(rcg_put_workload(f, holder, RC_GIX_QUOTA), 0);
    json_t *wl = workload("wl-b", "lq", "4", "mk");
    assert_int_equal(rcg_put_workload(f, json_incref(wl), RC_GIX_CHANGED), 0);

    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "holder/status", 0), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-b/status", 0), 1);
    const struct th_request *r = rcg_last(f, "PATCH", WL_PATH "wl-b/status");
    json_t *body = body_of(r);
    json_t *qr = rc_cond_find(body, "QuotaReserved");
    assert_string_equal(jx_str(qr, "status"), "False");
    assert_string_equal(jx_str(qr, "reason"), "WaitingForQuota");
    assert_string_equal(jx_str(qr, "message"),
                        "Waiting for quota: ClusterQueue cq: 6 of 8 cpu in use, the workload "
                        "requests 4");
    assert_null(jx_get(body, "status.admission"));
    /* the MultiKueue check tells it too, in the same write */
    assert_string_equal(jx_str(body, "status.admissionChecks.0.name"), "mk");
    assert_string_equal(jx_str(body, "status.admissionChecks.0.state"), "Pending");
    const char *told = jx_str(body, "status.admissionChecks.0.message");
    assert_non_null(told);
    assert_non_null(strstr(told, "Waiting for quota on the manager"));
    json_decref(body);
    char keys[512];
    assert_string_equal(rcg_drain_ready(f, keys, sizeof(keys)), ""); /* nothing to dispatch */

    /* the watch brings the write back; a full pass (as a resync's) reads
     * it and finds the Workload already says so */
    assert_int_equal(rcg_put_workload(f, echoed(wl, r, "11"), RC_GIX_SAME), 0);
    rc_gix_invalidate(f->x.gix, CQ);
    int before = th_nrequests(f->api);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-b/status", before), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "holder/status", before), 0);
}

/* After the full pass: long enough for the fast pass to come first on a
 * loaded machine, short enough for the test to wait for it. */
#define RECOUNT_GAP_MS 3000

static void test_fast_pass_keeps_the_recount(void **state)
{
    struct rcg_fixture *f = *state;
    char keys[512];
    mk_queue(f);
    /* waits whatever the others do (ExceedsMaxQuota): the pass settles */
    assert_int_equal(rcg_put_workload(f, workload("wl-c", "lq", "16", "mk"), RC_GIX_CHANGED), 0);
    long long start = clk_now_ms(); /* the full pass's start is no earlier */
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-c/status", 0), 1);
    rcg_drain_ready(f, keys, sizeof(keys));

    /* a recount asked for (as queue_status asks within the batch period)
     * and its pass queued; then a Workload's batch window queues the pass
     * sooner, and the work queue keeps one deadline per key, the earlier:
     * the recount's wake-up is gone. By then a pass before it has read
     * that Workload: the fast pass below reads no key. */
    long wait = rc_gix_recount(f->x.gix, CQ, clk_now_ms(), RECOUNT_GAP_MS);
    assert_true(wait > 0);
    int before = th_nrequests(f->api);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(th_nrequests(f->api), before); /* read nothing, wrote nothing */
    /* it was a fast pass: a full one would have done the recount */
    assert_true(rc_gix_recount_pending(f->x.gix, CQ, clk_now_ms()) >= 0);

    /* the recount's pass is queued again, for its deadline, not at once */
    assert_string_equal(rcg_drain_ready(f, keys, sizeof(keys)), "");
    char *k = NULL;
    assert_int_equal(wq_get_timeout(f->x.queue, &k, 10000), 0);
    assert_string_equal(k, "q/" CQ);
    assert_true(clk_now_ms() - start >= RECOUNT_GAP_MS); /* when the recount is due */
    wq_done(f->x.queue, k);
    free(k);
}

/* The wait writes of Workloads wl-000 .. wl-<n-1> from request `from` on. */
static int told_since(struct rcg_fixture *f, int n, int from)
{
    char path[128];
    int told = 0;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), WL_PATH "wl-%03d/status", i);
        told += rcg_count(f, "PATCH", path, from);
    }
    return told;
}

/* The queue's next pass is queued, within its batch window (20 ms: the
 * passes here cost less CPU than that), and nothing else. */
static void next_pass_queued(struct rcg_fixture *f)
{
    char keys[512], *k = NULL;
    assert_string_equal(rcg_drain_ready(f, keys, sizeof(keys)), "");
    assert_int_equal(wq_get_timeout(f->x.queue, &k, 10000), 0);
    assert_string_equal(k, "q/" CQ);
    wq_done(f->x.queue, k);
    free(k);
    assert_string_equal(rcg_drain_ready(f, keys, sizeof(keys)), "");
}

/* A backlog of new Workloads that wait: each pass tells RC_GATE_WAITS_MAX of
 * them and queues the next pass after its window, which tells more without asking
 * for a recount (nothing of them changed); a Workload that fits meanwhile
 * is reserved by the next pass, not after the whole backlog. */
static void test_a_backlog_is_told_in_passes(void **state)
{
    struct rcg_fixture *f = *state;
    enum { BACKLOG = 2 * RC_GATE_WAITS_MAX + 5 };
    char keys[512], name[32];
    mk_queue(f);
    for (int i = 0; i < BACKLOG; i++) { /* ExceedsMaxQuota: they never fit */
        snprintf(name, sizeof(name), "wl-%03d", i);
        assert_int_equal(rcg_put_workload(f, workload(name, "lq", "16", "mk"), RC_GIX_CHANGED), 0);
    }
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(told_since(f, BACKLOG, 0), RC_GATE_WAITS_MAX);
    next_pass_queued(f); /* for the rest */

    int before = th_nrequests(f->api);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(told_since(f, BACKLOG, before), RC_GATE_WAITS_MAX);
    assert_int_equal(th_nrequests(f->api) - before, RC_GATE_WAITS_MAX); /* no queue status */
    assert_int_equal(rc_gix_recount_pending(f->x.gix, CQ, clk_now_ms()), -1);
    next_pass_queued(f);

    assert_int_equal(rcg_put_workload(f, workload("fits", "lq", "1", "mk"), RC_GIX_CHANGED), 0);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    json_t *body = body_of(rcg_last(f, "PATCH", WL_PATH "fits/status"));
    assert_string_equal(jx_str(rc_cond_find(body, "QuotaReserved"), "status"), "True");
    json_decref(body);
    for (int i = 0; i < BACKLOG; i++) { /* every one told, once */
        char path[128];
        snprintf(path, sizeof(path), WL_PATH "wl-%03d/status", i);
        assert_int_equal(rcg_count(f, "PATCH", path, 0), 1);
    }
    assert_non_null(strstr(rcg_drain_ready(f, keys, sizeof(keys)), "w/ns/fits"));
}

/* A pass whose writes wait on a slow API server spends its time waiting,
 * not computing: the batch window before the next pass follows the pass's
 * CPU (gate_index.h rc_gix_timed), so a slow server does not hold every
 * later pass back by twice its waits. */
static void test_window_ignores_write_waits(void **state)
{
    struct rcg_fixture *f = *state;
    enum { N = 10, DELAY_MS = 40 };
    char name[32];
    mk_queue(f);
    for (int i = 0; i < N; i++) { /* each one a wait write */
        snprintf(name, sizeof(name), "wl-%02d", i);
        assert_int_equal(rcg_put_workload(f, workload(name, "lq", "16", "mk"), RC_GIX_CHANGED), 0);
    }
    f->delay_ms = DELAY_MS;
    long long t0 = clk_now_ms();
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    long long wall = clk_now_ms() - t0;
    assert_true(wall >= N * DELAY_MS); /* the pass did wait */
    rc_gix_invalidate(f->x.gix, CQ);   /* the next pass a full one, as this was */
    long window = rc_gix_window_ms(f->x.gix, CQ, clk_now_ms());
    /* twice the wall time would be 800 ms or more; a full pass over ten
     * Workloads costs a few ms of CPU, even under the sanitizers */
    assert_true(window < N * DELAY_MS / 2);
}

/* Kueue's scheduler leaves out a Workload with a check in Retry (its
 * eviction comes first) or in the backoff a check asked for
 * (requeueState.requeueAt, until decide.c clears it): not reserved, nothing
 * written; once requeueAt is cleared it is reserved. */
static void test_holds_retry_and_backoff(void **state)
{
    struct rcg_fixture *f = *state;
    mk_queue(f);
    json_t *retry = workload("wl-r", "lq", "1", "mk");
    json_t *c = json_pack("{s:s,s:s,s:s,s:s}", "name", "prov", "state", "Retry", "message", "no",
                          "lastTransitionTime", T0);
    assert_int_equal(json_array_append_new(jx_get(retry, "status.admissionChecks"), c), 0);
    assert_int_equal(rcg_put_workload(f, retry, RC_GIX_CHANGED), 0);
    json_t *wait = workload("wl-b", "lq", "1", "mk");
    assert_int_equal(jx_set_new_str(wait, "status.requeueState.requeueAt", T0), 0);
    assert_int_equal(rcg_put_workload(f, json_incref(wait), RC_GIX_CHANGED), 0);

    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-r/status", 0), 0);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-b/status", 0), 0);

    /* the backoff over: requeueAt gone, at a new resourceVersion */
    int before = th_nrequests(f->api);
    jx_del(wait, "status.requeueState");
    jx_set_new_str(wait, "metadata.resourceVersion", "11");
    assert_int_equal(rcg_put_workload(f, wait, RC_GIX_CHANGED), 0);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    json_t *body = body_of(rcg_last(f, "PATCH", WL_PATH "wl-b/status"));
    assert_string_equal(jx_str(rc_cond_find(body, "QuotaReserved"), "status"), "True");
    json_decref(body);
    assert_int_equal(rcg_count(f, "PATCH", WL_PATH "wl-r/status", before), 0);
}

/* A Workload deleted after its reservation: the answer is dropped, never
 * planned from (a Workload gone from the cache is never brought back). */
static void test_deleted_workload_drops_the_answer(void **state)
{
    struct rcg_fixture *f = *state;
    long requeue;
    mk_queue(f);
    assert_int_equal(rcg_put(f->x.jobs[0], rcf_local_job(0)), 0);
    json_t *wl = owned(workload("wl-a", "lq", "2", "mk"));
    json_t *gone = json_incref(wl);
    assert_int_equal(rcg_put_workload(f, wl, RC_GIX_CHANGED), 0);
    assert_int_equal(rc_reconcile_gate(&f->x, CQ), 0);
    assert_int_equal(kcache_remove(f->x.workloads, gone), 1); /* its DELETED event */
    json_decref(gone);
    assert_int_equal(rc_reconcile_workload(&f->x, "ns/wl-a", &requeue), 0);
    assert_int_equal(step_count(f, "gone"), 1);
    assert_int_equal(step_count(f, "group-unknown"), 0);
    assert_null(rc_echo_take_answer(f->x.echo, "workloads/ns/wl-a", NULL, clk_now_ms()));
}

static void test_not_a_multikueue_queue(void **state)
{
    struct rcg_fixture *f = *state;
    char keys[512];
    assert_int_equal(rcg_put(f->x.admissionchecks,
                             admission_check("prov", "kueue.x-k8s.io/provisioning-request")),
                     0);
    assert_int_equal(rcg_put(f->x.clusterqueues, cluster_queue("plain", "prov")), 0);
    assert_int_equal(rcg_put(f->x.localqueues, local_queue("lq-plain", "plain")), 0);
    assert_int_equal(rcg_put_workload(f, workload("wl-d", "lq-plain", "1", "prov"), RC_GIX_CHANGED),
                     0);
    assert_int_equal(rc_reconcile_gate(&f->x, "plain"), 0);
    assert_int_equal(th_nrequests(f->api), 0); /* Kueue's own gate decides it */
    assert_string_equal(rcg_drain_ready(f, keys, sizeof(keys)), "");
    /* an unknown queue neither */
    assert_int_equal(rc_reconcile_gate(&f->x, "gone"), 0);
    assert_int_equal(th_nrequests(f->api), 0);
}

int main(void)
{
    log_set_level(LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reserves_a_workload_that_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dispatch_plans_from_the_reservation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_workload_drops_the_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tells_a_workload_that_waits_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fast_pass_keeps_the_recount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_backlog_is_told_in_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_ignores_write_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_holds_retry_and_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_multikueue_queue, setup, teardown),
    };
    return cmocka_run_group_tests_name("rc_gate", tests, NULL, NULL);
}
