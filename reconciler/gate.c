#include "gate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "echo.h"
#include "events.h"
#include "gate_index.h"
#include "jsonx.h"
#include "log.h"
#include "pack.h"
#include "qstatus.h"
#include "quantity.h"
#include "why.h"
#include "wlstatus.h"
#include "workload_create.h"

static const char *LG = "gate";
static const struct kc_resource WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};
static const struct kc_resource CQS = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0};
static const struct kc_resource LQS = {"kueue.x-k8s.io", "v1beta2", "localqueues", 1};

#define ASSUME_MAX_MS 60000 /* an unseen write is trusted this long at most */

struct rc_assumed {
    long long rv;
    int reserved;
    long long at_ms;
};

/* status.admissionChecks once `admission` is set: the checks of cqo that
 * apply to its flavors (rc_checks_for_workload), states kept, new ones
 * Pending, as Kueue's workload controller syncs them. */
static json_t *checks_after(const json_t *wl, const json_t *cqo, const json_t *admission,
                            const char *now)
{
    json_t *names = rc_checks_for_workload(cqo, admission);
    json_t *out = json_array();
    size_t i;
    json_t *v;
    if (!names || !out)
        goto fail;
    json_array_foreach(names, i, v)
    {
        json_t *old = rc_check_find(wl, json_string_value(v));
        json_t *e = old ? json_deep_copy(old)
                        : json_pack("{s:O,s:s,s:s,s:s}", "name", v, "state", "Pending", "message",
                                    "", "lastTransitionTime", now);
        if (json_array_append_new(out, e) < 0)
            goto fail;
    }
    json_decref(names);
    return out;
fail:
    json_decref(names);
    json_decref(out);
    return NULL;
}

