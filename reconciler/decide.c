#include "decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "dispatchers.h"
#include "jobsync.h"
#include "jsonx.h"
#include "specdiff.h"
#include "strmap.h"
#include "why.h"
#include "wlstatus.h"

static const char *const act_names[] = {
    "wl-status",
    "remove-remote",
    "create-remote-wl",
    "create-remote-job",
    "sync-job-status",
    "remote-priority",
    "deactivate-remote",
    "remove-finalizer",
    "delete-wl",
    "local-suspend",
    "event",
    "count-admitted",
    "drift-mark",
    "local-job-status",
    "wl-deactivate",
};

const char *rc_act_name(enum rc_act_type t)
{
    return (size_t)t < sizeof(act_names) / sizeof(act_names[0]) ? act_names[t] : "?";
}

int rc_act_scope(const struct rc_act *a)
{
    switch (a->type) {
    case RC_ACT_REMOVE_REMOTE:
    case RC_ACT_CREATE_REMOTE_WL:
    case RC_ACT_CREATE_REMOTE_JOB:
    case RC_ACT_SYNC_JOB_STATUS:
    case RC_ACT_REMOTE_PRIORITY:
    case RC_ACT_DEACTIVATE_REMOTE:
    case RC_ACT_DRIFT_MARK:
        return a->cluster;
    default:
        return -1;
    }
}

enum rc_run rc_act_run(const struct rc_act *a, const struct rc_run_state *s)
{
    int c = rc_act_scope(a);
    if (s->manager_failed)
        return RC_STOP;
    if (c < 0)
        return s->any_failed && !a->independent ? RC_STOP : RC_RUN;
    return s->cluster_failed[c] ? RC_SKIP : RC_RUN;
}

void rc_run_failed(struct rc_run_state *s, const struct rc_act *a)
{
    int c = rc_act_scope(a);
    s->any_failed = 1;
    if (c < 0)
        s->manager_failed = 1;
    else
        s->cluster_failed[c] = 1;
}

void rc_plan_clear(struct rc_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        json_decref(p->acts[i].patch);
    p->n = 0;
}

size_t rc_plan_count(const struct rc_plan *p, enum rc_act_type t)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += p->acts[i].type == t;
    return n;
}

const struct rc_act *rc_plan_find(const struct rc_plan *p, enum rc_act_type t)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->acts[i].type == t)
            return &p->acts[i];
    return NULL;
}

static struct rc_act *add(struct rc_plan *p, enum rc_act_type t, int cluster)
{
    if (p->n == RC_MAX_ACTS)
        return NULL;
    struct rc_act *a = &p->acts[p->n++];
    memset(a, 0, sizeof(*a));
    a->type = t;
    a->cluster = cluster;
    return a;
}

static void add_status(struct rc_plan *p, json_t *patch)
{
    struct rc_act *a = patch ? add(p, RC_ACT_WL_STATUS, -1) : NULL;
    if (a)
        a->patch = patch;
    else
        json_decref(patch);
}

static void add_event(struct rc_plan *p, const char *type, const char *reason, const char *msg)
{
    struct rc_act *a = add(p, RC_ACT_EVENT, -1);
    if (!a)
        return;
    snprintf(a->etype, sizeof(a->etype), "%s", type);
    buf_cut_fmt(a->reason, sizeof(a->reason), "%s", reason);
    buf_cut_fmt(a->message, sizeof(a->message), "%s", msg);
}

static void requeue(struct rc_plan *p, long ms)
{
    if (ms < 0)
        return;
    if (p->requeue_ms < 0 || ms < p->requeue_ms)
        p->requeue_ms = ms;
}

static int has_objects(const struct rc_remote *r)
{
    return r->wl || r->job;
}

/* Something there not already going: a copy deleted once shows a
 * deletionTimestamp while the worker's finalizers hold it, or nothing yet
 * while its watch is behind our delete (rc_remote.wl_deleted), and
 * deleting it again is only another call on a busy worker. */
static int has_live_objects(const struct rc_remote *r)
{
    return (r->wl && !r->wl_deleted && !rc_wl_deleting(r->wl)) ||
           (r->job && !r->job_deleted && !rc_wl_deleting(r->job));
}

/* REMOVE on every available cluster holding something live, except `keep`.
 * Returns how many unavailable clusters still show cached objects. */
static int remove_all(const struct rc_obs *o, struct rc_plan *p, int keep, const int *done)
{
    int stranded = 0;
    for (size_t i = 0; i < o->nremotes; i++) {
        const struct rc_remote *r = &o->remotes[i];
        if ((int)i == keep || !has_objects(r) || (done && i < RC_MAX_CLUSTERS * 2 && done[i]))
            continue;
        if (!r->available)
            stranded++;
        else if (has_live_objects(r))
            add(p, RC_ACT_REMOVE_REMOTE, (int)i); /* else going already */
    }
    return stranded;
}

static const char *check_state(const struct rc_obs *o)
{
    const char *s = jx_str(rc_check_find(o->wl, o->check), "state");
    return s ? s : "Pending";
}

/* {"admissionChecks": [... check set ...]} plus extra members. */
static json_t *check_patch(const struct rc_obs *o, const char *state, const char *msg, int bump)
{
    json_t *checks =
        rc_checks_with(jx_get(o->wl, "status.admissionChecks"), o->check, state, msg, o->now, bump);
    return checks ? json_pack("{s:o}", "admissionChecks", checks) : NULL;
}

static void set_conds(json_t *patch, json_t *conds)
{
    if (patch && conds)
        json_object_set_new(patch, "conditions", conds);
    else
        json_decref(conds);
}

/* patch.requeueState.requeueAt = the time at_ms (a merge patch: the count
 * stays). 0, -1 on oom. */
static int requeue_at(json_t *patch, long long at_ms)
{
    char t[32];
    rc_format_time(at_ms, t);
    return jx_set_new_str(patch, "requeueState.requeueAt", t);
}

/* The text of an eviction for check `name` in Retry with message msg: the
 * Evicted condition's, Requeued's and the Event's (mkueue names the check;
 * Kueue v0.17 writes "At least one admission check is false"). */
static void retry_evict_text(char *out, size_t cap, const char *name, const char *msg)
{
    buf_cut_fmt(out, cap, "Evicted due to AdmissionCheck in Retry state: \"%s\" (%s)",
                name ? name : "", msg ? msg : "");
}

