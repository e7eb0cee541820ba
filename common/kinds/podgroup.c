#include "kinds/podgroup.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "jsonx.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

const char *mk_pod_group_name(const json_t *pod)
{
    const char *g = jx_str(pod, "metadata.labels[" MK_POD_GROUP_LABEL "]");
    return g && *g ? g : NULL;
}

long long mk_pod_group_total(const json_t *pod, char *err, size_t errlen)
{
    const char *v = jx_str(pod, "metadata.annotations[" MK_POD_GROUP_TOTAL_ANNOTATION "]");
    if (!v) {
        errf(err, errlen, MK_ERR_INVAL, "failed to extract '%s' annotation",
             MK_POD_GROUP_TOTAL_ANNOTATION);
        return -1;
    }
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < 1 || n > 1000000) {
        errf(err, errlen, MK_ERR_INVAL,
             "incorrect annotation value '%s=%s': group total count should be greater than zero",
             MK_POD_GROUP_TOTAL_ANNOTATION, v);
        return -1;
    }
    return n;
}

/* The value of key in obj, or JSON null: Go encodes an absent field as null. */
static json_t *or_null(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return v ? json_incref(v) : json_null();
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A map-typed field (nodeSelector, overhead, requests): Go encodes a map with
 * its keys sorted, whatever order they came in. New reference, null when
 * absent, NULL on oom. */
static json_t *sorted_map(const json_t *obj, const char *key)
{
    json_t *m = json_object_get(obj, key);
    if (!json_is_object(m))
        return or_null(obj, key);
    size_t n = json_object_size(m), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    json_t *out = json_object();
    const char *k;
    json_t *v;
    if (!keys || !out)
        goto fail;
    json_object_foreach(m, k, v)
    {
        keys[i++] = k;
    }
    qsort(keys, n, sizeof(*keys), cmp_key);
    for (i = 0; i < n; i++)
        if (json_object_set(out, keys[i], json_object_get(m, keys[i])) < 0)
            goto fail;
    free(keys);
    return out;
fail:
    free(keys);
    json_decref(out);
    return NULL;
}

/* Kueue's containersShape: [{ports, resources: {requests}}] or null. */
static json_t *containers_shape(const json_t *containers)
{
    if (!json_is_array(containers) || json_array_size(containers) == 0)
        return json_null();
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        json_t *req = sorted_map(json_object_get(c, "resources"), "requests");
        json_t *one =
            json_pack("{s:o,s:{s:o}}", "ports", or_null(c, "ports"), "resources", "requests", req);
        if (!out || !one || json_array_append_new(out, one) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Go's encoding/json escapes <, > and & in strings, and U+2028, U+2029;
 * jansson does not. They only occur inside strings, so a byte-wise rewrite of
 * the compact dump is exact. Returns a new string or NULL. */
static char *go_escape(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += (*p == '<' || *p == '>' || *p == '&') ? 6 : 1;
    n = n * 2 + 1; /* U+2028 and U+2029 take 6 bytes for 3 */
    char *out = malloc(n), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        size_t room = n - (size_t)(o - out);
        if (*p == '<' || *p == '>' || *p == '&') {
            o += snprintf(o, room, "\\u%04x", *p);
        } else if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
            o += snprintf(o, room, "\\u20%s", p[2] == 0xA8 ? "28" : "29");
            p += 2;
        } else {
            *o++ = (char)*p;
        }
    }
    *o = 0;
    return out;
}

int mk_role_hash_of_spec(const json_t *spec, char *out)
{
    /* the shape's keys in Go's order for a map: sorted */
    json_t *shape =
        json_pack("{s:{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}}", "spec", "affinity",
                  or_null(spec, "affinity"), "containers",
                  containers_shape(json_object_get(spec, "containers")), "initContainers",
                  containers_shape(json_object_get(spec, "initContainers")), "nodeSelector",
                  sorted_map(spec, "nodeSelector"), "overhead", sorted_map(spec, "overhead"),
                  "priority", or_null(spec, "priority"), "resourceClaims",
                  or_null(spec, "resourceClaims"), "runtimeClassName",
                  or_null(spec, "runtimeClassName"), "tolerations", or_null(spec, "tolerations"),
                  "topologySpreadConstraints", or_null(spec, "topologySpreadConstraints"));
    struct buf dump;
    buf_init(&dump, BUF_CAP_JSON_TEXT);
    int dumped = shape ? jx_dump(shape, JSON_COMPACT | JSON_ENCODE_ANY, &dump) : -1;
    json_decref(shape);
    char *go = dumped == 0 ? go_escape(buf_cstr(&dump)) : NULL;
    buf_free(&dump);
    if (!go)
        return MK_ERR_NOMEM;
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)go, strlen(go), md);
    free(go);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < MK_ROLE_HASH_LEN / 2; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[MK_ROLE_HASH_LEN] = 0;
    return 0;
}

