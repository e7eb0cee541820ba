/* Kubeconfig Secrets of MultiKueueClusters, read by name.
 *
 * Instead of listing and watching every Secret of the namespace (the
 * webhook's CA key and Helm's release Secrets included), a poller GETs only
 * the Secrets that MultiKueueClusters name (kubeConfig location with
 * locationType Secret, the default; mkq_kubeconfig_source), every interval and
 * at once after ksec_kick(). It keeps a slim copy of each (ksec_slim: the
 * "kubeconfig" key and the metadata mkcs_sync needs) in a kcache, which it
 * replaces after every round (so the cache's handlers see adds, updates on
 * a new resourceVersion, and deletes) and marks synced after the first.
 * RBAC then needs `get` on those names only (resourceNames), no list.
 *
 * A Secret that cannot be read (403, transport error) keeps its last copy;
 * without one it is stored as a stub whose KSEC_ERROR_FIELD says why, which
 * mkcs reports as the cluster's BadKubeConfig message. 404 leaves it out.
 *
 * Thread-safety: ksec_kick from any thread; ksec_start/ksec_stop from one.
 * The poller thread is the cache's only writer. */
#ifndef MKUEUE_KUBE_SECRETS_H
#define MKUEUE_KUBE_SECRETS_H

#include <jansson.h>

#include "kube_cache.h"
#include "kube_client.h"

#define KSEC_DEFAULT_INTERVAL_MS 5000
#define KSEC_MAX_SECRETS         1024 /* names read per round */
#define KSEC_KEY                 "kubeconfig"
#define KSEC_ERROR_FIELD         "mkueueReadError" /* in a stub: why it could not be read */

struct ksec_options {
    const char *ns;   /* the Secrets' namespace (required; copied) */
    long interval_ms; /* 0 = KSEC_DEFAULT_INTERVAL_MS */
};

/* Names of the Secrets the MultiKueueClusters in mkclusters (a JSON array,
 * borrowed) refer to, unique and sorted: a new JSON array of strings, at
 * most KSEC_MAX_SECRETS, or NULL on allocation failure. Pure. */
json_t *ksec_wanted(json_t *mkclusters);

/* A slim copy of a Secret: metadata name, namespace and resourceVersion and
 * data.kubeconfig only (every other key, e.g. a CA key stored beside it, is
 * dropped). Takes the reference to secret; returns a new one, or NULL on
 * allocation failure or when secret has no metadata.name. Pure. */
json_t *ksec_slim(json_t *secret);

struct ksec;

/* Starts the poller. client, mkclusters and out are borrowed and must
 * outlive it; the first round waits until mkclusters is synced. Returns
 * NULL with err. */
struct ksec *ksec_start(struct kc_client *client, struct kcache *mkclusters, struct kcache *out,
                        const struct ksec_options *o, char *err, size_t errlen);
/* Polls now (a MultiKueueCluster changed). NULL is a no-op. */
void ksec_kick(struct ksec *k);
/* Stops and joins the thread (a GET in flight ends within the client's
 * request timeout) and frees. The cache keeps its content. NULL is a no-op. */
void ksec_stop(struct ksec *k);

#endif
