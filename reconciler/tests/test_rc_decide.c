/* The MultiKueue workload reconciler's decisions, without clusters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../decide.h"
#include "../wlstatus.h"
#include "jsonx.h"
#include "kinds/adapters.h"
#include "support/rc_fixture.h"

#define T0  "2024-01-01T00:00:00Z"
#define T1  "2024-01-01T00:00:01Z"
#define T2  "2024-01-01T00:00:02Z"
#define NOW RCF_NOW

static void set_cond(json_t *obj, const char *type, const char *status, const char *reason,
                     const char *msg, const char *t)
{
    json_t *c = rc_conds_with(jx_get(obj, "status.conditions"), type, status, reason, msg, t);
    assert_non_null(c);
    assert_int_equal(jx_set(obj, "status.conditions", c), 0);
}

/* A manager Workload with the MultiKueue check in `state`. */
static json_t *manager_wl(const char *state, const char *cluster, int reserved)
{
    json_t *wl = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:[s],s:[{s:s,s:s,s:s,s:s,s:b}]},"
                           "s:{s:s,s:i,s:[{s:s,s:i,s:{}}]},s:{s:[{s:s,s:s,s:s,s:s}]}}",
                           "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata",
                           "name", "job-a-12345", "namespace", "ns", "uid", "wl-uid",
                           "resourceVersion", "10", "finalizers", RC_FINALIZER, "ownerReferences",
                           "apiVersion", "batch/v1", "kind", "Job", "name", "a", "uid", "job-uid",
                           "controller", 1, "spec", "queueName", "team-a", "priority", 0, "podSets",
                           "name", "main", "count", 1, "template", "status", "admissionChecks",
                           "name", "mk", "state", state, "message", "", "lastTransitionTime", T0);
    assert_non_null(wl);
    if (reserved)
        set_cond(wl, "QuotaReserved", "True", "QuotaReserved", "Quota reserved", T0);
    if (cluster)
        jx_set_new_str(wl, "status.clusterName", cluster);
    return wl;
}

/* A remote copy: same spec; admitted or not. */
static json_t *remote_wl(const json_t *mgr, const char *admitted_at)
{
    json_t *r = json_pack("{s:{s:s,s:s,s:s,s:{s:s}},s:o}", "metadata", "name", "job-a-12345",
                          "namespace", "ns", "uid", "remote-uid", "labels", MK_ORIGIN_LABEL,
                          "multikueue", "spec", json_deep_copy(jx_get(mgr, "spec")));
    assert_non_null(r);
    if (admitted_at) {
        set_cond(r, "QuotaReserved", "True", "QuotaReserved", "ok", admitted_at);
        set_cond(r, "Admitted", "True", "Admitted", "The workload is admitted", admitted_at);
    }
    return r;
}

static void decide(struct rc_fixture *f)
{
    rc_plan_clear(&f->plan);
    rc_decide(&f->o, &f->plan);
}

static int index_of(const struct rc_plan *p, enum rc_act_type t, int nth)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->acts[i].type == t && nth-- == 0)
            return (int)i;
    return -1;
}

/* Runs the plan as the executor does (rc_act_run) with every action of
 * cluster `bad` failing (RAN_MANAGER_FAILS: the first manager status write
 * fails); counts how many of type t ran (on cluster c, or any when c < 0). */
#define RAN_MANAGER_FAILS (-2)
static int ran(const struct rc_plan *p, int bad, enum rc_act_type t, int c)
{
    struct rc_run_state s = {0};
    int n = 0;
    for (size_t k = 0; k < p->n; k++) {
        const struct rc_act *a = &p->acts[k];
        enum rc_run r = rc_act_run(a, &s);
        if (r == RC_STOP)
            break;
        if (r == RC_SKIP)
            continue;
        if ((rc_act_scope(a) >= 0 && rc_act_scope(a) == bad) ||
            (bad == RAN_MANAGER_FAILS && a->type == RC_ACT_WL_STATUS && !s.manager_failed)) {
            rc_run_failed(&s, a);
            continue;
        }
        n += a->type == t && (c < 0 || a->cluster == c);
    }
    return n;
}

/* The document a status patch would produce: {"status": patch}. */
static json_t *patched(const struct rc_act *a)
{
    assert_non_null(a);
    assert_int_equal(a->type, RC_ACT_WL_STATUS);
    return json_pack("{s:O}", "status", a->patch);
}

static void test_nominate_all_at_once(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    f.r[1].available = 0; /* not nominated by the dispatcher in real life either */
    json_decref(f.nominated);
    f.o.nominated = f.nominated = json_pack("[s]", "worker-1");
    decide(&f);
    assert_string_equal(f.plan.step, "nominate");
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_string_equal(jx_str(doc, "status.nominatedClusterNames.0"), "worker-1");
    json_decref(doc);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 1);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_WL)->cluster, 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_JOB), 0);
    /* the copy before the manager's writes, which it does not wait on */
    assert_true(index_of(&f.plan, RC_ACT_CREATE_REMOTE_WL, 0) <
                index_of(&f.plan, RC_ACT_WL_STATUS, 0));
    assert_int_equal(ran(&f.plan, 0, RC_ACT_WL_STATUS, -1),
                     rc_plan_count(&f.plan, RC_ACT_WL_STATUS));
    rcf_teardown(&f);
}

static void test_no_copies_without_quota(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 0));
    decide(&f);
    assert_string_equal(f.plan.step, "no-reservation");
    assert_int_equal(f.plan.n, 0);
    /* leftovers go, e.g. after an eviction */
    f.r[0].wl = remote_wl(f.o.wl, NULL);
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);
    rcf_teardown(&f);
}

static void test_nominate_removes_unnominated_copies(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    jx_set(f.o.wl, "status.nominatedClusterNames", json_pack("[s]", "worker-2"));
    json_decref(f.nominated);
    f.o.nominated = f.nominated = json_pack("[s]", "worker-2");
    f.r[0].wl = remote_wl(f.o.wl, NULL);
    f.r[1].wl = remote_wl(f.o.wl, NULL);
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_STATUS), 0); /* unchanged list */
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_REMOVE_REMOTE)->cluster, 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);
    rcf_teardown(&f);
}

/* One failing worker does not keep the others' part of a plan from
 * running; nothing of the manager's runs after a failure, and nothing at
 * all after a failed manager write. */
static void test_a_failing_cluster_stops_only_its_part(void **state)
{
    (void)state;
    struct rc_fixture f;
    /* nominate: worker-1 (0) fails, worker-2 (1) still gets its copy */
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    decide(&f);
    assert_string_equal(f.plan.step, "nominate");
    assert_int_equal(ran(&f.plan, 0, RC_ACT_CREATE_REMOTE_WL, 1), 1);
    assert_int_equal(ran(&f.plan, 1, RC_ACT_CREATE_REMOTE_WL, 0), 1);
    /* winner worker-2: the loser worker-1 fails, the job is made and Ready written */
    f.r[0].wl = remote_wl(f.o.wl, T2);
    f.r[1].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    assert_int_equal(ran(&f.plan, 0, RC_ACT_CREATE_REMOTE_JOB, 1), 1);
    assert_int_equal(ran(&f.plan, 0, RC_ACT_WL_STATUS, -1), 2); /* clusterName, Ready */
    /* the winner fails: clusterName only, nothing after it (no Ready) */
    assert_int_equal(ran(&f.plan, 1, RC_ACT_WL_STATUS, -1), 1);
    assert_int_equal(ran(&f.plan, 1, RC_ACT_COUNT_ADMITTED, -1), 0);
    assert_int_equal(ran(&f.plan, 1, RC_ACT_REMOVE_REMOTE, -1), 0);
    /* clusterName not written: no worker action after it either (the job
     * is created only once its cluster is recorded, losers stay) */
    assert_int_equal(ran(&f.plan, -1, RC_ACT_CREATE_REMOTE_JOB, 1), 1);
    assert_int_equal(ran(&f.plan, RAN_MANAGER_FAILS, RC_ACT_CREATE_REMOTE_JOB, -1), 0);
    assert_int_equal(ran(&f.plan, RAN_MANAGER_FAILS, RC_ACT_REMOVE_REMOTE, -1), 0);
    rcf_teardown(&f);
    /* the recorded cluster reachable without a copy: its removal fails, so
     * no Retry (a new copy only once the old one is known gone) */
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].job =
        json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", "a", "namespace", "ns", "uid", "u");
    decide(&f);
    assert_string_equal(f.plan.step, "remote-gone");
    assert_int_equal(ran(&f.plan, 0, RC_ACT_WL_STATUS, -1), 0);
    assert_int_equal(ran(&f.plan, 0, RC_ACT_EVENT, -1), 0);
    assert_int_equal(ran(&f.plan, 1, RC_ACT_WL_STATUS, -1), 1);
    rcf_teardown(&f);
}