json_t *rc_reserve_patch(const json_t *wl, const char *cq, const json_t *cqo,
                         const struct rc_res *nominal, const char *now)
{
    json_t *psa = json_array();
    size_t i;
    json_t *ps;
    json_array_foreach(jx_get(wl, "spec.podSets"), i, ps)
    {
        struct rc_res pod;
        char err[128];
        if (!psa || rc_pod_requests(jx_get(ps, "template.spec"), &pod, err, sizeof(err)) < 0)
            goto fail;
        long long count = jx_int(ps, "count", 1);
        json_t *flavors = json_object(), *usage = json_object();
        for (int r = 0; r < pod.n; r++) {
            char q[32];
            int64_t total;
            if (__builtin_mul_overflow(pod.milli[r], (int64_t)count, &total)) {
                json_decref(flavors);
                json_decref(usage);
                goto fail; /* rc_workload_requests refused it already */
            }
            qty_format(total, q, sizeof(q));
            json_object_set_new(usage, pod.name[r], json_string(q));
            for (int n = 0; n < nominal->n; n++)
                if (strcmp(nominal->name[n], pod.name[r]) == 0 && nominal->flavor[n][0])
                    json_object_set_new(flavors, pod.name[r], json_string(nominal->flavor[n]));
        }
        json_array_append_new(psa, json_pack("{s:s,s:o,s:o,s:I}", "name",
                                             jx_str(ps, "name") ? jx_str(ps, "name") : "main",
                                             "flavors", flavors, "resourceUsage", usage, "count",
                                             (json_int_t)count));
    }
    char msg[320];
    snprintf(msg, sizeof(msg), "Quota reserved in ClusterQueue %s", cq);
    json_t *c1 = rc_conds_with(jx_get(wl, "status.conditions"), "QuotaReserved", "True",
                               "QuotaReserved", msg, now);
    json_t *c2 = c1 ? rc_conds_with(c1, "Admitted", "False", "UnsatisfiedChecks",
                                    "The workload has not all checks ready", now)
                    : NULL;
    json_decref(c1);
    if (c2 && rc_wl_evicted(wl)) {
        /* as Kueue's SetQuotaReservation: the eviction becomes history
         * (Requeued stays as the requeue left it) */
        char prev[600];
        const char *old = jx_str(rc_cond_find(wl, "Evicted"), "message");
        buf_cut_fmt(prev, sizeof(prev), "Previously: %s", old ? old : "");
        json_t *c3 = rc_conds_with(c2, "Evicted", "False", "QuotaReserved", prev, now);
        json_decref(c2);
        c2 = c3;
    }
    if (!c2)
        goto fail;
    json_t *adm = json_pack("{s:s,s:o}", "clusterQueue", cq, "podSetAssignments", psa);
    psa = NULL;
    json_t *checks = adm && cqo ? checks_after(wl, cqo, adm, now) : NULL;
    if (!adm || (cqo && !checks)) {
        json_decref(adm);
        json_decref(c2);
        return NULL;
    }
    json_t *out = json_pack("{s:o,s:o}", "conditions", c2, "admission", adm);
    if (out && checks && json_object_set_new(out, "admissionChecks", checks) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
fail:
    json_decref(psa);
    return NULL;
}

struct gate_view;
static void view_release(struct rc_ctx *x, struct gate_view *v);

void rc_gate_forget(struct rc_ctx *x, const char *key)
{
    pthread_mutex_lock(&x->mu);
    free(smap_del(x->assumed, key));
    struct gate_view *v = smap_del(x->gate_views, key);
    pthread_mutex_unlock(&x->mu);
    view_release(x, v);
}

/* An object's or a record's resourceVersion as a number (echo.h). */
static long long rv_of(const json_t *obj)
{
    return rc_rv_number(rc_md(obj, RC_MD_RV));
}

/* reserved, corrected by a reservation we wrote that the cache has not
 * shown yet (rv: the cached Workload's resourceVersion) */
static int reserved_now(struct rc_ctx *x, const char *key, long long rv, int reserved)
{
    pthread_mutex_lock(&x->mu);
    struct rc_assumed *a = smap_get(x->assumed, key);
    if (a) {
        if (rv >= a->rv || clk_now_ms() - a->at_ms > ASSUME_MAX_MS)
            free(smap_del(x->assumed, key));
        else
            reserved = a->reserved;
    }
    pthread_mutex_unlock(&x->mu);
    return reserved;
}

static void assume(struct rc_ctx *x, const char *key, const json_t *written)
{
    struct rc_assumed *a = malloc(sizeof(*a));
    if (!a)
        return;
    a->rv = rv_of(written);
    a->reserved = 1;
    a->at_ms = clk_now_ms();
    void *old = NULL;
    pthread_mutex_lock(&x->mu);
    if (smap_put(x->assumed, key, a, &old) < 0)
        old = a;
    pthread_mutex_unlock(&x->mu);
    free(old);
}

/* What a pass reads of one Workload, kept per Workload until its
 * resourceVersion changes (x->gate_views, under x->mu), so a pass inflates
 * and parses only the Workloads changed since the last one: a queue of
 * 10,000 costs 10,000 lookups, not 10,000 parses. Immutable once made;
 * counted references (a pass holds one per entry). */
struct gate_view {
    int refs;
    long long rv;
    uint64_t check;     /* hash of the MultiKueue check it was read for */
    int planned;        /* 0: finished, inactive, its check Rejected, or held (view_of) */
    int reserved;       /* holds quota (QuotaReserved) */
    int admitted;       /* Admitted=True, for the queues' status */
    int uninit;         /* no status yet: the gate's first write initialises it */
    long long priority; /* spec.priority */
    uint64_t current;   /* hash of "status|reason|message" of QuotaReserved now */
    char *created;      /* creationTimestamp */
    char *queue;        /* spec.queueName, for the LocalQueue's status */
    char *invalid;      /* why the requests cannot be counted, or NULL */
    struct rc_req *req; /* its requests (NULL when invalid) */
};

void rc_gate_view_free(void *p)
{
    struct gate_view *v = p;
    if (!v)
        return;
    free(v->created);
    free(v->queue);
    free(v->invalid);
    free(v->req);
    free(v);
}

static void view_release(struct rc_ctx *x, struct gate_view *v)
{
    if (!v)
        return;
    pthread_mutex_lock(&x->mu);
    int last = --v->refs == 0;
    pthread_mutex_unlock(&x->mu);
    if (last)
        rc_gate_view_free(v);
}

/* The hash of QuotaReserved's "status|reason|message" (what a wait writes). */
static uint64_t qr_hash(const char *status, const char *reason, const char *message)
{
    char buf[900];
    snprintf(buf, sizeof(buf), "%s|%s|%s", status ? status : "", reason ? reason : "",
             message ? message : "");
    return smap_hash(buf);
}

/* The view of Workload wl (full tree) for a queue whose MultiKueue check is
 * `check`; NULL on oom. */
static struct gate_view *view_of(const char *key, const json_t *wl, const char *check, long long rv)
{
    struct gate_view *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->refs = 1;
    v->rv = rv;
    v->check = smap_hash(check);
    const char *st = jx_str(rc_check_find(wl, check), "state");
    v->reserved = rc_wl_reserved(wl);
    /* waiting, as Kueue's scheduler leaves it: a check in Retry or Rejected
     * (the eviction or deactivation comes first), or the backoff a check
     * asked for (requeueAt, cleared when due: decide.c's backoff). On the
     * content only, never the clock: gate_index.h's settled plan. */
    int held = !v->reserved &&
               (rc_check_in_state(wl, "Retry", NULL) || rc_check_in_state(wl, "Rejected", NULL) ||
                jx_str(wl, "status.requeueState.requeueAt"));
    v->planned = !rc_wl_finished(wl) && jx_bool(wl, "spec.active", 1) &&
                 !(st && strcmp(st, "Rejected") == 0) && !held;
    json_t *qr = rc_cond_find(wl, "QuotaReserved");
    const char *created = jx_str(wl, "metadata.creationTimestamp");
    v->created = strdup(created ? created : "");
    v->queue = strdup(jx_str(wl, "spec.queueName") ? jx_str(wl, "spec.queueName") : "");
    v->admitted = rc_cond_true(wl, "Admitted");
    /* a MultiKueue check limited by onFlavors is listed only once quota is
     * reserved on one of its flavors: QuotaReserved marks a written status */
    v->uninit = !jx_get(wl, "status.admissionChecks") && !qr;
    v->priority = jx_int(wl, "spec.priority", 0);
    v->current = qr_hash(jx_str(qr, "status"), jx_str(qr, "reason"), jx_str(qr, "message"));
    struct rc_res req;
    char err[256];
    if (v->planned && rc_workload_requests(wl, &req, err, sizeof(err)) < 0) {
        LOG_W(LG, "workload requests unreadable", "workload", key, "error", err);
        /* an error on the Workload (InvalidRequests), never a wrapped number */
        v->invalid = strdup(err);
    } else if (v->planned) {
        v->req = rc_req_of(&req);
    }
    if (!v->created || !v->queue || (v->planned && !v->invalid && !v->req)) {
        rc_gate_view_free(v);
        return NULL;
    }
    return v;
}

/* A reference to the view of Workload key (packed: its cache record) at its
 * resourceVersion, made (and kept) when missing or older. NULL on oom or
 * when the text does not decode. */
static struct gate_view *view_get(struct rc_ctx *x, const char *key, const json_t *packed,
                                  const char *check)
{
    long long rv = rv_of(packed);
    uint64_t ch = smap_hash(check);
    pthread_mutex_lock(&x->mu);
    struct gate_view *v = smap_get(x->gate_views, key);
    if (v && v->rv == rv && v->check == ch) {
        v->refs++;
        pthread_mutex_unlock(&x->mu);
        return v;
    }
    pthread_mutex_unlock(&x->mu);
    json_t *wl = rc_unwrap(packed);
    v = wl ? view_of(key, wl, check, rv) : NULL;
    json_decref(wl);
    if (!v)
        return NULL;
    void *old = NULL;
    pthread_mutex_lock(&x->mu);
    v->refs++; /* the map's and the caller's */
    if (smap_put(x->gate_views, key, v, &old) < 0) {
        v->refs--; /* not kept: the next pass reads it again */
        old = NULL;
    }
    pthread_mutex_unlock(&x->mu);
    view_release(x, old);
    return v;
}

/* One Workload of the queue: its view, and the cache's compact form for
 * the writes. */
struct entry {
    json_t *packed;
    char *key;
    struct gate_view *view; /* a reference */
};

struct collect {
    struct rc_ctx *x;
    const char *cq;
    const char *check; /* the queue's MultiKueue check */
    struct entry *v;
    struct rc_gate_item *items; /* beside v: what rc_gate_plan reads */
    size_t n, alloc;
    size_t read; /* Workloads looked at: the pass's cost (its debug line) */
    int oom;
};

/* Room for n entries (a big queue's arrays are large: sized once, never copied). */
static int collect_reserve(struct collect *c, size_t n)
{
    if (n <= c->alloc)
        return 0;
    struct entry *nv = realloc(c->v, n * sizeof(*nv));
    if (nv)
        c->v = nv;
    struct rc_gate_item *ni = nv ? realloc(c->items, n * sizeof(*ni)) : NULL;
    if (!ni)
        return -1;
    c->items = ni;
    c->alloc = n;
    return 0;
}

static int collect_one(const char *key, json_t *packed, void *ud)
{
    struct collect *c = ud;
    char cq[254];
    c->read++;
    if (rc_wl_deleting(packed))
        return 0;
    /* another queue's Workloads stay packed (the record names the queue) */
    if (rc_cq_of(c->x, packed, cq, sizeof(cq)) < 0 || strcmp(cq, c->cq) != 0)
        return 0;
    struct gate_view *v = view_get(c->x, key, packed, c->check);
    if (!v) {
        c->oom = 1;
        return 1;
    }
    if (!v->planned) {
        view_release(c->x, v);
        return 0;
    }
    if (c->n == c->alloc && collect_reserve(c, c->alloc ? c->alloc * 2 : 64) < 0) {
        view_release(c->x, v);
        c->oom = 1;
        return 1;
    }
    struct entry *e = &c->v[c->n];
    struct rc_gate_item *it = &c->items[c->n];
    memset(it, 0, sizeof(*it));
    *e = (struct entry){json_incref(packed), strdup(key), v};
    c->n++; /* freed with the others, also when out of memory */
    if (!e->key) {
        c->oom = 1;
        return 1;
    }
    it->key = e->key;
    it->created = v->created;
    it->priority = v->priority;
    it->invalid = v->invalid;
    it->req = v->req;
    it->reserved = v->invalid ? 0 : reserved_now(c->x, key, v->rv, v->reserved);
    return 0;
}

/* Empties c (its arrays stay for the next collection). */
static void collect_clear(struct collect *c)
{
    for (size_t i = 0; i < c->n; i++) {
        json_decref(c->v[i].packed);
        free(c->v[i].key);
        view_release(c->x, c->v[i].view);
    }
    rc_gate_release(c->items, c->n);
    c->n = 0;
    c->oom = 0;
}

/* The Workloads of a pass into c: those of keys (gate_index.h; none when
 * n is 0), or with all every cached one of the queue. Only the extracted
 * fields are kept: the full trees of a big queue would cost ten times its
 * text. */
static void collect_keys(struct rc_ctx *x, int all, char **keys, size_t n, struct collect *c)
{
    if (all) {
        if (collect_reserve(c, kcache_len(x->workloads)) < 0)
            c->oom = 1;
        else
            kcache_foreach(x->workloads, NULL, collect_one, c);
        return;
    }
    if (collect_reserve(c, n) < 0)
        c->oom = 1;
    for (size_t i = 0; i < n && !c->oom; i++) {
        json_t *packed = kcache_get(x->workloads, keys[i]);
        if (packed)
            collect_one(keys[i], packed, c); /* checks the queue again: an entry may be stale */
        json_decref(packed);
    }
}

/* 1 when a Workload of c holds quota: a fast pass's premise (nothing it
 * reads holds any) no longer stands. */
static int holds_quota(const struct collect *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->items[i].reserved)
            return 1;
    return 0;
}

