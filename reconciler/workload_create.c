#include "workload_create.h"
#include "errf.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/podgroup.h"
#include "events.h"
#include "log.h"
#include "pack.h"
#include "podgroup.h"
#include "priority.h"
#include "quota.h"
#include "wlstatus.h"

static const char *LG = "workload";
static const struct kc_resource WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};

/* The Workload named wname in ns with owners and podsets (both stolen),
 * priority 0 and no priorityClassRef (rc_priority_apply sets them). */
static json_t *assemble(const char *ns, const char *wname, json_t *owners, json_t *podsets,
                        const char *queue, char *err, size_t errlen)
{
    json_t *wl = owners && podsets
                     ? json_pack("{s:s,s:s,s:{s:s,s:s,s:{},s:[s],s:o},s:{s:o,s:s,s:I,s:b}}",
                                 "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload",
                                 "metadata", "name", wname, "namespace", ns, "labels", "finalizers",
                                 RC_FINALIZER, "ownerReferences", owners, "spec", "podSets",
                                 podsets, "queueName", queue, "priority", 0, "active", 1)
                     : NULL;
    if (!wl) {
        if (!owners || !podsets) {
            json_decref(owners);
            json_decref(podsets);
        }
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return wl;
}

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
    json_t *wl =
        assemble(ns, wname,
                 json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", av, "kind", k->kind, "name",
                           name, "uid", uid, "controller", 1, "blockOwnerDeletion", 1),
                 podsets, queue, err, errlen);
    if (wl)
        jx_set_new_str(wl, "metadata.labels[" RC_JOB_UID "]", uid);
    return wl;
}

json_t *rc_build_group_workload(const json_t *pods, const char *queue, char *err, size_t errlen)
{
    json_t *first = json_array_get(pods, 0);
    const char *ns = jx_str(first, "metadata.namespace");
    const char *group = mk_pod_group_name(first);
    if (!ns || !group) {
        errf(err, errlen, MK_ERR_INVAL, "the pods have no namespace or group");
        return NULL;
    }
    json_t *podsets = mk_pod_group_pod_sets(pods, err, errlen);
    if (!podsets)
        return NULL;
    /* every pod owns it, none as its controller (Kueue's SetOwnerReference) */
    json_t *owners = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p)
    {
        const char *name = jx_str(p, "metadata.name"), *uid = jx_str(p, "metadata.uid");
        if (owners && name && uid &&
            json_array_append_new(owners, json_pack("{s:s,s:s,s:s,s:s}", "apiVersion", "v1", "kind",
                                                    "Pod", "name", name, "uid", uid)) < 0) {
            json_decref(owners);
            owners = NULL;
        }
    }
    json_t *wl = assemble(ns, group, owners, podsets, queue, err, errlen);
    if (wl && jx_set_new_str(wl, "metadata.annotations[" MK_IS_GROUP_WORKLOAD "]", "true") < 0) {
        json_decref(wl);
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return wl;
}

json_t *rc_initial_status(const json_t *checks, const char *reason, const char *message,
                          const char *now)
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
    json_t *conds = rc_conds_with(NULL, "QuotaReserved", "False", reason, message, now);
    return conds ? json_pack("{s:o,s:o}", "admissionChecks", list, "conditions", conds) : NULL;
}

/* A pod the webhook marked as a StatefulSet's (or LeaderWorkerSet's): its
 * owner's Workload covers it, so it has none of its own. */
static int owned_by_set(const json_t *pod)
{
    const char *p = jx_str(pod, "metadata.annotations[" MK_POD_SUSPENDING_PARENT "]");
    return p && (strcmp(p, "statefulset") == 0 ||
                 strcmp(p, "leaderworkerset.x-k8s.io/leaderworkerset") == 0);
}

/* The Workload of a job, or of a pod group when group (its pods) is given. */
static json_t *build(const struct mk_kind *k, const json_t *job, const json_t *group,
                     const char *queue, char *err, size_t errlen)
{
    if (group)
        return rc_build_group_workload(group, queue, err, errlen);
    return rc_build_workload(k, job, queue, err, errlen);
}