static void test_first_admitted_wins_and_order_is_safe(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    f.r[0].wl = remote_wl(f.o.wl, T2);
    f.r[1].wl = remote_wl(f.o.wl, T1); /* earlier */
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    int persist = index_of(&f.plan, RC_ACT_WL_STATUS, 0);
    int remove = index_of(&f.plan, RC_ACT_REMOVE_REMOTE, 0);
    int create = index_of(&f.plan, RC_ACT_CREATE_REMOTE_JOB, 0);
    int ready = index_of(&f.plan, RC_ACT_WL_STATUS, 1);
    /* clusterName is written before the job exists; Ready only after; the
     * loser's copy last, so a loser that fails delays neither */
    assert_true(persist >= 0 && create > persist && ready > create && remove > ready);
    json_t *doc = patched(&f.plan.acts[persist]);
    assert_string_equal(jx_str(doc, "status.clusterName"), "worker-2");
    assert_true(json_is_null(jx_get(doc, "status.nominatedClusterNames")));
    json_decref(doc);
    assert_int_equal(f.plan.acts[remove].cluster, 0);
    assert_int_equal(f.plan.acts[create].cluster, 1);
    doc = patched(&f.plan.acts[ready]);
    json_t *c = rc_check_find(doc, "mk");
    assert_string_equal(jx_str(c, "state"), "Ready");
    assert_string_equal(jx_str(c, "message"), "The workload got reservation on \"worker-2\"");
    assert_string_equal(jx_str(c, "lastTransitionTime"), NOW);
    assert_true(rc_cond_true(doc, "Admitted")); /* standalone: we are Kueue */
    json_decref(doc);
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_string_equal(ev->reason, "MultiKueue");
    assert_string_equal(ev->message, "The workload got reservation on \"worker-2\"");
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_COUNT_ADMITTED)->cluster, 1);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_LOCAL_SUSPEND), 0); /* not suspended */
    rcf_teardown(&f);
}

/* Both copies reserved in the same second (condition times are whole
 * seconds, so a burst is mostly ties): the Workload's UID picks, the same
 * one each time it is decided, and a burst lands on both workers, not on the
 * first of the config. */
static void test_ties_spread_by_workload(void **state)
{
    (void)state;
    int on[2] = {0, 0};
    for (int i = 0; i < 20; i++) {
        char uid[32];
        snprintf(uid, sizeof uid, "wl-uid-%d", i);
        const char *winner[2];
        for (int again = 0; again < 2; again++) {
            struct rc_fixture f;
            rcf_setup(&f, manager_wl("Pending", NULL, 1));
            jx_set_new_str(f.o.wl, "metadata.uid", uid);
            f.r[0].wl = remote_wl(f.o.wl, T1);
            f.r[1].wl = remote_wl(f.o.wl, T1);
            decide(&f);
            json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
            const char *c = jx_str(doc, "status.clusterName");
            assert_non_null(c);
            winner[again] = strcmp(c, "worker-1") == 0 ? "worker-1" : "worker-2";
            json_decref(doc);
            rcf_teardown(&f);
        }
        assert_string_equal(winner[0], winner[1]);
        on[strcmp(winner[0], "worker-2") == 0]++;
    }
    assert_true(on[0] >= 2 && on[1] >= 2);
}

static void test_recorded_cluster_decides(void **state)
{
    (void)state;
    struct rc_fixture f;
    /* clusterName persisted (killed before the job was created) */
    rcf_setup(&f, manager_wl("Pending", "worker-1", 1));
    f.r[0].wl = remote_wl(f.o.wl, T2);
    f.r[1].wl = remote_wl(f.o.wl, T1); /* earlier, but not the recorded one */
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_JOB)->cluster, 0);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_REMOVE_REMOTE)->cluster, 1);
    /* no second clusterName write */
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_null(jx_get(doc, "status.clusterName"));
    json_decref(doc);
    rcf_teardown(&f);
}

static void test_steady_state_syncs_only(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].wl = remote_wl(f.o.wl, T1);
    f.r[0].job = rcf_local_job(0);
    decide(&f);
    assert_int_equal(f.plan.n, 1);
    assert_int_equal(f.plan.acts[0].type, RC_ACT_SYNC_JOB_STATUS);
    assert_int_equal(f.plan.acts[0].value, 0);  /* from the cache */
    assert_int_equal(f.plan.requeue_ms, 20000); /* min(workerLostTimeout, resync) */
    rcf_teardown(&f);
}

static void test_suspended_local_job_is_released(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    json_decref(f.o.job);
    f.o.job = rcf_local_job(1);
    f.r[0].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    const struct rc_act *a = rc_plan_find(&f.plan, RC_ACT_LOCAL_SUSPEND);
    assert_non_null(a);
    assert_int_equal(a->value, 0);
    assert_true(index_of(&f.plan, RC_ACT_LOCAL_SUSPEND, 0) >
                index_of(&f.plan, RC_ACT_CREATE_REMOTE_JOB, 0));
    /* a manager that drops managedBy could run it: leave it alone */
    f.o.managed_by_honoured = 0;
    decide(&f);
    assert_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_SUSPEND));
    rcf_teardown(&f);
}

static void test_lost_worker_waits_then_retries(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].available = 0;
    f.r[0].lost_ms = 5000;
    f.r[0].wl = remote_wl(f.o.wl, T1); /* stale cache content */
    decide(&f);
    assert_string_equal(f.plan.step, "worker-lost-waiting");
    assert_int_equal(f.plan.n, 0);
    assert_int_equal(f.plan.requeue_ms, 15000);

    f.r[0].lost_ms = 20000;
    decide(&f);
    assert_string_equal(f.plan.step, "worker-lost");
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    json_t *c = rc_check_find(doc, "mk");
    /* standalone: evicted and reset in one write */
    assert_string_equal(jx_str(c, "state"), "Pending");
    assert_int_equal(jx_int(c, "retryCount", 0), 1);
    assert_true(rc_cond_true(doc, "Evicted"));
    assert_string_equal(jx_str(rc_cond_find(doc, "Evicted"), "reason"), "AdmissionCheck");
    assert_string_equal(jx_str(rc_cond_find(doc, "Evicted"), "message"),
                        "Evicted due to AdmissionCheck in Retry state: \"mk\" (Reserving remote "
                        "lost)");
    /* Kueue's resetChecksOnEviction text */
    assert_string_equal(jx_str(c, "message"), "Reset to Pending after eviction. Previously: Retry");
    assert_false(rc_cond_true(doc, "QuotaReserved"));
    assert_true(json_is_null(jx_get(doc, "status.clusterName")));
    assert_true(json_is_null(jx_get(doc, "status.admission")));
    json_decref(doc);
    /* nothing is created anywhere in the same pass */
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_JOB), 0);

    /* with-kueue: only the check goes to Retry; Kueue evicts */
    f.o.mode = RC_MODE_WITH_KUEUE;
    decide(&f);
    doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_string_equal(jx_str(rc_check_find(doc, "mk"), "state"), "Retry");
    assert_null(jx_get(doc, "status.conditions"));
    json_decref(doc);
    rcf_teardown(&f);
}