int mk_pod_role(const json_t *pod, char *out, size_t outlen)
{
    const char *a = jx_str(pod, "metadata.annotations[" MK_ROLE_HASH_ANNOTATION "]");
    if (a) {
        size_t n = strlen(a);
        if (n == 0 || n >= outlen || n > 63)
            return MK_ERR_INVAL;
        memcpy(out, a, n + 1);
        return 0;
    }
    if (outlen < MK_ROLE_HASH_LEN + 1)
        return MK_ERR_INVAL;
    return mk_role_hash_of_spec(jx_get(pod, "spec"), out);
}

int mk_pod_runnable(const json_t *pod)
{
    const char *phase = jx_str(pod, "status.phase");
    if (jx_get(pod, "metadata.deletionTimestamp") && !jx_str(pod, "spec.nodeName"))
        return 0;
    return !phase || strcmp(phase, "Failed") != 0;
}

static int by_name(const void *a, const void *b)
{
    const char *x = jx_str(*(json_t *const *)a, "metadata.name");
    const char *y = jx_str(*(json_t *const *)b, "metadata.name");
    return strcmp(x ? x : "", y ? y : "");
}

/* Kueue's order of keeping a group's pods (cleanupExcessPods): ungated
 * before gated, then the older (creationTimestamp: RFC 3339 in UTC, so
 * ordered as text), then by name, where Kueue's sort leaves ties unordered. */
static int keep_order(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int gx = mk_pod_has_admission_gate(x), gy = mk_pod_has_admission_gate(y);
    if (gx != gy)
        return gx - gy;
    const char *tx = jx_str(x, "metadata.creationTimestamp");
    const char *ty = jx_str(y, "metadata.creationTimestamp");
    int c = strcmp(tx ? tx : "", ty ? ty : "");
    return c ? c : by_name(a, b);
}

/* The runnable pods (new array of borrowed pointers, *n of them) in the
 * order Kueue keeps them; NULL when memory runs out. */
static json_t **runnable_kept_first(const json_t *pods, size_t *n)
{
    size_t cap = json_array_size(pods), i;
    json_t **v = calloc(cap ? cap : 1, sizeof(*v));
    json_t *p;
    *n = 0;
    if (!v)
        return NULL;
    json_array_foreach(pods, i, p)
    {
        if (mk_pod_runnable(p))
            v[(*n)++] = p;
    }
    qsort(v, *n, sizeof(*v), keep_order);
    return v;
}

json_t *mk_pod_group_excess(const json_t *pods, const json_t *podsets)
{
    size_t n;
    json_t **v = runnable_kept_first(pods, &n);
    json_t *out = json_array();
    if (!v || !out)
        goto oom;
    if (!podsets) {
        long long total = n ? mk_pod_group_total(v[0], NULL, 0) : -1;
        for (size_t i = total > 0 ? (size_t)total : n; i < n; i++)
            if (json_array_append(out, v[i]) < 0)
                goto oom;
    }
    size_t j;
    json_t *ps;
    json_array_foreach(podsets, j, ps)
    {
        const char *name = jx_str(ps, "name");
        long long count = jx_int(ps, "count", 0), kept = 0;
        for (size_t i = 0; i < n && name; i++) {
            char role[64];
            int rc = mk_pod_role(v[i], role, sizeof(role));
            if (rc == MK_ERR_NOMEM)
                goto oom;
            if (rc < 0 || strcmp(role, name) != 0 || kept++ < count)
                continue;
            if (json_array_append(out, v[i]) < 0)
                goto oom;
        }
    }
    free(v);
    return out;
oom:
    free(v);
    json_decref(out);
    return NULL;
}

long long mk_pod_group_absent(const json_t *pods, const json_t *podsets)
{
    long long absent = 0;
    size_t j, i;
    json_t *ps, *pod;
    json_array_foreach(podsets, j, ps)
    {
        const char *name = jx_str(ps, "name");
        long long count = jx_int(ps, "count", 0);
        json_array_foreach(pods, i, pod)
        {
            char role[64];
            if (!mk_pod_runnable(pod))
                continue;
            if (mk_pod_role(pod, role, sizeof(role)) < 0)
                return -1;
            if (name && strcmp(role, name) == 0)
                count--;
        }
        if (count > 0)
            absent += count;
    }
    return absent;
}

static int by_podset_name(const void *a, const void *b)
{
    return strcmp(jx_str(*(json_t *const *)a, "name"), jx_str(*(json_t *const *)b, "name"));
}

/* The runnable pods of the group, sorted by name (new array of borrowed
 * pointers, *n of them), checked against the first one's total and queue. */