/* The job's own priority class (kinds.h priority_class_path), or NULL. */
static const char *job_class(const struct mk_kind *k, const json_t *job)
{
    return k->priority_class_path ? jx_str(job, k->priority_class_path) : NULL;
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
    if (rc_priority_resolve(label, job_class(k, job), jx_get(wl, "spec.podSets"), x->wpcs,
                            x->priorityclasses, &p, err, sizeof(err)) < 0) {
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
        rc_event_emit(x->events, obj, "Normal", "UpdatedWorkload", msg);
    json_decref(obj);
    return 0;
}

/* One Workload of a LeaderWorkerSet: replica `index`'s, as Kueue names and
 * annotates it (the component index and the owner, which the dispatch
 * reads to place every replica on one worker). */
static int as_component(json_t *wl, const json_t *lws, long long index, const char *wname)
{
    char idx[24], gvk[160], av[128];
    snprintf(idx, sizeof(idx), "%lld", index);
    mk_api_version(&mk_kind_leaderworkerset, av, sizeof(av));
    snprintf(gvk, sizeof(gvk), "%s, Kind=%s", av, mk_kind_leaderworkerset.kind);
    return jx_set_new_str(wl, "metadata.name", wname) < 0 ||
                   jx_set_new_str(wl, "metadata.annotations[" MK_COMPONENT_INDEX "]", idx) < 0 ||
                   jx_set_new_str(wl, "metadata.annotations[" MK_JOB_OWNER_GVK "]", gvk) < 0 ||
                   jx_set_new_str(wl, "metadata.annotations[" MK_JOB_OWNER_NAME "]",
                                  jx_str(lws, "metadata.name")) < 0
               ? -1
               : 0;
}

/* Deletes the pods of a group past its count, as Kueue's pod integration
 * does (cleanupExcessPods): past the total count before the group's
 * Workload wl exists (NULL), past each role's count after; takes them out
 * of group (deleted or not), so neither the Workload nor a worker gets them.
 * Returns 0 or -1 (retry). */
static int remove_excess(struct rc_ctx *x, const struct mk_kind *k, json_t *group, const char *ns,
                         const char *wname, const json_t *wl)
{
    json_t *excess = mk_pod_group_excess(group, wl ? jx_get(wl, "spec.podSets") : NULL);
    if (!excess)
        return -1;
    struct kc_resource res = mk_kind_resource(k);
    int rc = 0;
    size_t i;
    json_t *pod;
    json_array_foreach(excess, i, pod)
    {
        const char *name = jx_str(pod, "metadata.name");
        struct kc_status st;
        if (rc_wl_deleting(pod))
            continue;
        if (kc_delete(x->mgr, &res, ns, name, NULL, jx_str(pod, "metadata.uid"), &st) < 0 &&
            !kc_is_not_found(&st)) {
            LOG_W(LG, "excess pod of the group not deleted", "namespace", ns, "pod", name, "group",
                  wname, "error", st.message);
            rc = -1;
            continue;
        }
        LOG_I(LG, "excess pod of the group deleted", "namespace", ns, "pod", name, "group", wname);
    }
    rc_group_drop(group, excess);
    json_decref(excess);
    return rc;
}

/* Creates Workload wname of the job (of its pod group when group is given,
 * whose pods past the count go first: remove_excess; of replica `index` of a
 * LeaderWorkerSet when index >= 0) when missing, with its priority
 * (priority.h; its first status is the quota gate's); updates the priority
 * when the job's kueue.x-k8s.io/priority-class label changed. Returns 0 or
 * -1 (retry; a failed delete of an excess pod does not hold the Workload
 * back). */
static int ensure(struct rc_ctx *x, const struct mk_kind *k, const json_t *job, json_t *group,
                  long long index, const char *queue, const char *wname, const char *key)
{
    const char *ns = jx_str(job, "metadata.namespace");
    /* the job's WorkloadPriorityClass (a pod group's: its first pod's) */
    const char *label = jx_str(job, "metadata.labels[" RC_WPC_LABEL "]");
    json_t *wl = rc_cache_get_nsname(x->workloads, ns, wname), *created = NULL;
    int rc = group && remove_excess(x, k, group, ns, wname, wl) < 0 ? -1 : 0;
    if (!wl) {
        char err[256];
        json_t *obj = build(k, job, group, queue, err, sizeof(err));
        if (obj && index >= 0 && as_component(obj, job, index, wname) < 0) {
            json_decref(obj);
            obj = NULL;
            snprintf(err, sizeof(err), "out of memory");
        }
        if (!obj) {
            /* retrying will not help until the job (or a pod of its group) changes */
            if (group)
                LOG_I(LG, "no workload for the pod group yet", "pod", key, "error", err);
            else
                LOG_W(LG, "cannot build the workload of a job", "job", key, "error", err);
            return rc;
        }
        struct rc_priority p;
        if (rc_priority_resolve(label, job_class(k, job), jx_get(obj, "spec.podSets"), x->wpcs,
                                x->priorityclasses, &p, err, sizeof(err)) < 0 ||
            rc_priority_apply(obj, &p) < 0) {
            /* as Kueue: no Workload until the class exists (retried with backoff) */
            LOG_W(LG, "workload not created", "job", key, "error", err);
            json_decref(obj);
            return -1;
        }
        struct kc_status st;
        if (kc_create(x->mgr, &WORKLOADS, ns, obj, &created, &st) < 0) {
            json_decref(obj);
            if (!kc_is_already_exists(&st)) {
                LOG_W(LG, "workload not created", "job", key, "error", st.message);
                return -1;
            }
            return rc; /* an existing one comes through the cache */
        }
        json_decref(obj);
        LOG_I(LG, "workload created", "job", key, "workload", wname);
        wl = created;
    } else if (rc_priority_needs_update(wl, label) && update_priority(x, k, job, wl, label) < 0) {
        rc = -1;
    }
    json_decref(wl);
    return rc;
}

int rc_reconcile_job(struct rc_ctx *x, int ki, const char *key)
{
    const struct mk_kind *k = x->kinds[ki];
    json_t *job = rc_cache_get(x->jobs[ki], key);
    json_t *group = NULL;
    int rc = 0;
    if (!job || rc_wl_deleting(job))
        goto out;
    const char *ns = jx_str(job, "metadata.namespace");
    const char *queue = jx_str(job, "metadata.labels[" MK_QUEUE_LABEL "]");
    if (!ns || !queue)
        goto out;
    if (k->gating == MK_GATE_POD && owned_by_set(job)) {
        LOG_D(LG, "a pod of a StatefulSet: the set is dispatched whole", "pod", key);
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
    if (k == &mk_kind_leaderworkerset) {
        /* one Workload per replica (Kueue's leaderworkerset integration) */
        long long n = mk_lws_replicas(job);
        if (n < 0)
            LOG_W(LG, "cannot build the workloads of a LeaderWorkerSet", "job", key, "error",
                  "spec.replicas must be an integer from 0 to 1000");
        for (long long i = 0; i < n && mk_lws_workload_name(job, i, wname, sizeof(wname)) == 0; i++)
            if (ensure(x, k, job, NULL, i, queue, wname, key) < 0)
                rc = -1;
        rc_enqueue(x, 'q', cq);
        goto out;
    }
    if (mk_job_workload_name(k, job, wname, sizeof(wname)) < 0)
        goto out;
    /* a pod of a group: the group's Workload, once every pod exists */
    if (k->gating == MK_GATE_POD && mk_pod_group_name(job) &&
        !(group = rc_group_pods(x->jobs[ki], ns, mk_pod_group_name(job)))) {
        rc = -1;
        goto out;
    }
    rc = ensure(x, k, job, group, -1, queue, wname, key);
    rc_enqueue(x, 'q', cq);
out:
    json_decref(group);
    json_decref(job);
    return rc;
}
