/* The registry of job kinds and what all kinds share. */
#include <ctype.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"

/* The built-in kinds, in the registry's order; the table counts itself. */
static const struct mk_kind *const builtin[] = {
    &mk_kind_job,
    &mk_kind_pod,
    &mk_kind_deployment,
    &mk_kind_statefulset,
    &mk_kind_jobset,
    &mk_kind_pytorchjob,
    &mk_kind_tfjob,
    &mk_kind_xgboostjob,
    &mk_kind_paddlejob,
    &mk_kind_jaxjob,
    &mk_kind_mpijob,
    &mk_kind_trainjob,
    &mk_kind_rayjob,
    &mk_kind_raycluster,
    &mk_kind_rayservice,
    &mk_kind_appwrapper,
    &mk_kind_leaderworkerset,
};
#define NBUILTIN  (sizeof(builtin) / sizeof(builtin[0]))
#define MAX_KINDS 64 /* built-in and external together */
_Static_assert(NBUILTIN < MAX_KINDS, "no room for external kinds");

/* Registered kinds (mk_kinds_register: the external ones), after the built-in ones: appended
 * under add_lock, nexternal published last so readers need no lock. */
static const struct mk_kind *external[MAX_KINDS - NBUILTIN];
static size_t nexternal;
static pthread_mutex_t add_lock = PTHREAD_MUTEX_INITIALIZER;

size_t mk_kinds_count(void)
{
    return NBUILTIN + __atomic_load_n(&nexternal, __ATOMIC_ACQUIRE);
}

const struct mk_kind *mk_kind_at(size_t i)
{
    if (i < NBUILTIN)
        return builtin[i];
    return i < mk_kinds_count() ? external[i - NBUILTIN] : NULL;
}

const struct mk_kind *mk_kind_by_resource(const char *group, const char *version,
                                          const char *resource)
{
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        if (strcmp(k->group, group ? group : "") == 0 && strcmp(k->version, version) == 0 &&
            strcmp(k->resource, resource) == 0)
            return k;
    }
    return NULL;
}

const struct mk_kind *mk_kind_by_gvk(const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return NULL;
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    const char *version = slash ? slash + 1 : api_version;
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        if (strcmp(k->kind, kind) == 0 && strcmp(k->version, version) == 0 &&
            strlen(k->group) == glen && strncmp(k->group, api_version, glen) == 0)
            return k;
    }
    return NULL;
}

const struct mk_kind *mk_kind_of(const json_t *obj)
{
    return mk_kind_by_gvk(jx_str(obj, "apiVersion"), jx_str(obj, "kind"));
}

static char *lower_dup(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[n] = '\0';
    return out;
}

int mk_kinds_register(const struct mk_kind *k)
{
    pthread_mutex_lock(&add_lock);
    char api[300];
    mk_api_version(k, api, sizeof(api));
    size_t n = nexternal;
    int rc = 0;
    if (mk_kind_by_gvk(api, k->kind) || mk_kind_by_resource(k->group, k->version, k->resource) ||
        n == sizeof(external) / sizeof(external[0])) {
        rc = -1;
    } else {
        external[n] = k;
        __atomic_store_n(&nexternal, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&add_lock);
    return rc;
}

int mk_webhook_path(const struct mk_kind *k, const char *verb, char *out, size_t outlen)
{
    char group[256];
    size_t n = strlen(k->group);
    if (n >= sizeof(group))
        return -1;
    for (size_t i = 0; i <= n; i++)
        group[i] = k->group[i] == '.' ? '-' : k->group[i];
    char *kind = lower_dup(k->kind, strlen(k->kind));
    if (!kind)
        return -1;
    int w = snprintf(out, outlen, "/%s-%s-%s-%s", verb, group, k->version, kind);
    free(kind);
    return w < 0 || (size_t)w >= outlen ? -1 : 0;
}

/* 1 when path is mk_webhook_path(k, verb), compared in place: every
 * review looks its path up, and building each candidate cost an allocation
 * and a format per kind. */
static int is_webhook_path(const struct mk_kind *k, const char *verb, const char *p)
{
    size_t n = strlen(verb);
    if (*p++ != '/' || strncmp(p, verb, n) != 0 || p[n] != '-')
        return 0;
    p += n + 1;
    for (const char *g = k->group; *g; g++, p++)
        if (*p != (*g == '.' ? '-' : *g))
            return 0;
    n = strlen(k->version);
    if (*p++ != '-' || strncmp(p, k->version, n) != 0 || p[n] != '-')
        return 0;
    p += n + 1;
    for (const char *c = k->kind; *c; c++, p++)
        if (*p != (char)tolower((unsigned char)*c))
            return 0;
    return *p == '\0';
}

const struct mk_kind *mk_kind_by_webhook_path(const char *path, int *mutate)
{
    const char *verbs[] = {"validate", "mutate"};
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        for (int v = 0; v < 2; v++) {
            if (is_webhook_path(k, verbs[v], path)) {
                if (mutate)
                    *mutate = v;
                return k;
            }
        }
    }
    return NULL;
}

struct kc_resource mk_kind_resource(const struct mk_kind *k)
{
    return (struct kc_resource){k->group, k->version, k->resource, 1};
}

void mk_api_version(const struct mk_kind *k, char *out, size_t outlen)
{
    if (k->group[0])
        snprintf(out, outlen, "%s/%s", k->group, k->version);
    else
        snprintf(out, outlen, "%s", k->version);
}

