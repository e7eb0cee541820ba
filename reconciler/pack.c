#include "pack.h"
#include "pack_dict.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "kinds/kinds.h"
#include "jsonx.h"
#include "kube_cache.h"

/* raw deflate, 8 KiB window (the dictionary fits it), small hash tables:
 * about 50 KB of state per call instead of zlib's default 270 KB */
#define Z_WBITS    (-13)
#define Z_MEMLEVEL 5

/* The len bytes of text deflated with the dictionary, behind its length (4
 * bytes, little endian), written at the end of b. Returns 0 or -1. */
static int deflated(struct buf *b, const char *text, size_t len)
{
    z_stream z = {0};
    int out = -1;
    if (len > UINT32_MAX || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, Z_WBITS, Z_MEMLEVEL,
                                         Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
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
            out = buf_append(b, (const char *)buf, 4 + z.total_out);
    }
    deflateEnd(&z);
    free(buf);
    return out;
}

/* The text of deflated() bytes (malloc'd, NUL-terminated, *len set), or NULL. */
static char *inflated(const char *z, size_t inlen, size_t *len)
{
    const unsigned char *in = (const unsigned char *)z;
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

/* Where rc_md finds a field in a full object. */
static const char *const md_path[RC_MD_COUNT] = {
    [RC_MD_NAME] = "metadata.name",
    [RC_MD_NAMESPACE] = "metadata.namespace",
    [RC_MD_RV] = "metadata.resourceVersion",
    [RC_MD_DELETION] = "metadata.deletionTimestamp",
    [RC_MD_UID] = "metadata.uid",
    [RC_MD_FINALIZERS] = NULL, /* an array: rc_has_finalizer reads it */
    [RC_MD_QUEUE] = "spec.queueName",
    [RC_MD_ADMISSION_CQ] = "status.admission.clusterQueue",
    [RC_MD_ORIGIN] = "metadata.labels[" MK_ORIGIN_LABEL "]",
    [RC_MD_PREBUILT_LABEL] = "metadata.labels[" MK_PREBUILT "]",
    [RC_MD_PREBUILT_ANNOT] = "metadata.annotations[" MK_PREBUILT "]",
};

int rc_packed(const json_t *obj)
{
    return json_is_string(obj);
}

const char *rc_md(const json_t *obj, enum rc_md f)
{
    if ((unsigned)f >= RC_MD_COUNT)
        return NULL;
    if (rc_packed(obj))
        return kcache_rec_field(obj, (unsigned)f);
    return md_path[f] ? jx_str(obj, md_path[f]) : NULL;
}

/* Appends a field and its NUL: "" for absent; a finalizer list joined by
 * '\n', leaving out names that hold one (no valid name does). */
static int put_field(struct buf *b, const json_t *obj, enum rc_md f)
{
    int rc = 0;
    if (f == RC_MD_FINALIZERS) {
        size_t i, n = 0;
        json_t *v;
        json_array_foreach(jx_get(obj, "metadata.finalizers"), i, v)
        {
            const char *s = json_string_value(v);
            if (!s || !*s || strchr(s, '\n'))
                continue;
            if (n++)
                rc |= buf_append(b, "\n", 1);
            rc |= buf_append(b, s, strlen(s));
        }
    } else {
        const char *s = rc_md(obj, f);
        if (s)
            rc |= buf_append(b, s, strlen(s));
    }
    return rc | buf_append(b, "", 1);
}

/* The compact text into out: the object without the bulky fields nobody
 * here reads (on a copy: obj may be shared). 0 or -1. */
static int compact_text(const json_t *obj, json_t *md, struct buf *out)
{
    json_t *full = json_copy((json_t *)obj);
    json_t *mdc = full ? json_copy(md) : NULL;
    if (!full || !mdc) {
        json_decref(full);
        json_decref(mdc);
        return -1;
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
    int rc = jx_dump(full, JSON_COMPACT, out);
    json_decref(full);
    return rc;
}

json_t *rc_pack(json_t *obj, void *ud)
{
    (void)ud;
    json_t *out = NULL;
    struct buf b, text;
    buf_init(&b, BUF_CAP_RECORD);
    buf_init(&text, BUF_CAP_JSON_TEXT);
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(obj) || !json_is_object(md) || compact_text(obj, md, &text) < 0)
        goto out;
    int rc = 0;
    for (int f = 0; f < RC_MD_COUNT; f++)
        rc |= put_field(&b, obj, (enum rc_md)f);
    if (rc == 0 && deflated(&b, text.data, text.len) == 0)
        out = json_stringn_nocheck(b.data, b.len);
out:
    buf_free(&b);
    buf_free(&text);
    json_decref(obj);
    return out;
}

json_t *rc_unwrap(const json_t *obj)
{
    if (!obj)
        return NULL;
    if (!rc_packed(obj))
        return json_incref((json_t *)obj);
    size_t zlen = 0, len = 0;
    const char *z = kcache_rec_tail(obj, RC_MD_COUNT, &zlen);
    char *text = z ? inflated(z, zlen, &len) : NULL;
    json_t *full = text ? jx_loadb(text, len, 0, NULL, NULL) : NULL;
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