/* Standalone: Kueue's eviction for checks in Retry (`checks`, as they are
 * before the reset; `name` the one whose message `msg` tells why), in one
 * write: what its workload controller writes (Evicted, every check not
 * Pending reset) and what its job reconciler writes once the job stopped
 * (QuotaReserved and Admitted False, admission cleared; our local job runs
 * no pods, so it stops in the same plan). Requeued: False until the latest
 * delay a Retry asked for (requeueAfterSeconds, KEP-3258) with
 * requeueState.requeueAt, else True as once Kueue's backoff is finished.
 * clusterName and nominations are cleared. New reference or NULL. */
static json_t *evict_for_retry(const struct rc_obs *o, const json_t *checks, const char *name,
                               const char *msg)
{
    char evict[2048];
    retry_evict_text(evict, sizeof(evict), name, msg);
    long long at = rc_checks_retry_at_ms(checks);
    int delayed = at > rc_parse_time_ms(o->now);
    json_t *reset = rc_checks_reset_on_eviction(checks, o->now);
    json_t *patch = reset ? json_pack("{s:o}", "admissionChecks", reset) : NULL;
    if (!patch)
        return NULL;
    json_t *c0 = jx_get(o->wl, "status.conditions");
    json_t *c1 = rc_conds_with(c0, "Evicted", "True", "AdmissionCheck", evict, o->now);
    json_t *c2 = c1 ? rc_conds_with(c1, "QuotaReserved", "False", "Pending", evict, o->now) : NULL;
    json_t *c3 = c2 ? rc_conds_with(c2, "Admitted", "False", "NoReservation",
                                    "The workload has no reservation", o->now)
                    : NULL;
    json_t *c4 = !c3       ? NULL
                 : delayed ? rc_conds_with(c3, "Requeued", "False", "AdmissionCheck", evict, o->now)
                           : rc_conds_with(c3, "Requeued", "True", "BackoffFinished",
                                           "The workload backoff was finished", o->now);
    json_decref(c1);
    json_decref(c2);
    json_decref(c3);
    if (!c4) {
        json_decref(patch);
        return NULL;
    }
    set_conds(patch, c4);
    json_object_set_new(patch, "admission", json_null());
    json_object_set_new(patch, "clusterName", json_null());
    json_object_set_new(patch, "nominatedClusterNames", json_null());
    if (delayed && requeue_at(patch, at) < 0) {
        json_decref(patch);
        return NULL;
    }
    return patch;
}

json_t *rc_retry_patch(const struct rc_obs *o, const char *msg)
{
    if (o->mode == RC_MODE_WITH_KUEUE) {
        /* Kueue evicts on Retry, releases quota and resets the check */
        return check_patch(o, "Retry", msg, 0);
    }
    /* standalone: we are Kueue, so the eviction happens in the same write */
    json_t *retried =
        rc_checks_with(jx_get(o->wl, "status.admissionChecks"), o->check, "Retry", msg, o->now, 0);
    json_t *patch = retried ? evict_for_retry(o, retried, o->check, msg) : NULL;
    json_decref(retried);
    return patch;
}

/* Standalone: the local job stops before its Workload gives up the quota,
 * as Kueue's job reconciler stops an evicted job (only a job we let run:
 * its kind keeps managedBy). */
static void suspend_local(const struct rc_obs *o, struct rc_plan *p)
{
    if (o->mode != RC_MODE_STANDALONE || !o->managed_by_honoured || !o->job || !o->kind ||
        !o->kind->suspend_path || jx_bool(o->job, o->kind->suspend_path, 0))
        return;
    struct rc_act *a = add(p, RC_ACT_LOCAL_SUSPEND, -1);
    if (a)
        a->value = 1;
}

/* Kueue's Event of an eviction for a check's Retry (reportEvictedWorkload). */
static void eviction_event(struct rc_plan *p, const char *name, const char *msg)
{
    char ev[2048];
    retry_evict_text(ev, sizeof(ev), name, msg);
    add_event(p, "Normal", "EvictedDueToAdmissionCheck", ev);
}

/* The check's message is msg as Kueue writes it (updateACS adds nothing). */
static void retry(const struct rc_obs *o, struct rc_plan *p, const char *msg, const char *etype)
{
    suspend_local(o, p);
    add_status(p, rc_retry_patch(o, msg));
    add_event(p, etype, "MultiKueue", msg);
    if (o->mode == RC_MODE_STANDALONE)
        eviction_event(p, o->check, msg);
}

/* The check turns Rejected; in standalone mode the next pass deactivates
 * the Workload (deactivate_rejected), as Kueue's core would. */
static void reject(const struct rc_obs *o, struct rc_plan *p, const char *m)
{
    add_status(p, check_patch(o, "Rejected", m, 0));
}

/* Kueue's DeactivationTarget message for the rejected checks, into out. */
static void rejected_names(const struct rc_obs *o, char *out, size_t n)
{
    size_t w = (size_t)snprintf(out, n, "Admission check(s): ");
    size_t i;
    json_t *c;
    int first = 1;
    json_array_foreach(jx_get(o->wl, "status.admissionChecks"), i, c)
    {
        const char *st = jx_str(c, "state"), *name = jx_str(c, "name");
        if (!st || strcmp(st, "Rejected") != 0 || !name || w >= n)
            continue;
        w += (size_t)snprintf(out + w, n - w, "%s%s", first ? "" : ",", name);
        first = 0;
    }
    if (w < n)
        snprintf(out + w, n - w, ", were rejected");
}

/* Standalone, a Rejected check: what Kueue's core does, one step per pass
 * (each write shows in the next observation):
 *   1. DeactivationTarget True AdmissionCheck `Admission check(s): <names>,
 *      were rejected`, Warning event AdmissionCheckRejected, and
 *      spec.active=false (Kueue's workload controller, next reconcile);
 *   2. inactive and not evicted: the job stopped, then one status write
 *      with Kueue's eviction (Evicted True DeactivatedDueToAdmissionCheck
 *      `The workload is deactivated due to <DeactivationTarget message>`,
 *      DeactivationTarget removed, checks reset, clusterName and
 *      nominations cleared) and, when reserved, what its job reconciler
 *      writes once the job stopped (Requeued False and QuotaReserved False
 *      Pending with that message, admission cleared, Admitted False).
 * Without quota the copies are then removed (step 4). Returns 1 when it
 * planned something. */
