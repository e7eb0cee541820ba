#include "pack.h"
#include "pack_dict.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <pthread.h>

#include "kinds/kinds.h"
#include "jsonx.h"
#include "kube_cache.h"
#include "strmap.h"

#define RAW "_z"
/* raw deflate, 8 KiB window (the dictionary fits it), small hash tables:
 * about 50 KB of state per call instead of zlib's default 270 KB */
#define Z_WBITS    (-13)
#define Z_MEMLEVEL 5

/* The text deflated with the dictionary, behind its length (4 bytes, little
 * endian); a jansson string of bytes (never serialized). NULL on failure. */
static json_t *deflated(const char *text)
{
    size_t len = strlen(text);
    z_stream z = {0};
    json_t *out = NULL;
    if (len > UINT32_MAX || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, Z_WBITS, Z_MEMLEVEL,
                                         Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    uLong cap = deflateBound(&z, (uLong)len) + 4;
    unsigned char *buf = malloc(cap);
    if (buf &&
        deflateSetDictionary(&z, (const Bytef *)rc_pack_dict, (uInt)rc_pack_dict_len) == Z_OK) {
        for (int i = 0; i < 4; i++)
            buf[i] = (unsigned char)(len >> (8 * i));
        z.next_in = (Bytef *)text;
        z.avail_in = (uInt)len;
        z.next_out = buf + 4;
        z.avail_out = (uInt)(cap - 4);
        if (deflate(&z, Z_FINISH) == Z_STREAM_END)
            out = json_stringn_nocheck((const char *)buf, 4 + z.total_out);
    }
    deflateEnd(&z);
    free(buf);
    return out;
}

/* The text of a deflated() string (malloc'd, NUL-terminated, *len set), or NULL. */
static char *inflated(const json_t *z, size_t *len)
{
    const unsigned char *in = (const unsigned char *)json_string_value(z);
    size_t inlen = json_string_length(z);
    if (!in || inlen < 4)
        return NULL;
    uint32_t n = 0;
    for (int i = 0; i < 4; i++)
        n |= (uint32_t)in[i] << (8 * i);
    z_stream s = {0};
    char *out = malloc((size_t)n + 1);
    if (!out || inflateInit2(&s, Z_WBITS) != Z_OK) {
        free(out);
        return NULL;
    }
    s.next_in = (Bytef *)(in + 4);
    s.avail_in = (uInt)(inlen - 4);
    s.next_out = (Bytef *)out;
    s.avail_out = n;
    int rc = inflateSetDictionary(&s, (const Bytef *)rc_pack_dict, (uInt)rc_pack_dict_len);
    if (rc == Z_OK)
        rc = inflate(&s, Z_FINISH);
    int ok = rc == Z_STREAM_END && s.total_out == n;
    inflateEnd(&s);
    if (!ok) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    *len = n;
    return out;
}

/* Queue names, shared by every wrapper naming them (a queue name costs a
 * pair, not a string, per Workload); kept for the process's life, at most
 * INTERN_MAX of them, past which each wrapper gets its own copy. */
#define INTERN_MAX 4096
static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static struct smap *interned;

/* A new reference to the string s (shared when possible), NULL on oom. */
static json_t *intern(const char *s)
{
    json_t *v = NULL;
    pthread_mutex_lock(&intern_mu);
    if (!interned)
        interned = smap_new();
    if (interned && (v = smap_get(interned, s)) != NULL) {
        json_incref(v);
    } else if (interned && smap_len(interned) < INTERN_MAX && (v = json_string(s)) != NULL) {
        if (smap_put(interned, s, v, NULL) == 0)
            json_incref(v); /* one for the table, one for the caller */
    } else {
        v = json_string(s);
    }
    pthread_mutex_unlock(&intern_mu);
    return v;
}

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
    if (json_object_set_new(out, RAW, deflated(text)) != 0)
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

#define HINT_QUEUE    "_q"
#define HINT_ADMITTED "_a"

json_t *rc_pack_workload(json_t *obj, void *ud)
{
    (void)ud;
    const char *q = jx_str(obj, "spec.queueName");
    const char *adm = jx_str(obj, "status.admission.clusterQueue");
    json_t *hq = q ? intern(q) : NULL, *ha = adm ? intern(adm) : NULL;
    json_t *out = (!q || hq) && (!adm || ha) ? pack(obj, 0) : (json_decref(obj), NULL);
    if (out && ((hq && json_object_set(out, HINT_QUEUE, hq) != 0) ||
                (ha && json_object_set(out, HINT_ADMITTED, ha) != 0))) {
        json_decref(out);
        out = NULL;
    }
    json_decref(hq);
    json_decref(ha);
    return out;
}

const char *rc_packed_queue(const json_t *w)
{
    return json_string_value(json_object_get(w, HINT_QUEUE));
}

const char *rc_packed_admission_cq(const json_t *w)
{
    return json_string_value(json_object_get(w, HINT_ADMITTED));
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
    size_t len = 0;
    char *text = inflated(raw, &len);
    json_t *full = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    return full;
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
