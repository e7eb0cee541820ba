/* The reconciler's Prometheus metrics and its plain-HTTP endpoint
 * (/metrics, /healthz, /readyz) on libmicrohttpd. */
#ifndef MKUEUE_RC_METRICS_H
#define MKUEUE_RC_METRICS_H

#include "kube_client.h"
#include "metrics.h"
#include "workqueue.h"

struct rc_metrics {
    struct mt_registry *reg;
    struct mt_family *dispatched;  /* multikueue_workloads_dispatched_total */
    struct mt_family *admitted;    /* multikueue_workloads_admitted_total */
    struct mt_family *connected;   /* mkueue_cluster_connected{cluster} */
    struct mt_family *reconcile;   /* mkueue_reconcile_duration_seconds{kind,result} */
    struct mt_family *wl_steps;    /* mkueue_workload_step_duration_seconds{step} */
    struct mt_family *sync_lag;    /* mkueue_status_sync_lag_seconds */
    struct mt_family *remote_err;  /* mkueue_remote_api_errors_total{cluster,code} */
    struct mt_family *leader;      /* mkueue_leader */
    struct mt_family *tracked;     /* mkueue_tracked_workloads */
    struct mt_family *gc_deleted;  /* mkueue_gc_deleted_total{cluster} */
    struct mt_family *quota;       /* mkueue_quota_reservations_total{cluster_queue} */
    struct mt_family *gate_passes; /* mkueue_gate_passes_total{cluster_queue,pass} */
    struct mt_family *heap;        /* mkueue_heap_inuse_bytes (malloc view) */
    struct mt_family *not_served;  /* mkueue_job_kind_not_served{group,kind} */
    /* client-go's families of every client's requests, the manager's and
     * the workers' (their host label tells them apart) */
    struct mt_family *requests;       /* rest_client_requests_total{code,host,method} */
    struct mt_family *latency;        /* rest_client_request_duration_seconds{verb,host} */
    struct mt_family *throttled;      /* rest_client_rate_limiter_duration_seconds{verb,host} */
    struct mt_family *events_dropped; /* mkueue_events_dropped_total (events.h) */
    /* client-go's workqueue_* families, by kind of key (rc_key_kind) */
    struct mt_family *wq_depth, *wq_adds, *wq_wait, *wq_work, *wq_unfinished, *wq_longest,
        *wq_retries;
};

/* Registers every family. Returns 0, -1 on oom. */
int rc_metrics_init(struct rc_metrics *m);
void rc_metrics_free(struct rc_metrics *m);

/* The kind of a work queue key from its prefix ("workload", "job", "quota",
 * "admissioncheck", "cluster", "gc"; "other"): the metrics' label. */
const char *rc_key_kind(char prefix);

/* Fills *o so that a work queue reports to the workqueue_* families. */
void rc_metrics_queue_observer(struct rc_metrics *m, struct wq_observer *o);
/* Sets workqueue_unfinished_work_seconds and
 * workqueue_longest_running_processor_seconds from the keys the n queues
 * have in process now (call before rendering). */
void rc_metrics_queue_progress(struct rc_metrics *m, struct wq *const queues[], int n);

/* "leader", "follower" or "standalone" (no leader election), per Kueue. */
void rc_metrics_set_role(const char *role);
const char *rc_metrics_role(void);

/* kc_options.on_done of the manager's and the workers' clients (ud: struct
 * rc_metrics *): one request, as client-go counts them ("<error>" when no
 * answer came), how long its answer took and its wait for the client's qps
 * budget. */
void rc_metric_request(void *ud, const char *host, const char *method, const struct kc_status *st);

void rc_metric_dispatched(struct rc_metrics *m, const char *cq, const char *cluster);
void rc_metric_admitted(struct rc_metrics *m, const char *cq, const char *cluster);
/* code: the HTTP status, or 0 for a transport error ("transport"). */
void rc_metric_remote_error(struct rc_metrics *m, const char *cluster, long code);

struct rc_http;
/* Serves the registry on addr ("host:port" or ":port"). ready() answers
 * /readyz (1 = ready). Returns NULL with err. */
struct rc_http *rc_http_start(const char *addr, struct rc_metrics *m, int (*ready)(void *ud),
                              void (*before_render)(void *ud), void *ud, char *err, size_t errlen);
void rc_http_stop(struct rc_http *h);
/* The port actually bound (for ":0"). */
int rc_http_port(const struct rc_http *h);

#endif