static int deactivate_rejected(const struct rc_obs *o, struct rc_plan *p)
{
    int active = jx_bool(o->wl, "spec.active", 1);
    json_t *conds = jx_get(o->wl, "status.conditions");
    if (active) {
        snprintf(p->step, sizeof(p->step), "rejected-deactivate");
        if (!rc_cond_true(o->wl, "DeactivationTarget")) {
            char why[1024];
            rejected_names(o, why, sizeof(why));
            json_t *c =
                rc_conds_with(conds, "DeactivationTarget", "True", "AdmissionCheck", why, o->now);
            add_status(p, c ? json_pack("{s:o}", "conditions", c) : NULL);
            /* Kueue tells the first Rejected check of the list */
            json_t *first = rc_check_in_state(o->wl, "Rejected", NULL);
            const char *n = jx_str(first, "name"), *m = jx_str(first, "message");
            char ev[2048];
            buf_cut_fmt(ev, sizeof(ev),
                        "Deactivating workload because AdmissionCheck for %s was Rejected: %s",
                        n ? n : o->check, m ? m : "");
            add_event(p, "Warning", "AdmissionCheckRejected", ev);
        }
        add(p, RC_ACT_WL_DEACTIVATE, -1);
        return 1;
    }
    if (rc_wl_evicted(o->wl))
        return 0;
    snprintf(p->step, sizeof(p->step), "rejected-evict");
    json_t *dt = rc_cond_find(o->wl, "DeactivationTarget");
    const char *dtm = jx_str(dt, "message");
    char msg[2048];
    if (dtm)
        buf_cut_fmt(msg, sizeof(msg), "The workload is deactivated due to %s", dtm);
    else
        buf_cut_fmt(msg, sizeof(msg), "The workload is deactivated");
    const char *reason = dt && jx_str(dt, "reason") ? jx_str(dt, "reason") : NULL;
    char ereason[128];
    snprintf(ereason, sizeof(ereason), "Deactivated%s%s", reason ? "DueTo" : "",
             reason ? reason : "");
    /* the conditions without DeactivationTarget */
    json_t *c0 = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = jx_str(c, "type");
        if (c0 && (!t || strcmp(t, "DeactivationTarget") != 0))
            json_array_append(c0, c);
    }
    json_t *cs = c0 ? rc_conds_with(c0, "Evicted", "True", ereason, msg, o->now) : NULL;
    json_decref(c0);
    int reserved = rc_wl_reserved(o->wl);
    if (cs && reserved) {
        json_t *c1 = rc_conds_with(cs, "Requeued", "False", ereason, msg, o->now);
        json_t *c2 =
            c1 ? rc_conds_with(c1, "QuotaReserved", "False", "Pending", msg, o->now) : NULL;
        json_t *c3 = c2 ? rc_conds_with(c2, "Admitted", "False", "NoReservation",
                                        "The workload has no reservation", o->now)
                        : NULL;
        json_decref(cs);
        json_decref(c1);
        json_decref(c2);
        cs = c3;
    }
    json_t *checks = rc_checks_reset_on_eviction(jx_get(o->wl, "status.admissionChecks"), o->now);
    json_t *patch = cs && checks
                        ? json_pack("{s:o,s:o,s:n,s:n}", "conditions", cs, "admissionChecks",
                                    checks, "clusterName", "nominatedClusterNames")
                        : NULL;
    if (!patch) {
        json_decref(cs);
        json_decref(checks);
    } else if (reserved) {
        json_object_set_new(patch, "admission", json_null());
    }
    suspend_local(o, p);
    add_status(p, patch);
    return 1;
}

/* Standalone, what Kueue's workload controller does for every check, ours
 * or another controller's (reconcileCheckBasedEviction): a Rejected one
 * deactivates the Workload (deactivate_rejected); one in Retry evicts it
 * while it holds quota (evict_for_retry). A Retry written once it was
 * evicted (KEP-3258 lets a slower check add its delay then) is reset at
 * once, its delay kept. Returns 1 when the plan is complete. */
static int checks_evict(const struct rc_obs *o, struct rc_plan *p)
{
    if (o->mode != RC_MODE_STANDALONE || rc_wl_finished(o->wl))
        return 0;
    if (rc_check_in_state(o->wl, "Rejected", NULL))
        return deactivate_rejected(o, p);
    json_t *r = rc_check_in_state(o->wl, "Retry", NULL);
    if (!r)
        return 0;
    const char *name = jx_str(r, "name"), *msg = jx_str(r, "message");
    json_t *checks = jx_get(o->wl, "status.admissionChecks");
    if (rc_wl_reserved(o->wl) && !rc_wl_evicted(o->wl)) {
        snprintf(p->step, sizeof(p->step), "check-retry");
        suspend_local(o, p);
        add_status(p, evict_for_retry(o, checks, name, msg));
        eviction_event(p, name, msg);
        return 1;
    }
    snprintf(p->step, sizeof(p->step), "check-retry-evicted");
    json_t *reset = rc_checks_reset_on_eviction(checks, o->now);
    json_t *patch = reset ? json_pack("{s:o}", "admissionChecks", reset) : NULL;
    long long at = rc_checks_retry_at_ms(checks);
    const char *cur = jx_str(o->wl, "status.requeueState.requeueAt");
    if (patch && at > rc_parse_time_ms(o->now) && at > rc_parse_time_ms(cur)) {
        char why[2048];
        retry_evict_text(why, sizeof(why), name, msg);
        set_conds(patch, rc_conds_with(jx_get(o->wl, "status.conditions"), "Requeued", "False",
                                       "AdmissionCheck", why, o->now));
        if (requeue_at(patch, at) < 0) {
            json_decref(patch);
            patch = NULL;
        }
    }
    add_status(p, patch);
    return 1;
}

/* Standalone, before step 4: Kueue's backoff after an eviction for a check
 * that asked for a delay. Until requeueState.requeueAt the quota gate
 * leaves the Workload out (gate.c) and this pass only comes back then;
 * once it is due, requeueAt is cleared and a Requeued False for the check
 * becomes True BackoffFinished (that write lets the gate see it again).
 * Returns 1 when it wrote. */
