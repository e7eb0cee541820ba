/* Mutation, as Kueue's defaulting (docs/multikueue-compat.md 5.2) restricted to what
 * MultiKueue needs: the default LocalQueue label, then for a job whose queue
 * leads to a MultiKueue AdmissionCheck: managedBy and suspend, the Pod
 * scheduling gate and managed label (and a grouped pod's role hash), or the
 * pod-template marks. Only these
 * paths are ever patched; applying our own output again gives no patch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "jsonx.h"
#include "kinds/podgroup.h"
#include "kinds/podset.h"
#include "patch.h"

#define MAX_SEGS 16

/* Splits a plain dotted jsonx path ("spec.runPolicy.managedBy") into segs
 * pointing into buf. Returns the count, or -1 when it does not fit. */
static int split_path(const char *path, char *buf, size_t buflen, const char **segs)
{
    if (snprintf(buf, buflen, "%s", path) >= (int)buflen)
        return -1;
    int n = 0;
    for (char *next = buf, *s; (s = strsep(&next, ".")) != NULL;) {
        if (!*s)
            continue;
        if (n == MAX_SEGS)
            return -1;
        segs[n++] = s;
    }
    return n;
}

/* Sets the value at a dotted path (value stolen). Returns 0 or -1. */
static int set_dotted(struct jp *p, const char *path, json_t *value)
{
    char buf[256];
    const char *segs[MAX_SEGS];
    int n = split_path(path, buf, sizeof(buf), segs);
    if (n <= 0) {
        json_decref(value);
        return -1;
    }
    return jp_set_path(p, segs, (size_t)n, value);
}

/* A controller owner that is itself a job kind with managedBy: the owner is
 * what gets dispatched, never its children (Kueue's "managed ancestor"). */
static int owned_by_job(const json_t *obj)
{
    size_t i;
    json_t *ref;
    json_array_foreach(jx_get(obj, "metadata.ownerReferences"), i, ref)
    {
        if (!json_is_true(json_object_get(ref, "controller")))
            continue;
        const struct mk_kind *k = mk_kind_by_gvk(jx_str(ref, "apiVersion"), jx_str(ref, "kind"));
        if (k && k->gating == MK_GATE_MANAGED_BY)
            return 1;
    }
    return 0;
}

/* Kueue's framework names, written into the pod-suspending-parent annotation. */
static const char *framework_of(const struct mk_kind *k)
{
    if (strcmp(k->kind, "Deployment") == 0)
        return "deployment";
    if (strcmp(k->kind, "StatefulSet") == 0)
        return "statefulset";
    if (strcmp(k->kind, "LeaderWorkerSet") == 0)
        return "leaderworkerset.x-k8s.io/leaderworkerset";
    return k->resource;
}

/* The pod templates of a POD_TEMPLATE kind, as path segments. */
static size_t templates_of(const struct mk_kind *k, const json_t *obj, const char *out[][4])
{
    if (strcmp(k->kind, "LeaderWorkerSet") == 0) {
        static const char *const leader[] = {"spec", "leaderWorkerTemplate", "leaderTemplate"};
        static const char *const worker[] = {"spec", "leaderWorkerTemplate", "workerTemplate"};
        size_t n = 0;
        if (json_is_object(jx_get(obj, "spec.leaderWorkerTemplate.leaderTemplate")))
            memcpy(out[n++], leader, sizeof(leader));
        memcpy(out[n++], worker, sizeof(worker));
        return n;
    }
    out[0][0] = "spec";
    out[0][1] = "template";
    return 1;
}

static int mark_template(struct jp *p, const struct mk_kind *k, const json_t *obj,
                         const char *queue)
{
    const char *tpl[2][4] = {{0}};
    size_t n = templates_of(k, obj, tpl);
    for (size_t i = 0; i < n; i++) {
        size_t d = tpl[i][2] ? 3 : 2;
        const char *segs[7];
        memcpy(segs, tpl[i], d * sizeof(*segs));
        segs[d] = "metadata";
        segs[d + 1] = "labels";
        segs[d + 2] = MK_QUEUE_LABEL;
        if (jp_set_path(p, segs, d + 3, json_string(queue)) < 0)
            return -1;
        segs[d + 2] = MK_MANAGED_LABEL;
        if (jp_set_path(p, segs, d + 3, json_string("true")) < 0)
            return -1;
        segs[d + 1] = "annotations";
        segs[d + 2] = MK_POD_SUSPENDING_PARENT;
        if (jp_set_path(p, segs, d + 3, json_string(framework_of(k))) < 0)
            return -1;
    }
    return 0;
}