const char *mk_managed_by(const struct mk_kind *k, const json_t *job)
{
    return k->managed_by_path ? jx_str(job, k->managed_by_path) : NULL;
}

int mk_is_managed(const struct mk_kind *k, const json_t *job)
{
    const char *m = mk_managed_by(k, job);
    return m && strcmp(m, MK_MANAGED_BY) == 0;
}

#define WL_NAME_MAX      253 /* an object name's cap */
#define WL_NAME_HASH_LEN 5
static int short_workload_names;

void mk_set_short_workload_names(int on)
{
    short_workload_names = on;
}

int mk_workload_name(const char *kind, const char *group, const char *name, const char *uid,
                     char *out, size_t outlen)
{
    if (!kind || !name || !uid || !*name)
        return -1;
    char *h = NULL;
    if (asprintf(&h, "%s\n%s\n%s\n%s", kind, group ? group : "", name, uid) < 0)
        return -1;
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)h, strlen(h), md);
    free(h);
    char prefix[WL_NAME_MAX - WL_NAME_HASH_LEN]; /* 247 characters and the NUL */
    size_t cap = (short_workload_names ? MK_LABEL_VALUE_MAX : WL_NAME_MAX) - 1 - WL_NAME_HASH_LEN;
    int n = snprintf(prefix, cap + 1, "%s-%s", kind, name); /* truncated to cap */
    if (n < 0)
        return -1;
    for (char *p = prefix; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    int w = snprintf(out, outlen, "%s-%02x%02x%x", prefix, md[0], md[1], md[2] >> 4);
    return w < 0 || (size_t)w >= outlen ? -1 : 0;
}

json_t *mk_pod_sets_shared(const struct mk_kind *k, const json_t *job, char *err, size_t errlen)
{
    json_t *out = json_array();
    if (!out) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (!k->pod_sets && !k->pod_template_path) {
        errf(err, errlen, MK_ERR_INVAL, "kind %s does not describe its pod sets", k->kind);
        goto fail;
    }
    if ((k->pod_sets ? k->pod_sets(job, out, err, errlen)
                     : mk_external_pod_sets(k, job, out, err, errlen)) < 0)
        goto fail;
    if (json_array_size(out) == 0 || json_array_size(out) > MK_MAX_PODSETS) {
        errf(err, errlen, MK_ERR_INVAL, "%s has %zu pod sets; a Workload takes 1 to %d", k->kind,
             json_array_size(out), MK_MAX_PODSETS);
        goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

json_t *mk_pod_sets(const struct mk_kind *k, const json_t *job, char *err, size_t errlen)
{
    json_t *out = mk_pod_sets_shared(k, job, err, errlen);
    size_t i;
    json_t *ps;
    json_array_foreach(out, i, ps)
    {
        if (json_object_set_new(ps, "template", json_deep_copy(json_object_get(ps, "template"))) <
            0) {
            json_decref(out);
            errf(err, errlen, MK_ERR_NOMEM, "out of memory");
            return NULL;
        }
    }
    return out;
}

int mk_prebuilt_fits_label(const char *workload_name)
{
    return strlen(workload_name) <= MK_LABEL_VALUE_MAX;
}

/* The Workload a worker's Kueue is to use for the copy: the label
 * kueue.x-k8s.io/prebuilt-workload-name, which Kueue v0.17 reads; a name
 * longer than a label value can hold goes into the annotation of the same
 * name instead (Kueue's own fallback since v0.18; a worker with an older
 * Kueue reads only the label); the other of the two, if the job had it,
 * goes, so that they never name different Workloads. */
static int set_prebuilt(json_t *copy, const char *workload_name)
{
    static const char *const label = "metadata.labels[" MK_PREBUILT "]";
    static const char *const annotation = "metadata.annotations[" MK_PREBUILT "]";
    int fits = mk_prebuilt_fits_label(workload_name);
    jx_del(copy, fits ? annotation : label);
    return jx_set_new_str(copy, fits ? label : annotation, workload_name);
}

json_t *mk_remote_copy(const struct mk_kind *k, const json_t *job, const char *origin,
                       const char *workload_name)
{
    json_t *copy = json_deep_copy(job);
    json_t *meta = json_object();
    if (!copy || !meta)
        goto fail;
    static const char *const keep[] = {"name", "namespace", "labels", "annotations"};
    json_t *old = json_object_get(copy, "metadata");
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_t *v = json_object_get(old, keep[i]);
        if (v && json_object_set(meta, keep[i], v) < 0)
            goto fail;
    }
    if (json_object_set_new(copy, "metadata", meta) < 0) {
        meta = NULL;
        goto fail;
    }
    meta = NULL;
    json_object_del(copy, "status");
    if (jx_set_new_str(copy, "metadata.labels[" MK_ORIGIN_LABEL "]", origin) < 0)
        goto fail;
    if (k->prebuilt_allowed && workload_name && set_prebuilt(copy, workload_name) < 0)
        goto fail;
    if (k->managed_by_path)
        jx_del(copy, k->managed_by_path);
    for (size_t i = 0; k->ttl_paths && k->ttl_paths[i]; i++)
        jx_del(copy, k->ttl_paths[i]);
    if (k->edit_remote)
        k->edit_remote(copy, job);
    return copy;
fail:
    json_decref(meta);
    json_decref(copy);
    return NULL;
}
