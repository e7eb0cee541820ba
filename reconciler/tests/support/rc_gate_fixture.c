#include "rc_gate_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "gate.h"
#include "kinds/adapters.h"
#include "jsonx.h"
#include "pack.h"
#include "patch.h"

/* The object a PATCH of `path` names, as the API server returns it: a
 * cached Workload with the patch merged in, else the name and namespace
 * of the path and the patch's status; at a new version. */
static int answer_patch(const struct th_request *req, struct th_response *resp, void *ud)
{
    struct rcg_fixture *f = ud;
    char path[512], *ns = NULL, *name = NULL;
    snprintf(path, sizeof(path), "%s", req->path);
    /* .../namespaces/NS/RESOURCE/NAME[/status] or .../RESOURCE/NAME[/status] */
    char *seg[16];
    int n = 0;
    for (char *p = path, *s; n < 16 && (s = strsep(&p, "/"));)
        if (*s)
            seg[n++] = s;
    int sub = n > 0 && strcmp(seg[n - 1], "status") == 0;
    if (n - sub >= 1)
        name = seg[n - 1 - sub];
    for (int i = 0; i + 1 < n; i++)
        if (strcmp(seg[i], "namespaces") == 0)
            ns = seg[i + 1];
    if (strcmp(req->method, "PATCH") != 0 || !name) {
        resp->status = 404;
        resp->body = "{\"kind\":\"Status\",\"code\":404}";
        return 0;
    }
    json_t *patch = json_loadb(req->body, req->body_len, 0, NULL);
    char rv[24];
    snprintf(rv, sizeof(rv), "%d", __atomic_add_fetch(&f->rv, 1, __ATOMIC_SEQ_CST));
    json_t *obj = NULL;
    if (ns && strstr(req->path, "/workloads/")) {
        char key[KCACHE_KEY_MAX];
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        json_t *cached = rc_cache_get(f->x.workloads, key), *body = json_deep_copy(patch);
        json_object_del(body, "metadata"); /* its resourceVersion is the precondition */
        if (cached && body && jp_merge_apply(cached, body) == 0 &&
            jx_set_new_str(cached, "metadata.resourceVersion", rv) == 0)
            obj = json_incref(cached);
        json_decref(cached);
        json_decref(body);
    }
    if (!obj)
        obj = json_pack("{s:{s:s,s:s*,s:s},s:O*}", "metadata", "name", name, "namespace", ns,
                        "resourceVersion", rv, "status", json_object_get(patch, "status"));
    resp->body_alloc = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    resp->status = resp->body_alloc ? 200 : 500;
    resp->delay_ms = f->delay_ms;
    json_decref(obj);
    json_decref(patch);
    return 0;
}

int rcg_setup(struct rcg_fixture *f)
{
    memset(f, 0, sizeof(*f));
    struct rc_ctx *x = &f->x;
    f->rv = 1000;
    pthread_mutex_init(&x->mu, NULL);
    pthread_mutex_init(&f->kcfg.lock, NULL);
    if (!(f->api = th_start(NULL)))
        return MK_ERR_IO;
    th_set_handler(f->api, answer_patch, f);
    f->kcfg.server = strdup(th_url(f->api));
    f->kcfg.ca_pem = th_read_data("test-ca.pem", &f->kcfg.ca_len);
    f->kcfg.token = strdup("tok");
    if (!f->kcfg.server || !f->kcfg.ca_pem || !f->kcfg.token)
        return MK_ERR_NOMEM;
    struct kc_options ko = {.qps = -1, .timeout_ms = 5000};
    if (!(x->mgr = kc_new(&f->kcfg, &ko, NULL, 0)))
        return MK_ERR;
    x->workloads = kcache_new();
    x->localqueues = kcache_new();
    x->clusterqueues = kcache_new();
    x->admissionchecks = kcache_new();
    x->queue = wq_new(NULL);
    x->assumed = smap_new();
    x->qstatus_at = smap_new();
    x->gate_views = smap_new();
    x->gix = rc_gix_new(); /* standalone mode's */
    x->echo = rc_echo_new();
    /* what a Workload's reconcile reads up to its plan (dispatch.c) */
    rc_config_defaults(&f->cfg);
    x->cfg = &f->cfg;
    x->mkconfigs = kcache_new();
    x->nkinds = 1;
    x->kinds[0] = &mk_kind_job;
    x->jobs[0] = kcache_new();
    x->rounds = smap_new();
    x->deleted = smap_new();
    if (!x->workloads || !x->localqueues || !x->clusterqueues || !x->admissionchecks || !x->queue ||
        !x->assumed || !x->qstatus_at || !x->gate_views || !x->gix || !x->echo || !x->mkconfigs ||
        !x->jobs[0] || !x->rounds || !x->deleted || rc_metrics_init(&x->metrics) < 0)
        return MK_ERR_NOMEM;
    kcache_set_transform(x->workloads, rc_pack, NULL); /* records, as the informer keeps them */
    return 0;
}