/* The kind's way of keeping a MultiKueue job from running on the manager. */
static int gate(struct jp *p, const struct mk_kind *k, const json_t *obj, const char *queue,
                struct wh_verdict *v)
{
    switch (k->gating) {
    case MK_GATE_MANAGED_BY: {
        if (!k->managed_by_path)
            return 0;
        const char *cur = mk_managed_by(k, obj);
        if (cur && strcmp(cur, MK_MANAGED_BY) != 0 &&
            !(k->native_controller && strcmp(cur, k->native_controller) == 0)) {
            wh_verdict_warn(v,
                            "%s is %s: the job is left to that controller and is not dispatched "
                            "by MultiKueue",
                            k->managed_by_path, cur);
            return 0;
        }
        if (set_dotted(p, k->managed_by_path, json_string(MK_MANAGED_BY)) < 0)
            return -1;
        if (k->suspend_path && set_dotted(p, k->suspend_path, json_true()) < 0)
            return -1;
        return 0;
    }
    case MK_GATE_POD:
        /* a pod of a group carries its role, as Kueue's webhook writes it */
        if (mk_pod_group_name(obj) &&
            !jx_str(obj, "metadata.annotations[" MK_ROLE_HASH_ANNOTATION "]")) {
            char role[MK_ROLE_HASH_LEN + 1];
            if (mk_role_hash_of_spec(jx_get(obj, "spec"), role) < 0 ||
                jp_set(p, json_string(role), "metadata", "annotations", MK_ROLE_HASH_ANNOTATION) <
                    0)
                return -1;
        }
        if (!mk_pod_has_admission_gate(obj) &&
            jp_append(p, json_pack("{s:s}", "name", MK_ADMISSION_GATE), "spec", "schedulingGates") <
                0)
            return -1;
        return jp_set(p, json_string("true"), "metadata", "labels", MK_MANAGED_LABEL);
    case MK_GATE_POD_TEMPLATE:
        return mark_template(p, k, obj, queue);
    }
    return 0;
}

int wh_mutate(const struct wh_ctx *c, const struct mk_kind *k, const struct wh_review *r,
              struct wh_verdict *v)
{
    const json_t *obj = r->object;
    int create = r->op == WH_CREATE;
    /* Templates are re-marked on update (a rollout must keep its pods gated);
     * other kinds are mutated at creation only. */
    if (!obj || r->sub_resource[0] ||
        !(create || (r->op == WH_UPDATE && k->gating == MK_GATE_POD_TEMPLATE)))
        return 0;
    if (jx_get(obj, "metadata.deletionTimestamp") || owned_by_job(obj))
        return 0;
    const char *queue = wh_queue_label(obj);
    if (!queue && !create)
        return 0;
    /* Unlabelled: allowed untouched until the caches sync, whatever the
     * namespace's default LocalQueue would say. A denial ignores
     * failurePolicy, so it would block every pod the registration selects
     * (the webhook's own restart included); a labelled object waits. */
    if (!queue && !wh_ctx_synced(c))
        return 0;
    if (!wh_ctx_synced(c)) {
        wh_deny_not_synced(v);
        return 0;
    }
    int add_default = 0;
    if (!queue) {
        json_t *lq = kcache_get_nsname(c->q.localqueues, r->ns, "default");
        if (!lq)
            return 0;
        json_decref(lq);
        queue = "default";
        add_default = 1;
    }
    if (!wh_dns1123_subdomain(queue))
        return 0; /* validation refuses it */

    int rc = -1;
    struct mkq_resolution res;
    char msg[512];
    int q = mkq_resolve(&c->q, r->ns, queue, &res, msg, sizeof(msg));
    struct jp *p = jp_new(obj);
    if (!p)
        goto out;
    if (add_default && jp_set(p, json_string(queue), "metadata", "labels", MK_QUEUE_LABEL) < 0)
        goto shape;
    if (q == MKQ_MULTIKUEUE && gate(p, k, obj, queue, v) < 0)
        goto shape;
    v->patch = jp_ops(p);
    rc = v->patch ? 0 : -1;
    goto out;
shape:
    /* A scalar where an object must be: the apiserver's own validation would
     * refuse the object anyway; say where. */
    wh_verdict_deny(v, "malformed_object",
                    "%s %s/%s cannot be defaulted: an unexpected type in "
                    "metadata.labels, spec or the pod template",
                    k->kind, r->ns, r->name);
    rc = 0;
out:
    if (rc < 0 && v->allowed)
        wh_verdict_deny(v, "internal", "mkueue-webhook: out of memory");
    jp_free(p);
    mkq_resolution_clear(&res);
    return rc;
}
