/* Preflight (issue 13): what a job's pod templates reference that must exist
 * on the worker it goes to. Pure: the job in, the references out; the
 * validating webhook looks them up in the workers' caches and warns. */
#include <stdio.h>
#include <string.h>

#include "admission.h"
#include "jsonx.h"

const char *wh_ref_kind_name(enum wh_ref_kind kind)
{
    static const char *const names[WH_REF_KINDS] = {"PVC", "ConfigMap", "Secret", "ServiceAccount"};
    return (unsigned)kind < WH_REF_KINDS ? names[kind] : "?";
}

static void add(struct wh_refs *r, enum wh_ref_kind kind, const char *name)
{
    if (!name || !*name || strlen(name) >= sizeof(r->v[0].name))
        return;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].kind == kind && strcmp(r->v[i].name, name) == 0)
            return;
    if (r->n == WH_PREFLIGHT_MAX_REFS) {
        r->truncated = 1;
        return;
    }
    r->v[r->n].kind = kind;
    snprintf(r->v[r->n].name, sizeof(r->v[0].name), "%s", name);
    r->n++;
}

/* obj[key] unless obj says optional: true */
static void add_required(struct wh_refs *r, enum wh_ref_kind kind, const json_t *obj,
                         const char *key)
{
    if (obj && !jx_bool(obj, "optional", 0))
        add(r, kind, jx_str(obj, key));
}

static void containers(struct wh_refs *r, const json_t *list)
{
    size_t i, j;
    json_t *c, *e;
    json_array_foreach(list, i, c)
    {
        json_array_foreach(json_object_get(c, "envFrom"), j, e)
        {
            add_required(r, WH_REF_CONFIGMAP, json_object_get(e, "configMapRef"), "name");
            add_required(r, WH_REF_SECRET, json_object_get(e, "secretRef"), "name");
        }
        json_array_foreach(json_object_get(c, "env"), j, e)
        {
            add_required(r, WH_REF_CONFIGMAP, jx_get(e, "valueFrom.configMapKeyRef"), "name");
            add_required(r, WH_REF_SECRET, jx_get(e, "valueFrom.secretKeyRef"), "name");
        }
    }
}

static void pod_spec(struct wh_refs *r, const json_t *spec)
{
    size_t i, j;
    json_t *v, *src;
    json_array_foreach(json_object_get(spec, "volumes"), i, v)
    {
        add(r, WH_REF_PVC, jx_str(v, "persistentVolumeClaim.claimName"));
        add_required(r, WH_REF_CONFIGMAP, json_object_get(v, "configMap"), "name");
        add_required(r, WH_REF_SECRET, json_object_get(v, "secret"), "secretName");
        json_array_foreach(jx_get(v, "projected.sources"), j, src)
        {
            add_required(r, WH_REF_CONFIGMAP, json_object_get(src, "configMap"), "name");
            add_required(r, WH_REF_SECRET, json_object_get(src, "secret"), "name");
        }
    }
    containers(r, json_object_get(spec, "initContainers"));
    containers(r, json_object_get(spec, "containers"));
    json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, v)
    {
        add(r, WH_REF_SECRET, jx_str(v, "name"));
    }
    const char *sa = jx_str(spec, "serviceAccountName");
    if (!sa)
        sa = jx_str(spec, "serviceAccount"); /* the deprecated spelling */
    if (sa && strcmp(sa, "default") != 0)
        add(r, WH_REF_SERVICEACCOUNT, sa);
}

int wh_preflight_refs(const struct mk_kind *k, const json_t *job, struct wh_refs *out)
{
    memset(out, 0, sizeof(*out));
    char err[256];
    json_t *sets = mk_pod_sets(k, job, err, sizeof(err));
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
