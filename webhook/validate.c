/* Validation: the queue label is a DNS-1123 subdomain; its LocalQueue exists
 * on the manager; for a MultiKueue queue, the namespace and a LocalQueue of
 * the same name exist on every connected worker of the MultiKueueConfig; the
 * queue label and managedBy do not change under a dispatched or running job.
 *
 * Workers that are not connected (or whose MultiKueueCluster is missing) are
 * skipped with a warning: stale data never denies a job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "jsonx.h"
#include "kinds/podgroup.h"
#include "kinds/podset.h"

#define DNS1123_MSG                                                                                \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

static int str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Kubernetes' bookkeeping fields, which change on every write. */
static json_t *without_bookkeeping(const json_t *obj)
{
    json_t *c = json_deep_copy(obj);
    json_t *meta = json_object_get(c, "metadata");
    static const char *const drop[] = {"finalizers", "resourceVersion", "managedFields",
                                       "generation"};
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
        json_object_del(meta, drop[i]);
    return c;
}

static int contains_str(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (str_eq(json_string_value(v), s))
            return 1;
    }
    return 0;
}

/* 1 when the update only removes finalizers. */
static int only_removes_finalizers(const json_t *old, const json_t *new)
{
    json_t *of = jx_get(old, "metadata.finalizers");
    json_t *nf = jx_get(new, "metadata.finalizers");
    if (json_array_size(nf) >= json_array_size(of))
        return 0;
    size_t i;
    json_t *v;
    json_array_foreach(nf, i, v)
    {
        if (!contains_str(of, json_string_value(v)))
            return 0;
    }
    json_t *a = without_bookkeeping(old), *b = without_bookkeeping(new);
    int eq = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return eq;
}

/* "Dispatched or running", per gating: a suspendable kind that is not
 * suspended; a managedBy kind without suspend that is ours; a Pod without
 * our scheduling gate; a pod-template kind with ready replicas. */
static int running(const struct mk_kind *k, const json_t *old)
{
    switch (k->gating) {
    case MK_GATE_MANAGED_BY:
        if (k->suspend_path)
            return !json_is_true(jx_get(old, k->suspend_path));
        return mk_is_managed(k, old);
    case MK_GATE_POD:
        return !mk_pod_has_admission_gate(old);
    case MK_GATE_POD_TEMPLATE:
        return jx_int(old, "status.readyReplicas", 0) > 0;
    }
    return 1;
}

/* Preflight (issue 13): a warning per object the job's pod templates need
 * that worker cl lacks. Never a denial: the object may be made later. */
static void preflight(const struct wh_ctx *c, const struct wh_review *r, const char *cl,
                      const struct mk_refs *refs, struct wh_verdict *v)
{
    for (size_t i = 0; i < refs->n; i++) {
        const struct mk_ref *f = &refs->v[i];
        if (c->workers.has_object(c->workers.ud, cl, f->kind, r->ns, f->name) == 0)
            wh_verdict_warn(v, "%s %s/%s does not exist on %s", mk_ref_kind_name(f->kind), r->ns,
                            f->name, cl);
    }
}

/* Kueue's validatePodGroupMetadata: the group label and the total count
 * annotation come together, the count a positive integer. 0 when denied. */
static int pod_group_valid(const json_t *pod, struct wh_verdict *v)
{
    const char *total = jx_str(pod, "metadata.annotations[" MK_POD_GROUP_TOTAL_ANNOTATION "]");
    const char *group = mk_pod_group_name(pod);
    char err[256];
    if (!group && !total)
        return 1;
    if (!group || !total) {
        wh_verdict_deny(v, "invalid_pod_group",
                        "metadata.%s: Required value: both the '%s' annotation and the '%s' "
                        "label should be set",
                        group ? "annotations[" MK_POD_GROUP_TOTAL_ANNOTATION "]"
                              : "labels[" MK_POD_GROUP_LABEL "]",
                        MK_POD_GROUP_TOTAL_ANNOTATION, MK_POD_GROUP_LABEL);
        return 0;
    }
    if (mk_pod_group_total(pod, err, sizeof(err)) < 0) {
        wh_verdict_deny(v, "invalid_pod_group",
                        "metadata.annotations[" MK_POD_GROUP_TOTAL_ANNOTATION
                        "]: Invalid value: \"%.40s\": %s",
                        total, err);
        return 0;
    }
    return 1;
}

