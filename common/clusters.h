/* Connections to the worker clusters named by MultiKueueClusters.
 *
 * One connection per MultiKueueCluster: its kubeconfig (from a Secret key
 * "kubeconfig" in mkueue's namespace, or a file under one allowed folder) is
 * parsed as UNTRUSTED input, a kube client is built, and the informers the
 * caller asked for run against the worker. Both binaries use it: the webhook
 * watches namespaces and LocalQueues (and, metadata only, the names the
 * preflight needs) on every worker, the reconciler remote
 * Workloads and jobs carrying its origin label.
 *
 * The set is level-triggered: mkcs_sync() compares the wanted state (the
 * MultiKueueCluster and Secret caches of the manager) with the running
 * connections, and starts, restarts (kubeconfig changed) or stops them.
 * A connection is "connected" when every informer of it is connected and
 * synced. Losses are timed on the monotonic clock from the first observed
 * disconnect (invariant 6); a new connection counts as disconnected since
 * its creation until it first connects, and a cluster that was not connected
 * keeps its first-loss time across restarts and refused kubeconfigs.
 * Informers have no "lost" event, so a monitor thread polls them and calls
 * on_state on transitions. Old connections are stopped on a reaper thread.
 *
 * Thread-safety: all functions may be called from any thread. */
#ifndef MKUEUE_CLUSTERS_H
#define MKUEUE_CLUSTERS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kube_cache.h"
#include "kube_client.h"

#define MKCS_MAX_WATCHES 32

/* Caps on what one worker can make this process hold: a broken or
 * compromised worker must not exhaust the memory of the manager side (the
 * webhook is shared by every worker). A breach fails that worker's informer
 * (reason MKCS_REASON_LIMIT), it does not crash the process. */
#define MKCS_MAX_OBJECT_BYTES    (2u * 1024 * 1024) /* one watch event (line) */
#define MKCS_MAX_PAGE_BYTES      (4u * 1024 * 1024) /* any response body, a list page included */
#define MKCS_LIST_PAGE_SIZE      50                 /* list limit=; halved when a page is too big */
#define MKCS_DEFAULT_MAX_OBJECTS 20000              /* objects per watch cache */
#define MKCS_REASON_LIMIT        "WorkerLimitExceeded"

/* An informer to run on every worker. The handler (optional) is called from
 * the informer's thread for every add, update or delete; `obj` is borrowed
 * for the call. */
struct mkcs_watch {
    struct kc_resource res;
    const char *label_selector; /* e.g. "kueue.x-k8s.io/multikueue-origin=multikueue"; NULL = all */
    void (*on_event)(const char *cluster, const char *key, json_t *obj, int deleted, void *ud);
    void *ud;
    /* Optional kcache transform of the watch's cache (see kcache_set_transform;
     * it also gets ud): on_event and cache readers then see its results. */
    json_t *(*transform)(json_t *obj, void *ud);
    /* Lists and watches PartialObjectMetadata (KC_ACCEPT_METADATA*, a client
     * of its own): names, labels, annotations, never a Secret's data. Such a
     * watch is optional: its failure (no RBAC for it on the worker, a cap)
     * never makes the worker disconnected; readers check kcache_synced. */
    int metadata_only;
};

struct mkcs_options {
    const char *secret_namespace; /* where kubeconfig Secrets live (mkueue's namespace) */
    /* Folder Path-type kubeconfigs must resolve under (after symlinks, no
     * ".."); NULL refuses Path-type kubeconfigs. */
    const char *kubeconfig_dir;
    const struct mkcs_watch *watches; /* copied */
    size_t nwatches;
    /* For worker clients; NULL = defaults. max_body is capped at
     * MKCS_MAX_PAGE_BYTES (0 = that). */
    const struct kc_options *client;
    size_t max_objects; /* per watch cache; 0 = MKCS_DEFAULT_MAX_OBJECTS */
    /* Called (from any thread, no lock held) when a cluster's state changes:
     * connected, disconnected, kubeconfig refused, removed. A transition is
     * a change of known, connected, reason, or message other than the
     * attempt count (so retries of a dead worker do not call it each time).
     * It may call mkcs_state, mkcs_get and mkcs_sync. */
    void (*on_state)(const char *cluster, void *ud);
    void *ud;
    /* Informer retry and relist backoff (capped, jittered exponential):
     * 0 = KW_BACKOFF_INITIAL_MS / KW_BACKOFF_MAX_MS (800 ms / 30 s). */
    long backoff_initial_ms;
    long backoff_max_ms;
    long monitor_interval_ms; /* how often informers are polled; 0 = 250 ms */
};