static int backoff(const struct rc_obs *o, struct rc_plan *p)
{
    const char *at_s = jx_str(o->wl, "status.requeueState.requeueAt");
    if (o->mode != RC_MODE_STANDALONE || !at_s || rc_wl_reserved(o->wl) || rc_wl_finished(o->wl))
        return 0;
    long long at = rc_parse_time_ms(at_s), now = rc_parse_time_ms(o->now);
    if (at > now) {
        requeue(p, (long)(at - now < 86400000LL ? at - now : 86400000LL));
        return 0;
    }
    json_t *patch = json_object();
    if (patch && jx_set(patch, "requeueState.requeueAt", json_null()) < 0) {
        json_decref(patch);
        patch = NULL;
    }
    json_t *rq = rc_cond_find(o->wl, "Requeued");
    const char *st = jx_str(rq, "status"), *reason = jx_str(rq, "reason");
    if (patch && st && strcmp(st, "False") == 0 && reason && strcmp(reason, "AdmissionCheck") == 0)
        set_conds(patch,
                  rc_conds_with(jx_get(o->wl, "status.conditions"), "Requeued", "True",
                                "BackoffFinished", "The workload backoff was finished", o->now));
    add_status(p, patch);
    return 1;
}

static int index_of(const struct rc_obs *o, const char *cluster)
{
    for (size_t i = 0; cluster && i < o->nremotes; i++)
        if (strcmp(o->remotes[i].cluster, cluster) == 0)
            return (int)i;
    return -1;
}

/* The earliest remote with condition `type`, among available ones; ties
 * spread by the Workload's UID (rc_earliest_true). */
static int earliest(const struct rc_obs *o, const char *type, const int *skip)
{
    json_t *wls[RC_MAX_CLUSTERS * 2];
    int ok[RC_MAX_CLUSTERS * 2];
    size_t n = o->nremotes < RC_MAX_CLUSTERS * 2 ? o->nremotes : RC_MAX_CLUSTERS * 2;
    for (size_t i = 0; i < n; i++) {
        wls[i] = o->remotes[i].wl;
        ok[i] = o->remotes[i].available && o->remotes[i].in_config && !(skip && skip[i]);
    }
    const char *uid = jx_str(o->wl, "metadata.uid");
    return rc_earliest_true(wls, ok, n, type, smap_hash(uid ? uid : ""));
}

static int other_checks_ready(const struct rc_obs *o)
{
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(o->wl, "status.admissionChecks"), i, c)
    {
        const char *name = jx_str(c, "name"), *st = jx_str(c, "state");
        if (name && strcmp(name, o->check) != 0 && (!st || strcmp(st, "Ready") != 0))
            return 0;
    }
    return 1;
}

/* Step 4/5 cleanup, then our finalizer off when nothing is left where we can see. */
static void cleanup(const struct rc_obs *o, struct rc_plan *p, int release_finalizer)
{
    int stranded = remove_all(o, p, -1, NULL);
    if (stranded)
        requeue(p, o->worker_lost_timeout_ms); /* GC also cleans them on return */
    if (release_finalizer && o->mode == RC_MODE_STANDALONE && rc_has_finalizer(o->wl, RC_FINALIZER))
        add(p, RC_ACT_REMOVE_FINALIZER, -1);
}

/* Before step 4: Kueue evicted the Workload or released its quota and stopped the
 * local job; once no copy of it runs anywhere, the job shows what the Job
 * controller would show for a stopped Job (rc_job_stopped_patch), so that
 * Kueue may restore its pod template and the Workload can be admitted again.
 * Not only while evicted: standalone, the quota gate may reserve quota again
 * in the very next pass, and a Workload waiting for its checks is not
 * admitted either (its job stays suspended); only an admitted one's job runs. */
static void stopped_job_status(const struct rc_obs *o, struct rc_plan *p)
{
    if (!o->managed_by_honoured || !o->job ||
        (!rc_wl_evicted(o->wl) && rc_wl_reserved(o->wl) && rc_wl_admitted(o->wl)))
        return;
    for (size_t i = 0; i < o->nremotes; i++)
        if (o->remotes[i].job)
            return;
    json_t *patch = rc_job_stopped_patch(o->kind, o->job, o->now);
    struct rc_act *a = patch ? add(p, RC_ACT_LOCAL_JOB_STATUS, -1) : NULL;
    if (a)
        a->patch = patch;
    else
        json_decref(patch);
}

