/* What the reconciler's pieces share: settings, the manager client and
 * caches, the worker connections, the work queue and metrics.
 *
 * Work queue keys (one queue, a pool of threads):
 *   "w/<ns>/<name>"        a manager Workload (dispatch.c)
 *   "j/<kind>/<ns>/<name>" a manager job, standalone mode (workload_create.c)
 *   "q/<clusterqueue>"     the quota gate of one ClusterQueue (gate.c)
 *   "a/<admissioncheck>"   an AdmissionCheck's Active condition
 *   "c/<cluster>"          a MultiKueueCluster's Active condition
 *   "g/<cluster>"          garbage collection on one worker
 * No lock is held across network I/O: the caches are read under their own
 * read locks, and the small in-memory maps here under `mu`. */
#ifndef MKUEUE_RC_CTX_H
#define MKUEUE_RC_CTX_H

#include <jansson.h>
#include <pthread.h>

#include "clusters.h"
#include "config.h"
#include "echo.h"
#include "events.h"
#include "gate_index.h"
#include "inflight.h"
#include "kinds/kinds.h"
#include "kube_cache.h"
#include "kube_client.h"
#include "queue.h"
#include "rc_metrics.h"
#include "strmap.h"
#include "workqueue.h"

#define RC_WATCH_WORKLOADS 0 /* mkcs watch index of remote Workloads; kinds follow */

struct rc_ctx {
    struct rc_config *cfg;
    struct kc_client *mgr;
    /* the manager's Events: their own rate limit, as client-go's event
     * recorder has, so Events never wait behind (or delay) the writes that
     * move jobs along */
    struct rc_events *events;
    /* manager caches */
    struct kcache *workloads, *localqueues, *clusterqueues, *admissionchecks, *mkconfigs,
        *mkclusters, *secrets, *priorityclasses, *wpcs; /* wpcs: WorkloadPriorityClasses */
    struct mkq_caches q;
    int nkinds;
    const struct mk_kind *kinds[RC_MAX_KINDS];
    struct kcache *jobs[RC_MAX_KINDS];
    int managed_by_kept[RC_MAX_KINDS]; /* the manager's schema keeps managedBy */
    struct mkcs *clusters;
    struct rc_inflight *inflight; /* calls in flight per worker (inflight.h; may be NULL) */
    struct rc_probe *probe;       /* reachability of connected workers (may be NULL) */
    /* Every key but a job's: Workloads, queues (the gate), checks,
     * clusters, GC. Jobs' keys ('j') have their own lane (job_queue; NULL:
     * this one), so a burst of thousands of new jobs, each waiting its turn
     * at the manager's write budget, does not hold back the quota and the
     * dispatch of the Workloads that exist (Kueue's job and Workload
     * controllers have their own queues too). */
    struct wq *queue;
    struct wq *job_queue;
    struct rc_metrics metrics;

    pthread_mutex_t mu;      /* guards the maps below; never held across I/O */
    struct smap *rounds;     /* Incremental round start (long long * ms) per Workload key */
    struct smap *deleted;    /* last state (json_t *) of Workloads deleted before cleanup */
    struct smap *lag;        /* first unsynced remote job event (long long * ms) per key */
    struct smap *assumed;    /* gate: reservations written but not yet seen (struct rc_assumed *) */
    struct smap *qstatus_at; /* gate: last queue status write (long long * ms) per CQ */
    struct smap *gate_views; /* gate: what a pass reads of each Workload (gate.c) */
    struct rc_gix *gix;      /* gate: each ClusterQueue's Workloads (gate_index.h; standalone) */
    /* per Workload key, json_t * {"uid": the manager Workload's UID,
     * "clusters": {cluster: UID of its copy removed once for spec drift}}
     * (dispatch.c, under mu). In memory only: a restart allows one more
     * re-create, never a loop. */
    struct smap *drift;
    /* per cluster name, long long * ms (monotonic): when an observation
     * first saw it unavailable (no connection, unreachable, or no
     * MultiKueueCluster), forgotten once it is available (dispatch.c,
     * under mu). The worker-lost timeout runs from there. */
    struct smap *lost;
    struct rc_echo *echo;         /* echo.h: job status writes the cache has not shown */
    struct rc_why *why;           /* why.h: create errors and the Pending Events' rate limit */
    struct rc_podwatch *podwatch; /* podwatch.h: pods of dispatched jobs (layer 2; may be NULL) */
    /* mkcs watch index of the first of the workers' podrefs.h watches (after
     * the kinds), 0 when they are off (dataAwareDispatch false) */
    int refs_watch;
};

/* Index of a kind among the enabled ones, -1 when not enabled. */
int rc_kind_index(const struct rc_ctx *x, const struct mk_kind *k);
/* Enqueue helpers: prefix + key. */
void rc_enqueue(struct rc_ctx *x, char prefix, const char *key);
void rc_enqueue_after(struct rc_ctx *x, char prefix, const char *key, long ms);
/* The same ahead of the other keys (wq_add_first): work a dispatch waits
 * on, not the upkeep of jobs already placed. */
void rc_enqueue_first(struct rc_ctx *x, char prefix, const char *key, long ms);
/* Every manager Workload (e.g. after a cluster came back). */
void rc_enqueue_all_workloads(struct rc_ctx *x);
/* The periodic resync's: the Workloads that hold quota or are being
 * deleted. One without a reservation has no copy or job to drift (its
 * copies go when its quota does, retried on failure), and a manager with
 * 50,000 queued would otherwise put them all ahead of new work every
 * resync. */
void rc_enqueue_resync_workloads(struct rc_ctx *x);
/* 1 when a resync should reconcile this cached Workload (its record):
 * it holds quota or is being deleted. The informers' own resync delivers
 * every Workload again too (main.c) and asks the same. */
int rc_resync_wanted(const json_t *packed);

#define RC_WL_ECHO_KEY_MAX (KCACHE_KEY_MAX + 16)

/* The echo key (echo.h) of our writes to a manager Workload (full object
 * or cache record): "workloads/NS/NAME". 0, or -1 without name. */
int rc_wl_echo_key(const json_t *wl, char *out, size_t outlen);
/* The same from the Workload's cache key ("NS/NAME"); -1 when too long. */
int rc_wl_echo_key_of(const char *key, char *out, size_t outlen);

/* The clusters of an AdmissionCheck's MultiKueueConfig (new reference, an
 * array in config order), or NULL with why. */
json_t *rc_check_clusters(struct rc_ctx *x, const char *check, char *why, size_t whylen);
/* The first admission check of the Workload whose AdmissionCheck has the
 * MultiKueue controller, into out; 0 or -1 when none. */
int rc_mk_check_of(struct rc_ctx *x, const json_t *wl, char *out, size_t outlen);
/* The ClusterQueue of a Workload (through its LocalQueue), into out. wl is
 * the Workload or its cache record (pack.h keeps what this reads). */
int rc_cq_of(struct rc_ctx *x, const json_t *wl, char *out, size_t outlen);

/* Writes the Active condition of obj, the cluster-scoped object `name` of
 * res, when it says something else (rc_active_patch), and logs it with
 * logger (the object named as `what`). Returns 0 (written or unchanged) or
 * -1. */
int rc_write_active(struct rc_ctx *x, const struct kc_resource *res, const json_t *obj,
                    const char *name, const char *status, const char *reason, const char *message,
                    const char *logger, const char *what);

#endif
