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

/* client-go's: ExponentialBuckets(10e-9, 10, 12), 10 ns to 1,000 s */
static const double wq_buckets[] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                    1e-2, 1e-1, 1,    10,   100,  1000};

/* The work queues' kinds of key: prefix and label, "other" past them. */
static const struct {
    char prefix;
    const char *name;
} key_kinds[] = {{'w', "workload"},       {'j', "job"},     {'q', "quota"},
                 {'a', "admissioncheck"}, {'c', "cluster"}, {'g', "gc"}};
#define RC_KEY_KINDS (sizeof(key_kinds) / sizeof(key_kinds[0]))

/* key_kinds' index of prefix, RC_KEY_KINDS for "other" */
static size_t key_kind_index(char prefix)
{
    size_t i = 0;
    while (i < RC_KEY_KINDS && key_kinds[i].prefix != prefix)
        i++;
    return i;
}

const char *rc_key_kind(char prefix)
{
    size_t i = key_kind_index(prefix);
    return i < RC_KEY_KINDS ? key_kinds[i].name : "other";
}

/* client-go's workqueue metrics as controller-runtime registers them: name
 * and controller both the queue's (here the kind of key), depth with an
 * empty priority. */
static int register_queue_families(struct rc_metrics *m)
{
    static const char *const nc[] = {"name", "controller", NULL};
    static const char *const ncp[] = {"name", "controller", "priority", NULL};
    size_t nb = sizeof(wq_buckets) / sizeof(wq_buckets[0]);
    const struct mt_def defs[] = {
        {&m->wq_depth, MT_GAUGE, "workqueue_depth",
         "Current depth of workqueue by workqueue and priority", ncp, NULL, 0},
        {&m->wq_adds, MT_COUNTER, "workqueue_adds_total",
         "Total number of adds handled by workqueue", nc, NULL, 0},
        {&m->wq_wait, MT_HISTOGRAM, "workqueue_queue_duration_seconds",
         "How long in seconds an item stays in workqueue before being requested", nc, wq_buckets,
         nb},
        {&m->wq_work, MT_HISTOGRAM, "workqueue_work_duration_seconds",
         "How long in seconds processing an item from workqueue takes.", nc, wq_buckets, nb},
        {&m->wq_unfinished, MT_GAUGE, "workqueue_unfinished_work_seconds",
         "How many seconds of work has been done that is in progress and hasn't been observed by "
         "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
         "threads by observing the rate at which this increases.",
         nc, NULL, 0},
        {&m->wq_longest, MT_GAUGE, "workqueue_longest_running_processor_seconds",
         "How many seconds has the longest running processor for workqueue been running.", nc, NULL,
         0},
        {&m->wq_retries, MT_COUNTER, "workqueue_retries_total",
         "Total number of retries handled by workqueue", nc, NULL, 0},
    };
    if (mt_register(m->reg, defs, sizeof(defs) / sizeof(defs[0])) < 0)
        return -1;
    /* every kind's series from the start, at 0, as client-go's queues have */
    for (size_t i = 0; i < RC_KEY_KINDS; i++) {
        const char *k = key_kinds[i].name;
        const char *v[] = {k, k, ""};
        mt_add(m->wq_depth, v, 0);
        mt_inc(m->wq_adds, v, 0);
        mt_set(m->wq_unfinished, v, 0);
        mt_set(m->wq_longest, v, 0);
        mt_inc(m->wq_retries, v, 0);
    }
    return 0;
}

static void queue_added(void *ud, const char *key)
{
    struct rc_metrics *m = ud;
    const char *k = rc_key_kind(key[0]);
    const char *v[] = {k, k, ""};
    mt_inc(m->wq_adds, v, 1);
    mt_add(m->wq_depth, v, 1);
}

static void queue_started(void *ud, const char *key, double wait_s)
{
    struct rc_metrics *m = ud;
    const char *k = rc_key_kind(key[0]);
    const char *v[] = {k, k, ""};
    mt_add(m->wq_depth, v, -1);
    mt_observe(m->wq_wait, v, wait_s);
}

