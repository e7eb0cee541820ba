/* Why a Workload is Pending (why.h): the messages as pure functions of the
 * observation, the plan that writes them (decide.c), and the Events' limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../decide.h"
#include "../why.h"
#include "../wlstatus.h"
#include "jsonx.h"
#include "kinds/adapters.h"
#include "support/rc_fixture.h"

#define T0  "2024-01-01T00:00:00Z"
#define NOW RCF_NOW

static void set_cond(json_t *obj, const char *type, const char *status, const char *reason,
                     const char *msg)
{
    json_t *c = rc_conds_with(jx_get(obj, "status.conditions"), type, status, reason, msg, T0);
    assert_non_null(c);
    assert_int_equal(jx_set(obj, "status.conditions", c), 0);
}

static json_t *manager_wl(int reserved, const char *check_msg)
{
    json_t *wl =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:[{s:s,s:s,s:s,s:s,s:b}]},"
                  "s:{s:s,s:i,s:[{s:s,s:i,s:{}}]},s:{s:[{s:s,s:s,s:s,s:s}]}}",
                  "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name",
                  "job-a-12345", "namespace", "ns", "uid", "wl-uid", "resourceVersion", "10",
                  "ownerReferences", "apiVersion", "batch/v1", "kind", "Job", "name", "a", "uid",
                  "job-uid", "controller", 1, "spec", "queueName", "team-a", "priority", 0,
                  "podSets", "name", "main", "count", 1, "template", "status", "admissionChecks",
                  "name", "mk", "state", "Pending", "message", check_msg, "lastTransitionTime", T0);
    assert_non_null(wl);
    if (reserved)
        set_cond(wl, "QuotaReserved", "True", "QuotaReserved", "Quota reserved");
    return wl;
}

static json_t *copy_of(const json_t *mgr)
{
    json_t *r = json_pack("{s:{s:s,s:s,s:s},s:O}", "metadata", "name", "job-a-12345", "namespace",
                          "ns", "uid", "remote-uid", "spec", jx_get(mgr, "spec"));
    assert_non_null(r);
    return r;
}

static void setup(struct rc_fixture *f, json_t *wl)
{
    rcf_setup(f, wl);
    f->o.explain = 1;
}

/* The check's message the plan writes, or NULL when it writes none. */
static const char *planned_message(struct rc_fixture *f)
{
    rc_plan_clear(&f->plan);
    rc_decide(&f->o, &f->plan);
    for (size_t i = 0; i < f->plan.n; i++) {
        json_t *checks = json_object_get(f->plan.acts[i].patch, "admissionChecks");
        if (f->plan.acts[i].type == RC_ACT_WL_STATUS && checks)
            return jx_str(json_array_get(checks, 0), "message");
    }
    return NULL;
}

static void test_waiting_for_manager_quota(void **state)
{
    (void)state;
    struct rc_fixture f;
    setup(&f, manager_wl(0, ""));
    /* not looked at by the gate yet: nothing to say, no write */
    set_cond(f.o.wl, "QuotaReserved", "False", "PendingEvaluation", "Waiting for the quota gate");
    assert_null(planned_message(&f));
    set_cond(f.o.wl, "QuotaReserved", "False", "WaitingForQuota",
             "Waiting for quota: ClusterQueue cq: 8 of 8 nvidia.com/gpu in use, the workload "
             "requests 2");
    assert_string_equal(planned_message(&f), "Waiting for quota on the manager: ClusterQueue cq: 8 "
                                             "of 8 nvidia.com/gpu in use, the workload requests 2");
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_non_null(ev);
    assert_string_equal(ev->reason, RC_WHY_REASON);
    assert_int_equal(ev->value, RC_WHY_QUOTA);
    /* Kueue's own words (with-kueue) are kept whole */
    f.o.mode = RC_MODE_WITH_KUEUE;
    set_cond(f.o.wl, "QuotaReserved", "False", "Pending",
             "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
             "default, request > maximum capacity (5 > 4)");
    assert_string_equal(planned_message(&f),
                        "Waiting for quota on the manager: couldn't assign flavors to pod set "
                        "main: insufficient quota for cpu in flavor default, request > maximum "
                        "capacity (5 > 4)");
    rcf_teardown(&f);
}