/* A recorded cluster without MultiKueueCluster, or gone from the config:
 * lost from its first observation like any other (issue 10 item 1). */
static void test_missing_cluster_waits_like_a_lost_one(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].available = 0; /* no MultiKueueCluster: no connection, no cache */
    f.r[0].lost_ms = 0;   /* first seen just now */
    f.r[1].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    assert_string_equal(f.plan.step, "worker-lost-waiting");
    assert_int_equal(f.plan.n, 0); /* nothing elsewhere either */
    assert_int_equal(f.plan.requeue_ms, 20000);
    f.r[0].lost_ms = 20000;
    decide(&f);
    assert_string_equal(f.plan.step, "worker-lost");

    /* off the config but reachable: its copy goes first, then the Retry */
    f.r[0].in_config = 0;
    f.r[0].available = 1;
    f.r[0].lost_ms = 0;
    f.r[0].wl = remote_wl(f.o.wl, T0);
    f.r[0].job = rcf_local_job(0);
    decide(&f);
    assert_string_equal(f.plan.step, "remote-gone");
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_REMOVE_REMOTE)->cluster, 0);
    assert_true(index_of(&f.plan, RC_ACT_REMOVE_REMOTE, 0) <
                index_of(&f.plan, RC_ACT_WL_STATUS, 0));
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_JOB), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_SYNC_JOB_STATUS), 0);
    rcf_teardown(&f);
}

/* The MultiKueueConfig cannot be read: as in Kueue, nothing at all. */
static void test_unreadable_group_changes_nothing(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.o.nremotes = 0;
    f.o.group_unknown = 1;
    f.o.nominated = NULL;
    decide(&f);
    assert_string_equal(f.plan.step, "group-unknown");
    assert_int_equal(f.plan.n, 0);
    json_decref(f.o.wl);
    f.o.wl = manager_wl("Pending", NULL, 1);
    decide(&f);
    assert_string_equal(f.plan.step, "group-unknown");
    assert_int_equal(f.plan.n, 0);
    rcf_teardown(&f);
}

/* Only a Ready check goes through the lost/gone branch (issue 10 item 3). */
static void test_retry_is_not_rewritten(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Retry", "worker-1", 1));
    f.o.mode = RC_MODE_WITH_KUEUE;
    decide(&f); /* worker-1 reachable, no copy: Kueue evicts, nothing to add */
    assert_null(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_null(rc_plan_find(&f.plan, RC_ACT_EVENT));
    f.r[0].available = 0;
    f.r[0].lost_ms = 60000;
    decide(&f);
    assert_null(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    rcf_teardown(&f);
}

/* The final status is read from the worker even when the cache does not
 * show the remote job (issue 10 item 5). */
static void test_final_sync_without_cached_job(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].wl = remote_wl(f.o.wl, T1);
    set_cond(f.r[0].wl, "Finished", "True", "Failed", "BackoffLimitExceeded", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "remote-finished");
    const struct rc_act *s = rc_plan_find(&f.plan, RC_ACT_SYNC_JOB_STATUS);
    assert_non_null(s);
    assert_int_equal(s->value, 1);
    assert_true(index_of(&f.plan, RC_ACT_SYNC_JOB_STATUS, 0) <
                index_of(&f.plan, RC_ACT_WL_STATUS, 0));
    rcf_teardown(&f);
}

/* A finished copy that also differs finishes the Workload (issue 10 item 4),
 * and the final status is read from the worker even when the cache does
 * not show the remote job (item 5). */
static void test_finished_before_drift_and_read_fresh(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].wl = remote_wl(f.o.wl, T1);
    jx_set(f.r[0].wl, "spec.queueName", json_string("other")); /* drifted */
    set_cond(f.r[0].wl, "Finished", "True", "Succeeded", "Job finished successfully", T2);
    decide(&f); /* no remote job in the cache */
    assert_string_equal(f.plan.step, "remote-finished");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_DRIFT_MARK), 0);
    const struct rc_act *s = rc_plan_find(&f.plan, RC_ACT_SYNC_JOB_STATUS);
    assert_non_null(s);
    assert_int_equal(s->cluster, 0);
    assert_int_equal(s->value, 1);
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_true(rc_cond_true(doc, "Finished"));
    json_decref(doc);

    /* evicted and drifted: the eviction is answered, not the drift */
    rc_plan_clear(&f.plan);
    json_decref(f.r[0].wl);
    f.r[0].wl = remote_wl(f.o.wl, NULL);
    jx_set(f.r[0].wl, "spec.queueName", json_string("other"));
    set_cond(f.r[0].wl, "Evicted", "True", "Preempted", "make room", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "remote-evicted");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    rcf_teardown(&f);
}

static void test_remote_gone_and_no_cluster(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    decide(&f);
    assert_string_equal(f.plan.step, "remote-gone");
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_non_null(strstr(jx_str(rc_cond_find(doc, "Evicted"), "message"),
                           "Reserving remote no longer exists or is not admitted"));
    json_decref(doc);
    rcf_teardown(&f);

    rcf_setup(&f, manager_wl("Ready", NULL, 1));
    decide(&f);
    assert_string_equal(f.plan.step, "ready-without-cluster");
    assert_string_equal(rc_plan_find(&f.plan, RC_ACT_EVENT)->etype, "Warning");
    rcf_teardown(&f);
}

static void test_remote_finished(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].wl = remote_wl(f.o.wl, T1);
    f.r[0].job = rcf_local_job(0);
    set_cond(f.r[0].wl, "Finished", "True", "Succeeded", "Job finished successfully", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "remote-finished");
    /* final status sync first, then Finished with the remote's words */
    assert_true(index_of(&f.plan, RC_ACT_SYNC_JOB_STATUS, 0) <
                index_of(&f.plan, RC_ACT_WL_STATUS, 0));
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_SYNC_JOB_STATUS)->value, 1); /* read fresh */
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    json_t *c = rc_cond_find(doc, "Finished");
    assert_string_equal(jx_str(c, "reason"), "Succeeded");
    assert_string_equal(jx_str(c, "message"), "Job finished successfully");
    json_decref(doc);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0); /* next time */

    /* then: finished -> remote objects go and our finalizer comes off */
    set_cond(f.o.wl, "Finished", "True", "Succeeded", "Job finished successfully", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "finished");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1);
    assert_int_equal(index_of(&f.plan, RC_ACT_REMOVE_FINALIZER, 0), 1);

    /* the delete made, the worker's finalizers hold both: not deleted again */
    jx_set_new_str(f.r[0].wl, "metadata.deletionTimestamp", T2);
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1); /* the job is live */
    jx_set_new_str(f.r[0].job, "metadata.deletionTimestamp", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "finished");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    /* going on a worker that answers: nothing stranded, no wait for a lost worker */
    assert_true(f.plan.requeue_ms != f.o.worker_lost_timeout_ms);
    rcf_teardown(&f);
}

/* The winner's loser copy, deleted once and held by the worker's finalizer:
 * the next passes do not delete it again. */