/* The pass's Workloads into c (gate_index.h): a fast pass's dirty keys
 * and those to do again, else every member, or the whole cache when the
 * index cannot answer. *pass says which was read, *nchanged how many of
 * its keys changed (a fast pass's may be gone); *used is the quota held by
 * Workloads outside c (the settled plan's for a fast pass, else none). */
static void collect_pass(struct rc_ctx *x, const char *cq, long long now, struct collect *c,
                         enum rc_gix_pass *pass, size_t *nchanged, struct rc_res *used)
{
    char **keys = NULL;
    size_t n = 0, nredo = 0;
    memset(used, 0, sizeof(*used));
    *pass = x->gix ? rc_gix_take(x->gix, cq, now, &keys, &n, &nredo, used) : RC_GIX_LOST;
    *nchanged = n - nredo;
    if (*pass == RC_GIX_FAST) {
        collect_keys(x, 0, keys, n, c);
        rc_gix_keys_free(keys, n);
        if (c->oom || !holds_quota(c))
            return;
        /* raced with a reservation: read the whole queue */
        collect_clear(c);
        rc_gix_invalidate(x->gix, cq);
        memset(used, 0, sizeof(*used));
        *pass = rc_gix_take(x->gix, cq, now, &keys, &n, &nredo, used);
        *nchanged = n;
    }
    /* an empty queue reads nothing: not the whole cache (keys is NULL
     * then too) */
    collect_keys(x, *pass == RC_GIX_LOST, keys, n, c);
    rc_gix_keys_free(keys, n);
}

