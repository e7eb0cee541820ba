/* The webhook's two HTTP faces, as routes and handlers for wh_server:
 * admission (TLS): POST to the per-kind paths (/mutate-batch-v1-job, ...) and
 * the generic /mutate and /validate; operations (plain HTTP): GET /metrics,
 * /healthz, /readyz; probes (plain HTTP, own listener): /healthz, /readyz. */
#ifndef MKUEUE_WH_APP_H
#define MKUEUE_WH_APP_H

#include <pthread.h>

#include "admission.h"
#include "certs.h"
#include "metrics.h"

struct wh_app {
    struct wh_admitter adm;  /* ctx, metrics and body cap of the decisions */
    struct mt_registry *reg; /* rendered by /metrics */
    struct wh_metrics *m;
    struct wh_certs *certs; /* may be NULL */
    /* Readiness (caches synced) and the refresh of per-cluster gauges. */
    int (*ready)(void *ud);
    void (*collect)(void *ud, struct wh_metrics *m);
    void *ud;
    /* certificate load counts already exported */
    pthread_mutex_t lock;
    long seen_loads, seen_failures;
};

int wh_app_admission_route(void *app, const char *path);
int wh_app_admission_handle(void *app, const char *path, const char *body, size_t len,
                            struct buf *out, const char **ctype);
int wh_app_ops_route(void *app, const char *path);
/* The probe listener: GET /healthz and /readyz only (answered by wh_app_ops_handle). */
int wh_app_probe_route(void *app, const char *path);
int wh_app_ops_handle(void *app, const char *path, const char *body, size_t len, struct buf *out,
                      const char **ctype);

#endif