static void test_going_copy_not_removed_again(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    f.r[0].wl = remote_wl(f.o.wl, T2);
    f.r[1].wl = remote_wl(f.o.wl, T1);
    jx_set_new_str(f.r[0].wl, "metadata.deletionTimestamp", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_JOB)->cluster, 1);
    /* deleted with no finalizer to hold it: the watch has not shown it yet */
    assert_int_equal(jx_del(f.r[0].wl, "metadata.deletionTimestamp"), 0);
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1);
    f.r[0].wl_deleted = 1;
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    rcf_teardown(&f);
}

static void test_out_of_sync_and_stale_copies(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].wl = remote_wl(f.o.wl, T1);
    set_cond(f.r[0].wl, "Finished", "True", "OutOfSync", "changed", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "remote-out-of-sync");
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_null(rc_cond_find(doc, "Finished")); /* never finished this way */
    json_decref(doc);
    assert_string_equal(rc_plan_find(&f.plan, RC_ACT_EVENT)->etype, "Warning");
    rcf_teardown(&f);

    /* a stale finished copy elsewhere does not finish the Workload */
    rcf_setup(&f, manager_wl("Ready", "worker-2", 1));
    f.r[0].wl = remote_wl(f.o.wl, T0);
    f.r[0].job = rcf_local_job(0);
    set_cond(f.r[0].wl, "Finished", "True", "Succeeded", "done", T1);
    f.r[1].wl = remote_wl(f.o.wl, T2);
    f.r[1].job = rcf_local_job(0);
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_REMOVE_REMOTE)->cluster, 0);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_SYNC_JOB_STATUS)->cluster, 1);
    rcf_teardown(&f);
}

static void test_remote_evicted(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.r[0].wl = remote_wl(f.o.wl, NULL);
    set_cond(f.r[0].wl, "Evicted", "True", "Preempted", "make room", T2);
    decide(&f);
    assert_string_equal(f.plan.step, "remote-evicted");
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_string_equal(ev->message, "Workload evicted on worker cluster: \"worker-1\", resetting "
                                     "for re-admission. Previously: \"Ready\"");
    rcf_teardown(&f);
}

static void test_spec_drift(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    f.r[0].wl = remote_wl(f.o.wl, T1);
    jx_set(f.r[0].wl, "spec.priority", json_integer(7));
    f.r[1].wl = remote_wl(f.o.wl, NULL);
    jx_set(f.r[1].wl, "spec.queueName", json_string("other"));
    decide(&f);
    /* worker-1: priority only -> updated in place and still the winner */
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_REMOTE_PRIORITY)->cluster, 0);
    assert_string_equal(f.plan.step, "winner");
    /* worker-2: real drift -> removed (once: not again as a loser) */
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_REMOVE_REMOTE)->cluster, 1);
    rcf_teardown(&f);
}

#define DRIFT_MSG                                                                                  \
    "The copy on \"worker-1\" differs from this Workload after re-creation "                       \
    "(spec.podSets[0].template.spec.containers[0].image); the worker's Workload schema may be "    \
    "older than the manager's"

/* A manager Workload whose pod template is what the manager stores, and
 * its copy as a worker's Kueue stores it: pruned, defaulted, re-rendered. */
static void with_template(json_t *wl)
{
    json_t *t = json_loads("{\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"containers\":"
                           "[{\"name\":\"c\",\"image\":\"busybox:1.36\",\"ports\":[{"
                           "\"containerPort\":80}],\"resources\":{\"requests\":{\"cpu\":"
                           "\"1000m\"}}}],\"restartPolicy\":\"Never\"}}",
                           0, NULL);
    assert_non_null(t);
    assert_int_equal(jx_set(wl, "spec.podSets.0.template", t), 0);
}

static json_t *as_worker_stores(const json_t *mgr, const char *admitted_at, const char *image)
{
    json_t *r = remote_wl(mgr, admitted_at);
    json_t *c = jx_get(r, "spec.podSets.0.template.spec.containers.0");
    jx_del(r, "spec.podSets.0.template.metadata");
    jx_set_new_str(c, "ports.0.protocol", "TCP");
    jx_set_new_str(c, "resources.requests.cpu", "1");
    jx_set(r, "spec.active", json_true());
    if (image)
        jx_set_new_str(c, "image", image);
    return r;
}

static const char *check_message(const struct rc_act *a, char *state, size_t len)
{
    static char msg[1024];
    json_t *doc = patched(a);
    json_t *c = rc_check_find(doc, "mk");
    snprintf(state, len, "%s", jx_str(c, "state") ? jx_str(c, "state") : "");
    snprintf(msg, sizeof(msg), "%s", jx_str(c, "message") ? jx_str(c, "message") : "");
    json_decref(doc);
    return msg;
}

static void test_worker_rendering_is_no_drift(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    with_template(f.o.wl);
    f.r[0].wl = as_worker_stores(f.o.wl, NULL, NULL);
    f.r[1].wl = as_worker_stores(f.o.wl, NULL, NULL);
    decide(&f);
    assert_string_equal(f.plan.step, "nominate");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_DRIFT_MARK), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);
    /* the copies may win */
    json_decref(f.r[1].wl);
    f.r[1].wl = as_worker_stores(f.o.wl, T1, NULL);
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_JOB)->cluster, 1);
    rcf_teardown(&f);
}

static void test_drift_recreated_once_then_reported(void **state)
{
    (void)state;
    struct rc_fixture f;
    char st[32];
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    with_template(f.o.wl);
    jx_set(f.o.wl, "status.nominatedClusterNames", json_deep_copy(f.nominated));
    f.r[0].wl = as_worker_stores(f.o.wl, NULL, "busybox:1.35");
    f.r[1].wl = as_worker_stores(f.o.wl, NULL, NULL);

    /* first time: removed, and marked only after the removal */
    decide(&f);
    assert_string_equal(f.plan.step, "nominate");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1);
    int rm = index_of(&f.plan, RC_ACT_REMOVE_REMOTE, 0);
    int mk = index_of(&f.plan, RC_ACT_DRIFT_MARK, 0);
    assert_int_equal(f.plan.acts[rm].cluster, 0);
    assert_true(mk > rm);
    assert_int_equal(f.plan.acts[mk].cluster, 0);
    assert_int_equal(f.plan.acts[mk].value, 1);
    assert_string_equal(f.plan.acts[mk].message,
                        "spec.podSets[0].template.spec.containers[0].image");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_STATUS), 0);

    /* the cache still shows the removed copy: nothing again */
    f.r[0].drift_uid = "remote-uid";
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_DRIFT_MARK), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_STATUS), 0);

    /* gone: re-created (once) */
    json_decref(f.r[0].wl);
    f.r[0].wl = NULL;
    decide(&f);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_WL)->cluster, 0);

    /* the re-created copy still differs: reported, not deleted again */
    f.r[0].wl = as_worker_stores(f.o.wl, NULL, "busybox:1.35");
    jx_set_new_str(f.r[0].wl, "metadata.uid", "remote-uid-2");
    decide(&f);
    assert_string_equal(f.plan.step, "nominate");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_DRIFT_MARK), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_STATUS), 1);
    assert_string_equal(check_message(rc_plan_find(&f.plan, RC_ACT_WL_STATUS), st, sizeof(st)),
                        DRIFT_MSG);
    assert_string_equal(st, "Pending"); /* the state stays */
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_non_null(ev);
    assert_string_equal(ev->etype, "Warning");
    assert_string_equal(ev->reason, RC_REASON_DRIFT);
    assert_string_equal(ev->message, DRIFT_MSG);

    /* reported already: nothing more */
    json_t *checks =
        rc_checks_with(jx_get(f.o.wl, "status.admissionChecks"), "mk", "Pending", DRIFT_MSG, T1, 0);
    assert_int_equal(jx_set(f.o.wl, "status.admissionChecks", checks), 0);
    decide(&f);
    assert_int_equal(f.plan.n, 0);

    /* the copy matches again (e.g. the worker's Kueue was upgraded): the mark goes */
    json_decref(f.r[0].wl);
    f.r[0].wl = as_worker_stores(f.o.wl, NULL, NULL);
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_DRIFT_MARK), 1);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_DRIFT_MARK)->value, 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    rcf_teardown(&f);
}