static int write_status(struct rc_ctx *x, json_t *wl, json_t *status, json_t **out)
{
    json_t *body = json_pack("{s:{s:s?},s:o}", "metadata", "resourceVersion",
                             jx_str(wl, "metadata.resourceVersion"), "status", status);
    struct kc_status st;
    int rc =
        body ? kc_patch(x->mgr, &WORKLOADS, jx_str(wl, "metadata.namespace"),
                        jx_str(wl, "metadata.name"), "status", KC_PATCH_MERGE, body, NULL, out, &st)
             : -1;
    json_decref(body);
    if (rc < 0 && body)
        LOG_D(LG, "gate write failed", "workload", jx_str(wl, "metadata.name"), "error",
              st.message);
    return rc;
}

/* checks with the MultiKueue check's "Waiting for quota on the manager"
 * message for the new QuotaReserved conditions (why.h): what decide.c's
 * explain would write next, now in the gate's own write (one write per
 * waiting Workload, not two). A new array, or NULL when the check is not
 * Pending, already says so, or on oom (explain then writes it). */
static json_t *with_quota_why(const json_t *checks, const char *check, json_t *conds,
                              const char *now)
{
    json_t *c = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(checks, i, v)
    {
        const char *name = jx_str(v, "name");
        if (name && strcmp(name, check) == 0)
            c = v;
    }
    const char *st = jx_str(c, "state"), *cur = jx_str(c, "message");
    if (!st || strcmp(st, "Pending") != 0)
        return NULL;
    json_t *after = json_pack("{s:{s:O}}", "status", "conditions", conds);
    char msg[RC_WHY_MAX];
    json_t *out = NULL;
    if (after && rc_why_quota(after, cur, msg, sizeof(msg)) == RC_WHY_QUOTA &&
        !(cur && strcmp(cur, msg) == 0))
        out = rc_checks_with(checks, check, "Pending", msg, now, 0);
    json_decref(after);
    return out;
}

