#include "workload_create.h"
#include "errf.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "log.h"
#include "events.h"
#include "pack.h"
#include "priority.h"
#include "quota.h"
#include "wlstatus.h"

static const char *LG = "workload";
static const struct kc_resource WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};

json_t *rc_build_workload(const struct mk_kind *k, const json_t *job, const char *queue, char *err,
                          size_t errlen)
{
    const char *ns = jx_str(job, "metadata.namespace");
    const char *name = jx_str(job, "metadata.name");
    const char *uid = jx_str(job, "metadata.uid");
    char wname[320], av[128];
    if (!ns || !name || !uid ||
        mk_workload_name(k->kind, k->group, name, uid, wname, sizeof(wname)) < 0) {
        errf(err, errlen, MK_ERR_INVAL, "the job has no namespace, name or uid");
        return NULL;
    }
    json_t *podsets = mk_pod_sets(k, job, err, errlen);
    if (!podsets)
        return NULL;
    mk_api_version(k, av, sizeof(av));
    json_t *wl = json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:{s:s},s:[s],s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:{s:o,s:s,s:I,s:b}}",
        "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name", wname,
        "namespace", ns, "labels", RC_JOB_UID, uid, "finalizers", RC_FINALIZER, "ownerReferences",
        "apiVersion", av, "kind", k->kind, "name", name, "uid", uid, "controller", 1,
        "blockOwnerDeletion", 1, "spec", "podSets", podsets, "queueName", queue, "priority", 0,
        "active", 1);
    if (!wl) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return wl;
}

json_t *rc_initial_status(const json_t *checks, const char *now)
{
    json_t *list = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c)
    {
        if (!list || !json_is_string(c))
            continue;
        json_array_append_new(list, json_pack("{s:O,s:s,s:s,s:s}", "name", c, "state", "Pending",
                                              "message", "", "lastTransitionTime", now));
    }
    if (!list)
        return NULL;
    json_t *conds = rc_conds_with(NULL, "QuotaReserved", "False", "PendingEvaluation",
                                  "Waiting for the quota gate", now);
    return conds ? json_pack("{s:o,s:o}", "admissionChecks", list, "conditions", conds) : NULL;
}

static int init_status(struct rc_ctx *x, json_t *wl, const char *cq)
{
    if (jx_get(wl, "status.admissionChecks"))
        return 0;
    json_t *cqo = kcache_get(x->clusterqueues, cq);
    /* before admission only the checks on every flavor (onFlavors, as Kueue) */
    json_t *checks = cqo ? rc_checks_for_workload(cqo, NULL) : json_array();
    char now[32];
    rc_now_rfc3339(now);
    json_t *status = rc_initial_status(checks, now);
    json_decref(checks);
    json_decref(cqo);
    json_t *body = status ? json_pack("{s:{s:s?},s:o}", "metadata", "resourceVersion",
                                      jx_str(wl, "metadata.resourceVersion"), "status", status)
                          : NULL;
    struct kc_status st;
    int rc = body ? kc_patch(x->mgr, &WORKLOADS, jx_str(wl, "metadata.namespace"),
                             jx_str(wl, "metadata.name"), "status", KC_PATCH_MERGE, body, NULL,
                             NULL, &st)
                  : -1;
    json_decref(body);
    if (rc < 0 && body)
        LOG_I(LG, "initial workload status not written", "workload", jx_str(wl, "metadata.name"),
              "error", st.message);
    return rc < 0 ? -1 : 0;
}

/* Creates the job's Workload with its priority resolved (priority.h).
 * Returns the created object (new reference), or NULL with *rc = -1 when a
 * retry may help (a missing priority class, a failed create). */
static json_t *create_workload(struct rc_ctx *x, const struct mk_kind *k, const json_t *job,
                               const char *key, const char *queue, const char *label, int *rc)
{
    char err[256];
    struct rc_priority p;
    json_t *obj = rc_build_workload(k, job, queue, err, sizeof(err)), *created = NULL;
    if (!obj) {
        LOG_W(LG, "cannot build the workload of a job", "job", key, "error", err);
        return NULL; /* retrying will not help until the job changes */
    }
    if (rc_priority_resolve(label, jx_get(obj, "spec.podSets"), x->wpcs, x->priorityclasses, &p,
                            err, sizeof(err)) < 0 ||
        rc_priority_apply(obj, &p) < 0) {
        /* as Kueue: no Workload until the class exists (retried with backoff) */
        LOG_W(LG, "workload not created", "job", key, "error", err);
        json_decref(obj);
        *rc = -1;
        return NULL;
    }
    struct kc_status st;
    if (kc_create(x->mgr, &WORKLOADS, jx_str(job, "metadata.namespace"), obj, &created, &st) < 0) {
        if (!kc_is_already_exists(&st)) {
            LOG_W(LG, "workload not created", "job", key, "error", st.message);
            *rc = -1;
        }
        json_decref(obj);
        return NULL; /* an existing one comes through the cache */
    }
    LOG_I(LG, "workload created", "job", key, "workload", jx_str(obj, "metadata.name"));
    json_decref(obj);
    return created;
}