static void decref_value(void *p)
{
    json_decref(p);
}

void rcg_teardown(struct rcg_fixture *f)
{
    struct rc_ctx *x = &f->x;
    kc_free(x->mgr);
    th_free(f->api); /* after the client: no request is under way */
    kcache_free(x->workloads);
    kcache_free(x->localqueues);
    kcache_free(x->clusterqueues);
    kcache_free(x->admissionchecks);
    wq_free(x->queue);
    smap_free(x->assumed, free);
    smap_free(x->qstatus_at, free);
    smap_free(x->gate_views, rc_gate_view_free);
    rc_gix_free(x->gix);
    rc_echo_free(x->echo);
    kcache_free(x->mkconfigs);
    kcache_free(x->jobs[0]);
    smap_free(x->rounds, free);
    smap_free(x->deleted, decref_value);
    if (x->metrics.reg)
        rc_metrics_free(&x->metrics);
    pthread_mutex_destroy(&x->mu);
    free(f->kcfg.server);
    free(f->kcfg.ca_pem);
    free(f->kcfg.token);
    pthread_mutex_destroy(&f->kcfg.lock);
    memset(f, 0, sizeof(*f));
}

int rcg_put(struct kcache *c, json_t *obj)
{
    return kcache_upsert(c, obj) == 0 ? 0 : MK_ERR_INVAL;
}

int rcg_put_workload(struct rcg_fixture *f, json_t *wl, enum rc_gix_change ch)
{
    char key[KCACHE_KEY_MAX], cq[254];
    if (!wl || kcache_key(wl, key, sizeof(key)) < 0) {
        json_decref(wl);
        return MK_ERR_INVAL;
    }
    int known = rc_cq_of(&f->x, wl, cq, sizeof(cq)) == 0;
    if (rcg_put(f->x.workloads, wl) < 0)
        return MK_ERR_INVAL;
    rc_gix_note(f->x.gix, key, known ? cq : NULL, ch);
    return 0;
}

int rcg_count(struct rcg_fixture *f, const char *method, const char *path, int from)
{
    int n = 0;
    for (int i = from; i < th_nrequests(f->api); i++) {
        const struct th_request *r = th_request_at(f->api, i);
        n += strcmp(r->method, method) == 0 && strcmp(r->path, path) == 0;
    }
    return n;
}

const struct th_request *rcg_last(struct rcg_fixture *f, const char *method, const char *path)
{
    for (int i = th_nrequests(f->api) - 1; i >= 0; i--) {
        const struct th_request *r = th_request_at(f->api, i);
        if (strcmp(r->method, method) == 0 && strcmp(r->path, path) == 0)
            return r;
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

const char *rcg_drain_ready(struct rcg_fixture *f, char *out, size_t outlen)
{
    char *keys[64] = {0};
    size_t n = 0;
    char *k;
    while (n < 64 && wq_get_timeout(f->x.queue, &k, 0) == 0) {
        wq_done(f->x.queue, k);
        keys[n++] = k;
    }
    qsort(keys, n, sizeof(*keys), cmp_str);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, outlen - len, "%s%s", i ? "," : "", keys[i]);
        free(keys[i]);
    }
    return out;
}