static void test_reported_drift_never_evicts(void **state)
{
    (void)state;
    struct rc_fixture f;
    char st[32];
    /* the re-created copy is admitted: it wins; the report waits a pass */
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    with_template(f.o.wl);
    f.r[0].wl = as_worker_stores(f.o.wl, T1, "busybox:1.35");
    f.r[0].drift_uid = "removed-uid";
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_JOB)->cluster, 0);
    int with_checks = 0;
    for (size_t i = 0; i < f.plan.n; i++)
        if (f.plan.acts[i].type == RC_ACT_WL_STATUS &&
            json_object_get(f.plan.acts[i].patch, "admissionChecks")) {
            with_checks++;
            check_message(&f.plan.acts[i], st, sizeof(st));
            assert_string_equal(st, "Ready");
        }
    assert_int_equal(with_checks, 1);
    rcf_teardown(&f);

    /* Ready on that cluster: the message changes, the state does not */
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    with_template(f.o.wl);
    f.r[0].wl = as_worker_stores(f.o.wl, T1, "busybox:1.35");
    f.r[0].drift_uid = "removed-uid";
    f.r[0].job = rcf_local_job(0);
    decide(&f);
    assert_string_equal(f.plan.step, "winner");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_SYNC_JOB_STATUS), 1);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_STATUS), 1);
    const struct rc_act *a = rc_plan_find(&f.plan, RC_ACT_WL_STATUS);
    assert_string_equal(check_message(a, st, sizeof(st)), DRIFT_MSG);
    assert_string_equal(st, "Ready");
    json_t *doc = patched(a);
    assert_null(jx_get(doc, "status.conditions")); /* no eviction */
    assert_string_equal(jx_str(rc_check_find(doc, "mk"), "lastTransitionTime"), T0);
    json_decref(doc);
    rcf_teardown(&f);
}

static void test_rejections(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    f.o.kind = NULL;
    f.o.owner_gvk = "example.com/v1, Kind=Thing";
    decide(&f);
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    json_t *c = rc_check_find(doc, "mk");
    assert_string_equal(jx_str(c, "state"), "Rejected");
    assert_string_equal(jx_str(c, "message"), "No multikueue adapter found for owner kind "
                                              "\"example.com/v1, Kind=Thing\"");
    json_decref(doc);
    /* only the check: the deactivation follows on the next pass */
    assert_null(json_object_get(rc_plan_find(&f.plan, RC_ACT_WL_STATUS)->patch, "conditions"));

    f.o.kind = &mk_kind_job;
    f.o.managed = 0;
    jx_set_new_str(f.o.job, "spec.managedBy", "example.com/other");
    decide(&f);
    doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_string_equal(jx_str(rc_check_find(doc, "mk"), "message"),
                        "The owner is not managed by Kueue: Expecting spec.managedBy to be "
                        "\"kueue.x-k8s.io/multikueue\" not \"example.com/other\"");
    json_decref(doc);

    /* Kueue's Kubeflow v1 adapter names spec.managedBy, MPIJob's runPolicy */
    json_t *pt = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:{s:s}}}", "apiVersion", "kubeflow.org/v1",
                           "kind", "PyTorchJob", "metadata", "name", "a", "namespace", "ns", "uid",
                           "job-uid", "spec", "runPolicy", "managedBy", "example.com/other");
    json_t *saved = f.o.job;
    f.o.job = pt;
    /* and the generic adapter of external kinds .spec.managedBy */
    struct mk_kind ext = {.kind = "Thing",
                          .group = "example.com",
                          .version = "v1",
                          .managed_by_path = "spec.runPolicy.managedBy",
                          .external = 1};
    const struct mk_kind *kinds[] = {&mk_kind_pytorchjob, &mk_kind_mpijob, &ext};
    const char *want[] = {"spec.managedBy", "spec.runPolicy.managedBy", ".spec.managedBy"};
    for (int i = 0; i < 3; i++) {
        f.o.kind = kinds[i];
        decide(&f);
        doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
        char m[256];
        snprintf(m, sizeof(m),
                 "The owner is not managed by Kueue: Expecting %s to be "
                 "\"kueue.x-k8s.io/multikueue\" not \"example.com/other\"",
                 want[i]);
        assert_string_equal(jx_str(rc_check_find(doc, "mk"), "message"), m);
        json_decref(doc);
    }
    f.o.job = saved;
    f.o.kind = &mk_kind_job;
    json_decref(pt);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_CREATE_REMOTE_WL), 0);

    /* with Kueue on the manager, a Rejected check is Kueue's to act on */
    json_decref(f.o.wl);
    f.o.wl = manager_wl("Rejected", NULL, 0);
    f.o.mode = RC_MODE_WITH_KUEUE;
    decide(&f);
    assert_int_equal(f.plan.n, 0);
    rcf_teardown(&f);
}

/* Standalone: a Rejected check (ours or set by anyone) deactivates the
 * Workload as Kueue's core does, then evicts it; its copies go after. */
static void test_rejected_deactivates_as_kueue(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Rejected", "worker-1", 1));
    jx_set_new_str(rc_check_find(f.o.wl, "mk"), "message", "no");
    f.r[0].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    assert_string_equal(f.plan.step, "rejected-deactivate");
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    json_t *dt = rc_cond_find(doc, "DeactivationTarget");
    assert_string_equal(jx_str(dt, "status"), "True");
    assert_string_equal(jx_str(dt, "reason"), "AdmissionCheck");
    assert_string_equal(jx_str(dt, "message"), "Admission check(s): mk, were rejected");
    json_decref(doc);
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_string_equal(ev->reason, "AdmissionCheckRejected");
    assert_string_equal(ev->message,
                        "Deactivating workload because AdmissionCheck for mk was Rejected: no");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_DEACTIVATE), 1);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 0);

    /* the target written: only spec.active */
    set_cond(f.o.wl, "DeactivationTarget", "True", "AdmissionCheck",
             "Admission check(s): mk, were rejected", T1);
    decide(&f);
    assert_int_equal(f.plan.n, 1);
    assert_int_equal(f.plan.acts[0].type, RC_ACT_WL_DEACTIVATE);

    /* inactive: the running job stops, then Kueue's eviction in one write */
    json_object_set_new(json_object_get(f.o.wl, "spec"), "active", json_false());
    decide(&f);
    assert_string_equal(f.plan.step, "rejected-evict");
    int sus = index_of(&f.plan, RC_ACT_LOCAL_SUSPEND, 0);
    int st = index_of(&f.plan, RC_ACT_WL_STATUS, 0);
    assert_true(sus >= 0 && st > sus);
    assert_int_equal(f.plan.acts[sus].value, 1);
    doc = patched(&f.plan.acts[st]);
    json_t *e = rc_cond_find(doc, "Evicted");
    assert_string_equal(jx_str(e, "reason"), "DeactivatedDueToAdmissionCheck");
    assert_string_equal(jx_str(e, "message"),
                        "The workload is deactivated due to Admission check(s): mk, were rejected");
    assert_null(rc_cond_find(doc, "DeactivationTarget"));
    assert_string_equal(jx_str(rc_cond_find(doc, "QuotaReserved"), "reason"), "Pending");
    assert_false(rc_wl_reserved(doc));
    assert_string_equal(jx_str(rc_cond_find(doc, "Requeued"), "status"), "False");
    assert_true(json_is_null(jx_get(doc, "status.admission")));
    assert_true(json_is_null(jx_get(doc, "status.clusterName")));
    json_t *c = rc_check_find(doc, "mk");
    assert_string_equal(jx_str(c, "state"), "Pending");
    assert_string_equal(jx_str(c, "message"),
                        "Reset to Pending after eviction. Previously: Rejected");
    json_decref(doc);
    rcf_teardown(&f);
}

