/* Compact storage of manager objects and remote copies in the caches. A
 * jansson tree costs about eight times its JSON text, and the reconciler
 * keeps every manager job and Workload; so the caches hold a small wrapper:
 *
 *   metadata  name, namespace, resourceVersion, deletionTimestamp (what the
 *             cache and the handlers read without unwrapping); remote copies
 *             also uid, finalizers, labels kueue.x-k8s.io/multikueue-origin
 *             and kueue.x-k8s.io/prebuilt-workload-name, and that
 *             annotation (the GC and the remote event handlers);
 *   _z        the whole object as compact JSON, deflated with a preset
 *             dictionary of Kubernetes JSON (pack_dict.c): bytes in a jansson
 *             string, so a wrapper is never serialized.
 *
 * What the text keeps: every field but metadata.managedFields and the
 * kubectl.kubernetes.io/last-applied-configuration annotation, which no
 * reader uses. Everything else is read by someone: a Workload's
 * spec.podSets[].template is the remote copy's spec and what drift is
 * compared against (specdiff.c), a job's spec is the remote job; their
 * status by decide.c and jobsync.c. test_rc_pack checks the round trip is
 * exact but for those two. Readers call rc_unwrap. */
#ifndef MKUEUE_RC_PACK_H
#define MKUEUE_RC_PACK_H

#include <jansson.h>

/* kcache transform: takes obj, returns the wrapper (new reference), or NULL
 * on failure (the cache then keeps obj as it is). */
json_t *rc_pack(json_t *obj, void *ud);
/* The same for remote copies (worker caches): the wrapper also keeps
 * metadata uid, finalizers, and the origin and prebuilt-workload labels and
 * prebuilt-workload annotation, which the GC and the remote event handlers
 * read without unwrapping. */
json_t *rc_pack_remote(json_t *obj, void *ud);

/* The same for manager Workloads: the wrapper also keeps spec.queueName
 * and status.admission.clusterQueue (shared strings, members "_q" and
 * "_a"), so the quota gate finds a Workload's ClusterQueue (rc_cq_of)
 * without unwrapping it. */
json_t *rc_pack_workload(json_t *obj, void *ud);
/* Those two of a wrapper (borrowed), NULL when absent or not a wrapper. */
const char *rc_packed_queue(const json_t *w);
const char *rc_packed_admission_cq(const json_t *w);

/* The full object (new reference) of a wrapper, or obj itself (incref'd)
 * when it is not one; NULL for NULL or undecodable text. */
json_t *rc_unwrap(const json_t *obj);

/* kcache_get + rc_unwrap. */
struct kcache;
json_t *rc_cache_get(struct kcache *c, const char *key);
json_t *rc_cache_get_nsname(struct kcache *c, const char *ns, const char *name);

#endif