/* Step 8: copy w won (its letters a to d are the README's). */
static void winner_branch(const struct rc_obs *o, struct rc_plan *p, int w, const char *state,
                          const int *drifted)
{
    const struct rc_remote *win = &o->remotes[w];
    snprintf(p->step, sizeof(p->step), "winner");
    /* a: persist the choice first (never two remote jobs) */
    if (!jx_str(o->wl, "status.clusterName")) {
        json_t *patch =
            json_pack("{s:s,s:n}", "clusterName", win->cluster, "nominatedClusterNames");
        add_status(p, patch);
    }
    /* evicted on the manager while the remote holds quota: the copy is
     * deactivated, its job's status still copied back */
    if (rc_wl_evicted(o->wl)) {
        snprintf(p->step, sizeof(p->step), "evicted-on-manager");
        if (!rc_cond_true(win->wl, "DeactivationTarget")) {
            struct rc_act *a = add(p, RC_ACT_DEACTIVATE_REMOTE, w);
            const char *m = jx_str(rc_cond_find(o->wl, "Evicted"), "message");
            if (a)
                buf_cut_fmt(a->message, sizeof(a->message), "Evicted on manager: %s", m ? m : "");
        }
        if (win->job)
            add(p, RC_ACT_SYNC_JOB_STATUS, w);
        remove_all(o, p, w, drifted); /* d, as below */
        return;
    }
    /* b: the remote job, once; then its status */
    add(p, win->job ? RC_ACT_SYNC_JOB_STATUS : RC_ACT_CREATE_REMOTE_JOB, w);
    /* c: Ready */
    if (strcmp(state, "Ready") != 0 && strcmp(state, "Retry") != 0 &&
        strcmp(state, "Rejected") != 0) {
        char msg[512];
        buf_cut_fmt(msg, sizeof(msg), "The workload got reservation on \"%s\"", win->cluster);
        json_t *patch = check_patch(o, "Ready", msg, 0);
        if (patch && o->mode == RC_MODE_STANDALONE) {
            /* Admitted = reserved and every check Ready */
            json_t *checks = json_object_get(patch, "admissionChecks");
            int all = 1;
            size_t i;
            json_t *c;
            json_array_foreach(checks, i, c)
            {
                const char *st = jx_str(c, "state");
                all = all && st && strcmp(st, "Ready") == 0;
            }
            if (all)
                set_conds(patch,
                          rc_conds_with(jx_get(o->wl, "status.conditions"), "Admitted", "True",
                                        "Admitted", "The workload is admitted", o->now));
        }
        add_status(p, patch);
        add_event(p, "Normal", "MultiKueue", msg);
        add(p, RC_ACT_COUNT_ADMITTED, w);
    }
    /* the local job may run (status shows) once the remote exists */
    if (o->mode == RC_MODE_STANDALONE && o->managed_by_honoured && o->job && o->kind &&
        o->kind->suspend_path && jx_bool(o->job, o->kind->suspend_path, 0)) {
        struct rc_act *a = add(p, RC_ACT_LOCAL_SUSPEND, -1);
        if (a)
            a->value = 0;
    }
    /* d: the losers go (drifted ones are already being removed). Last,
     * unlike Kueue, which removes them before the job: a job is only ever
     * created on status.clusterName, so a loser's copy (a Workload, never
     * a job) can wait, and a loser that does not answer then delays
     * neither the winner's job nor Ready (rc_act_run) */
    remove_all(o, p, w, drifted);
    /* then a periodic resync */
    requeue(p, o->worker_lost_timeout_ms < o->resync_ms ? o->worker_lost_timeout_ms : o->resync_ms);
}

/* A re-created copy that still differs (step 7): reported after the plan's
 * other steps, in report_drift. */
struct drift_report {
    int cluster; /* index into o->remotes, -1 = none */
    char path[RC_SPEC_PATH_MAX];
};

/* value 1 with the differing field's path (for the log), 0 with NULL. */
static void drift_mark(struct rc_plan *p, int cluster, int value, const char *path)
{
    struct rc_act *a = add(p, RC_ACT_DRIFT_MARK, cluster);
    if (!a)
        return;
    a->value = value;
    buf_cut_fmt(a->message, sizeof(a->message), "%s", path ? path : "");
}

/* Whether a status patch of the plan already writes admissionChecks: a
 * second one, built from the same observation, would undo it. */
static int plan_writes_checks(const struct rc_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->acts[i].type == RC_ACT_WL_STATUS &&
            json_object_get(p->acts[i].patch, "admissionChecks"))
            return 1;
    return 0;
}

/* The check's message names the first cluster whose re-created copy still
 * differs; its state stays as it is (the copy is kept and may win). When
 * this plan already changes the check, the report waits for the next pass. */
static void report_drift(const struct rc_obs *o, struct rc_plan *p, const struct drift_report *d)
{
    if (d->cluster < 0 || plan_writes_checks(p))
        return;
    char msg[sizeof(p->acts[0].message)];
    buf_cut_fmt(msg, sizeof(msg),
                "The copy on \"%s\" differs from this Workload after re-creation (%s); the "
                "worker's Workload schema may be older than the manager's",
                o->remotes[d->cluster].cluster, d->path);
    const char *cur = jx_str(rc_check_find(o->wl, o->check), "message");
    if (cur && strcmp(cur, msg) == 0)
        return;
    add_status(p, check_patch(o, check_state(o), msg, 0));
    add_event(p, "Warning", RC_REASON_DRIFT, msg);
}

/* Issue 13: the check's message says why a Pending Workload waits (why.h),
 * written only when it changes, with a rate-limited Event (the executor
 * limits those whose value names a step). quota: no reservation yet. */
static void explain(const struct rc_obs *o, struct rc_plan *p, int quota)
{
    if (!o->explain || strcmp(check_state(o), "Pending") != 0)
        return;
    const char *cur = jx_str(rc_check_find(o->wl, o->check), "message");
    char msg[RC_WHY_MAX];
    enum rc_why_step step = quota ? rc_why_quota(o->wl, cur, msg, sizeof(msg))
                                  : rc_why_dispatch(o, cur, msg, sizeof(msg));
    int said = cur && strcmp(cur, msg) == 0;
    /* the quota message is the gate's to write, in its own QuotaReserved
     * write (gate.c); its Event is told here (the executor's rate limit
     * keeps it to one per Workload and step in RC_WHY_EVENT_PERIOD_MS) */
    if (step == RC_WHY_NONE || (said && step != RC_WHY_QUOTA))
        return;
    if (!said)
        add_status(p, check_patch(o, "Pending", msg, 0));
    add_event(p, step == RC_WHY_NO_WORKER ? "Warning" : "Normal", RC_WHY_REASON, msg);
    if (p->n && p->acts[p->n - 1].type == RC_ACT_EVENT)
        p->acts[p->n - 1].value = (int)step;
}

/* 3 (cont.): a pod group lacking pods (a Failed one not replaced yet) says
 * so as Kueue's pod integration does, on the Workload's condition
 * WaitingForReplacementPods: True with Evicted's reason and message while
 * evicted, else PodsFailed; False PodsReady once none lacks, when it was
 * ever written. Standalone only: with Kueue on the manager, its pod
 * integration writes it. Written alone, and the pass ends there, as in
 * Kueue: the write's event brings the Workload back. Not on a finished
 * Workload (ours: its pods going away is no reason to write). Returns 1
 * when it wrote. */