/* The status patch saying why wl waits (QuotaReserved False, and the
 * MultiKueue check's message); for a Workload without status (uninit)
 * also its checks, all Pending, on the flavors every check applies to
 * (onFlavors, as Kueue before admission). The Workload's first write: no
 * separate initial status. */
static json_t *wait_patch(const json_t *wl, const json_t *cqo, int uninit,
                          const struct rc_gate_item *it, const char *check, const char *now)
{
    json_t *patch = NULL;
    if (uninit) {
        json_t *checks = rc_checks_for_workload(cqo, NULL);
        patch = checks ? rc_initial_status(checks, it->reason, it->message, now) : NULL;
        json_decref(checks);
    } else {
        json_t *conds = rc_conds_with(jx_get(wl, "status.conditions"), "QuotaReserved", "False",
                                      it->reason, it->message, now);
        patch = conds ? json_pack("{s:o}", "conditions", conds) : NULL;
    }
    const json_t *checks =
        uninit ? json_object_get(patch, "admissionChecks") : jx_get(wl, "status.admissionChecks");
    json_t *told =
        patch ? with_quota_why(checks, check, json_object_get(patch, "conditions"), now) : NULL;
    if (told && json_object_set_new(patch, "admissionChecks", told) < 0) {
        json_decref(patch);
        return NULL;
    }
    return patch;
}

