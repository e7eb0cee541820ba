/* The live caches the decisions read: on the manager, informers for
 * LocalQueues, ClusterQueues, AdmissionChecks, MultiKueueConfigs,
 * MultiKueueClusters and the Secrets of mkueue's namespace; on every worker
 * (common/clusters.h), namespaces and LocalQueues. Connections to workers
 * follow the MultiKueueClusters and their kubeconfig Secrets (event-driven
 * and re-checked every second). Nothing here runs on the admission path but
 * cache reads. */
#ifndef MKUEUE_WH_STATE_H
#define MKUEUE_WH_STATE_H

#include <stddef.h>

#include "admission.h"

struct wh_state_opts {
    const char *kubeconfig;     /* trusted kubeconfig of the manager; NULL = in-cluster */
    const char *context;        /* NULL = current-context */
    const char *ns;             /* mkueue's namespace (kubeconfig Secrets) */
    const char *kubeconfig_dir; /* allowed folder of Path kubeconfigs; NULL refuses them */
    double qps;                 /* manager client QPS; 0 = default */
};

struct wh_state;

/* Connects to the manager and starts the informers (they sync in the
 * background: see wh_state_ready). Returns NULL with err when the kubeconfig
 * or the client cannot be set up. */
struct wh_state *wh_state_start(const struct wh_state_opts *o, char *err, size_t errlen);
/* Stops every informer and connection and frees. NULL is a no-op. */
void wh_state_stop(struct wh_state *s);

/* The decision context (valid until wh_state_stop). */
const struct wh_ctx *wh_state_ctx(struct wh_state *s);
/* 1 when the manager caches (and the Secrets) have synced: /readyz. */
int wh_state_ready(struct wh_state *s);
/* Sets mkueue_webhook_cache_synced{cluster} for the manager and each worker. */
void wh_state_collect(struct wh_state *s, struct wh_metrics *m);

/* The worker check of wh_workers on a clusters set (exposed for tests):
 * ud is a struct mkcs *. */
int wh_state_worker_check(void *ud, const char *cluster, const char *ns, const char *lq,
                          int *has_ns, int *has_lq, char *why, size_t whylen);

/* The preflight's object check on a clusters set (ud, a struct mkcs *):
 * 1 when the worker's cache has ns/name of that kind, 0 when not, -1 when
 * the cache is not there or not synced (not checked). */
int wh_state_object_check(void *ud, const char *cluster, enum mk_ref_kind kind, const char *ns,
                          const char *name);

#endif