static void queue_finished(void *ud, const char *key, double work_s)
{
    struct rc_metrics *m = ud;
    const char *k = rc_key_kind(key[0]);
    const char *v[] = {k, k};
    mt_observe(m->wq_work, v, work_s);
}

static void queue_retried(void *ud, const char *key)
{
    struct rc_metrics *m = ud;
    const char *k = rc_key_kind(key[0]);
    const char *v[] = {k, k};
    mt_inc(m->wq_retries, v, 1);
}

void rc_metrics_queue_observer(struct rc_metrics *m, struct wq_observer *o)
{
    *o = (struct wq_observer){queue_added, queue_started, queue_finished, queue_retried, m};
}

struct progress {
    double sum[RC_KEY_KINDS + 1], longest[RC_KEY_KINDS + 1]; /* the last: "other" */
};

static void add_progress(void *ud, const char *key, double s)
{
    struct progress *p = ud;
    size_t i = key_kind_index(key[0]);
    p->sum[i] += s;
    if (s > p->longest[i])
        p->longest[i] = s;
}

void rc_metrics_queue_progress(struct rc_metrics *m, struct wq *const queues[], int n)
{
    struct progress p = {0};
    for (int i = 0; i < n; i++)
        if (queues[i])
            wq_foreach_processing(queues[i], add_progress, &p);
    for (size_t i = 0; i < RC_KEY_KINDS; i++) {
        const char *k = key_kinds[i].name;
        const char *v[] = {k, k};
        mt_set(m->wq_unfinished, v, p.sum[i]);
        mt_set(m->wq_longest, v, p.longest[i]);
    }
}

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
    static const char *const st[] = {"step", NULL};
    m->wl_steps = mt_histogram(m->reg, "mkueue_workload_step_duration_seconds",
                               "Duration of one Workload reconcile, by the step that decided it.",
                               st, NULL, 0);
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
                             "Requests to the API servers (the manager's and the workers'), by "
                             "status code, host and method (client-go's name).",
                             rq);
    /* client-go's buckets: a wait of seconds means a budget too small */
    static const double rl_buckets[] = {0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60};
    static const char *const rl[] = {"verb", "host", NULL};
    m->latency = mt_histogram(m->reg, "rest_client_request_duration_seconds",
                              "Time from sending a request to the API servers to its answer, "
                              "by verb and host (client-go's name).",
                              rl, rl_buckets, sizeof(rl_buckets) / sizeof(rl_buckets[0]));
    m->throttled = mt_histogram(m->reg, "rest_client_rate_limiter_duration_seconds",
                                "Time requests to the API servers waited for their client's qps "
                                "budget, by verb and host (client-go's name).",
                                rl, rl_buckets, sizeof(rl_buckets) / sizeof(rl_buckets[0]));
    m->events_dropped =
        mt_counter(m->reg, "mkueue_events_dropped_total",
                   "Events not posted because RC_EVENTS_QUEUE_MAX were waiting.", NULL);
    m->heap = mt_gauge(m->reg, "mkueue_heap_inuse_bytes",
                       "Bytes malloc hands out now (RSS minus allocator slack).", NULL);
    if (register_queue_families(m) < 0 || !m->heap || !m->dispatched || !m->admitted ||
        !m->connected || !m->reconcile || !m->sync_lag || !m->remote_err || !m->leader ||
        !m->tracked || !m->gc_deleted || !m->quota || !m->gate_passes || !m->not_served ||
        !m->requests || !m->latency || !m->throttled || !m->events_dropped) {
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

void rc_metric_request(void *ud, const char *host, const char *method, const struct kc_status *st)
{
    struct rc_metrics *m = ud;
    char code[24];
    if (st->http > 0)
        snprintf(code, sizeof(code), "%ld", st->http);
    else
        snprintf(code, sizeof(code), "<error>");
    const char *v[] = {code, host, method};
    mt_inc(m->requests, v, 1);
    const char *w[] = {method, host};
    if (st->http > 0 || st->transport_code) /* sent: answered, or failed on the way */
        mt_observe(m->latency, w, st->duration_s);
    mt_observe(m->throttled, w, st->throttled_s);
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
