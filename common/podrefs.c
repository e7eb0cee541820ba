#include "podrefs.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"

const char *mk_ref_kind_name(enum mk_ref_kind kind)
{
    static const char *const names[MK_REF_KINDS] = {"PVC", "ConfigMap", "Secret", "ServiceAccount"};
    return (unsigned)kind < MK_REF_KINDS ? names[kind] : "?";
}

struct kc_resource mk_ref_resource(enum mk_ref_kind kind)
{
    static const char *const plural[MK_REF_KINDS] = {"persistentvolumeclaims", "configmaps",
                                                     "secrets", "serviceaccounts"};
    struct kc_resource r = {"", "v1", (unsigned)kind < MK_REF_KINDS ? plural[kind] : "", 1};
    return r;
}

json_t *mk_ref_keep_name(json_t *obj, void *ud)
{
    (void)ud;
    json_t *out = json_pack("{s:{s:s?,s:s?,s:s?}}", "metadata", "namespace",
                            jx_str(obj, "metadata.namespace"), "name", jx_str(obj, "metadata.name"),
                            "resourceVersion", jx_str(obj, "metadata.resourceVersion"));
    json_decref(obj); /* ours for the call; NULL keeps the cache's as it came */
    return out;
}

void mk_ref_watches(struct mkcs_watch out[MK_REF_KINDS])
{
    for (int i = 0; i < MK_REF_KINDS; i++)
        out[i] = (struct mkcs_watch){.res = mk_ref_resource((enum mk_ref_kind)i),
                                     .transform = mk_ref_keep_name,
                                     .metadata_only = 1};
}

int mk_ref_present(struct kcache *cache, const char *ns, const char *name)
{
    if (!cache || !kcache_synced(cache))
        return -1;
    json_t *o = kcache_get_nsname(cache, ns, name);
    json_decref(o);
    return o != NULL;
}

static void add(struct mk_refs *r, enum mk_ref_kind kind, const char *name)
{
    if (!name || !*name || strlen(name) >= sizeof(r->v[0].name))
        return;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].kind == kind && strcmp(r->v[i].name, name) == 0)
            return;
    if (r->n == MK_REFS_MAX) {
        r->truncated = 1;
        return;
    }
    r->v[r->n].kind = kind;
    snprintf(r->v[r->n].name, sizeof(r->v[0].name), "%s", name);
    r->n++;
}

/* obj[key] unless obj says optional: true */
static void add_required(struct mk_refs *r, enum mk_ref_kind kind, const json_t *obj,
                         const char *key)
{
    if (obj && !jx_bool(obj, "optional", 0))
        add(r, kind, jx_str(obj, key));
}

static void containers(struct mk_refs *r, const json_t *list)
{
    size_t i, j;
    json_t *c, *e;
    json_array_foreach(list, i, c)
    {
        json_array_foreach(json_object_get(c, "envFrom"), j, e)
        {
            add_required(r, MK_REF_CONFIGMAP, json_object_get(e, "configMapRef"), "name");
            add_required(r, MK_REF_SECRET, json_object_get(e, "secretRef"), "name");
        }
        json_array_foreach(json_object_get(c, "env"), j, e)
        {
            add_required(r, MK_REF_CONFIGMAP, jx_get(e, "valueFrom.configMapKeyRef"), "name");
            add_required(r, MK_REF_SECRET, jx_get(e, "valueFrom.secretKeyRef"), "name");
        }
    }
}

static void pod_spec(struct mk_refs *r, const json_t *spec)
{
    size_t i, j;
    json_t *v, *src;
    json_array_foreach(json_object_get(spec, "volumes"), i, v)
    {
        add(r, MK_REF_PVC, jx_str(v, "persistentVolumeClaim.claimName"));
        add_required(r, MK_REF_CONFIGMAP, json_object_get(v, "configMap"), "name");
        add_required(r, MK_REF_SECRET, json_object_get(v, "secret"), "secretName");
        json_array_foreach(jx_get(v, "projected.sources"), j, src)
        {
            add_required(r, MK_REF_CONFIGMAP, json_object_get(src, "configMap"), "name");
            add_required(r, MK_REF_SECRET, json_object_get(src, "secret"), "name");
        }
    }
    containers(r, json_object_get(spec, "initContainers"));
    containers(r, json_object_get(spec, "containers"));
    json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, v)
    {
        add(r, MK_REF_SECRET, jx_str(v, "name"));
    }
    const char *sa = jx_str(spec, "serviceAccountName");
    if (!sa)
        sa = jx_str(spec, "serviceAccount"); /* the deprecated spelling */
    if (sa && strcmp(sa, "default") != 0)
        add(r, MK_REF_SERVICEACCOUNT, sa);
}

int mk_pod_refs(const struct mk_kind *k, const json_t *job, struct mk_refs *out)
{
    out->n = 0; /* not the ~17 KB of entries: only the first n are read */
    out->truncated = 0;
    char err[256];
    json_t *sets = mk_pod_sets_shared(k, job, err, sizeof(err));
    if (!sets)
        return -1;
    size_t i;
    json_t *ps;
    json_array_foreach(sets, i, ps)
    {
        pod_spec(out, jx_get(ps, "template.spec"));
    }
    json_decref(sets);
    return 0;
}