/* Standalone eviction (Retry): every check not Pending is reset, as Kueue's
 * resetChecksOnEviction; the running local job is suspended first. */
static void test_eviction_resets_every_check(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    json_t *other =
        json_pack("{s:s,s:s,s:s,s:s,s:[{s:s}]}", "name", "other", "state", "Ready", "message", "ok",
                  "lastTransitionTime", T0, "podSetUpdates", "name", "main");
    json_array_append_new(jx_get(f.o.wl, "status.admissionChecks"), other);
    f.r[0].job = rcf_local_job(0); /* the copy's job is left, its Workload gone */
    decide(&f);
    assert_string_equal(f.plan.step, "remote-gone");
    int sus = index_of(&f.plan, RC_ACT_LOCAL_SUSPEND, 0);
    int st = index_of(&f.plan, RC_ACT_WL_STATUS, 0);
    assert_true(sus >= 0 && st > sus);
    json_t *doc = patched(&f.plan.acts[st]);
    json_t *mk = rc_check_find(doc, "mk"), *o = rc_check_find(doc, "other");
    assert_string_equal(jx_str(mk, "state"), "Pending");
    assert_string_equal(jx_str(mk, "message"),
                        "Reset to Pending after eviction. Previously: Retry");
    assert_int_equal(jx_int(mk, "retryCount", 0), 1);
    assert_string_equal(jx_str(o, "state"), "Pending");
    assert_string_equal(jx_str(o, "message"), "Reset to Pending after eviction. Previously: Ready");
    assert_string_equal(jx_str(o, "lastTransitionTime"), NOW);
    assert_null(json_object_get(o, "retryCount"));
    assert_null(json_object_get(o, "podSetUpdates"));
    json_decref(doc);
    /* a suspended job stays as it is */
    jx_set(f.o.job, "spec.suspend", json_true());
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_LOCAL_SUSPEND), 0);
    rcf_teardown(&f);
}

static void test_deletion_cleans_up(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    jx_set_new_str(f.o.wl, "metadata.deletionTimestamp", NOW);
    f.r[0].wl = remote_wl(f.o.wl, T1);
    f.r[0].job = rcf_local_job(0);
    f.r[1].available = 0; /* lost: its stale copy waits for the GC */
    f.r[1].wl = remote_wl(f.o.wl, NULL);
    decide(&f);
    assert_string_equal(f.plan.step, "deleted");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_REMOVE_REMOTE), 1);
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_REMOVE_REMOTE)->cluster, 0);
    assert_non_null(rc_plan_find(&f.plan, RC_ACT_REMOVE_FINALIZER));
    assert_int_equal(f.plan.requeue_ms, 20000);
    /* also when the Workload had no MultiKueue check (anymore) */
    f.o.check = NULL;
    decide(&f);
    assert_string_equal(f.plan.step, "no-check");
    assert_non_null(rc_plan_find(&f.plan, RC_ACT_REMOVE_FINALIZER));
    /* with-kueue: Kueue owns the finalizer */
    f.o.check = "mk";
    f.o.mode = RC_MODE_WITH_KUEUE;
    decide(&f);
    assert_null(rc_plan_find(&f.plan, RC_ACT_REMOVE_FINALIZER));
    rcf_teardown(&f);
}

static void test_owner_gone(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    json_decref(f.o.job);
    f.o.job = NULL;
    f.o.job_gone = 1;
    decide(&f);
    assert_string_equal(f.plan.step, "owner-gone");
    assert_int_equal(f.plan.n, 1);
    assert_int_equal(f.plan.acts[0].type, RC_ACT_DELETE_WL);
    rcf_teardown(&f);
}

static void test_waits_for_other_checks(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    json_array_append_new(jx_get(f.o.wl, "status.admissionChecks"),
                          json_pack("{s:s,s:s,s:s,s:s}", "name", "prov", "state", "Pending",
                                    "message", "", "lastTransitionTime", T0));
    decide(&f);
    assert_string_equal(f.plan.step, "waiting-other-checks");
    assert_int_equal(f.plan.n, 0);
    rcf_teardown(&f);
}

static void test_evicted_on_manager_with_quota(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.o.mode = RC_MODE_WITH_KUEUE;
    set_cond(f.o.wl, "Evicted", "True", "Preempted", "a higher priority arrived", T2);
    f.r[0].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    assert_string_equal(f.plan.step, "evicted-on-manager");
    const struct rc_act *a = rc_plan_find(&f.plan, RC_ACT_DEACTIVATE_REMOTE);
    assert_non_null(a);
    assert_string_equal(a->message, "Evicted on manager: a higher priority arrived");
    assert_null(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_JOB));
    rcf_teardown(&f);
}

/* Appends check `name` in `state` (message msg, since `since`) to wl's
 * checks; returns it (borrowed). */
static json_t *add_check(json_t *wl, const char *name, const char *state, const char *msg,
                         const char *since)
{
    json_t *c = json_pack("{s:s,s:s,s:s,s:s}", "name", name, "state", state, "message", msg,
                          "lastTransitionTime", since);
    assert_non_null(c);
    assert_int_equal(json_array_append_new(jx_get(wl, "status.admissionChecks"), c), 0);
    return c;
}

/* Standalone: another controller's check in Retry evicts the running
 * Workload in one write, as Kueue's workload controller and job reconciler
 * do; without a delay it is queued again at once (Requeued True
 * BackoffFinished), with one (requeueAfterSeconds, KEP-3258) Requeued stays
 * False until requeueState.requeueAt. */
static void test_other_check_retry_evicts(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    set_cond(f.o.wl, "Admitted", "True", "Admitted", "The workload is admitted", T1);
    add_check(f.o.wl, "prov", "Retry", "no capacity", RCF_NOW);
    f.r[0].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    assert_string_equal(f.plan.step, "check-retry");
    int sus = index_of(&f.plan, RC_ACT_LOCAL_SUSPEND, 0);
    int st = index_of(&f.plan, RC_ACT_WL_STATUS, 0);
    assert_true(sus >= 0 && st > sus);
    json_t *doc = patched(&f.plan.acts[st]);
    const char *want = "Evicted due to AdmissionCheck in Retry state: \"prov\" (no capacity)";
    json_t *e = rc_cond_find(doc, "Evicted");
    assert_string_equal(jx_str(e, "reason"), "AdmissionCheck");
    assert_string_equal(jx_str(e, "message"), want);
    assert_false(rc_wl_reserved(doc));
    assert_false(rc_cond_true(doc, "Admitted"));
    json_t *rq = rc_cond_find(doc, "Requeued");
    assert_string_equal(jx_str(rq, "status"), "True");
    assert_string_equal(jx_str(rq, "reason"), "BackoffFinished");
    assert_null(jx_get(doc, "status.requeueState"));
    assert_true(json_is_null(jx_get(doc, "status.clusterName")));
    assert_true(json_is_null(jx_get(doc, "status.admission")));
    json_t *prov = rc_check_find(doc, "prov");
    assert_string_equal(jx_str(prov, "state"), "Pending");
    assert_int_equal(jx_int(prov, "retryCount", 0), 1);
    assert_string_equal(jx_str(rc_check_find(doc, "mk"), "message"),
                        "Reset to Pending after eviction. Previously: Ready");
    json_decref(doc);
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_string_equal(ev->reason, "EvictedDueToAdmissionCheck");
    assert_string_equal(ev->message, want);
    assert_null(rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_JOB));

    /* a delay: queued again at lastTransitionTime + requeueAfterSeconds */
    json_object_set_new(rc_check_find(f.o.wl, "prov"), "requeueAfterSeconds", json_integer(90));
    decide(&f);
    doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    rq = rc_cond_find(doc, "Requeued");
    assert_string_equal(jx_str(rq, "status"), "False");
    assert_string_equal(jx_str(rq, "reason"), "AdmissionCheck");
    assert_string_equal(jx_str(doc, "status.requeueState.requeueAt"), "2024-01-01T01:01:30Z");
    assert_int_equal(jx_int(rc_check_find(doc, "prov"), "requeueAfterSeconds", 0), 90);
    json_decref(doc);

    /* with Kueue on the manager, Kueue evicts */
    f.o.mode = RC_MODE_WITH_KUEUE;
    decide(&f);
    assert_string_not_equal(f.plan.step, "check-retry");
    assert_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_SUSPEND));
    rcf_teardown(&f);
}