static void test_quota_message_written_once_and_kueue_text_kept(void **state)
{
    (void)state;
    struct rc_fixture f;
    const char *m = "Waiting for quota on the manager: ClusterQueue cq: 4 of 4 cpu in use, the "
                    "workload requests 1";
    setup(&f, manager_wl(0, m));
    set_cond(f.o.wl, "QuotaReserved", "False", "WaitingForQuota",
             "Waiting for quota: ClusterQueue cq: 4 of 4 cpu in use, the workload requests 1");
    assert_null(planned_message(&f)); /* already says so: no write per reconcile */
    /* the gate writes this message with its QuotaReserved (gate.c): the
     * Event is still told from here, rate limited by the executor per
     * Workload and step (rc_why_event_allow) */
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_non_null(ev);
    assert_int_equal(ev->value, RC_WHY_QUOTA);
    rcf_teardown(&f);
    /* an eviction's QuotaReserved text is Kueue's: nothing of ours */
    setup(&f, manager_wl(0, "Reset to Pending after eviction. Previously: Retry"));
    set_cond(f.o.wl, "QuotaReserved", "False", "Pending",
             "Evicted due to AdmissionCheck in Retry state: \"mk\" (Reserving remote lost)");
    assert_null(planned_message(&f));
    /* once the gate says it waits for quota, that replaces Kueue's reset text */
    set_cond(f.o.wl, "QuotaReserved", "False", "WaitingForQuota",
             "Waiting for quota: ClusterQueue cq: 4 of 4 cpu in use, the workload requests 1");
    assert_string_equal(planned_message(&f), m);
    rcf_teardown(&f);
    /* another controller's message is never replaced */
    setup(&f, manager_wl(0, "Something else said this"));
    set_cond(f.o.wl, "QuotaReserved", "False", "WaitingForQuota", "Waiting for quota: x");
    assert_null(planned_message(&f));
    rcf_teardown(&f);
}

static void test_no_usable_worker_names_each(void **state)
{
    (void)state;
    struct rc_fixture f;
    setup(&f, manager_wl(1, ""));
    char d0[320], d1[320];
    rc_why_down("ClientConnectionFailed",
                "dial tcp 127.0.0.1:1: connect: connection refused; "
                "connection attempts: 7",
                d0, sizeof(d0));
    assert_string_equal(
        d0, "ClientConnectionFailed: dial tcp 127.0.0.1:1: connect: connection refused");
    rc_why_down("InsecureKubeConfig",
                "insecure TLS verification is not allowed for cluster worker-2", d1, sizeof(d1));
    f.r[0].available = 0;
    f.r[0].down = d0;
    f.r[1].available = 0;
    f.r[1].down = d1;
    assert_string_equal(planned_message(&f),
                        "No usable worker: worker-1: not connected (ClientConnectionFailed: dial "
                        "tcp 127.0.0.1:1: connect: connection refused); worker-2: not connected "
                        "(InsecureKubeConfig: insecure TLS verification is not allowed for "
                        "cluster worker-2)");
    const struct rc_act *ev = rc_plan_find(&f.plan, RC_ACT_EVENT);
    assert_string_equal(ev->etype, "Warning");
    assert_int_equal(ev->value, RC_WHY_NO_WORKER);
    /* the message comes before anything that may fail */
    assert_int_equal(f.plan.acts[0].type, RC_ACT_WL_STATUS);
    rcf_teardown(&f);
    setup(&f, manager_wl(1, ""));
    f.o.nremotes = 0;
    assert_string_equal(planned_message(&f),
                        "No usable worker: the MultiKueueConfig lists no clusters");
    rcf_teardown(&f);
}

static void test_workers_answers(void **state)
{
    (void)state;
    struct rc_fixture f;
    setup(&f, manager_wl(1, ""));
    /* copies made, not looked at yet: the happy path writes nothing */
    f.r[0].wl = copy_of(f.o.wl);
    f.r[1].wl = copy_of(f.o.wl);
    assert_null(planned_message(&f));
    set_cond(f.r[0].wl, "QuotaReserved", "False", "Pending",
             "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
             "default, request > maximum capacity (5 > 4)");
    set_cond(f.r[1].wl, "QuotaReserved", "False", "Inadmissible",
             "LocalQueue team-a doesn't exist");
    assert_string_equal(planned_message(&f),
                        "Waiting for a worker to admit it: worker-1: couldn't assign flavors to "
                        "pod set main: insufficient quota for cpu in flavor default, request > "
                        "maximum capacity (5 > 4) (Pending); worker-2: LocalQueue team-a doesn't "
                        "exist (Inadmissible)");
    assert_int_equal(rc_plan_find(&f.plan, RC_ACT_EVENT)->value, RC_WHY_WORKERS);
    rcf_teardown(&f);
}

