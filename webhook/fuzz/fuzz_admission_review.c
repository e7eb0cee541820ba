/* The AdmissionReview decoder and the whole decision path on arbitrary
 * bodies: a body either gets a 200 answer that is a valid AdmissionReview
 * with the request's uid (and a patch only when allowed), or a plain-text
 * 400 (never an AdmissionReview); never a crash, and nothing of the review
 * outlives its request scope (reqmem.h). The mutation's patch must apply to
 * the object it was made for, and the mutation must leave that object as it
 * was (the patch builder copies on write). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "jsonx.h"
#include "log.h"
#include "patch.h"
#include "reqmem.h"

static struct wh_ctx ctx;

static int ready_worker(void *ud, const char *cluster, const char *ns, const char *lq, int *has_ns,
                        int *has_lq, char *why, size_t whylen)
{
    (void)ud, (void)lq, (void)why, (void)whylen;
    *has_ns = strcmp(ns, "ml-demo") == 0;
    *has_lq = *has_ns && strcmp(cluster, "worker-1") == 0;
    return WH_WORKER_READY;
}

static void put(struct kcache *c, const char *s)
{
    kcache_upsert(c, json_loads(s, 0, NULL));
    kcache_set_synced(c, 1);
}

static void init(void)
{
    log_set_level(LOG_ERROR);
    wh_reqmem_install(); /* as mkueue-webhook runs */
    struct mkq_caches *q = &ctx.q;
    q->localqueues = kcache_new();
    q->clusterqueues = kcache_new();
    q->admissionchecks = kcache_new();
    q->configs = kcache_new();
    q->clusters = kcache_new();
    put(q->localqueues, "{\"metadata\":{\"namespace\":\"ml-demo\",\"name\":\"team-a\"},"
                        "\"spec\":{\"clusterQueue\":\"cq\"}}");
    put(q->localqueues, "{\"metadata\":{\"namespace\":\"ml-demo\",\"name\":\"default\"},"
                        "\"spec\":{\"clusterQueue\":\"cq\"}}");
    put(q->clusterqueues,
        "{\"metadata\":{\"name\":\"cq\"},\"spec\":{\"admissionChecks\":[\"mk\"]}}");
    put(q->admissionchecks,
        "{\"metadata\":{\"name\":\"mk\"},\"spec\":{\"controllerName\":"
        "\"kueue.x-k8s.io/multikueue\",\"parameters\":{\"apiGroup\":\"kueue.x-k8s.io\","
        "\"kind\":\"MultiKueueConfig\",\"name\":\"cfg\"}}}");
    put(q->configs, "{\"metadata\":{\"name\":\"cfg\"},\"spec\":{\"clusters\":[\"worker-1\","
                    "\"worker-2\"]}}");
    put(q->clusters, "{\"metadata\":{\"name\":\"worker-1\"}}");
    put(q->clusters, "{\"metadata\":{\"name\":\"worker-2\"}}");
    ctx.workers = (struct wh_workers){ready_worker, NULL};
}

static void check(const char *path, const char *data, size_t size)
{
    struct wh_admitter a = {.ctx = &ctx, .max_body = 1 << 20};
    struct buf out;
    buf_init(&out, BUF_CAP_REPLY);
    const char *ctype = NULL;
    size_t blocks, retired, retired_after;
    wh_reqmem_counts(&blocks, &retired);
    int status = wh_admit(&a, path, data, size, &out, &ctype);
    wh_reqmem_counts(&blocks, &retired_after);
    if (retired_after != retired)
        abort();
    if (status == 200) {
        json_t *ans = json_loads(buf_cstr(&out), 0, NULL);
        json_t *resp = json_object_get(ans, "response");
        if (!resp || !jx_str(resp, "uid") || !json_is_boolean(json_object_get(resp, "allowed")))
            abort();
        int has_patch = json_object_get(resp, "patch") != NULL;
        if (has_patch != (json_object_get(resp, "patchType") != NULL))
            abort();
        if (has_patch && !json_is_true(json_object_get(resp, "allowed")))
            abort();
        json_decref(ans);
    } else if (status != 400 || strncmp(ctype, "text/plain", 10) != 0) {
        abort();
    }
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int inited;
    if (!inited) {
        init();
        inited = 1;
    }
    check("/mutate", (const char *)data, size);
    check("/validate", (const char *)data, size);

    /* the patch applies to the object it was computed for */
    struct wh_review r;
    char err[256];
    if (wh_review_decode((const char *)data, size, 1 << 20, NULL, &r, err, sizeof(err)) == 0) {
        char api[256];
        snprintf(api, sizeof(api), "%s%s%s", r.group, r.group[0] ? "/" : "", r.version);
        const struct mk_kind *k = mk_kind_by_gvk(api, r.kind);
        struct wh_verdict v;
        wh_verdict_init(&v);
        json_t *before = r.object ? json_deep_copy(r.object) : NULL;
        if (k && wh_mutate(&ctx, k, &r, &v) == 0 && v.patch && r.object) {
            json_t *copy = json_deep_copy(r.object);
            if (jp_apply(copy, v.patch, err, sizeof(err)) < 0)
                abort();
            json_decref(copy);
        }
        if (before && !json_equal(before, r.object))
            abort();
        json_decref(before);
        wh_verdict_clear(&v);
        wh_review_clear(&r);
    }
    return 0;
}