static json_t **members(const json_t *pods, size_t *n, long long *total, char *err, size_t errlen)
{
    size_t cap = json_array_size(pods);
    json_t **v = calloc(cap ? cap : 1, sizeof(*v));
    if (!v) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    *n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p)
    {
        if (mk_pod_runnable(p))
            v[(*n)++] = p;
    }
    const char *group = cap ? mk_pod_group_name(json_array_get(pods, 0)) : NULL;
    if (*n == 0 || !group) {
        errf(err, errlen, MK_ERR_INVAL, "'%s' group has fewer runnable pods than expected",
             group ? group : "");
        goto fail;
    }
    qsort(v, *n, sizeof(*v), by_name);
    if ((*total = mk_pod_group_total(v[0], err, errlen)) < 0)
        goto fail;
    const char *queue = jx_str(v[0], "metadata.labels[" MK_QUEUE_LABEL "]");
    for (i = 1; i < *n; i++) {
        const char *q = jx_str(v[i], "metadata.labels[" MK_QUEUE_LABEL "]");
        char e2[160];
        long long t = mk_pod_group_total(v[i], e2, sizeof(e2));
        if (!q || !queue || strcmp(q, queue) != 0) {
            errf(err, errlen, MK_ERR_INVAL, "pods '%s' and '%s' has different queue names: %s!=%s",
                 jx_str(v[0], "metadata.name"), jx_str(v[i], "metadata.name"), queue ? queue : "",
                 q ? q : "");
            goto fail;
        }
        if (t != *total) {
            errf(err, errlen, MK_ERR_INVAL,
                 "pods '%s' and '%s' has different '%s' values: %lld!=%lld",
                 jx_str(v[0], "metadata.name"), jx_str(v[i], "metadata.name"),
                 MK_POD_GROUP_TOTAL_ANNOTATION, *total, t);
            goto fail;
        }
    }
    if ((long long)*n < *total) {
        errf(err, errlen, MK_ERR_INVAL, "'%s' group has fewer runnable pods than expected", group);
        goto fail;
    }
    return v;
fail:
    free(v);
    return NULL;
}

json_t *mk_pod_group_pod_sets(const json_t *pods, char *err, size_t errlen)
{
    size_t n;
    long long total;
    json_t **v = members(pods, &n, &total, err, errlen);
    if (!v)
        return NULL;
    json_t *out = json_array();
    if (!out)
        goto oom;
    qsort(v, n, sizeof(*v), keep_order); /* checked by name; counted as Kueue keeps them */
    for (size_t i = 0; i < n && (long long)i < total; i++) {
        char role[64];
        int rc = mk_pod_role(v[i], role, sizeof(role));
        if (rc == MK_ERR_NOMEM)
            goto oom;
        if (rc < 0) {
            errf(err, errlen, MK_ERR_INVAL, "failed to calculate pod role hash: pod %s",
                 jx_str(v[i], "metadata.name"));
            goto fail;
        }
        json_t *ps = NULL;
        size_t j;
        json_array_foreach(out, j, ps)
        {
            if (strcmp(jx_str(ps, "name"), role) == 0)
                break;
        }
        if (j < json_array_size(out)) {
            json_object_set_new(ps, "count", json_integer(jx_int(ps, "count", 0) + 1));
            continue;
        }
        if (json_array_size(out) == MK_MAX_PODSETS) {
            errf(err, errlen, MK_ERR_INVAL, "pod group can't include more than 8 roles");
            goto fail;
        }
        /* a copy, as mk_pod_sets gives: the Workload built from these is the caller's to edit */
        json_t *tmpl =
            json_pack("{s:o}", "spec", json_deep_copy(jx_get(v[i], "spec") ?: json_null()));
        rc = tmpl ? mk_podset_add(out, role, 1, tmpl, err, errlen) : MK_ERR_NOMEM;
        json_decref(tmpl);
        if (rc == MK_ERR_NOMEM || !tmpl)
            goto oom;
        if (rc < 0)
            goto fail;
    }
    /* Kueue sorts the roles by name */
    size_t np = json_array_size(out);
    json_t *sorted[MK_MAX_PODSETS] = {0};
    for (size_t i = 0; i < np; i++)
        sorted[i] = json_incref(json_array_get(out, i));
    qsort(sorted, np, sizeof(*sorted), by_podset_name);
    json_array_clear(out);
    for (size_t i = 0; i < np; i++)
        json_array_append_new(out, sorted[i]);
    free(v);
    return out;
oom:
    errf(err, errlen, MK_ERR_NOMEM, "out of memory");
fail:
    json_decref(out);
    free(v);
    return NULL;
}

int mk_job_workload_name(const struct mk_kind *k, const json_t *job, char *out, size_t outlen)
{
    const char *g = k->gating == MK_GATE_POD ? mk_pod_group_name(job) : NULL;
    if (g) {
        int n = snprintf(out, outlen, "%s", g);
        return n < 0 || (size_t)n >= outlen ? -1 : 0;
    }
    return mk_workload_name(k->kind, k->group, jx_str(job, "metadata.name"),
                            jx_str(job, "metadata.uid"), out, outlen);
}