/* The first MultiKueue AdmissionCheck the ClusterQueue lists. 0 or -1. */
static int mk_check_of_cq(struct rc_ctx *x, const json_t *cqo, char *out, size_t outlen)
{
    json_t *names = mkq_cluster_queue_checks(cqo);
    size_t i;
    json_t *v;
    int rc = -1;
    json_array_foreach(names, i, v)
    {
        json_t *ac = kcache_get(x->admissionchecks, json_string_value(v));
        int mk = ac && mkq_is_multikueue_check(ac);
        json_decref(ac);
        if (mk) {
            snprintf(out, outlen, "%s", json_string_value(v));
            rc = 0;
            break;
        }
    }
    json_decref(names);
    return rc;
}

/* Writes status `patch` (steals) of queue obj; 0 or -1. */
static int queue_patch(struct rc_ctx *x, const struct kc_resource *res, const json_t *obj,
                       json_t *patch)
{
    struct kc_status st;
    int rc = kc_patch(x->mgr, res, jx_str(obj, "metadata.namespace"), jx_str(obj, "metadata.name"),
                      "status", KC_PATCH_MERGE, patch, NULL, NULL, &st);
    if (rc < 0)
        LOG_D(LG, "queue status not written", "queue", jx_str(obj, "metadata.name"), "error",
              st.message);
    json_decref(patch);
    return rc < 0 ? -1 : 0;
}

struct lq_pass {
    struct rc_ctx *x;
    const char *cq;
    const json_t *cqo;
    const struct rc_res *nominal;
    const struct rc_qs_item *qs;
    size_t n;
    int write;   /* write what changed; else only note it */
    int changed; /* some status differs from what this pass counted */
    int rc;
};

static int lq_status(const char *key, json_t *lq, void *ud)
{
    (void)key;
    struct lq_pass *p = ud;
    const char *cq = jx_str(lq, "spec.clusterQueue");
    if (!cq || strcmp(cq, p->cq) != 0)
        return 0;
    int oom;
    json_t *usage = rc_queue_usage(p->cqo, p->nominal, p->qs, p->n,
                                   jx_str(lq, "metadata.namespace"), jx_str(lq, "metadata.name"));
    json_t *patch = usage ? rc_queue_status_patch(lq, usage, RC_LQ_ACTIVE_MSG, &oom) : NULL;
    json_decref(usage);
    p->changed |= patch != NULL;
    if (!usage || (!patch && oom))
        p->rc = -1;
    else if (patch && !p->write)
        json_decref(patch);
    else if (patch && queue_patch(p->x, &LQS, lq, patch) < 0)
        p->rc = -1;
    return 0;
}

/* When the ClusterQueue's status may be written again (qstatus.h): 0 now,
 * else the milliseconds to wait. */
static long qstatus_wait(struct rc_ctx *x, const char *cq)
{
    pthread_mutex_lock(&x->mu);
    long long *at = smap_get(x->qstatus_at, cq);
    long wait = rc_qstatus_wait(at ? *at : 0, clk_now_ms());
    pthread_mutex_unlock(&x->mu);
    return wait;
}

static void qstatus_stamp(struct rc_ctx *x, const char *cq)
{
    pthread_mutex_lock(&x->mu);
    long long *at = smap_get(x->qstatus_at, cq);
    if (!at && (at = malloc(sizeof(*at))) && smap_put(x->qstatus_at, cq, at, NULL) < 0) {
        free(at);
        at = NULL; /* out of memory: the next pass writes at once, as before */
    }
    if (at)
        *at = clk_now_ms();
    pthread_mutex_unlock(&x->mu);
}

void rc_gate_forget_queue(struct rc_ctx *x, const char *cq)
{
    pthread_mutex_lock(&x->mu);
    free(smap_del(x->qstatus_at, cq));
    pthread_mutex_unlock(&x->mu);
}

/* Issue 13: the ClusterQueue's and its LocalQueues' status as Kueue's core
 * writes it, from this pass's plan; written only when it changes, and at
 * most once per RC_QSTATUS_BATCH_MS (a later pass is queued for what waits). */