static int replacement_pods(const struct rc_obs *o, struct rc_plan *p)
{
    if (o->mode != RC_MODE_STANDALONE || o->group_absent < 0 || rc_wl_finished(o->wl))
        return 0;
    json_t *c = rc_cond_find(o->wl, RC_COND_REPLACEMENT);
    const char *st = jx_str(c, "status"), *reason = "PodsReady";
    const char *msg = "No pods need replacement", *want = "False";
    if (o->group_absent > 0) {
        json_t *ev = rc_cond_find(o->wl, "Evicted");
        want = "True";
        if (rc_cond_true(o->wl, "Evicted")) {
            reason = jx_str(ev, "reason");
            msg = jx_str(ev, "message");
        } else if (st && strcmp(st, "True") == 0) {
            return 0; /* Kueue keeps whatever True it said */
        } else {
            reason = "PodsFailed";
            msg = "Some Failed pods need replacement";
        }
    } else if (!c) {
        return 0;
    }
    reason = reason ? reason : "";
    msg = msg ? msg : "";
    const char *cr = jx_str(c, "reason"), *cm = jx_str(c, "message");
    if (st && strcmp(st, want) == 0 && cr && strcmp(cr, reason) == 0 && cm && strcmp(cm, msg) == 0)
        return 0;
    json_t *patch = json_object();
    set_conds(patch, rc_conds_with(jx_get(o->wl, "status.conditions"), RC_COND_REPLACEMENT, want,
                                   reason, msg, o->now));
    snprintf(p->step, sizeof(p->step), "replacement-pods");
    add_status(p, patch);
    return 1;
}

/* Steps 1 to 4: what the Workload, its check and its job decide before any
 * copy is looked at. Returns 1 when the plan is complete. */
static int manager_steps(const struct rc_obs *o, struct rc_plan *p)
{
    json_t *wl = o->wl;
    int deleting = rc_wl_deleting(wl);

    /* 1: our check (none, or Rejected: nothing) */
    if (!o->check || !rc_check_find(wl, o->check)) {
        snprintf(p->step, sizeof(p->step), "no-check");
        if (deleting)
            cleanup(o, p, 1);
        return 1;
    }
    const char *state = check_state(o);
    if (strcmp(state, "Rejected") == 0) {
        snprintf(p->step, sizeof(p->step), "rejected");
        if (!deleting && o->mode == RC_MODE_STANDALONE && deactivate_rejected(o, p))
            return 1;
        if (deleting || !rc_wl_reserved(wl))
            cleanup(o, p, deleting);
        return 1;
    }
    /* 1 (cont.): every check, as Kueue's core (standalone) */
    if (!deleting && checks_evict(o, p))
        return 1;
    /* 2: adapter */
    if (!o->kind) {
        snprintf(p->step, sizeof(p->step), "no-adapter");
        char msg[512];
        if (o->owner_gvk)
            buf_cut_fmt(msg, sizeof(msg), "No multikueue adapter found for owner kind \"%s\"",
                        o->owner_gvk);
        else
            buf_cut_fmt(msg, sizeof(msg), "No multikueue adapter found");
        if (deleting)
            cleanup(o, p, 1);
        else
            reject(o, p, msg);
        return 1;
    }
    /* the owner job is gone: the Workload goes too (standalone; Kueue does it otherwise) */
    if (!deleting && o->job_gone && o->mode == RC_MODE_STANDALONE) {
        snprintf(p->step, sizeof(p->step), "owner-gone");
        add(p, RC_ACT_DELETE_WL, -1);
        return 1;
    }
    /* 2: managed */
    if (!deleting && o->job && !o->managed) {
        snprintf(p->step, sizeof(p->step), "not-managed");
        char msg[512];
        const char *v = mk_managed_by(o->kind, o->job);
        /* Kueue's adapters name spec.managedBy for every kind but MPIJob,
         * the Kubeflow v1 kinds included (their field is under runPolicy);
         * its generic adapter of external kinds .spec.managedBy */
        const char *path = strcmp(o->kind->kind, "MPIJob") == 0 ? "spec.runPolicy.managedBy"
                           : o->kind->external                  ? ".spec.managedBy"
                                                                : "spec.managedBy";
        buf_cut_fmt(msg, sizeof(msg),
                    "The owner is not managed by Kueue: Expecting %s to be \"%s\" not \"%s\"", path,
                    MK_MANAGED_BY, v ? v : "");
        reject(o, p, msg);
        return 1;
    }
    /* 3: deleted */
    if (deleting) {
        snprintf(p->step, sizeof(p->step), "deleted");
        cleanup(o, p, 1);
        return 1;
    }
    if (replacement_pods(o, p))
        return 1;
    stopped_job_status(o, p);
    int backed_off = backoff(o, p);
    /* 4: finished, or no quota */
    if (rc_wl_finished(wl) || !rc_wl_reserved(wl)) {
        snprintf(p->step, sizeof(p->step), rc_wl_finished(wl) ? "finished" : "no-reservation");
        cleanup(o, p, rc_wl_finished(wl));
        if (!rc_wl_finished(wl) && !backed_off)
            explain(o, p, 1); /* one status write per plan */
        return 1;
    }
    /* 4 (cont.): Kueue changes nothing when it cannot read the group: a missing
     * MultiKueueConfig is never a reason to evict (design.md invariant 14) */
    if (o->group_unknown) {
        snprintf(p->step, sizeof(p->step), "group-unknown");
        requeue(p, o->resync_ms);
        return 1;
    }
    return 0;
}

/* Once a cluster is recorded, only its copy speaks for the Workload: a
 * stale copy on a worker that came back must not finish or evict it; nor
 * does a copy already removed once for drift (same UID). Sets silent[i] for
 * each copy that does not speak. */
static void silent_copies(const struct rc_obs *o, int *silent)
{
    const char *cn = jx_str(o->wl, "status.clusterName");
    for (size_t i = 0; i < o->nremotes && i < RC_MAX_CLUSTERS * 2; i++) {
        const struct rc_remote *rr = &o->remotes[i];
        const char *uid = jx_str(rr->wl, "metadata.uid");
        silent[i] = (cn && strcmp(rr->cluster, cn) != 0) ||
                    (rr->drift_uid && uid && strcmp(rr->drift_uid, uid) == 0);
    }
}

/* Steps 5 and 6: a copy that finished or was evicted (before drift, as in
 * Kueue: a finished copy that also differs finishes the Workload). Returns
 * 1 when the plan is complete. */