/* Checks the workers of a MultiKueue queue; denies naming every missing object. */
static int check_workers(const struct wh_ctx *c, const struct mk_kind *k, const struct wh_review *r,
                         const char *queue, const struct mkq_resolution *res, struct wh_verdict *v)
{
    if (!res->clusters) {
        wh_verdict_warn(v, "AdmissionCheck %s: %s; the workers were not checked",
                        res->admission_check, res->config_error);
        return 0;
    }
    struct buf missing;
    buf_init(&missing, BUF_CAP_MESSAGE);
    struct mk_refs refs; /* ~17 KB: the server threads' stacks have room */
    int pre = c->workers.has_object && mk_pod_refs(k, r->object, &refs) == 0;
    size_t i;
    json_t *name;
    json_array_foreach(res->clusters, i, name)
    {
        const char *cl = json_string_value(name);
        json_t *mkc = kcache_get(c->q.clusters, cl);
        if (!mkc) {
            wh_verdict_warn(v, "MultiKueueCluster %s does not exist; not checked", cl);
            continue;
        }
        json_decref(mkc);
        int has_ns = 0, has_lq = 0;
        char why[128] = "";
        int st = c->workers.check ? c->workers.check(c->workers.ud, cl, r->ns, queue, &has_ns,
                                                     &has_lq, why, sizeof(why))
                                  : WH_WORKER_UNKNOWN;
        if (st != WH_WORKER_READY) {
            wh_verdict_warn(v,
                            "worker %s is not connected (%s): namespace %s and LocalQueue %s "
                            "were not checked there",
                            cl, why[0] ? why : "no connection", r->ns, queue);
            continue;
        }
        const char *sep = missing.len ? "; " : "";
        if (!has_ns)
            buf_printf(&missing, "%snamespace %s does not exist on %s", sep, r->ns, cl);
        else if (!has_lq)
            buf_printf(&missing, "%sLocalQueue %s/%s does not exist on %s", sep, r->ns, queue, cl);
        else if (pre)
            preflight(c, r, cl, &refs, v);
    }
    if (missing.len)
        wh_verdict_deny(v, "worker_precondition",
                        "%s %s/%s cannot be dispatched by MultiKueue (AdmissionCheck %s): %s%s",
                        r->kind, r->ns, r->name[0] ? r->name : "(generated name)",
                        res->admission_check, buf_cstr(&missing), buf_ok(&missing) ? "" : " ...");
    buf_free(&missing);
    return v->allowed || v->message ? 0 : -1;
}

int wh_validate(const struct wh_ctx *c, const struct mk_kind *k, const struct wh_review *r,
                struct wh_verdict *v)
{
    const json_t *obj = r->object, *old = r->old_object;
    if (!obj || r->sub_resource[0] || (r->op != WH_CREATE && r->op != WH_UPDATE))
        return 0;
    const char *queue = wh_queue_label(obj);
    if (r->op == WH_UPDATE) {
        if (jx_get(old, "metadata.deletionTimestamp") || only_removes_finalizers(old, obj))
            return 0;
        const char *old_queue = wh_queue_label(old);
        if (!str_eq(queue, old_queue) && running(k, old)) {
            wh_verdict_deny(v, "immutable",
                            "metadata.labels[" MK_QUEUE_LABEL "]: Invalid value: \"%s\": field is "
                            "immutable while the %s is dispatched or running",
                            queue ? queue : "", k->kind);
            return 0;
        }
        if (k->managed_by_path && !str_eq(mk_managed_by(k, obj), mk_managed_by(k, old)) &&
            running(k, old)) {
            const char *mb = mk_managed_by(k, obj);
            wh_verdict_deny(v, "immutable",
                            "%s: Invalid value: \"%s\": field is immutable while the %s is "
                            "dispatched or running",
                            k->managed_by_path, mb ? mb : "", k->kind);
            return 0;
        }
        /* Preconditions were checked when the queue was set. */
        if (str_eq(queue, old_queue))
            return 0;
    }
    if (!queue)
        return 0;
    if (!wh_dns1123_subdomain(queue)) {
        wh_verdict_deny(v, "invalid_queue_name",
                        "metadata.labels[" MK_QUEUE_LABEL "]: Invalid value: \"%.300s\": %s", queue,
                        DNS1123_MSG);
        return 0;
    }
    if (r->op == WH_CREATE && k->gating == MK_GATE_POD && !pod_group_valid(obj, v))
        return 0;
    if (!wh_ctx_synced(c)) {
        wh_deny_not_synced(v);
        return 0;
    }
    struct mkq_resolution res;
    char msg[512];
    int q = mkq_resolve(&c->q, r->ns, queue, &res, msg, sizeof(msg));
    int rc = 0;
    if (q == MKQ_NO_LOCALQUEUE)
        wh_verdict_deny(v, "localqueue_not_found", "%s (%s " MK_QUEUE_LABEL "=%s)", msg, k->kind,
                        queue);
    else if (q == MKQ_NO_CLUSTERQUEUE)
        wh_verdict_deny(v, "clusterqueue_not_found", "%s", msg);
    else if (q == MKQ_MULTIKUEUE)
        rc = check_workers(c, k, r, queue, &res, v);
    mkq_resolution_clear(&res);
    return rc;
}