static int queue_status(struct rc_ctx *x, const char *cq, const json_t *cqo,
                        const struct rc_res *nominal, const struct entry *v,
                        const struct rc_gate_item *items, size_t n)
{
    struct rc_qs_item *qs = calloc(n ? n : 1, sizeof(*qs));
    char(*ns)[64] = calloc(n ? n : 1, sizeof(*ns));
    int rc = -1, oom;
    if (!qs || !ns)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const char *slash = strchr(v[i].key, '/');
        size_t len = slash ? (size_t)(slash - v[i].key) : 0;
        snprintf(ns[i], sizeof(ns[i]), "%.*s", (int)(len < sizeof(ns[i]) ? len : 0), v[i].key);
        qs[i] = (struct rc_qs_item){ns[i], v[i].view->queue, items[i].reserved, v[i].view->admitted,
                                    items[i].req};
    }
    long wait = qstatus_wait(x, cq);
    json_t *usage = rc_queue_usage(cqo, nominal, qs, n, NULL, NULL);
    json_t *patch = usage ? rc_queue_status_patch(cqo, usage, RC_CQ_ACTIVE_MSG, &oom) : NULL;
    json_decref(usage);
    if (!usage || (!patch && oom))
        goto out;
    struct lq_pass p = {x, cq, cqo, nominal, qs, n, wait == 0, patch != NULL, 0};
    if (patch && wait)
        json_decref(patch);
    rc = patch && !wait ? queue_patch(x, &CQS, cqo, patch) : 0;
    kcache_foreach(x->localqueues, NULL, lq_status, &p);
    if (p.rc < 0)
        rc = -1;
    if (p.changed && wait) { /* a full pass writes it then (gate_index.h) */
        long full = x->gix ? rc_gix_recount(x->gix, cq, clk_now_ms(), RC_QSTATUS_BATCH_MS) : 0;
        rc_enqueue_after(x, 'q', cq, full > wait ? full : wait);
    } else if (p.changed)
        qstatus_stamp(x, cq);
out:
    free(qs);
    free(ns);
    return rc;
}

/* After a fast pass: the queues' status counted again by a full pass, at
 * most one per RC_QSTATUS_BATCH_MS, when the pass read something (ask);
 * either way a recount already asked for is enqueued again, for this pass
 * may have been its wake-up: the work queue keeps one deadline per key,
 * the earlier, so a window's pass that read nothing would drop it and the
 * counts would wait for the next event. */
static void recount_later(struct rc_ctx *x, const char *cq, int ask)
{
    long long now = clk_now_ms();
    long wait = ask ? rc_gix_recount(x->gix, cq, now, RC_QSTATUS_BATCH_MS)
                    : rc_gix_recount_pending(x->gix, cq, now);
    if (wait >= 0)
        rc_enqueue_after(x, 'q', cq, wait);
}

