#include "ctx.h"
#include "pack.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jsonx.h"
#include "log.h"
#include "wlstatus.h"

int rc_kind_index(const struct rc_ctx *x, const struct mk_kind *k)
{
    for (int i = 0; i < x->nkinds; i++)
        if (x->kinds[i] == k)
            return i;
    return -1;
}

static void enqueue(struct rc_ctx *x, char prefix, const char *key, long ms, int first)
{
    char k[KCACHE_KEY_MAX + 64];
    int n = snprintf(k, sizeof(k), "%c/%s", prefix, key);
    if (n < 0 || (size_t)n >= sizeof(k))
        return;
    struct wq *q = prefix == 'j' && x->job_queue ? x->job_queue : x->queue;
    if (first)
        wq_add_first(q, k, ms);
    else
        wq_add_after(q, k, ms);
}

void rc_enqueue_after(struct rc_ctx *x, char prefix, const char *key, long ms)
{
    enqueue(x, prefix, key, ms, 0);
}

void rc_enqueue_first(struct rc_ctx *x, char prefix, const char *key, long ms)
{
    enqueue(x, prefix, key, ms, 1);
}

void rc_enqueue(struct rc_ctx *x, char prefix, const char *key)
{
    rc_enqueue_after(x, prefix, key, 0);
}

static int enqueue_one(const char *key, json_t *obj, void *ud)
{
    (void)obj;
    rc_enqueue(ud, 'w', key);
    return 0;
}

void rc_enqueue_all_workloads(struct rc_ctx *x)
{
    kcache_foreach(x->workloads, NULL, enqueue_one, x);
}

int rc_resync_wanted(const json_t *packed)
{
    return rc_md(packed, RC_MD_ADMISSION_CQ) || rc_md(packed, RC_MD_DELETION);
}

static int enqueue_held(const char *key, json_t *packed, void *ud)
{
    if (rc_resync_wanted(packed))
        rc_enqueue(ud, 'w', key);
    return 0;
}

void rc_enqueue_resync_workloads(struct rc_ctx *x)
{
    kcache_foreach(x->workloads, NULL, enqueue_held, x);
}

json_t *rc_check_clusters(struct rc_ctx *x, const char *check, char *why, size_t whylen)
{
    json_t *ac = kcache_get(x->admissionchecks, check);
    json_t *out = NULL;
    if (!ac) {
        snprintf(why, whylen, "AdmissionCheck %s not found", check);
        return NULL;
    }
    const char *name = jx_str(ac, "spec.parameters.name");
    const char *kind = jx_str(ac, "spec.parameters.kind");
    json_t *cfg = name && kind && strcmp(kind, "MultiKueueConfig") == 0
                      ? kcache_get(x->mkconfigs, name)
                      : NULL;
    if (!cfg) {
        snprintf(why, whylen, "MultiKueueConfig.kueue.x-k8s.io \"%s\" not found", name ? name : "");
        goto out;
    }
    out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(jx_get(cfg, "spec.clusters"), i, v)
    {
        if (out && json_is_string(v) && json_array_size(out) < 20)
            json_array_append(out, v);
    }
out:
    json_decref(cfg);
    json_decref(ac);
    return out;
}

int rc_mk_check_of(struct rc_ctx *x, const json_t *wl, char *out, size_t outlen)
{
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(wl, "status.admissionChecks"), i, c)
    {
        const char *name = jx_str(c, "name");
        json_t *ac = name ? kcache_get(x->admissionchecks, name) : NULL;
        int mk = ac && mkq_is_multikueue_check(ac);
        json_decref(ac);
        if (mk) {
            snprintf(out, outlen, "%s", name);
            return 0;
        }
    }
    return -1;
}

int rc_wl_echo_key(const json_t *wl, char *out, size_t outlen)
{
    const char *ns = rc_md(wl, RC_MD_NAMESPACE), *name = rc_md(wl, RC_MD_NAME);
    if (!name)
        return -1;
    snprintf(out, outlen, "workloads/%s/%s", ns ? ns : "", name);
    return 0;
}

int rc_wl_echo_key_of(const char *key, char *out, size_t outlen)
{
    return (size_t)snprintf(out, outlen, "workloads/%s", key) < outlen ? 0 : -1;
}

int rc_cq_of(struct rc_ctx *x, const json_t *wl, char *out, size_t outlen)
{
    /* a full Workload, or the cache's record of one (pack.h) */
    const char *ns = rc_md(wl, RC_MD_NAMESPACE), *q = rc_md(wl, RC_MD_QUEUE);
    const char *adm = rc_md(wl, RC_MD_ADMISSION_CQ);
    if (adm) {
        snprintf(out, outlen, "%s", adm);
        return 0;
    }
    if (!ns || !q)
        return -1;
    json_t *lq = kcache_get_nsname(x->localqueues, ns, q);
    const char *cq = jx_str(lq, "spec.clusterQueue");
    int rc = cq ? 0 : -1;
    if (cq)
        snprintf(out, outlen, "%s", cq);
    json_decref(lq);
    return rc;
}

int rc_write_active(struct rc_ctx *x, const struct kc_resource *res, const json_t *obj,
                    const char *name, const char *status, const char *reason, const char *message,
                    const char *logger, const char *what)
{
    json_t *body = NULL;
    if (rc_active_patch(obj, status, reason, message, &body) == 0 && !body)
        return 0; /* already says so */
    struct kc_status st;
    int rc =
        body ? kc_patch(x->mgr, res, NULL, name, "status", KC_PATCH_MERGE, body, NULL, NULL, &st)
             : -1;
    json_decref(body);
    if (rc == 0)
        LOG_I(logger, "status", what, name, "active", status, "reason", reason, "message", message);
    else if (body)
        LOG_W(logger, "status not written", what, name, "error", st.message);
    return rc < 0 ? -1 : 0;
}
