#include "components.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "kinds/kinds.h"
#include "pack.h"
#include "wlstatus.h"

static long long index_of(const json_t *wl)
{
    const char *v = jx_str(wl, "metadata.annotations[" MK_COMPONENT_INDEX "]");
    char *end;
    long long i = v ? strtoll(v, &end, 10) : -1;
    return v && *v && !*end && i >= 0 ? i : -1;
}

enum rc_component rc_component_place(struct kcache *workloads, const json_t *wl, long long expected,
                                     struct rc_component_view *v)
{
    long long first = -1;
    const char *ns = jx_str(wl, "metadata.namespace"), *me = jx_str(wl, "metadata.name");
    const char *uid = jx_str(wl, "metadata.labels[" RC_JOB_UID "]");
    long long mine = index_of(wl), count = 0;
    int lower = 0, conflict = 0;
    v->cluster[0] = '\0';
    v->first[0] = '\0';
    v->late = json_array();
    json_t *all = uid && ns && me ? kcache_list(workloads, ns) : NULL;
    size_t i;
    json_t *w;
    json_array_foreach(all, i, w)
    {
        json_t *o = rc_unwrap(w);
        const char *u = jx_str(o, "metadata.labels[" RC_JOB_UID "]");
        long long idx = index_of(o);
        if (!u || strcmp(u, uid) != 0 || idx < 0) {
            json_decref(o);
            continue;
        }
        count++;
        const char *n = jx_str(o, "metadata.name"), *cn = jx_str(o, "status.clusterName");
        if (n && strcmp(n, me) != 0) {
            lower |= mine < 0 || idx < mine;
            if (first < 0 || idx < first) {
                first = idx;
                snprintf(v->first, sizeof(v->first), "%s/%s", ns, n);
            }
            if (cn && v->cluster[0] && strcmp(v->cluster, cn) != 0)
                conflict = 1;
            if (cn && !v->cluster[0])
                snprintf(v->cluster, sizeof(v->cluster), "%s", cn);
            if (!cn && v->late)
                json_array_append_new(v->late, json_sprintf("%s/%s", ns, n));
        }
        json_decref(o);
    }
    json_decref(all);
    if (conflict || count < expected || v->cluster[0] || !lower)
        v->first[0] = '\0';
    if (conflict || count < expected)
        return RC_COMPONENT_WAIT;
    if (v->cluster[0])
        return RC_COMPONENT_FOLLOW;
    return lower ? RC_COMPONENT_WAIT : RC_COMPONENT_FREE;
}