int rc_reconcile_gate(struct rc_ctx *x, const char *cq)
{
    long long t0 = clk_now_ms(), cpu0 = clk_thread_cpu_ms();
    json_t *cqo = kcache_get(x->clusterqueues, cq);
    struct collect c = {.x = x, .cq = cq};
    char check[254];
    json_t *flavors = NULL;
    int rc = 0, reserved = 0, planned = 0, taken = 0, deferred = 0;
    enum rc_gix_pass pass = RC_GIX_LOST;
    struct rc_res used;
    if (!cqo || mk_check_of_cq(x, cqo, check, sizeof(check)) < 0)
        goto out; /* no MultiKueue check: not mkueue's queue */
    c.check = check;
    /* only the flavors the MultiKueue check applies to (onFlavors): a
     * Workload admitted on another would have nowhere to run */
    if (!(flavors = rc_check_flavors(cqo, check))) {
        rc = -1;
        goto out;
    }
    struct rc_res nominal;
    char err[256];
    if (rc_cq_quota(cqo, flavors, &nominal, err, sizeof(err)) < 0) {
        LOG_W(LG, "ClusterQueue quota unreadable", "clusterQueue", cq, "error", err);
        goto out;
    }
    const char *strategy = jx_str(cqo, "spec.queueingStrategy");
    int strict = strategy && strcmp(strategy, "StrictFIFO") == 0;
    size_t nchanged, waits = 0;
    collect_pass(x, cq, t0, &c, &pass, &nchanged, &used);
    taken = 1;
    if (c.oom) {
        rc = -1;
        goto out;
    }
    size_t n = c.n;
    struct rc_gate_item *items = c.items;
    planned = rc_gate_plan_from(cq, &nominal, strict, &used, items, n) == 0;
    char now[32];
    rc_now_rfc3339(now);
    for (size_t i = 0; i < n; i++) {
        struct rc_gate_item *it = &items[i];
        json_t *wl = NULL;
        if (it->decision == RC_GATE_RESERVE) {
            json_t *out = NULL;
            reserved = 1;
            wl = rc_unwrap(c.v[i].packed);
            json_t *patch = wl ? rc_reserve_patch(wl, cq, cqo, &nominal, now) : NULL;
            if (!patch || write_status(x, wl, patch, &out) < 0) {
                rc = -1;
                json_decref(wl);
                continue;
            }
            assume(x, it->key, out);
            /* the dispatch works from the answer, not waiting for the
             * watch to bring the reservation (echo.h) */
            char ekey[RC_WL_ECHO_KEY_MAX];
            json_t *record = rc_pack(json_incref(out), NULL);
            if (rc_wl_echo_key(out, ekey, sizeof(ekey)) == 0)
                rc_echo_note_answer(x->echo, ekey, out, jx_str(out, "metadata.resourceVersion"),
                                    record ? record : out, clk_now_ms());
            json_decref(record);
            it->reserved = 1; /* for the queues' status below */
            const char *v[] = {cq};
            mt_inc(x->metrics.quota, v, 1);
            char msg[320];
            snprintf(msg, sizeof(msg), "Quota reserved in ClusterQueue %s", cq);
            rc_event_emit(x->events, out, "Normal", "QuotaReserved", msg);
            LOG_I(LG, "quota reserved", "workload", it->key, "clusterQueue", cq);
            json_decref(out);
            rc_enqueue_first(x, 'w', it->key, 0);
        } else if (it->decision == RC_GATE_WAIT && it->message) {
            if (qr_hash("False", it->reason, it->message) == c.v[i].view->current)
                continue;                     /* already says so */
            if (waits == RC_GATE_WAITS_MAX) { /* the next pass writes it */
                if (x->gix)
                    rc_gix_redo(x->gix, cq, it->key);
                deferred = 1;
                continue;
            }
            waits++;
            wl = rc_unwrap(c.v[i].packed);
            json_t *patch = wl ? wait_patch(wl, cqo, c.v[i].view->uninit, it, check, now) : NULL;
            if (!patch || write_status(x, wl, patch, NULL) < 0)
                rc = -1;
        }
        json_decref(wl);
    }
    if (pass != RC_GIX_FAST && queue_status(x, cq, cqo, &nominal, c.v, items, n) < 0)
        rc = -1;
    /* what a fast pass read (gone ones too) may change the counts: a full
     * pass recounts */
    if (pass == RC_GIX_FAST)
        recount_later(x, cq, nchanged > 0);
    /* every waiting Workload was decided against `used` and does not fit:
     * the next changes can be read alone (gate_index.h); StrictFIFO's
     * blocker makes one Workload's wait depend on another's: never */
    if (x->gix && pass != RC_GIX_LOST && rc == 0 && planned && !reserved && !strict)
        rc_gix_settle(x->gix, cq, &used);
    const char *kind = pass == RC_GIX_FAST ? "fast" : pass == RC_GIX_FULL ? "full" : "whole_cache";
    const char *labels[] = {cq, kind};
    mt_inc(x->metrics.gate_passes, labels, 1);
    if (log_enabled(LOG_DEBUG)) {
        char nread[24];
        snprintf(nread, sizeof(nread), "%zu", c.read);
        LOG_D(LG, "gate pass", "clusterQueue", cq, "pass", kind, "read", nread);
    }
out:
    if (x->gix && !taken)
        rc_gix_skip(x->gix, cq); /* nothing read: the next pass reads all */
    if (x->gix)                  /* its CPU, not its writes' wait: the window bounds the CPU */
        rc_gix_timed(x->gix, cq, pass, (long)(clk_thread_cpu_ms() - cpu0), clk_now_ms());
    if (deferred) /* the rest after the next pass's window */
        rc_enqueue_after(x, 'q', cq, x->gix ? rc_gix_window_ms(x->gix, cq, clk_now_ms()) : 0);
    collect_clear(&c);
    free(c.v);
    free(c.items);
    json_decref(flavors);
    json_decref(cqo);
    return rc;
}
