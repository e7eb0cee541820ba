/* In-memory store of Kubernetes objects keyed by "namespace/name" (or "name"
 * for cluster-scoped), with add/update/delete handlers and a synced flag.
 * Readers take a read lock; the informer is the only writer. Objects in the
 * store are immutable once stored: writers replace, never modify. */
#ifndef MKUEUE_KUBE_CACHE_H
#define MKUEUE_KUBE_CACHE_H

#include <jansson.h>
#include <stddef.h>

#include "errf.h"

struct kcache;

#define KCACHE_MAX_HANDLERS 8
#define KCACHE_KEY_MAX      512 /* ns (63) + "/" + name (253), with room */

/* Handlers run on the writer's thread (the informer's, never two at once),
 * after the store changed and with no lock held, so they may read the cache.
 * old is NULL for add; for delete, obj is the last known state. Objects are
 * borrowed for the call: json_incref to keep one. */
struct kcache_handlers {
    void (*on_add)(const char *key, json_t *obj, void *ud);
    void (*on_update)(const char *key, json_t *old, json_t *obj, void *ud);
    void (*on_delete)(const char *key, json_t *obj, void *ud);
    void *ud;
};

/* Returns a new empty cache (kcache_free it) or NULL. */
struct kcache *kcache_new(void);
/* Drops every object reference; no handler is called. */
void kcache_free(struct kcache *c);
/* Registers handlers (at most KCACHE_MAX_HANDLERS; h is copied); call before
 * the informer starts. Returns 0 or -1 when full. */
int kcache_add_handlers(struct kcache *c, const struct kcache_handlers *h);

/* Optional transform applied by the writer to every object before it is
 * stored or handed to handlers (add, update, delete and lists alike), e.g.
 * to drop fields a reader never uses and keep memory low. fn takes the
 * reference to obj and returns a new one (or NULL: the object is kept
 * unchanged). The result must keep metadata.name, metadata.namespace and
 * metadata.resourceVersion. Call before the informer starts. */
void kcache_set_transform(struct kcache *c, json_t *(*fn)(json_t *obj, void *ud), void *ud);

/* Caps the number of objects (0 = no cap, the default): an upsert of a new
 * key into a full cache and a replace with more items than the cap return
 * MK_ERR_FULL and leave the content unchanged. Bounds the memory an
 * untrusted server (a worker) can make the cache hold. Call before the
 * informer starts. */
void kcache_set_max_objects(struct kcache *c, size_t max);
size_t kcache_max_objects(struct kcache *c);

/* Compact records. A transform may store, instead of an object, a JSON
 * string of bytes (never serialized): NUL-terminated fields, the first three
 * the object's metadata name, namespace and resourceVersion ("" when
 * absent), then whatever its owner keeps. A jansson object of a few
 * metadata strings costs about a kilobyte (hash table, pairs, strings); a
 * record, its bytes and 64. The cache
 * reads a record's key and version from those three fields. */
enum { KCACHE_REC_NAME, KCACHE_REC_NAMESPACE, KCACHE_REC_RV, KCACHE_REC_FIELDS };
/* Field i of a record (borrowed), NULL when obj is not a record, has fewer
 * fields, or the field is empty. */
const char *kcache_rec_field(const json_t *obj, unsigned i);
/* The bytes after a record's first n fields (borrowed, *len set), NULL
 * when obj is not a record or has fewer fields. */
const char *kcache_rec_tail(const json_t *obj, unsigned n, size_t *len);

/* Key of an object or record: "ns/name" or "name". Writes into out; returns
 * 0, or -1 when the name is missing or empty or the key does not fit. */
int kcache_key(json_t *obj, char *out, size_t outlen);

/* Returns a new reference (json_decref it) or NULL. */
json_t *kcache_get(struct kcache *c, const char *key);
json_t *kcache_get_nsname(struct kcache *c, const char *ns, const char *name);
/* Calls fn for every object under the read lock (fn must not call back into
 * the cache's writers). Stops when fn returns non-zero. ns NULL = all. */
void kcache_foreach(struct kcache *c, const char *ns,
                    int (*fn)(const char *key, json_t *obj, void *ud), void *ud);
/* A JSON array (new reference) of all objects, optionally in one namespace. */
json_t *kcache_list(struct kcache *c, const char *ns);
size_t kcache_len(struct kcache *c);

/* Writer side (the informer). obj reference is taken (stolen) by upsert,
 * also on failure. Returns 0, -1 when obj has no usable key (or on
 * allocation failure), MK_ERR_FULL when obj is new and the cache full. */
int kcache_upsert(struct kcache *c, json_t *obj);
/* Removes the object with obj's key (obj borrowed: the final state from a
 * DELETED event, handed to on_delete). Returns 1 when it was present, 0 when
 * not (no handler call), -1 when obj has no usable key. */
int kcache_remove(struct kcache *c, json_t *obj);
/* Replaces the whole content with items (a JSON array, borrowed) of a fresh
 * list: calls add/update for present ones (update only when
 * metadata.resourceVersion changed) and delete for vanished ones. Items
 * without a key are skipped. Returns 0, -1 when items is not an array or on
 * allocation failure, MK_ERR_FULL when items has more than the cap (then
 * the content is unchanged). */
int kcache_replace(struct kcache *c, json_t *items);
/* (A successful replace marks the cache synced before its handlers run.) */
/* The cache's transform applied to obj (reference taken; a new reference
 * returned, obj itself without a transform), for kcache_replace_prepared. */
json_t *kcache_transform(struct kcache *c, json_t *obj);
/* kcache_replace for items already passed through kcache_transform, so a
 * large list can be compacted item by item as its pages arrive. */
int kcache_replace_prepared(struct kcache *c, json_t *items);
/* Re-delivers every object as an update (old == obj) for periodic resync. */
void kcache_resync(struct kcache *c);

void kcache_set_synced(struct kcache *c, int synced);
int kcache_synced(struct kcache *c);

#endif