struct mkcs;

/* Returns a new set (mkcs_free it) with no cluster yet, or NULL with err on
 * bad options (no secret_namespace, too many watches, a watch without a
 * resource) or when its threads cannot start. Every string of o is copied. */
struct mkcs *mkcs_new(const struct mkcs_options *o, char *err, size_t errlen);
/* Stops every connection (joins informer, monitor and reaper threads; may
 * take up to the client's request timeout) and frees. Connections still held
 * stay readable (caches, client) until their mkcs_put. NULL is a no-op. */
void mkcs_free(struct mkcs *s);

/* Reconciles the connections with the MultiKueueClusters in `mkclusters`
 * and the Secrets in `secrets` (the kube_secrets poller's cache of the
 * named kubeconfig Secrets; may be NULL
 * when only Path kubeconfigs are used). Cheap when nothing changed; call it
 * from the handlers of both caches and periodically. Never blocks on a
 * worker: stopping old informers happens on a background thread. Does
 * nothing until both caches are synced (so a half-filled cache at start-up
 * does not stop connections). A connection is restarted only when its
 * kubeconfig bytes change. */
void mkcs_sync(struct mkcs *s, struct kcache *mkclusters, struct kcache *secrets);

/* What the reconciler writes into the MultiKueueCluster's Active condition. */
struct mkcs_state {
    int known;     /* a MultiKueueCluster of that name is being handled */
    int connected; /* every informer connected and synced */
    /* Monotonic ms (CLOCK_MONOTONIC) of the first loss, kept across
     * reconnect attempts; 0 while connected. */
    int64_t disconnected_since_ms;
    /* Kueue's reasons: "Active", "BadKubeConfig", "InsecureKubeConfig",
     * "ClientConnectionFailed"; and MKCS_REASON_LIMIT when the worker broke
     * one of the caps above (message: which one) */
    char reason[64];
    /* "Connected", "load client config failed: <err>", or the connection
     * error with attempt count: "<informer error>; connection attempts: <n>"
     * ("connecting; connection attempts: 0" before the first answer) */
    char message[512];
};
/* Fills out (zeroed first; known = 0 for an unknown cluster). Returns 0, or
 * -1 when the cluster is unknown. */
int mkcs_state(struct mkcs *s, const char *cluster, struct mkcs_state *out);

/* Names of all handled clusters, including those with a refused kubeconfig,
 * sorted (new JSON array of strings; NULL on allocation failure). */
json_t *mkcs_names(struct mkcs *s);

/* A borrowed connection: stays valid (client and caches alive) until
 * mkcs_put, even if the cluster is removed or restarted meanwhile. NULL when
 * the cluster is unknown or has no client (bad kubeconfig). */
struct mkcs_conn;
struct mkcs_conn *mkcs_get(struct mkcs *s, const char *cluster);
/* Drops the reference; NULL is a no-op. Does not need the set (may be called
 * after mkcs_free). */
void mkcs_put(struct mkcs_conn *c);
const char *mkcs_conn_name(const struct mkcs_conn *c);
struct kc_client *mkcs_conn_client(struct mkcs_conn *c);
/* The cache of watch i (index into mkcs_options.watches), NULL when out of
 * range. Keeps its last content after the connection was stopped. */
struct kcache *mkcs_conn_cache(struct mkcs_conn *c, size_t watch_index);
/* Every informer connected and synced; 0 once the connection was replaced
 * or removed (its informers are stopped). */
int mkcs_conn_connected(struct mkcs_conn *c);

#endif
