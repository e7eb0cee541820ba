#include "rc_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd.h"

static const char *role = "standalone";

void rc_metrics_set_role(const char *r)
{
    __atomic_store_n(&role, r, __ATOMIC_RELEASE);
}

const char *rc_metrics_role(void)
{
    return __atomic_load_n(&role, __ATOMIC_ACQUIRE);
}

static const double lag_buckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60};

int rc_metrics_init(struct rc_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->reg = mt_registry_new();
    if (!m->reg)
        return -1;
    static const char *const mk[] = {"cluster_queue", "cluster", "replica_role", NULL};
    static const char *const cl[] = {"cluster", NULL};
    static const char *const rk[] = {"kind", "result", NULL};
    static const char *const re[] = {"cluster", "code", NULL};
    static const char *const cq[] = {"cluster_queue", NULL};
    m->dispatched = mt_counter(m->reg, "multikueue_workloads_dispatched_total",
                               "Remote Workloads created on worker clusters.", mk);
    m->admitted = mt_counter(m->reg, "multikueue_workloads_admitted_total",
                             "Times the MultiKueue admission check became Ready for a worker.", mk);
    m->connected =
        mt_gauge(m->reg, "mkueue_cluster_connected",
                 "1 when every watch on the worker cluster is connected and synced.", cl);
    m->reconcile =
        mt_histogram(m->reg, "mkueue_reconcile_duration_seconds",
                     "Duration of one reconcile, by kind of key and result.", rk, NULL, 0);
    m->depth = mt_gauge(m->reg, "mkueue_workqueue_depth", "Keys waiting in the work queue.", NULL);
    m->sync_lag = mt_histogram(m->reg, "mkueue_status_sync_lag_seconds",
                               "From a remote job event to its status written on the manager.",
                               NULL, lag_buckets, sizeof(lag_buckets) / sizeof(lag_buckets[0]));
    m->remote_err = mt_counter(m->reg, "mkueue_remote_api_errors_total",
                               "Failed API calls to worker clusters, by HTTP code.", re);
    m->leader = mt_gauge(m->reg, "mkueue_leader", "1 while this replica is the leader.", NULL);
    m->tracked =
        mt_gauge(m->reg, "mkueue_tracked_workloads", "Manager Workloads in the cache.", NULL);
    m->gc_deleted = mt_counter(m->reg, "mkueue_gc_deleted_total",
                               "Orphaned remote objects deleted by the garbage collector.", cl);
    m->quota = mt_counter(m->reg, "mkueue_quota_reservations_total",
                          "Quota reservations made by the standalone gate.", cq);
    static const char *const gp[] = {"cluster_queue", "pass", NULL};
    m->gate_passes = mt_counter(m->reg, "mkueue_gate_passes_total",
                                "Passes of the standalone gate over a ClusterQueue, by what they "
                                "read: fast (the Workloads changed since), full (every member), "
                                "whole_cache (the index lost).",
                                gp);
    static const char *const gk[] = {"group", "kind", NULL};
    m->not_served = mt_gauge(m->reg, "mkueue_job_kind_not_served",
                             "1 for a configured job kind the manager does not serve (no CRD): "
                             "left out until a restart.",
                             gk);
    static const char *const rq[] = {"code", "host", "method", NULL};
    m->requests = mt_counter(m->reg, "rest_client_requests_total",
                             "Requests to the manager's API server, by status code, host and "
                             "method (client-go's name).",
                             rq);
    m->events_dropped =
        mt_counter(m->reg, "mkueue_events_dropped_total",
                   "Events not posted because RC_EVENTS_QUEUE_MAX were waiting.", NULL);
    m->heap = mt_gauge(m->reg, "mkueue_heap_inuse_bytes",
                       "Bytes malloc hands out now (RSS minus allocator slack).", NULL);
    if (!m->heap || !m->dispatched || !m->admitted || !m->connected || !m->reconcile || !m->depth ||
        !m->sync_lag || !m->remote_err || !m->leader || !m->tracked || !m->gc_deleted ||
        !m->quota || !m->gate_passes || !m->not_served || !m->requests || !m->events_dropped) {
        rc_metrics_free(m);
        return -1;
    }
    return 0;
}