static int remote_outcome(const struct rc_obs *o, struct rc_plan *p, const char *state,
                          const int *silent)
{
    json_t *wl = o->wl;
    const char *cn = jx_str(wl, "status.clusterName");
    /* 5: a remote finished */
    int r = earliest(o, "Finished", silent);
    if (r >= 0) {
        json_t *c = rc_cond_find(o->remotes[r].wl, "Finished");
        const char *reason = jx_str(c, "reason"), *msg = jx_str(c, "message");
        if (reason && strcmp(reason, "OutOfSync") == 0) {
            snprintf(p->step, sizeof(p->step), "remote-out-of-sync");
            if (strcmp(state, "Ready") == 0) {
                char m[512];
                snprintf(m, sizeof(m),
                         "Remote workload on worker cluster \"%s\" is out of sync with its user "
                         "job, resetting for re-dispatch",
                         o->remotes[r].cluster);
                retry(o, p, m, "Warning");
            }
            return 1;
        }
        snprintf(p->step, sizeof(p->step), "remote-finished");
        /* the final sync reads the job from the worker, not the cache: its
         * watch may lag behind the Workload's, or not show the job at all */
        struct rc_act *fin = add(p, RC_ACT_SYNC_JOB_STATUS, r);
        if (fin)
            fin->value = 1;
        json_t *conds = rc_conds_with(jx_get(wl, "status.conditions"), "Finished", "True",
                                      reason ? reason : "Succeeded", msg ? msg : "", o->now);
        add_status(p, conds ? json_pack("{s:o}", "conditions", conds) : NULL);
        return 1;
    }
    /* 6: a remote was evicted */
    r = earliest(o, "Evicted", silent);
    if (r < 0)
        return 0;
    if (rc_wl_evicted(wl)) {
        snprintf(p->step, sizeof(p->step), "both-evicted");
        if (o->remotes[r].job)
            add(p, RC_ACT_SYNC_JOB_STATUS, r);
        return 1;
    }
    if (strcmp(state, "Ready") != 0)
        return 0;
    snprintf(p->step, sizeof(p->step), "remote-evicted");
    char m[512];
    snprintf(m, sizeof(m),
             "Workload evicted on worker cluster: \"%s\", resetting for re-admission. "
             "Previously: \"%s\"",
             cn ? cn : o->remotes[r].cluster, state);
    retry(o, p, m, "Normal");
    return 1;
}

/* Step 7: spec drift, compared as Kueue compares (specdiff.h). A copy that
 * differs is removed once and re-created by step 10; when the re-created
 * copy (another UID) still differs, that is reported (rep) and the copy
 * kept: never a delete/re-create loop against a worker whose schema prunes
 * or defaults differently. Sets drifted[i] for each copy being removed. */
static void drift_scan(const struct rc_obs *o, struct rc_plan *p, struct drift_report *rep,
                       int *drifted)
{
    for (size_t i = 0; i < o->nremotes && i < RC_MAX_CLUSTERS * 2; i++) {
        const struct rc_remote *rr = &o->remotes[i];
        int prio_only;
        char path[RC_SPEC_PATH_MAX];
        if (!rr->available || !rr->wl || !rr->in_config)
            continue; /* a copy off the config goes in step 9 or 10, drift or not */
        if (rc_spec_equal(jx_get(o->wl, "spec"), jx_get(rr->wl, "spec"), &prio_only, path,
                          sizeof(path)) ||
            prio_only) {
            if (prio_only)
                add(p, RC_ACT_REMOTE_PRIORITY, (int)i);
            if (rr->drift_uid)
                drift_mark(p, (int)i, 0, NULL); /* the copy matches now */
            continue;
        }
        const char *uid = jx_str(rr->wl, "metadata.uid");
        if (!rr->drift_uid) {
            add(p, RC_ACT_REMOVE_REMOTE, (int)i);
            drift_mark(p, (int)i, 1, path); /* after the removal: only a done one counts */
            drifted[i] = 1;
        } else if (strcmp(rr->drift_uid, uid ? uid : "") == 0) {
            drifted[i] = 1; /* removed already; the cache still shows it */
        } else if (rep->cluster < 0) {
            rep->cluster = (int)i;
            snprintf(rep->path, sizeof(rep->path), "%s", path);
        }
    }
}

/* Step 8's choice: the recorded cluster's copy when admitted there, else
 * the first admitted copy; -1 when none. */
static int winner(const struct rc_obs *o, const int *drifted)
{
    const char *cn = jx_str(o->wl, "status.clusterName");
    if (!cn)
        return earliest(o, "Admitted", drifted);
    int i = index_of(o, cn);
    if (i >= 0 && o->remotes[i].available && o->remotes[i].in_config && !drifted[i] &&
        o->remotes[i].wl && rc_wl_admitted(o->remotes[i].wl))
        return i;
    return -1;
}

/* Step 9: the reservation is not visible. As in Kueue only for a Ready
 * check (a Retry is Kueue's to act on), and for mkueue's own Pending with a
 * recorded cluster (written just before the remote job). Returns 1 when the
 * plan is complete. */
static int reservation_lost(const struct rc_obs *o, struct rc_plan *p, const char *state,
                            const int *drifted)
{
    const char *cn = jx_str(o->wl, "status.clusterName");
    if (strcmp(state, "Ready") != 0 && !(cn && strcmp(state, "Pending") == 0))
        return 0;
    if (!cn) {
        snprintf(p->step, sizeof(p->step), "ready-without-cluster");
        retry(o, p,
              "Admission check is Ready but no admitting cluster is recorded; this is "
              "unexpected, please report it",
              "Warning");
        return 1;
    }
    int i = index_of(o, cn);
    if (i >= 0 && !o->remotes[i].available) {
        /* unreachable or unknown for now: likely still running there.
         * Only the worker-lost timeout, from the first observed loss,
         * lets it go elsewhere. */
        long long lost = o->remotes[i].lost_ms;
        if (lost < o->worker_lost_timeout_ms) {
            snprintf(p->step, sizeof(p->step), "worker-lost-waiting");
            requeue(p, (long)(o->worker_lost_timeout_ms - (lost > 0 ? lost : 0)));
            return 1;
        }
        snprintf(p->step, sizeof(p->step), "worker-lost");
        retry(o, p, "Reserving remote lost", "Normal");
        return 1;
    }
    if (i < 0) { /* not observed at all (more clusters than RC_MAX_CLUSTERS * 2) */
        snprintf(p->step, sizeof(p->step), "worker-lost");
        retry(o, p, "Reserving remote lost", "Normal");
        return 1;
    }
    /* reachable, and no admitted copy there (or it left the config):
     * what is left of the old copy goes first, so a new copy is only
     * made once the old one is known gone */
    snprintf(p->step, sizeof(p->step), "remote-gone");
    if (has_objects(&o->remotes[i]) && !drifted[i])
        add(p, RC_ACT_REMOVE_REMOTE, i);
    retry(o, p, "Reserving remote no longer exists or is not admitted", "Normal");
    return 1;
}

