/* Compact storage of manager objects in the caches. A jansson tree costs
 * about ten times its JSON text, and the reconciler keeps every manager job
 * and Workload; so the caches hold a small wrapper with what the cache itself
 * needs (metadata name, namespace, resourceVersion; and deletionTimestamp)
 * and the whole object as compact JSON text (managedFields and kubectl's
 * last-applied-configuration annotation dropped). Readers call rc_unwrap. */
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

/* The full object (new reference) of a wrapper, or obj itself (incref'd)
 * when it is not one; NULL for NULL or undecodable text. */
json_t *rc_unwrap(const json_t *obj);

/* kcache_get + rc_unwrap. */
struct kcache;
json_t *rc_cache_get(struct kcache *c, const char *key);
json_t *rc_cache_get_nsname(struct kcache *c, const char *ns, const char *name);

#endif