void rc_metrics_free(struct rc_metrics *m)
{
    mt_registry_free(m->reg);
    memset(m, 0, sizeof(*m));
}

void rc_metric_manager_request(void *ud, const char *method, long http)
{
    struct rc_metrics *m = ud;
    char code[24];
    if (http > 0)
        snprintf(code, sizeof(code), "%ld", http);
    else
        snprintf(code, sizeof(code), "<error>");
    const char *v[] = {code, m->mgr_host, method};
    mt_inc(m->requests, v, 1);
}

void rc_metric_dispatched(struct rc_metrics *m, const char *cq, const char *cluster)
{
    const char *v[] = {cq, cluster, rc_metrics_role()};
    mt_inc(m->dispatched, v, 1);
}

void rc_metric_admitted(struct rc_metrics *m, const char *cq, const char *cluster)
{
    const char *v[] = {cq, cluster, rc_metrics_role()};
    mt_inc(m->admitted, v, 1);
}

void rc_metric_remote_error(struct rc_metrics *m, const char *cluster, long code)
{
    char c[24];
    if (code > 0)
        snprintf(c, sizeof(c), "%ld", code);
    else
        snprintf(c, sizeof(c), "transport");
    const char *v[] = {cluster, c};
    mt_inc(m->remote_err, v, 1);
}

/* ---- HTTP ----------------------------------------------------------------- */

struct rc_http {
    struct MHD_Daemon *d;
    struct rc_metrics *m;
    int (*ready)(void *ud);
    void (*before_render)(void *ud);
    void *ud;
    int port;
};

#define TEXT "text/plain"

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload, (void)con_cls;
    struct rc_http *h = cls;
    if (*upload_size) {
        *upload_size = 0; /* bodies are ignored */
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return httpd_reply_str(conn, 405, TEXT, "method not allowed\n");
    if (strcmp(url, "/healthz") == 0)
        return httpd_reply_str(conn, 200, TEXT, "ok\n");
    if (strcmp(url, "/readyz") == 0) {
        if (!h->ready || h->ready(h->ud))
            return httpd_reply_str(conn, 200, TEXT, "ok\n");
        return httpd_reply_str(conn, 503, TEXT, "caches not synced\n");
    }
    if (strcmp(url, "/metrics") == 0) {
        if (h->before_render)
            h->before_render(h->ud);
        struct buf b;
        buf_init(&b, BUF_CAP_METRICS);
        if (mt_render(h->m->reg, &b) < 0 || !buf_cstr(&b)) {
            buf_free(&b);
            return httpd_reply_str(conn, 500, TEXT, "render failed\n");
        }
        return httpd_reply_buf(conn, 200, "text/plain; version=0.0.4; charset=utf-8", &b, NULL);
    }
    return httpd_reply_str(conn, 404, TEXT, "not found\n");
}

struct rc_http *rc_http_start(const char *addr, struct rc_metrics *m, int (*ready)(void *ud),
                              void (*before_render)(void *ud), void *ud, char *err, size_t errlen)
{
    char host[64];
    int port;
    if (httpd_split_addr(addr, host, sizeof(host), &port, err, errlen) < 0)
        return NULL;
    struct rc_http *h = calloc(1, sizeof(*h));
    if (!h) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    h->m = m;
    h->ready = ready;
    h->before_render = before_render;
    h->ud = ud;
    struct httpd_opts o = {
        .name = "metrics",
        .bind = host,
        .port = port,
        .max_connections = 32,
        .timeout_s = 10,
        .handler = handler,
        .cls = h,
    };
    h->d = httpd_start(&o, &h->port, err, errlen);
    if (!h->d) {
        free(h);
        return NULL;
    }
    return h;
}

void rc_http_stop(struct rc_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}

int rc_http_port(const struct rc_http *h)
{
    return h->port;
}
