/* Compact storage of manager objects and remote copies in the caches. A
 * jansson tree costs about eight times its JSON text, and the reconciler
 * keeps every manager job and Workload; so the caches hold records
 * (kube_cache.h): a jansson string of bytes, never serialized, holding
 *
 *   fields    what the cache, the handlers, the gate and the GC read without
 *             unwrapping (enum rc_md): name, namespace, resourceVersion,
 *             deletionTimestamp, uid, finalizers, the Workload's queue and
 *             admitted ClusterQueue, the origin and prebuilt-workload
 *             labels and annotation; "" when absent;
 *   text      the whole object as compact JSON, deflated with a preset
 *             dictionary of Kubernetes JSON (pack_dict.c) behind its length.
 *
 * A record costs its bytes and 64 (a wrapper object of the same fields cost
 * about 1.2 KB more). What the text keeps: every field but
 * metadata.managedFields and the kubectl.kubernetes.io/last-applied-
 * configuration annotation, which no reader uses. Everything else is read
 * by someone: a Workload's spec.podSets[].template is the remote copy's
 * spec and what drift is compared against (specdiff.c), a job's spec is
 * the remote job; their status by decide.c and jobsync.c. test_rc_pack
 * checks the round trip is exact but for those two. Readers call rc_unwrap
 * for the object and rc_md for a field. */
#ifndef MKUEUE_RC_PACK_H
#define MKUEUE_RC_PACK_H

#include <jansson.h>

#include "kube_cache.h"

/* kcache transform (every cache of manager jobs, Workloads and remote
 * copies): takes obj, returns its record (new reference), or NULL on
 * failure (the cache then keeps obj as it is). */
json_t *rc_pack(json_t *obj, void *ud);

/* A field of a record or of a full object (borrowed), NULL when absent.
 * The first three are kube_cache.h's. */
enum rc_md {
    RC_MD_NAME = KCACHE_REC_NAME,
    RC_MD_NAMESPACE = KCACHE_REC_NAMESPACE,
    RC_MD_RV = KCACHE_REC_RV,
    RC_MD_DELETION = KCACHE_REC_FIELDS, /* metadata.deletionTimestamp */
    RC_MD_UID,
    RC_MD_FINALIZERS,     /* records only: the names joined by '\n' */
    RC_MD_QUEUE,          /* spec.queueName */
    RC_MD_ADMISSION_CQ,   /* status.admission.clusterQueue */
    RC_MD_ORIGIN,         /* label kueue.x-k8s.io/multikueue-origin */
    RC_MD_PREBUILT_LABEL, /* label kueue.x-k8s.io/prebuilt-workload-name */
    RC_MD_PREBUILT_ANNOT, /* the same annotation */
    RC_MD_COUNT
};
const char *rc_md(const json_t *obj, enum rc_md f);
/* 1 when obj is a record. */
int rc_packed(const json_t *obj);

/* The full object (new reference) of a record, or obj itself (incref'd)
 * when it is not one; NULL for NULL or undecodable text. */
json_t *rc_unwrap(const json_t *obj);

/* kcache_get + rc_unwrap. */
json_t *rc_cache_get(struct kcache *c, const char *key);
json_t *rc_cache_get_nsname(struct kcache *c, const char *ns, const char *name);

#endif