/* The job's kueue.x-k8s.io/priority-class label changed: the Workload's
 * priority follows (Kueue's UpdateWorkloadPriority), with its Event on the
 * job. Returns 0 or -1 (retry: the class missing, a conflict). */
static int update_priority(struct rc_ctx *x, const struct mk_kind *k, const json_t *job,
                           const json_t *wl, const char *label)
{
    char err[256], av[128], msg[400];
    const char *ns = jx_str(wl, "metadata.namespace"), *name = jx_str(wl, "metadata.name");
    struct rc_priority p;
    if (rc_priority_resolve(label, jx_get(wl, "spec.podSets"), x->wpcs, x->priorityclasses, &p, err,
                            sizeof(err)) < 0) {
        LOG_W(LG, "workload priority not updated", "workload", name, "error", err);
        return -1;
    }
    json_t *body = rc_priority_patch(&p, jx_str(wl, "metadata.resourceVersion"));
    struct kc_status st;
    int rc =
        body ? kc_patch(x->mgr, &WORKLOADS, ns, name, NULL, KC_PATCH_MERGE, body, NULL, NULL, &st)
             : -1;
    json_decref(body);
    if (rc < 0) {
        LOG_W(LG, "workload priority not updated", "workload", name, "error",
              body ? st.message : "out of memory");
        return -1;
    }
    LOG_I(LG, "workload priority updated", "workload", name, "class", p.name);
    mk_api_version(k, av, sizeof(av));
    snprintf(msg, sizeof(msg), "Updated workload priority class: %s/%s", ns, name);
    json_t *obj = json_pack("{s:s,s:s,s:O?}", "apiVersion", av, "kind", k->kind, "metadata",
                            jx_get(job, "metadata"));
    if (obj)
        rc_event_emit(x->mgr, obj, "Normal", "UpdatedWorkload", msg);
    json_decref(obj);
    return 0;
}

int rc_reconcile_job(struct rc_ctx *x, int ki, const char *key)
{
    const struct mk_kind *k = x->kinds[ki];
    json_t *job = rc_cache_get(x->jobs[ki], key);
    json_t *wl = NULL, *created = NULL;
    int rc = 0;
    if (!job || rc_wl_deleting(job))
        goto out;
    const char *ns = jx_str(job, "metadata.namespace");
    const char *queue = jx_str(job, "metadata.labels[" MK_QUEUE_LABEL "]");
    if (!ns || !queue)
        goto out;
    if (k->gating == MK_GATE_POD && jx_str(job, "metadata.labels[" MK_POD_GROUP_LABEL "]")) {
        /* one pod of a group alone would split the group (the webhook refuses them) */
        LOG_W(LG, "pod groups are not dispatched yet: no Workload", "pod", key);
        goto out;
    }
    struct mkq_resolution res;
    char msg[300];
    int r = mkq_resolve(&x->q, ns, queue, &res, msg, sizeof(msg));
    char cq[254];
    snprintf(cq, sizeof(cq), "%s", res.cluster_queue);
    mkq_resolution_clear(&res);
    if (r != MKQ_MULTIKUEUE) {
        LOG_D(LG, "job not dispatched through MultiKueue", "job", key, "why",
              r == MKQ_LOCAL ? "its ClusterQueue has no MultiKueue check" : msg);
        goto out;
    }
    char wname[320];
    if (mk_workload_name(k->kind, k->group, jx_str(job, "metadata.name"),
                         jx_str(job, "metadata.uid"), wname, sizeof(wname)) < 0)
        goto out;
    wl = rc_cache_get_nsname(x->workloads, ns, wname);
    const char *label = jx_str(job, "metadata.labels[" RC_WPC_LABEL "]");
    if (!wl) {
        created = create_workload(x, k, job, key, queue, label, &rc);
        if (!created)
            goto out;
        wl = json_incref(created);
    } else if (rc_priority_needs_update(wl, label) && update_priority(x, k, job, wl, label) < 0) {
        rc = -1;
    }
    if (init_status(x, wl, cq) < 0)
        rc = -1;
    rc_enqueue(x, 'q', cq);
out:
    json_decref(created);
    json_decref(wl);
    json_decref(job);
    return rc;
}