static void test_create_error_and_transients(void **state)
{
    (void)state;
    struct rc_fixture f;
    setup(&f, manager_wl(1, ""));
    f.r[0].create_err = "namespaces \"ns\" not found";
    f.r[1].available = 0;
    f.r[1].down = "unreachable";
    assert_string_equal(planned_message(&f),
                        "Waiting for a worker to admit it: worker-1: the copy could not be "
                        "created: namespaces \"ns\" not found; worker-2: not connected "
                        "(unreachable)");
    /* the message is written even when the create fails again */
    struct rc_run_state run = {0};
    rc_run_failed(&run, rc_plan_find(&f.plan, RC_ACT_CREATE_REMOTE_WL));
    assert_int_equal(rc_act_run(rc_plan_find(&f.plan, RC_ACT_WL_STATUS), &run), RC_RUN);
    assert_int_equal(rc_act_run(rc_plan_find(&f.plan, RC_ACT_EVENT), &run), RC_RUN);
    rcf_teardown(&f);
    /* a stale message of ours is brought up to date, even to a transient one */
    setup(&f, manager_wl(1, "No usable worker: worker-1: not connected (unreachable)"));
    assert_string_equal(planned_message(&f), "Waiting for a worker to admit it: worker-1: copy "
                                             "being created; worker-2: copy being created");
    rcf_teardown(&f);
    /* off: the plans of the step tests */
    setup(&f, manager_wl(1, ""));
    f.o.explain = 0;
    f.r[0].available = 0;
    f.r[1].available = 0;
    assert_null(planned_message(&f));
    rcf_teardown(&f);
}

static void test_ready_and_drift_keep_their_texts(void **state)
{
    (void)state;
    struct rc_fixture f;
    setup(&f, manager_wl(1, ""));
    f.r[0].wl = copy_of(f.o.wl);
    set_cond(f.r[0].wl, "QuotaReserved", "True", "QuotaReserved", "ok");
    set_cond(f.r[0].wl, "Admitted", "True", "Admitted", "The workload is admitted");
    assert_string_equal(planned_message(&f), "The workload got reservation on \"worker-1\"");
    rcf_teardown(&f);
}

static void test_truncation_is_bounded(void **state)
{
    (void)state;
    /* a long worker message: each part and the whole stay in their caps */
    struct rc_fixture f;
    setup(&f, manager_wl(1, ""));
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    f.r[0].wl = copy_of(f.o.wl);
    f.r[1].wl = copy_of(f.o.wl);
    set_cond(f.r[0].wl, "QuotaReserved", "False", "Pending", big);
    set_cond(f.r[1].wl, "QuotaReserved", "False", "Pending", big);
    const char *m = planned_message(&f);
    assert_non_null(m);
    assert_true(strlen(m) < RC_WHY_MAX);
    assert_non_null(strstr(m, "worker-2: "));
    rcf_teardown(&f);
}

static void test_event_rate_limit(void **state)
{
    (void)state;
    struct rc_why *w = rc_why_new();
    assert_non_null(w);
    assert_true(rc_why_event_allow(w, "ns/a", RC_WHY_WORKERS, 1000));
    assert_false(rc_why_event_allow(w, "ns/a", RC_WHY_WORKERS, 2000));  /* same step, soon */
    assert_true(rc_why_event_allow(w, "ns/b", RC_WHY_WORKERS, 2000));   /* another Workload */
    assert_true(rc_why_event_allow(w, "ns/a", RC_WHY_NO_WORKER, 3000)); /* the step changed */
    assert_false(
        rc_why_event_allow(w, "ns/a", RC_WHY_NO_WORKER, 3000 + RC_WHY_EVENT_PERIOD_MS - 1));
    assert_true(rc_why_event_allow(w, "ns/a", RC_WHY_NO_WORKER, 3000 + RC_WHY_EVENT_PERIOD_MS));
    /* create errors: remembered per Workload and cluster, forgotten on success */
    char e[RC_WHY_ERR_MAX];
    assert_int_equal(rc_why_create_error(w, "ns/a", "worker-1", e, sizeof(e)), 0);
    rc_why_create_result(w, "ns/a", "worker-1", "namespaces \"ns\" not found");
    assert_int_equal(rc_why_create_error(w, "ns/a", "worker-1", e, sizeof(e)), 1);
    assert_string_equal(e, "namespaces \"ns\" not found");
    assert_int_equal(rc_why_create_error(w, "ns/a", "worker-2", e, sizeof(e)), 0);
    rc_why_create_result(w, "ns/a", "worker-1", NULL);
    assert_int_equal(rc_why_create_error(w, "ns/a", "worker-1", e, sizeof(e)), 0);
    rc_why_free(w);
}

