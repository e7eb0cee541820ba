#include "podgroup.h"

#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "kinds/kinds.h"
#include "kinds/podgroup.h"
#include "pack.h"
#include "wlstatus.h"

static int by_name(const void *a, const void *b)
{
    return strcmp(jx_str(*(json_t *const *)a, "metadata.name"),
                  jx_str(*(json_t *const *)b, "metadata.name"));
}

/* Unwraps the objects of ns that keep(record, full, arg) accepts. */
static json_t *select_pods(struct kcache *c, const char *ns, const char *arg,
                           int (*keep)(const json_t *record, const json_t *pod, const char *arg))
{
    json_t *all = kcache_list(c, ns), *out = json_array();
    if (!all || !out)
        goto fail;
    size_t i;
    json_t *w;
    json_array_foreach(all, i, w)
    {
        if (!keep(w, NULL, arg)) /* what the record tells, before unwrapping */
            continue;
        json_t *pod = rc_unwrap(w);
        if (pod && (!jx_str(pod, "metadata.name") || !keep(w, pod, arg))) {
            json_decref(pod);
            continue;
        }
        if (pod && json_array_append_new(out, pod) < 0)
            goto fail;
    }
    json_decref(all);
    size_t n = json_array_size(out);
    json_t **v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        goto fail_out;
    for (i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(out, i));
    qsort(v, n, sizeof(*v), by_name);
    json_array_clear(out);
    for (i = 0; i < n; i++)
        json_array_append_new(out, v[i]);
    free(v);
    return out;
fail:
    json_decref(all);
fail_out:
    json_decref(out);
    return NULL;
}

/* The record keeps no group label: every pod of ns is unwrapped. */
static int in_group(const json_t *record, const json_t *pod, const char *group)
{
    (void)record;
    if (!pod)
        return 1;
    const char *g = mk_pod_group_name(pod);
    return g && strcmp(g, group) == 0;
}

static int of_workload(const json_t *record, const json_t *pod, const char *wl_name)
{
    const char *pb = rc_prebuilt_name(pod ? pod : record);
    return pb && strcmp(pb, wl_name) == 0;
}

json_t *rc_group_pods(struct kcache *pods, const char *ns, const char *group)
{
    return select_pods(pods, ns, group, in_group);
}

json_t *rc_group_remote_pods(struct kcache *pods, const char *ns, const char *wl_name)
{
    return select_pods(pods, ns, wl_name, of_workload);
}

void rc_group_drop(json_t *pods, const json_t *drop)
{
    for (size_t i = json_array_size(pods); i-- > 0;) {
        const json_t *p = json_array_get(pods, i);
        size_t j;
        json_t *d;
        json_array_foreach(drop, j, d)
        {
            if (d == p) {
                json_array_remove(pods, i);
                break;
            }
        }
    }
}

json_t *rc_group_find(const json_t *pods, const char *name)
{
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p)
    {
        const char *n = jx_str(p, "metadata.name");
        if (name && n && strcmp(n, name) == 0)
            return p;
    }
    return NULL;
}

int rc_is_group_workload(const json_t *wl)
{
    const char *v = jx_str(wl, "metadata.annotations[" MK_IS_GROUP_WORKLOAD "]");
    return v && strcmp(v, "true") == 0;
}
