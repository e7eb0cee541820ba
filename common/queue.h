/* Queue resolution from in-memory caches (no network):
 *   LocalQueue ns/name -> ClusterQueue -> AdmissionChecks -> the one whose
 *   controllerName is kueue.x-k8s.io/multikueue -> MultiKueueConfig -> clusters.
 * Objects may have been written as v1beta1 or v1beta2 (stored unconverted):
 * both layouts are read. */
#ifndef MKUEUE_QUEUE_H
#define MKUEUE_QUEUE_H

#include <jansson.h>
#include <stddef.h>

#include "kube_cache.h"

#define MKQ_CONTROLLER "kueue.x-k8s.io/multikueue"

struct mkq_caches {
    struct kcache *localqueues;     /* namespaced */
    struct kcache *clusterqueues;   /* cluster-scoped */
    struct kcache *admissionchecks; /* cluster-scoped */
    struct kcache *configs;         /* MultiKueueConfigs */
    struct kcache *clusters;        /* MultiKueueClusters */
};

enum mkq_result {
    MKQ_MULTIKUEUE = 0,       /* the queue dispatches through MultiKueue */
    MKQ_LOCAL = 1,            /* the queue exists and has no MultiKueue check */
    MKQ_NO_LOCALQUEUE = -1,   /* no such LocalQueue */
    MKQ_NO_CLUSTERQUEUE = -2, /* the LocalQueue names a missing ClusterQueue */
};

struct mkq_resolution {
    char cluster_queue[254];
    char admission_check[254]; /* the MultiKueue check, "" when none */
    char config[254];          /* its MultiKueueConfig, "" when unresolved */
    /* Cluster names of the config in config order (new reference), or NULL
     * when the config is missing or malformed; config_error then says why,
     * in Kueue's words ("MultiKueueConfig.kueue.x-k8s.io \"x\" not found"). */
    json_t *clusters;
    char config_error[256];
};

/* Resolves ns/localqueue. Returns an enum mkq_result; `msg` gets a sentence
 * for the user on the negative results ("LocalQueue team-a does not exist in
 * namespace ml"). `out` is always initialised; release it with
 * mkq_resolution_clear. */
int mkq_resolve(const struct mkq_caches *c, const char *ns, const char *localqueue,
                struct mkq_resolution *out, char *msg, size_t msglen);
void mkq_resolution_clear(struct mkq_resolution *r);

/* Names of a ClusterQueue's admission checks, from
 * spec.admissionChecksStrategy.admissionChecks[].name (v1beta2) and the
 * v1beta1 flat spec.admissionChecks[]. New reference (an array). */
json_t *mkq_cluster_queue_checks(const json_t *cq);

/* 1 when the AdmissionCheck's controllerName is kueue.x-k8s.io/multikueue. */
int mkq_is_multikueue_check(const json_t *ac);

/* Where a MultiKueueCluster's kubeconfig comes from, in either layout:
 * spec.clusterSource.kubeConfig (v1beta2) or spec.kubeConfig (v1beta1).
 * *type is "Secret" (default) or "Path". Returns 0, or -1 when neither is
 * set (e.g. a clusterProfileRef). Strings are borrowed from mkc. */
int mkq_kubeconfig_source(const json_t *mkc, const char **type, const char **location);

#endif
