/* From an HTTP POST to an AdmissionReview answer, with metrics and logs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission.h"
#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "reqmem.h"

static const double latency_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                         0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};

int wh_metrics_register(struct mt_registry *reg, struct wh_metrics *m)
{
    static const char *const req_l[] = {"webhook", "kind", "operation", "decision", NULL};
    static const char *const wh_l[] = {"webhook", NULL};
    static const char *const den_l[] = {"kind", "reason", NULL};
    static const char *const code_l[] = {"code", NULL};
    static const char *const cl_l[] = {"cluster", NULL};
    static const char *const res_l[] = {"result", NULL};
    const struct mt_def defs[] = {
        {.out = &m->requests,
         .type = MT_COUNTER,
         .name = "mkueue_webhook_requests_total",
         .help = "Admission requests by webhook (mutate, validate), kind, operation and decision "
                 "(allowed, patched, denied).",
         .labels = req_l},
        {.out = &m->duration,
         .type = MT_HISTOGRAM,
         .name = "mkueue_webhook_request_duration_seconds",
         .help = "Time to decide an admission request, from the full body to the encoded answer.",
         .labels = wh_l,
         .buckets = latency_buckets,
         .nbuckets = sizeof(latency_buckets) / sizeof(latency_buckets[0])},
        {.out = &m->denials,
         .type = MT_COUNTER,
         .name = "mkueue_webhook_denials_total",
         .help = "Denied admission requests by kind and reason.",
         .labels = den_l},
        {.out = &m->bad,
         .type = MT_COUNTER,
         .name = "mkueue_webhook_bad_requests_total",
         .help = "HTTP requests refused before a decision (400 malformed review, 404, 405, 413, "
                 "415, 429 over the memory budget), by status code.",
         .labels = code_l},
        {.out = &m->in_flight,
         .type = MT_GAUGE,
         .name = "mkueue_webhook_requests_in_flight",
         .help = "Admission requests being read or decided."},
        {.out = &m->synced,
         .type = MT_GAUGE,
         .name = "mkueue_webhook_cache_synced",
         .help = "1 when the caches of a cluster are synced (\"manager\", or the worker's "
                 "MultiKueueCluster name), else 0.",
         .labels = cl_l},
        {.out = &m->cert_expiry,
         .type = MT_GAUGE,
         .name = "mkueue_webhook_serving_cert_expiry_seconds",
         .help = "Seconds until the serving certificate in use expires."},
        {.out = &m->cert_reloads,
         .type = MT_COUNTER,
         .name = "mkueue_webhook_serving_cert_reloads_total",
         .help = "Serving certificate (re)loads by result (ok, error).",
         .labels = res_l},
    };
    return mt_register(reg, defs, sizeof(defs) / sizeof(defs[0]));
}

int wh_admission_path(const char *path, int *mutate, const struct mk_kind **kind)
{
    *kind = NULL;
    if (strcmp(path, "/mutate") == 0 || strcmp(path, "/validate") == 0) {
        *mutate = path[1] == 'm';
        return 1;
    }
    *kind = mk_kind_by_webhook_path(path, mutate);
    return *kind != NULL;
}

static int bad_request(const struct wh_admitter *a, int code, const char *msg, struct buf *out,
                       const char **ctype)
{
    char c[8];
    snprintf(c, sizeof(c), "%d", code);
    const char *const lv[] = {c};
    if (a->m)
        mt_inc(a->m->bad, lv, 1);
    LOG_I("admission", "bad request", "code", c, "error", msg);
    *ctype = "text/plain; charset=utf-8";
    buf_append_str(out, msg);
    buf_append_str(out, "\n");
    return code;
}

static void log_decision(const char *webhook, const struct wh_review *r, const struct wh_verdict *v)
{
    const char *dry = r->dry_run ? "true" : "false";
    if (!v->allowed) {
        LOG_I("admission", "denied", "webhook", webhook, "uid", r->uid, "kind", r->kind,
              "namespace", r->ns, "name", r->name, "operation", r->operation, "dryRun", dry,
              "reason", v->reason ? v->reason : "", "message", v->message ? v->message : "");
    } else if (wh_verdict_patched(v)) {
        struct buf patch;
        buf_init(&patch, BUF_CAP_LOG_LINE);
        int dumped = jx_dump(v->patch, JSON_COMPACT, &patch);
        LOG_I("admission", "patched", "webhook", webhook, "uid", r->uid, "kind", r->kind,
              "namespace", r->ns, "name", r->name, "operation", r->operation, "dryRun", dry,
              "patch", dumped == 0 ? buf_cstr(&patch) : "(too long to log)");
        buf_free(&patch);
    } else {
        LOG_D("admission", "allowed", "webhook", webhook, "uid", r->uid, "kind", r->kind,
              "namespace", r->ns, "name", r->name, "operation", r->operation, "dryRun", dry);
    }
}

static int admit(const struct wh_admitter *a, const char *path, const char *body, size_t len,
                 struct buf *out, const char **ctype)
{
    double t0 = (double)clk_now_ns() / 1e9;
    int mutate;
    const struct mk_kind *k;
    if (!wh_admission_path(path, &mutate, &k))
        return bad_request(a, 404, "not found", out, ctype);
    struct wh_review r;
    char err[256];
    /* Bound the tree before jansson builds it: a few MiB of `{},` would
     * take hundreds of MiB decoded. */
    struct jx_scan sc;
    jx_scan(body, len, &sc);
    size_t cost = jx_scan_cost(&sc), max_decoded = a->max_decoded ? a->max_decoded : WH_MAX_DECODED;
    if (cost > max_decoded) {
        snprintf(err, sizeof(err),
                 "body: JSON document too costly to decode: %zu values would take about %zu KiB "
                 "(limit %zu KiB)",
                 jx_scan_values(&sc), cost / 1024, max_decoded / 1024);
        return bad_request(a, 400, err, out, ctype);
    }
    if (a->budget && wh_budget_take(a->budget, cost) < 0)
        return bad_request(a, 429, "too many requests being decoded; retry", out, ctype);
    if (wh_review_decode(body, len, a->max_body ? a->max_body : WH_MAX_BODY, &sc, &r, err,
                         sizeof(err)) < 0) {
        if (a->budget)
            wh_budget_give(a->budget, cost);
        return bad_request(a, 400, err, out, ctype);
    }

    const char *webhook = mutate ? "mutate" : "validate";
    char api[256];
    snprintf(api, sizeof(api), "%s%s%s", r.group, r.group[0] ? "/" : "", r.version);
    const struct mk_kind *rk = mk_kind_by_gvk(api, r.kind);
    const char *kind_label = rk ? rk->kind : "other"; /* bounded label values */
    int status = 200;
    if (k && rk != k) {
        char msg[512];
        snprintf(msg, sizeof(msg), "request.kind: %s %s is not served at %s", api, r.kind, path);
        status = bad_request(a, 400, msg, out, ctype);
        goto out;
    }
    struct wh_verdict v;
    wh_verdict_init(&v);
    /* Unknown kinds (a broader registration of the generic path) pass, and
     * so does everything in kube-system and in our own namespace. */
    int exempt = strcmp(r.ns, "kube-system") == 0 || (a->own_ns && strcmp(r.ns, a->own_ns) == 0);
    if (rk && !exempt &&
        (mutate ? wh_mutate(a->ctx, rk, &r, &v) : wh_validate(a->ctx, rk, &r, &v)) < 0)
        LOG_E("admission", "decision failed", "uid", r.uid, "message", v.message);
    if (r.op == WH_DELETE && v.patch) {
        json_decref(v.patch); /* never a patch on DELETE */
        v.patch = NULL;
    }
    *ctype = "application/json";
    if (wh_review_respond(&r, &v, out) < 0) {
        buf_reset(out);
        status = bad_request(a, 500, "cannot encode the answer", out, ctype);
    } else {
        log_decision(webhook, &r, &v);
    }
    if (a->m) {
        const char *decision = !v.allowed               ? "denied"
                               : wh_verdict_patched(&v) ? "patched"
                                                        : "allowed";
        const char *const lv[] = {webhook, kind_label, r.operation, decision};
        mt_inc(a->m->requests, lv, 1);
        if (!v.allowed) {
            const char *const dv[] = {kind_label, v.reason ? v.reason : "other"};
            mt_inc(a->m->denials, dv, 1);
        }
        const char *const wv[] = {webhook};
        mt_observe(a->m->duration, wv, (double)clk_now_ns() / 1e9 - t0);
    }
    wh_verdict_clear(&v);
out:
    wh_review_clear(&r);
    if (a->budget)
        wh_budget_give(a->budget, cost);
    return status;
}

int wh_admit(const struct wh_admitter *a, const char *path, const char *body, size_t len,
             struct buf *out, const char **ctype)
{
    int scoped = wh_reqmem_begin();
    int status = admit(a, path, body, len, out, ctype);
    if (scoped)
        wh_reqmem_end();
    return status;
}