/* A rate-limited Event of data-aware dispatch (why.h tag "data"). */
static void data_event(struct rc_plan *p, const char *type, const char *msg)
{
    add_event(p, type, RC_REASON_DATA, msg);
    if (p->n && p->acts[p->n - 1].type == RC_ACT_EVENT)
        p->acts[p->n - 1].value = RC_WHY_DATA;
}

/* Data-aware dispatch (issue 13): the dispatcher's choice (new reference,
 * NULL when none) without the available workers that lack an object the
 * job references, while one of its choice has them all; when none has them
 * all, the choice as it is, and an Event says so. Only the dispatchers that
 * write the nominations are second-guessed (an External one is followed). */
static json_t *data_aware(const struct rc_obs *o, struct rc_plan *p)
{
    if (!o->nominated || !o->data_aware || !o->dispatcher_writes)
        return json_incref(o->nominated);
    int full = 0, lacking = 0;
    for (size_t i = 0; i < o->nremotes; i++) {
        const struct rc_remote *rr = &o->remotes[i];
        if (!rr->in_config || !rr->available || !rc_names_has(o->nominated, rr->cluster))
            continue;
        full += rr->lacks == 0;
        lacking += rr->lacks > 0;
    }
    if (!lacking)
        return json_incref(o->nominated);
    char msg[RC_WHY_MAX];
    size_t len = buf_cut_fmt(msg, sizeof(msg), "%s",
                             full ? "Not nominated, lacking what the job references: "
                                  : "No worker has every object the job references: ");
    json_t *out = json_array();
    size_t i;
    json_t *n;
    int told = 0;
    json_array_foreach(o->nominated, i, n)
    {
        const struct rc_remote *rr = NULL;
        for (size_t j = 0; j < o->nremotes; j++)
            if (o->remotes[j].in_config && strcmp(o->remotes[j].cluster, json_string_value(n)) == 0)
                rr = &o->remotes[j];
        int lacks = rr && rr->available && rr->lacks > 0;
        if (lacks)
            buf_cut_appendf(msg, sizeof(msg), &len, "%s%s: %s", told++ ? "; " : "", rr->cluster,
                            rr->lacks_what ? rr->lacks_what : "?");
        if (out && (!full || !lacks))
            json_array_append(out, n);
    }
    if (!full)
        buf_cut_appendf(msg, sizeof(msg), &len, "; dispatched as usual");
    data_event(p, full ? "Normal" : "Warning", msg);
    return out;
}

/* Step 10: Pending with no cluster: the dispatcher's nomination
 * (o->nominated, made by dispatchers.c before the plan) is written, copies
 * are created on the nominated clusters and removed elsewhere. */
static void nominate(const struct rc_obs *o, struct rc_plan *p, const struct drift_report *rep,
                     const char *state, const int *drifted)
{
    if (strcmp(state, "Pending") != 0) {
        snprintf(p->step, sizeof(p->step), "not-pending");
        return;
    }
    if (!other_checks_ready(o) || rc_wl_evicted(o->wl)) {
        snprintf(p->step, sizeof(p->step), "waiting-other-checks");
        return;
    }
    snprintf(p->step, sizeof(p->step), "nominate");
    json_t *chosen = data_aware(o, p);
    /* the copies first: a worker's Kueue admits while the manager is told
     * (Kueue writes the nominations first; these writes cost a dispatch a
     * manager round trip or two on the way to its job) */
    for (size_t i = 0; i < o->nremotes; i++) {
        const struct rc_remote *rr = &o->remotes[i];
        int nominated = rr->in_config && rc_names_has(chosen, rr->cluster);
        if (!rr->available || drifted[i])
            continue; /* a drifted copy is being removed; recreated next time */
        if (nominated && !rr->wl && !rr->job)
            add(p, RC_ACT_CREATE_REMOTE_WL, (int)i);
        else if ((!nominated && has_live_objects(rr)) || (nominated && !rr->wl && rr->job))
            add(p, RC_ACT_REMOVE_REMOTE, (int)i); /* not nominated, or an orphaned job */
    }
    /* then why it waits and the nominations, written even when a worker's
     * call failed (a drift report has the message; an Incremental round
     * starts once its nomination is written) */
    size_t told = p->n;
    if (rep->cluster < 0)
        explain(o, p, 0);
    json_t *cur = jx_get(o->wl, "status.nominatedClusterNames");
    if (o->dispatcher_writes && chosen && !rc_names_equal(cur, chosen)) {
        json_t *patch = json_object();
        if (patch)
            json_object_set(patch, "nominatedClusterNames", chosen);
        add_status(p, patch);
    }
    for (size_t i = told; i < p->n; i++)
        p->acts[i].independent = 1;
    json_decref(chosen);
    requeue(p, o->dispatcher_requeue_ms);
}

/* The steps of reconciler/README.md "The dispatch", in order; each returns
 * once it has decided. */
static void steps(const struct rc_obs *o, struct rc_plan *p, struct drift_report *rep)
{
    if (manager_steps(o, p)) /* 1 to 4 */
        return;
    const char *state = check_state(o);
    int silent[RC_MAX_CLUSTERS * 2] = {0};
    silent_copies(o, silent);
    if (remote_outcome(o, p, state, silent)) /* 5, 6 */
        return;
    int drifted[RC_MAX_CLUSTERS * 2] = {0};
    drift_scan(o, p, rep, drifted); /* 7 */
    int w = winner(o, drifted);     /* 8 */
    if (w >= 0) {
        winner_branch(o, p, w, state, drifted);
        return;
    }
    if (reservation_lost(o, p, state, drifted)) /* 9 */
        return;
    nominate(o, p, rep, state, drifted); /* 10 */
}

void rc_decide(const struct rc_obs *o, struct rc_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->requeue_ms = -1;
    struct drift_report rep = {.cluster = -1};
    steps(o, p, &rep);
    report_drift(o, p, &rep);
}