/* Data-aware dispatch (step 10): copies only where the job's references are. */
static size_t count_on(const struct rc_plan *p, enum rc_act_type t, int cluster)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += p->acts[i].type == t && p->acts[i].cluster == cluster;
    return n;
}

static const struct rc_act *data_event(const struct rc_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->acts[i].type == RC_ACT_EVENT && strcmp(p->acts[i].reason, RC_REASON_DATA) == 0)
            return &p->acts[i];
    return NULL;
}

static void test_data_aware_dispatch(void **state)
{
    (void)state;
    struct rc_fixture f;
    setup(&f, manager_wl(1, ""));
    f.o.data_aware = 1;
    f.r[0].lacks = 1;
    f.r[0].lacks_what = "PVC ns/dataset";
    rc_decide(&f.o, &f.plan);
    assert_string_equal(f.plan.step, "nominate");
    assert_int_equal(count_on(&f.plan, RC_ACT_CREATE_REMOTE_WL, 0), 0);
    assert_int_equal(count_on(&f.plan, RC_ACT_CREATE_REMOTE_WL, 1), 1);
    const struct rc_act *st = rc_plan_find(&f.plan, RC_ACT_WL_STATUS);
    assert_non_null(st);
    json_t *nom = json_object_get(st->patch, "nominatedClusterNames");
    assert_int_equal(json_array_size(nom), 1);
    assert_string_equal(json_string_value(json_array_get(nom, 0)), "worker-2");
    const struct rc_act *ev = data_event(&f.plan);
    assert_non_null(ev);
    assert_string_equal(ev->etype, "Normal");
    assert_int_equal(ev->value, RC_WHY_DATA);
    assert_string_equal(ev->message,
                        "Not nominated, lacking what the job references: worker-1: PVC ns/dataset");
    /* a copy already on the lacking worker is removed */
    f.r[0].wl = copy_of(f.o.wl);
    rc_plan_clear(&f.plan);
    rc_decide(&f.o, &f.plan);
    assert_int_equal(count_on(&f.plan, RC_ACT_REMOVE_REMOTE, 0), 1);
    json_decref(f.r[0].wl);
    f.r[0].wl = NULL;
    /* none has them all: dispatched as usual, and said */
    f.r[1].lacks = 2;
    f.r[1].lacks_what = "Secret ns/token, ConfigMap ns/cfg";
    rc_plan_clear(&f.plan);
    rc_decide(&f.o, &f.plan);
    assert_int_equal(count_on(&f.plan, RC_ACT_CREATE_REMOTE_WL, 0), 1);
    assert_int_equal(count_on(&f.plan, RC_ACT_CREATE_REMOTE_WL, 1), 1);
    ev = data_event(&f.plan);
    assert_non_null(ev);
    assert_string_equal(ev->etype, "Warning");
    assert_string_equal(ev->message,
                        "No worker has every object the job references: worker-1: PVC ns/dataset; "
                        "worker-2: Secret ns/token, ConfigMap ns/cfg; dispatched as usual");
    /* a lacking worker that is not available does not count: worker-2 lacks, worker-1 is down */
    f.r[1].lacks = 0;
    f.r[0].available = 0;
    rc_plan_clear(&f.plan);
    rc_decide(&f.o, &f.plan);
    assert_null(data_event(&f.plan));
    f.r[0].available = 1;
    /* switched off: both, nothing said */
    f.r[1].lacks = 0;
    f.o.data_aware = 0;
    rc_plan_clear(&f.plan);
    rc_decide(&f.o, &f.plan);
    assert_int_equal(count_on(&f.plan, RC_ACT_CREATE_REMOTE_WL, 0), 1);
    assert_int_equal(count_on(&f.plan, RC_ACT_CREATE_REMOTE_WL, 1), 1);
    assert_null(data_event(&f.plan));
    /* an External dispatcher's list is followed */
    f.o.data_aware = 1;
    f.o.dispatcher_writes = 0;
    rc_plan_clear(&f.plan);
    rc_decide(&f.o, &f.plan);
    assert_int_equal(count_on(&f.plan, RC_ACT_CREATE_REMOTE_WL, 0), 1);
    assert_null(data_event(&f.plan));
    rcf_teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiting_for_manager_quota),
        cmocka_unit_test(test_quota_message_written_once_and_kueue_text_kept),
        cmocka_unit_test(test_no_usable_worker_names_each),
        cmocka_unit_test(test_workers_answers),
        cmocka_unit_test(test_create_error_and_transients),
        cmocka_unit_test(test_ready_and_drift_keep_their_texts),
        cmocka_unit_test(test_truncation_is_bounded),
        cmocka_unit_test(test_event_rate_limit),
        cmocka_unit_test(test_data_aware_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