/* Standalone: the backoff a check asked for. Before requeueAt nothing is
 * written and the pass comes back then; once due, requeueAt is cleared and
 * Requeued turns True BackoffFinished, in one write. A Retry written after
 * the eviction is reset at once, its delay added. */
static void test_check_backoff(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 0));
    set_cond(f.o.wl, "Requeued", "False", "AdmissionCheck", "Evicted due to ...", T1);
    assert_int_equal(
        jx_set_new_str(f.o.wl, "status.requeueState.requeueAt", "2024-01-01T01:00:30Z"), 0);
    decide(&f);
    assert_string_equal(f.plan.step, "no-reservation");
    assert_null(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_int_equal(f.plan.requeue_ms, 30000);

    f.o.now = "2024-01-01T01:00:31Z";
    decide(&f);
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_STATUS), 1);
    assert_true(json_is_null(jx_get(doc, "status.requeueState.requeueAt")));
    json_t *rq = rc_cond_find(doc, "Requeued");
    assert_string_equal(jx_str(rq, "status"), "True");
    assert_string_equal(jx_str(rq, "reason"), "BackoffFinished");
    assert_string_equal(jx_str(rq, "message"), "The workload backoff was finished");
    json_decref(doc);

    /* a due requeueAt under a Requeued another writer already set True:
     * only requeueAt goes, the conditions are not written */
    set_cond(f.o.wl, "Requeued", "True", "Reactivated", "The workload was reactivated", T1);
    decide(&f);
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_STATUS), 1);
    doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_true(json_is_null(jx_get(doc, "status.requeueState.requeueAt")));
    assert_null(jx_get(doc, "status.conditions"));
    json_decref(doc);
    set_cond(f.o.wl, "Requeued", "False", "AdmissionCheck", "Evicted due to ...", T1);

    /* a slower check's Retry after the eviction: reset, its delay kept */
    f.o.now = RCF_NOW;
    json_t *late = add_check(f.o.wl, "budget", "Retry", "over budget", RCF_NOW);
    json_object_set_new(late, "requeueAfterSeconds", json_integer(120));
    decide(&f);
    assert_string_equal(f.plan.step, "check-retry-evicted");
    doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    json_t *b = rc_check_find(doc, "budget");
    assert_string_equal(jx_str(b, "state"), "Pending");
    assert_int_equal(jx_int(b, "retryCount", 0), 1);
    assert_string_equal(jx_str(doc, "status.requeueState.requeueAt"), "2024-01-01T01:02:00Z");
    assert_string_equal(jx_str(rc_cond_find(doc, "Requeued"), "status"), "False");
    assert_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_SUSPEND));
    json_decref(doc);
    rcf_teardown(&f);
}

/* WaitingForReplacementPods of a pod group's Workload (standalone), as
 * Kueue's pod integration writes it. */
static void assert_replacement(struct rc_fixture *f, const char *status, const char *reason,
                               const char *msg, const char *ltt)
{
    decide(f);
    assert_string_equal(f->plan.step, "replacement-pods");
    assert_int_equal(f->plan.n, 1); /* written alone, the pass ends */
    json_t *doc = patched(rc_plan_find(&f->plan, RC_ACT_WL_STATUS));
    json_t *c = rc_cond_find(doc, RC_COND_REPLACEMENT);
    assert_string_equal(jx_str(c, "status"), status);
    assert_string_equal(jx_str(c, "reason"), reason);
    assert_string_equal(jx_str(c, "message"), msg);
    assert_string_equal(jx_str(c, "lastTransitionTime"), ltt);
    json_decref(doc);
}

static void test_group_waiting_for_replacement_pods(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.o.group_absent = 1;
    assert_replacement(&f, "True", "PodsFailed", "Some Failed pods need replacement", NOW);
    /* already said: nothing more, the pass goes on */
    set_cond(f.o.wl, RC_COND_REPLACEMENT, "True", "PodsFailed", "Some Failed pods need replacement",
             T1);
    decide(&f);
    assert_string_not_equal(f.plan.step, "replacement-pods");
    /* evicted meanwhile: the eviction's words (the status, so its time, kept) */
    set_cond(f.o.wl, "Evicted", "True", "Preempted", "Preempted to accommodate x", T1);
    assert_replacement(&f, "True", "Preempted", "Preempted to accommodate x", T1);
    set_cond(f.o.wl, "Evicted", "False", "QuotaReserved", "Previously: preempted", T1);
    /* the replacement came: False, once */
    f.o.group_absent = 0;
    assert_replacement(&f, "False", "PodsReady", "No pods need replacement", NOW);
    set_cond(f.o.wl, RC_COND_REPLACEMENT, "False", "PodsReady", "No pods need replacement", T1);
    decide(&f);
    assert_string_not_equal(f.plan.step, "replacement-pods");
    /* never written when nothing ever lacked, nor when not known */
    rcf_teardown(&f);
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.o.group_absent = 0;
    decide(&f);
    assert_null(rc_cond_find(f.o.wl, RC_COND_REPLACEMENT));
    assert_string_not_equal(f.plan.step, "replacement-pods");
    f.o.group_absent = -1;
    decide(&f);
    assert_string_not_equal(f.plan.step, "replacement-pods");
    /* with Kueue on the manager its pod integration writes it; finished: not */
    f.o.group_absent = 2;
    f.o.mode = RC_MODE_WITH_KUEUE;
    decide(&f);
    assert_string_not_equal(f.plan.step, "replacement-pods");
    f.o.mode = RC_MODE_STANDALONE;
    set_cond(f.o.wl, "Finished", "True", "Succeeded", "done", T1);
    decide(&f);
    assert_string_equal(f.plan.step, "finished");
    rcf_teardown(&f);
}

/* Standalone: another controller's Rejected check deactivates the Workload
 * as ours does, told with that check's name and message. */
static void test_other_check_rejected_deactivates(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    add_check(f.o.wl, "prov", "Rejected", "never fits", RCF_NOW);
    f.r[0].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    assert_string_equal(f.plan.step, "rejected-deactivate");
    json_t *doc = patched(rc_plan_find(&f.plan, RC_ACT_WL_STATUS));
    assert_string_equal(jx_str(rc_cond_find(doc, "DeactivationTarget"), "message"),
                        "Admission check(s): prov, were rejected");
    json_decref(doc);
    assert_string_equal(rc_plan_find(&f.plan, RC_ACT_EVENT)->message,
                        "Deactivating workload because AdmissionCheck for prov was Rejected: "
                        "never fits");
    assert_int_equal(rc_plan_count(&f.plan, RC_ACT_WL_DEACTIVATE), 1);
    rcf_teardown(&f);
}

