#include "gc.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "log.h"
#include "pack.h"
#include "probe.h"
#include "wlstatus.h"

static const char *LG = "gc";
static const struct kc_resource WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};

/* 1 when the manager's object ns/name (cache c, may be NULL; resource res)
 * is gone, being deleted, or, when uid is given, another object than the
 * one of that uid. Asks the server before believing the cache. */
static int gone_on_manager(struct rc_ctx *x, struct kcache *c, const struct kc_resource *res,
                           const char *ns, const char *name, const char *uid)
{
    json_t *obj = c ? kcache_get_nsname(c, ns, name) : NULL;
    const char *have = obj ? rc_md(obj, RC_MD_UID) : NULL;
    int gone = !obj || rc_wl_deleting(obj) || (uid && have && strcmp(uid, have) != 0);
    json_decref(obj);
    if (!gone)
        return 0;
    struct kc_status st;
    json_t *live = NULL;
    if (kc_get(x->mgr, res, ns, name, &live, &st) < 0)
        return kc_is_not_found(&st);
    have = jx_str(live, "metadata.uid");
    gone = rc_wl_deleting(live) || (uid && have && strcmp(uid, have) != 0);
    json_decref(live);
    return gone;
}

/* 1 when the manager Workload ns/name is gone or being deleted. */
static int orphaned(struct rc_ctx *x, const char *ns, const char *name)
{
    return gone_on_manager(x, x->workloads, &WORKLOADS, ns, name, NULL);
}

/* A remote job's orphan test: by its prebuilt-workload-name (the manager
 * Workload), else, for a kind without that label, by the manager's job. */
static int remote_job_orphaned(struct rc_ctx *x, int k, const json_t *rec)
{
    const char *ns = rc_md(rec, RC_MD_NAMESPACE), *name = rc_md(rec, RC_MD_NAME);
    if (!ns || !name || rc_wl_deleting(rec))
        return 0;
    if (x->kinds[k]->prebuilt_allowed) {
        const char *pb = rc_prebuilt_name(rec);
        return pb && orphaned(x, ns, pb);
    }
    json_t *full = rc_unwrap(rec); /* (few such copies: the annotation is not in the record) */
    if (!full)
        return 0; /* out of memory: the next pass */
    /* a LeaderWorkerSet: one copy for all its Workloads, whose only tie is
     * the manager's set of its name and the uid it was copied from */
    struct kc_resource res = mk_kind_resource(x->kinds[k]);
    int gone = gone_on_manager(x, x->jobs[k], &res, ns, name,
                               jx_str(full, "metadata.annotations[" MK_ORIGIN_UID_ANNOTATION "]"));
    json_decref(full);
    return gone;
}

static int origin_ok(struct rc_ctx *x, const json_t *obj)
{
    const char *o = rc_md(obj, RC_MD_ORIGIN);
    return o && strcmp(o, x->cfg->origin) == 0;
}

/* obj: a cached record or a full object */
static int delete_obj(struct rc_ctx *x, const char *cluster, struct kc_client *c,
                      const struct kc_resource *res, const json_t *obj, const char *propagation)
{
    struct kc_status st;
    const char *ns = rc_md(obj, RC_MD_NAMESPACE), *name = rc_md(obj, RC_MD_NAME);
    if (!origin_ok(x, obj))
        return 0; /* invariant 1 */
    /* one of the worker's slots (inflight.h); a busy worker waits for the next pass */
    if (rc_inflight_enter(x->inflight, cluster) < 0)
        return -1;
    st.http = 0;
    st.transport_code = 0;
    if (res == &WORKLOADS && rc_has_finalizer(obj, RC_FINALIZER)) {
        json_t *full = rc_unwrap(obj); /* the whole list of finalizers */
        json_t *p = full ? rc_finalizer_removal(full, RC_FINALIZER) : NULL;
        json_decref(full);
        int rc = p ? kc_patch(c, res, ns, name, NULL, KC_PATCH_MERGE, p, NULL, NULL, &st) : -1;
        json_decref(p);
        if (rc < 0 && !kc_is_not_found(&st))
            goto fail;
    }
    if (kc_delete(c, res, ns, name, propagation, rc_md(obj, RC_MD_UID), &st) < 0 &&
        !kc_is_not_found(&st) && st.http != 409)
        goto fail;
    rc_inflight_leave(x->inflight, cluster, RC_ANSWER_YES);
    const char *v[] = {cluster};
    mt_inc(x->metrics.gc_deleted, v, 1);
    LOG_I(LG, "orphan deleted", "cluster", cluster, "resource", res->resource, "namespace", ns,
          "name", name);
    return 0;
fail:
    rc_inflight_leave(x->inflight, cluster,
                      st.http > 0 ? RC_ANSWER_YES
                                  : (st.transport_code ? RC_ANSWER_NONE : RC_ANSWER_UNKNOWN));
    rc_metric_remote_error(&x->metrics, cluster, st.http);
    LOG_W(LG, "orphan not deleted", "cluster", cluster, "name", name, "error", st.message);
    return -1;
}

int rc_gc_cluster(struct rc_ctx *x, const char *cluster)
{
    if (!kcache_synced(x->workloads))
        return 0;
    struct mkcs_conn *conn = mkcs_get(x->clusters, cluster);
    int rc = 0;
    if (!conn || !mkcs_conn_connected(conn) ||
        rc_probe_unreachable_since(x->probe, cluster, NULL, 0)) {
        mkcs_put(conn); /* invariant 8: skip clusters that are not connected */
        return 0;
    }
    struct kc_client *c = mkcs_conn_client(conn);
    /* jobs first, so a job whose Workload already vanished still goes. The
     * remote caches hold records (pack.h): the passes read their fields,
     * and only an orphan is unwrapped for its deletion. */
    for (int k = 0; k < x->nkinds; k++) {
        json_t *jobs = kcache_list(mkcs_conn_cache(conn, (size_t)(1 + k)), NULL);
        struct kc_resource res = mk_kind_resource(x->kinds[k]);
        size_t i;
        json_t *j;
        json_array_foreach(jobs, i, j)
        {
            if (remote_job_orphaned(x, k, j) &&
                delete_obj(x, cluster, c, &res, j, "Background") < 0)
                rc = -1;
        }
        json_decref(jobs);
    }
    json_t *wls = kcache_list(mkcs_conn_cache(conn, RC_WATCH_WORKLOADS), NULL);
    size_t i;
    json_t *w;
    json_array_foreach(wls, i, w)
    {
        const char *ns = rc_md(w, RC_MD_NAMESPACE), *name = rc_md(w, RC_MD_NAME);
        if (!ns || !name || (rc_wl_deleting(w) && !rc_has_finalizer(w, RC_FINALIZER)) ||
            !orphaned(x, ns, name))
            continue;
        if (delete_obj(x, cluster, c, &WORKLOADS, w, NULL) < 0)
            rc = -1;
    }
    json_decref(wls);
    mkcs_put(conn);
    return rc;
}
