#include "pack.h"

#include <stdlib.h>
#include <string.h>

#include "kinds/kinds.h"
#include "kube_cache.h"

#define RAW "_raw"

/* Copies md[keys...] into small; for labels/annotations only the listed
 * entries. Returns 0 or -1. */
static int keep_map(json_t *small, json_t *md, const char *field, const char *const *keys)
{
    json_t *src = json_object_get(md, field), *dst = NULL;
    for (size_t i = 0; json_is_object(src) && keys[i]; i++) {
        json_t *v = json_object_get(src, keys[i]);
        if (!v)
            continue;
        if (!dst && (!(dst = json_object()) || json_object_set_new(small, field, dst) != 0))
            return -1;
        if (json_object_set(dst, keys[i], v) != 0)
            return -1;
    }
    return 0;
}

/* Takes obj. remote: keep what the GC and the remote event handlers read. */
static json_t *pack(json_t *obj, int remote)
{
    json_t *out = NULL;
    char *text = NULL;
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md) || json_object_get(obj, RAW))
        goto fail;
    /* drop the bulky fields nobody here reads (on a copy: obj may be shared) */
    json_t *full = json_copy(obj);
    json_t *mdc = full ? json_copy(md) : NULL;
    if (!full || !mdc) {
        json_decref(full);
        json_decref(mdc);
        goto fail;
    }
    json_object_del(mdc, "managedFields");
    json_t *ann = json_object_get(mdc, "annotations");
    if (json_is_object(ann) &&
        json_object_get(ann, "kubectl.kubernetes.io/last-applied-configuration")) {
        json_t *a2 = json_copy(ann);
        if (a2) {
            json_object_del(a2, "kubectl.kubernetes.io/last-applied-configuration");
            json_object_set_new(mdc, "annotations", a2);
        }
    }
    json_object_set_new(full, "metadata", mdc);
    text = json_dumps(full, JSON_COMPACT);
    json_decref(full);
    if (!text)
        goto fail;
    json_t *small = json_object();
    static const char *const keep[] = {"name", "namespace", "resourceVersion", "deletionTimestamp",
                                       "uid",  "finalizers"};
    size_t nkeep = remote ? 6 : 4; /* uid and finalizers for remote copies only */
    for (size_t i = 0; small && i < nkeep; i++) {
        json_t *v = json_object_get(md, keep[i]);
        if (v && json_object_set(small, keep[i], v) != 0) {
            json_decref(small);
            small = NULL;
        }
    }
    static const char *const labels[] = {MK_ORIGIN_LABEL, MK_PREBUILT, NULL};
    static const char *const annotations[] = {MK_PREBUILT, NULL};
    if (small && remote &&
        (keep_map(small, md, "labels", labels) != 0 ||
         keep_map(small, md, "annotations", annotations) != 0)) {
        json_decref(small);
        small = NULL;
    }
    out = json_object();
    if (!small || !out) {
        json_decref(small);
        goto fail;
    }
    json_object_set_new(out, "metadata", small);
    if (json_object_set_new(out, RAW, json_string(text)) != 0)
        goto fail;
    free(text);
    json_decref(obj);
    return out;
fail:
    free(text);
    json_decref(out);
    json_decref(obj);
    return NULL;
}

json_t *rc_pack(json_t *obj, void *ud)
{
    (void)ud;
    return pack(obj, 0);
}

json_t *rc_pack_remote(json_t *obj, void *ud)
{
    (void)ud;
    return pack(obj, 1);
}

json_t *rc_unwrap(const json_t *obj)
{
    if (!obj)
        return NULL;
    json_t *raw = json_object_get(obj, RAW);
    if (!json_is_string(raw))
        return json_incref((json_t *)obj);
    return json_loadb(json_string_value(raw), json_string_length(raw), 0, NULL);
}

json_t *rc_cache_get(struct kcache *c, const char *key)
{
    json_t *w = kcache_get(c, key);
    json_t *full = rc_unwrap(w);
    json_decref(w);
    return full;
}

json_t *rc_cache_get_nsname(struct kcache *c, const char *ns, const char *name)
{
    json_t *w = kcache_get_nsname(c, ns, name);
    json_t *full = rc_unwrap(w);
    json_decref(w);
    return full;
}