/* n copies of a two-byte character: a text a cut may fall inside. */
static char *multibyte_text(size_t n)
{
    char *t = malloc(2 * n + 1);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++)
        memcpy(t + 2 * i, "\xc3\xa9", 2); /* é */
    t[2 * n] = '\0';
    return t;
}

/* A cut text fits its array, is still UTF-8 (jansson and the API server
 * refuse a broken character) and says it was cut. */
static void assert_cut_on_a_character(const char *m, size_t cap)
{
    size_t n = strlen(m);
    assert_true(n < cap);
    json_t *j = json_string(m);
    assert_non_null(j);
    json_decref(j);
    assert_true(n > 4 && strcmp(m + n - 4, " ...") == 0);
}

/* What a check's controller or Kueue writes (a message may be 32 KiB) lands
 * in an Event and an eviction text cut on a whole character. */
static void test_long_texts_cut_on_a_character(void **state)
{
    (void)state;
    struct rc_fixture f;
    char *text = multibyte_text(3000);
    rcf_setup(&f, manager_wl("Rejected", "worker-1", 1));
    jx_set_new_str(rc_check_find(f.o.wl, "mk"), "message", text);
    decide(&f);
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_non_null(ev);
    assert_cut_on_a_character(ev->message, sizeof(ev->message));
    rcf_teardown(&f);

    rcf_setup(&f, manager_wl("Ready", "worker-1", 1));
    f.o.mode = RC_MODE_WITH_KUEUE;
    set_cond(f.o.wl, "Evicted", "True", "Preempted", text, T2);
    f.r[0].wl = remote_wl(f.o.wl, T1);
    decide(&f);
    const struct rc_act *a = rc_plan_find(&f.plan, RC_ACT_DEACTIVATE_REMOTE);
    assert_non_null(a);
    assert_cut_on_a_character(a->message, sizeof(a->message));
    rcf_teardown(&f);
    free(text);
}

/* Before step 4 (stopped_job_status): an evicted Workload, or one without
 * quota or not admitted, whose suspended Job still shows the pods of a removed copy gets the
 * status the Job controller shows for a stopped Job, once no copy has a job;
 * never while a remote job is left, nor for a kind whose managedBy the
 * manager drops (its own Job controller runs it). */
static void test_stopped_job_status(void **state)
{
    (void)state;
    struct rc_fixture f;
    rcf_setup(&f, manager_wl("Pending", NULL, 0));
    f.o.mode = RC_MODE_WITH_KUEUE;
    json_decref(f.o.job);
    f.o.job = rcf_local_job(1);
    assert_int_equal(jx_set(f.o.job, "status",
                            json_pack("{s:i,s:i,s:s}", "active", 1, "ready", 1, "startTime", T0)),
                     0);
    f.r[0].job = rcf_local_job(0); /* the copy's job is still there */
    decide(&f);
    assert_string_equal(f.plan.step, "no-reservation");
    assert_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_JOB_STATUS));

    json_decref(f.r[0].job);
    f.r[0].job = NULL;
    decide(&f);
    const struct rc_act *a = rc_plan_find(&f.plan, RC_ACT_LOCAL_JOB_STATUS);
    assert_non_null(a);
    assert_int_equal(a->cluster, -1);
    assert_true(json_is_null(jx_get(a->patch, "status.active")));
    assert_int_equal(jx_int(a->patch, "status.ready", -1), 0);
    assert_true(json_is_null(jx_get(a->patch, "status.startTime")));
    json_t *c = json_array_get(jx_get(a->patch, "status.conditions"), 0);
    assert_string_equal(jx_str(c, "type"), "Suspended");
    assert_string_equal(jx_str(c, "reason"), "JobSuspended");
    /* before the cleanup of step 4 */
    assert_int_equal(index_of(&f.plan, RC_ACT_LOCAL_JOB_STATUS, 0), 0);

    /* quota reserved again at once after an eviction (standalone's gate),
     * another check still Pending: not admitted, so written all the same */
    rcf_teardown(&f);
    rcf_setup(&f, manager_wl("Pending", NULL, 1));
    json_decref(f.o.job);
    f.o.job = rcf_local_job(1);
    assert_int_equal(jx_set(f.o.job, "status", json_pack("{s:i}", "active", 1)), 0);
    set_cond(f.o.wl, "Evicted", "False", "QuotaReserved", "Previously: evicted", T1);
    decide(&f);
    assert_non_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_JOB_STATUS));
    /* admitted and not evicted: the job may run, nothing is written */
    set_cond(f.o.wl, "Admitted", "True", "Admitted", "The workload is admitted", T1);
    decide(&f);
    assert_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_JOB_STATUS));
    /* evicted while still reserved: written */
    set_cond(f.o.wl, "Evicted", "True", "Preempted", "preempted", T1);
    decide(&f);
    assert_non_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_JOB_STATUS));
    /* the manager drops managedBy: its Job controller owns the status */
    f.o.managed_by_honoured = 0;
    decide(&f);
    assert_null(rc_plan_find(&f.plan, RC_ACT_LOCAL_JOB_STATUS));
    rcf_teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nominate_all_at_once),
        cmocka_unit_test(test_no_copies_without_quota),
        cmocka_unit_test(test_nominate_removes_unnominated_copies),
        cmocka_unit_test(test_first_admitted_wins_and_order_is_safe),
        cmocka_unit_test(test_ties_spread_by_workload),
        cmocka_unit_test(test_a_failing_cluster_stops_only_its_part),
        cmocka_unit_test(test_rejected_deactivates_as_kueue),
        cmocka_unit_test(test_eviction_resets_every_check),
        cmocka_unit_test(test_recorded_cluster_decides),
        cmocka_unit_test(test_steady_state_syncs_only),
        cmocka_unit_test(test_suspended_local_job_is_released),
        cmocka_unit_test(test_lost_worker_waits_then_retries),
        cmocka_unit_test(test_missing_cluster_waits_like_a_lost_one),
        cmocka_unit_test(test_unreadable_group_changes_nothing),
        cmocka_unit_test(test_retry_is_not_rewritten),
        cmocka_unit_test(test_finished_before_drift_and_read_fresh),
        cmocka_unit_test(test_final_sync_without_cached_job),
        cmocka_unit_test(test_remote_gone_and_no_cluster),
        cmocka_unit_test(test_remote_finished),
        cmocka_unit_test(test_going_copy_not_removed_again),
        cmocka_unit_test(test_out_of_sync_and_stale_copies),
        cmocka_unit_test(test_remote_evicted),
        cmocka_unit_test(test_spec_drift),
        cmocka_unit_test(test_worker_rendering_is_no_drift),
        cmocka_unit_test(test_drift_recreated_once_then_reported),
        cmocka_unit_test(test_reported_drift_never_evicts),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_deletion_cleans_up),
        cmocka_unit_test(test_owner_gone),
        cmocka_unit_test(test_waits_for_other_checks),
        cmocka_unit_test(test_evicted_on_manager_with_quota),
        cmocka_unit_test(test_stopped_job_status),
        cmocka_unit_test(test_long_texts_cut_on_a_character),
        cmocka_unit_test(test_other_check_retry_evicts),
        cmocka_unit_test(test_check_backoff),
        cmocka_unit_test(test_other_check_rejected_deactivates),
        cmocka_unit_test(test_group_waiting_for_replacement_pods),
    };
    return cmocka_run_group_tests_name("rc_decide", tests, NULL, NULL);
}
