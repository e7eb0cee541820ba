#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "decide.h"
#include "dispatchers.h"
#include "echo.h"
#include "events.h"
#include "fanout.h"
#include "jobsync.h"
#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/podgroup.h"
#include "log.h"
#include "pack.h"
#include "podgroup.h"
#include "components.h"
#include "placement.h"
#include "podrefs.h"
#include "podwatch.h"
#include "probe.h"
#include "why.h"
#include "wlstatus.h"

static const char *LG = "dispatch";
static const struct kc_resource WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};

json_t *rc_remote_workload(const json_t *wl, const char *origin)
{
    json_t *labels = json_deep_copy(jx_get(wl, "metadata.labels"));
    if (!json_is_object(labels)) {
        json_decref(labels);
        labels = json_object();
    }
    json_object_del(labels, RC_JOB_UID);
    json_object_set_new(labels, MK_ORIGIN_LABEL, json_string(origin));
    json_t *out =
        json_pack("{s:s,s:s,s:{s:s?,s:s?,s:o},s:O?}", "apiVersion", "kueue.x-k8s.io/v1beta2",
                  "kind", "Workload", "metadata", "name", jx_str(wl, "metadata.name"), "namespace",
                  jx_str(wl, "metadata.namespace"), "labels", labels, "spec", jx_get(wl, "spec"));
    json_t *ann = jx_get(wl, "metadata.annotations");
    if (out && json_is_object(ann) && json_object_size(ann))
        jx_set(out, "metadata.annotations", json_deep_copy(ann));
    return out;
}

void rc_remember_deleted(struct rc_ctx *x, const char *key, const json_t *obj)
{
    json_t *copy = rc_unwrap(obj); /* a fresh tree: ours to change */
    if (!copy)
        return;
    if (!rc_wl_deleting(copy)) {
        char now[32];
        rc_now_rfc3339(now);
        jx_set_new_str(copy, "metadata.deletionTimestamp", now);
    }
    void *old = NULL;
    pthread_mutex_lock(&x->mu);
    if (smap_put(x->deleted, key, copy, &old) < 0)
        old = copy;
    pthread_mutex_unlock(&x->mu);
    json_decref(old);
}

void rc_forget_deleted(struct rc_ctx *x, const char *key)
{
    pthread_mutex_lock(&x->mu);
    json_t *old = smap_del(x->deleted, key);
    long long *r = smap_del(x->rounds, key);
    long long *l = smap_del(x->lag, key);
    json_t *d = x->drift ? smap_del(x->drift, key) : NULL;
    pthread_mutex_unlock(&x->mu);
    json_decref(old);
    free(r);
    free(l);
    json_decref(d);
}

/* ---- drift marks (ctx.h: x->drift) ------------------------------------------ */

/* A copy (new reference) of the Workload's marks {cluster: remote UID}, or
 * NULL when none are kept for this Workload (a same-named predecessor's
 * marks do not count). */
static json_t *drift_marks(struct rc_ctx *x, const char *key, const char *wl_uid)
{
    json_t *out = NULL;
    pthread_mutex_lock(&x->mu);
    json_t *e = x->drift ? smap_get(x->drift, key) : NULL;
    const char *u = jx_str(e, "uid");
    if (u && strcmp(u, wl_uid ? wl_uid : "") == 0)
        out = json_deep_copy(json_object_get(e, "clusters"));
    pthread_mutex_unlock(&x->mu);
    return out;
}

/* Marks the cluster's copy (remote_uid) as removed once for drift, or
 * forgets that when remote_uid is NULL. Returns 0, or -1 on oom. */
static int drift_mark(struct rc_ctx *x, const char *key, const char *wl_uid, const char *cluster,
                      const char *remote_uid)
{
    int rc = 0;
    json_t *gone = NULL;
    if (!wl_uid)
        wl_uid = "";
    pthread_mutex_lock(&x->mu);
    if (!x->drift) {
        pthread_mutex_unlock(&x->mu);
        return remote_uid ? -1 : 0;
    }
    json_t *e = smap_get(x->drift, key);
    const char *u = jx_str(e, "uid");
    if (e && (!u || strcmp(u, wl_uid) != 0)) {
        gone = smap_del(x->drift, key); /* another Workload of that name */
        e = NULL;
    }
    if (!remote_uid) {
        json_t *cl = json_object_get(e, "clusters");
        json_object_del(cl, cluster);
        if (e && json_object_size(cl) == 0) {
            json_decref(gone);
            gone = smap_del(x->drift, key);
        }
    } else {
        if (!e) {
            e = json_pack("{s:s,s:{}}", "uid", wl_uid, "clusters");
            if (!e || smap_put(x->drift, key, e, NULL) < 0) {
                json_decref(e);
                e = NULL;
            }
        }
        if (!e || json_object_set_new(json_object_get(e, "clusters"), cluster,
                                      json_string(remote_uid)) < 0)
            rc = -1;
    }
    pthread_mutex_unlock(&x->mu);
    json_decref(gone);
    return rc;
}

static void drift_forget(struct rc_ctx *x, const char *key)
{
    pthread_mutex_lock(&x->mu);
    json_t *e = x->drift ? smap_del(x->drift, key) : NULL;
    pthread_mutex_unlock(&x->mu);
    json_decref(e);
}

void rc_note_remote_event(struct rc_ctx *x, const char *key)
{
    pthread_mutex_lock(&x->mu);
    if (!smap_get(x->lag, key)) {
        long long *t = malloc(sizeof(*t));
        if (t) {
            *t = clk_now_ms();
            if (smap_put(x->lag, key, t, NULL) < 0)
                free(t);
        }
    }
    pthread_mutex_unlock(&x->mu);
}

/* ---- observation ------------------------------------------------------------ */

/* How long (ms) the cluster has been unavailable, from the first time any
 * observation saw it so (ctx.h: x->lost), or from an earlier moment the
 * connection or the probe knows of. 0 when available (and forgotten). A
 * MultiKueueCluster deleted and re-created keeps its first loss: the new
 * connection does not restart the timer. */
static long long lost_for(struct rc_ctx *x, const char *cluster, int available, long long since,
                          long long now)
{
    long long first = now;
    pthread_mutex_lock(&x->mu);
    if (available) {
        free(x->lost ? smap_del(x->lost, cluster) : NULL);
    } else if (x->lost) {
        long long *t = smap_get(x->lost, cluster);
        if (t) {
            first = *t;
        } else if ((t = malloc(sizeof(*t)))) {
            *t = now;
            if (smap_put(x->lost, cluster, t, NULL) < 0)
                free(t);
        }
    }
    pthread_mutex_unlock(&x->mu);
    if (available)
        return 0;
    if (since > 0 && since < first)
        first = since;
    return now > first ? now - first : 0;
}

/* One call to a worker: whether it answered (inflight.h) and what it said
 * when it refused (for why.h), kept per call so that calls to several
 * workers can run at once (fanout.h). */
struct remote_call {
    enum rc_answer answered;
    char err[RC_WHY_ERR_MAX];
};

struct held {
    struct rc_obs obs;
    struct rc_remote remotes[RC_MAX_CLUSTERS * 2];
    struct mkcs_conn *conns[RC_MAX_CLUSTERS * 2];
    int kind_index;
    char check[254];
    char gvk[300];
    char cq[254];
    char now[32];
    json_t *clusters;
    json_t *drift; /* the Workload's drift marks (drift_marks), owned */
    /* A pod group's Workload: its manager pods, and each cluster's copies of
     * them (podgroup.h; owned); obs.job and remotes[].job are their first. */
    int group;
    json_t *members;
    json_t *rmembers[RC_MAX_CLUSTERS * 2];
    struct rc_nomination nom;
    int have_nom;
    int status_written;      /* a plan's Workload status write succeeded (its nomination) */
    struct remote_call call; /* the running action's, when it runs alone */
    char down[RC_MAX_CLUSTERS * 2][320];            /* why.h: why each is unavailable */
    char cerr[RC_MAX_CLUSTERS * 2][RC_WHY_ERR_MAX]; /* why.h: its copy's last create error */
    json_t *cur;         /* the manager Workload after the plan ran (owned) */
    struct mk_refs refs; /* what the job references (data-aware dispatch) */
    int have_refs;
    char lacks[RC_MAX_CLUSTERS * 2][RC_WHY_ENTRY_MAX];
};

static void release(struct held *h)
{
    for (size_t i = 0; i < h->obs.nremotes; i++) {
        json_decref(h->remotes[i].wl);
        json_decref(h->remotes[i].job);
        json_decref(h->rmembers[i]);
        mkcs_put(h->conns[i]);
    }
    json_decref(h->members);
    json_decref(h->obs.wl);
    json_decref(h->obs.job);
    json_decref(h->clusters);
    json_decref(h->drift);
    json_decref(h->cur);
    if (h->have_nom)
        rc_nomination_clear(&h->nom);
}

/* The local owner job (new reference) or NULL; *gone when it is confirmed
 * deleted or replaced (another UID). */
static json_t *owner_job(struct rc_ctx *x, struct held *h, json_t *owner, int *gone)
{
    *gone = 0;
    const char *ns = jx_str(h->obs.wl, "metadata.namespace");
    const char *name = jx_str(owner, "name"), *uid = jx_str(owner, "uid");
    if (!ns || !name || h->kind_index < 0)
        return NULL;
    struct kcache *cache = x->jobs[h->kind_index];
    json_t *job = rc_cache_get_nsname(cache, ns, name);
    const char *juid = jx_str(job, "metadata.uid");
    if (job && uid && juid && strcmp(uid, juid) == 0)
        return job;
    json_decref(job);
    if (!kcache_synced(cache))
        return NULL;
    /* the cache may lag: ask the server before calling it gone */
    struct kc_resource res = mk_kind_resource(h->obs.kind);
    struct kc_status st;
    if (kc_get(x->mgr, &res, ns, name, &job, &st) < 0) {
        *gone = kc_is_not_found(&st);
        return NULL;
    }
    juid = jx_str(job, "metadata.uid");
    if (uid && juid && strcmp(uid, juid) == 0)
        return job;
    json_decref(job);
    *gone = 1;
    return NULL;
}

/* A pod group's manager pods (h->members; not those past their role's
 * count, which Kueue deletes: never copied): the first of them (new
 * reference), NULL when none; *gone when the cache, synced, shows none. */
static json_t *group_job(struct rc_ctx *x, struct held *h, int *gone)
{
    struct kcache *cache = x->jobs[h->kind_index];
    h->members = rc_group_pods(cache, jx_str(h->obs.wl, "metadata.namespace"),
                               jx_str(h->obs.wl, "metadata.name"));
    json_t *excess = mk_pod_group_excess(h->members, jx_get(h->obs.wl, "spec.podSets"));
    rc_group_drop(h->members, excess);
    json_decref(excess);
    *gone = h->members && json_array_size(h->members) == 0 && kcache_synced(cache);
    return json_incref(json_array_get(h->members, 0));
}

static json_t *remote_job(struct rc_ctx *x, struct held *h, size_t n, struct mkcs_conn *c, int ki,
                          const char *ns, const char *name, const char *wl_name)
{
    if (ki < 0 || !name)
        return NULL;
    if (h->group) {
        h->rmembers[n] = rc_group_remote_pods(mkcs_conn_cache(c, (size_t)(1 + ki)), ns, wl_name);
        return json_incref(json_array_get(h->rmembers[n], 0));
    }
    json_t *job = rc_cache_get_nsname(mkcs_conn_cache(c, (size_t)(1 + ki)), ns, name);
    const char *pb = rc_prebuilt_name(job);
    /* A kind without the prebuilt label (LeaderWorkerSet) has one copy for
     * all its Workloads: this one's only where this one's copy is (never
     * an orphan to remove while a sibling's Workload uses it) */
    if (job && !x->kinds[ki]->prebuilt_allowed && !h->remotes[n].wl) {
        json_decref(job);
        return NULL;
    }
    if (job && x->kinds[ki]->prebuilt_allowed && (!pb || strcmp(pb, wl_name) != 0)) {
        /* ours (origin label) but for another Workload: the GC's business */
        json_decref(job);
        return NULL;
    }
    return job;
}

void rc_lost_forget(struct rc_ctx *x, const char *cluster)
{
    pthread_mutex_lock(&x->mu);
    free(x->lost ? smap_del(x->lost, cluster) : NULL);
    pthread_mutex_unlock(&x->mu);
}

/* Data-aware dispatch: which of the objects the job references (h->refs)
 * cluster n's caches show it lacks; one it cannot tell about counts as there. */
static void observe_lacks(struct rc_ctx *x, struct held *h, size_t n, struct mkcs_conn *c,
                          const char *ns)
{
    struct rc_remote *r = &h->remotes[n];
    size_t len = 0;
    char *out = h->lacks[n];
    for (size_t i = 0; i < h->refs.n && x->refs_watch > 0; i++) {
        const struct mk_ref *f = &h->refs.v[i];
        struct kcache *cache = mkcs_conn_cache(c, (size_t)x->refs_watch + (size_t)f->kind);
        if (mk_ref_present(cache, ns, f->name) != 0)
            continue;
        r->lacks++;
        buf_cut_appendf(out, RC_WHY_ENTRY_MAX, &len, "%s%s %s/%s", len ? ", " : "",
                        mk_ref_kind_name(f->kind), ns, f->name);
    }
    r->lacks_what = r->lacks ? out : NULL;
}

/* Fills *r for a cluster: its connection (h->conns[n]), availability, how
 * long it has been lost, and its copies of the Workload and job. */
static void observe_remote(struct rc_ctx *x, struct held *h, size_t n, const char *cluster,
                           int in_config, const char *key, const char *jname, long long now)
{
    struct rc_remote *r = &h->remotes[n];
    const char *ns = jx_str(h->obs.wl, "metadata.namespace");
    const char *wname = jx_str(h->obs.wl, "metadata.name");
    r->cluster = cluster;
    r->in_config = in_config;
    struct mkcs_state stt;
    int known = mkcs_state(x->clusters, cluster, &stt) == 0 && stt.known;
    struct mkcs_conn *c = mkcs_get(x->clusters, cluster);
    h->conns[n] = c;
    r->available = c && mkcs_conn_connected(c);
    long long unreachable = rc_probe_unreachable_since(x->probe, cluster, NULL, 0);
    long long since = 0;
    if (r->available && unreachable) {
        r->available = 0; /* connected watches, but the server does not answer */
        since = unreachable;
    } else if (!r->available && known && stt.disconnected_since_ms > 0) {
        since = stt.disconnected_since_ms;
        if (unreachable && unreachable < since)
            since = unreachable;
    }
    /* no MultiKueueCluster at all counts the same: lost since first seen */
    r->lost_ms = lost_for(x, cluster, r->available, since, now);
    r->drift_uid = json_string_value(json_object_get(h->drift, cluster));
    if (!r->available) { /* for the check's message (why.h) */
        if (!known)
            snprintf(h->down[n], sizeof(h->down[n]), "no MultiKueueCluster");
        else if (c && mkcs_conn_connected(c))
            snprintf(h->down[n], sizeof(h->down[n]), "unreachable");
        else
            rc_why_down(stt.reason, stt.message, h->down[n], sizeof(h->down[n]));
        r->down = h->down[n];
    }
    if (rc_why_create_error(x->why, key, cluster, h->cerr[n], sizeof(h->cerr[n])))
        r->create_err = h->cerr[n];
    if (c) {
        r->wl = rc_cache_get(mkcs_conn_cache(c, RC_WATCH_WORKLOADS), key);
        r->job = remote_job(x, h, n, c, h->kind_index, ns, jname, wname);
        long long at = clk_now_ms();
        r->wl_deleted = r->wl && rc_echo_deleted(x->echo, jx_str(r->wl, "metadata.uid"), at);
        r->job_deleted = r->job && rc_echo_deleted(x->echo, jx_str(r->job, "metadata.uid"), at);
    }
    if (c && r->available && h->have_refs)
        observe_lacks(x, h, n, c, ns);
}

/* A LeaderWorkerSet's Workload (components.h): the one worker its first
 * component got, or nothing decided while that is unknown (as when the
 * group cannot be read). Once it has a worker, the components still
 * without one are reconciled; while the first has not chosen, the Workload
 * that completes the group wakes it. Returns 0 when it waits. */
static int place_component(struct rc_ctx *x, struct held *h)
{
    struct rc_obs *o = &h->obs;
    struct rc_component_view v;
    long long expected = o->job ? mk_lws_replicas(o->job) : 0;
    enum rc_component c = rc_component_place(x->workloads, o->wl, expected, &v);
    size_t i;
    json_t *k;
    int nudge = jx_str(o->wl, "status.clusterName") || c == RC_COMPONENT_FOLLOW;
    json_array_foreach(v.late, i, k)
    {
        if (nudge)
            rc_enqueue(x, 'w', json_string_value(k));
    }
    json_decref(v.late);
    if (v.first[0])
        rc_enqueue(x, 'w', v.first);
    if (c == RC_COMPONENT_FOLLOW) {
        json_t *one = NULL;
        json_array_foreach(h->clusters, i, k)
        {
            if (strcmp(json_string_value(k), v.cluster) == 0)
                one = json_pack("[s]", v.cluster);
        }
        json_decref(h->clusters);
        h->clusters = one ? one : json_array();
        c = one ? c : RC_COMPONENT_WAIT;
    }
    if (c == RC_COMPONENT_WAIT && !jx_str(o->wl, "status.clusterName")) {
        o->group_unknown = 1;
        return 0;
    }
    return 1;
}

/* The Workload's owner: its kind's adapter, the local job, whether it is ours. */
static void observe_owner(struct rc_ctx *x, struct held *h, json_t *owner)
{
    struct rc_obs *o = &h->obs;
    const char *av = jx_str(owner, "apiVersion"), *kind = jx_str(owner, "kind");
    snprintf(h->gvk, sizeof(h->gvk), "%s%s, Kind=%s", av && strchr(av, '/') ? "" : "/",
             av ? av : "", kind ? kind : "");
    o->owner_gvk = h->gvk;
    const struct mk_kind *k = mk_kind_by_gvk(av, kind);
    h->kind_index = k ? rc_kind_index(x, k) : -1;
    if (h->kind_index < 0)
        return;
    o->kind = k;
    o->managed_by_honoured = x->managed_by_kept[h->kind_index];
    h->group = k->gating == MK_GATE_POD && rc_is_group_workload(o->wl);
    o->job = h->group ? group_job(x, h, &o->job_gone) : owner_job(x, h, owner, &o->job_gone);
    if (h->group && h->members)
        o->group_absent = mk_pod_group_absent(h->members, jx_get(o->wl, "spec.podSets"));
    /* a kind without managedBy (Pod) is always Kueue's, as in Kueue's
     * pod adapter (IsJobManagedByKueue) */
    o->managed =
        o->job && (!o->managed_by_honoured || !k->managed_by_path || mk_is_managed(k, o->job));
}

/* Each cluster of the check's group (h->clusters), and the recorded one
 * when it left the group; connected[i]: the group's i-th is available. */
static void observe_remotes(struct rc_ctx *x, struct held *h, const char *key, const char *jname,
                            long long now, int *connected)
{
    struct rc_obs *o = &h->obs;
    size_t i;
    json_t *cv;
    const char *cn = jx_str(o->wl, "status.clusterName");
    int cn_seen = 0;
    json_array_foreach(h->clusters, i, cv)
    {
        if (i >= RC_MAX_CLUSTERS)
            break;
        observe_remote(x, h, o->nremotes, json_string_value(cv), 1, key, jname, now);
        connected[i] = h->remotes[o->nremotes].available;
        cn_seen = cn_seen || (cn && strcmp(cn, h->remotes[o->nremotes].cluster) == 0);
        o->nremotes++;
    }
    /* the recorded cluster left the config: its copy is still watched, so
     * it can be removed before anything is made elsewhere */
    if (cn && !cn_seen && o->nremotes < RC_MAX_CLUSTERS * 2) {
        observe_remote(x, h, o->nremotes, cn, 0, key, jname, now);
        o->nremotes++;
    }
}

/* The dispatcher's choice (dispatchers.h) for step 10 of the plan. */
static void observe_nomination(struct rc_ctx *x, struct held *h, const char *key,
                               const int *connected, long long now)
{
    struct rc_obs *o = &h->obs;
    long long round = 0;
    pthread_mutex_lock(&x->mu);
    long long *rs = smap_get(x->rounds, key);
    if (rs)
        round = *rs;
    pthread_mutex_unlock(&x->mu);
    if (h->clusters && rc_nominate(x->cfg->dispatcher, h->clusters, connected,
                                   jx_get(o->wl, "status.nominatedClusterNames"), x->cfg->step_size,
                                   x->cfg->round_ms, round, now, &h->nom) == 0) {
        h->have_nom = 1;
        o->nominated = h->nom.clusters;
        o->dispatcher_writes = x->cfg->dispatcher != RC_DISPATCH_EXTERNAL;
        o->dispatcher_requeue_ms = h->nom.requeue_ms;
    }
}

/* The manager Workload of key: the cache's, or the server's answer to our
 * own last write when one was kept and the cache is behind it (echo.h).
 * *behind: the cache is behind our write and no answer was kept; its event
 * brings the key back. */
static json_t *workload_now(struct rc_ctx *x, const char *key, int *behind)
{
    char ekey[RC_WL_ECHO_KEY_MAX];
    json_t *wl = rc_cache_get(x->workloads, key);
    *behind = 0;
    if (rc_wl_echo_key_of(key, ekey, sizeof(ekey)) < 0)
        return wl;
    const char *rv = jx_str(wl, "metadata.resourceVersion");
    long long now = clk_now_ms();
    json_t *answer = rc_echo_take_answer(x->echo, ekey, rv, now);
    if (!wl) {
        json_decref(answer); /* deleted since: never brought back */
        return NULL;
    }
    if (answer) {
        json_t *newer = rc_unwrap(answer);
        json_decref(answer);
        if (newer) {
            json_decref(wl);
            return newer;
        }
    }
    if (rc_echo_behind(x->echo, ekey, rv, now)) {
        json_decref(wl);
        *behind = 1;
        return NULL;
    }
    return wl;
}

/* Fills h->obs for the plan: the Workload, its owner, its copies and the
 * dispatcher's choice. Returns 1 when the Workload is gone (nothing to do),
 * 2 when the cache has not shown our own last write to it (echo.h). */
static int observe(struct rc_ctx *x, const char *key, struct held *h)
{
    struct rc_obs *o = &h->obs;
    int behind;
    json_t *wl = workload_now(x, key, &behind);
    if (behind)
        return 2;
    if (!wl) {
        pthread_mutex_lock(&x->mu);
        wl = smap_del(x->deleted, key); /* taken; put back on failure */
        pthread_mutex_unlock(&x->mu);
        if (!wl)
            return 1; /* nothing to do */
    }
    o->wl = wl;
    o->explain = 1;
    o->mode = x->cfg->mode;
    o->worker_lost_timeout_ms = x->cfg->worker_lost_timeout_ms;
    o->resync_ms = x->cfg->resync_ms;
    o->dispatcher_requeue_ms = -1;
    o->remotes = h->remotes;
    rc_now_rfc3339(h->now);
    o->now = h->now;
    h->kind_index = -1;
    o->group_absent = -1;
    if (rc_mk_check_of(x, wl, h->check, sizeof(h->check)) == 0)
        o->check = h->check;
    rc_cq_of(x, wl, h->cq, sizeof(h->cq));

    json_t *owner = rc_wl_owner(wl);
    if (owner)
        observe_owner(x, h, owner);
    if (!o->check)
        return 0;

    char why[300];
    h->clusters = rc_check_clusters(x, o->check, why, sizeof(why));
    if (!h->clusters) {
        o->group_unknown = 1; /* nothing is decided on what cannot be read */
        LOG_D(LG, "group not readable", "workload", key, "reason", why);
        return 0;
    }
    if (o->kind == &mk_kind_leaderworkerset && !place_component(x, h))
        return 0;
    h->drift = drift_marks(x, key, jx_str(wl, "metadata.uid"));
    o->data_aware = x->cfg->data_aware && x->refs_watch > 0;
    h->have_refs = o->data_aware && o->job && mk_pod_refs(o->kind, o->job, &h->refs) == 0;
    long long now = clk_now_ms();
    int connected[RC_MAX_CLUSTERS] = {0};
    observe_remotes(x, h, key, jx_str(owner, "name"), now, connected);
    observe_nomination(x, h, key, connected, now);
    return 0;
}

/* ---- actions ------------------------------------------------------------------ */

/* A failed call to a worker: counted, logged, and noted for the in-flight
 * limit (an HTTP status is an answer; a transport error is none). */
static void remote_failed(struct rc_ctx *x, enum rc_answer *answered, const char *cluster,
                          const char *what, const char *name, const struct kc_status *st)
{
    if (st->http > 0)
        *answered = RC_ANSWER_YES;
    else if (st->transport_code != 0)
        *answered = RC_ANSWER_NONE;
    rc_metric_remote_error(&x->metrics, cluster, st->http);
    LOG_W(LG, "remote call failed", "cluster", cluster, "op", what, "object", name, "error",
          st->message);
}

static int origin_matches(struct rc_ctx *x, const json_t *obj)
{
    const char *o = jx_str(obj, "metadata.labels[" MK_ORIGIN_LABEL "]");
    return o && strcmp(o, x->cfg->origin) == 0;
}

/* Notes a write to the manager Workload (out: the server's answer) for
 * rc_echo_behind: until the cache shows it, its reconciles wait. */
static void wl_written(struct rc_ctx *x, const json_t *patch, const json_t *out)
{
    char key[RC_WL_ECHO_KEY_MAX];
    if (rc_wl_echo_key(out, key, sizeof(key)) == 0)
        rc_echo_note(x->echo, key, patch, jx_str(out, "metadata.resourceVersion"), clk_now_ms());
}

/* Merge- or apply-patches the manager Workload's status with a
 * resourceVersion precondition; *cur becomes the server's answer. */
static int wl_patch(struct rc_ctx *x, json_t **cur, json_t *status, int apply)
{
    const char *rv = jx_str(*cur, "metadata.resourceVersion");
    json_t *body =
        apply ? rc_admission_apply(*cur, status)
              : json_pack("{s:{s:s?},s:O}", "metadata", "resourceVersion", rv, "status", status);
    if (!body)
        return -1;
    json_t *out = NULL;
    struct kc_status st;
    int rc =
        kc_patch(x->mgr, &WORKLOADS, jx_str(*cur, "metadata.namespace"),
                 jx_str(*cur, "metadata.name"), "status", apply ? KC_PATCH_APPLY : KC_PATCH_MERGE,
                 body, apply ? RC_ADMISSION_MANAGER : NULL, &out, &st);
    if (rc == 0)
        wl_written(x, body, out);
    json_decref(body);
    if (rc < 0) {
        LOG_I(LG, "workload status not written", "workload", jx_str(*cur, "metadata.name"), "error",
              st.message);
        return -1;
    }
    json_decref(*cur);
    *cur = out;
    return 0;
}

/* The status patch of a plan. With Kueue on the manager, clusterName and
 * nominatedClusterNames go in Kueue's own admission-status apply (field
 * manager kueue-admission, forced), as its MultiKueue controller writes
 * them, so Kueue's eviction, which leaves them out of the same apply, clears
 * them again. Setting clusterName empties the nominations in the same apply
 * (Kueue's webhook checks clusterName against the stored list, so it must
 * still be there: rc_admission_apply). An apply cannot remove what another
 * manager owns (an External dispatcher's nominations), so a list cleared
 * without a clusterName is first removed by a merge patch. */
static int wl_status(struct rc_ctx *x, json_t **cur, json_t *status)
{
    if (x->cfg->mode != RC_MODE_WITH_KUEUE || !rc_admission_patch(status))
        return wl_patch(x, cur, status, 0);
    json_t *nom = json_object_get(status, "nominatedClusterNames");
    json_t *had = jx_get(*cur, "status.nominatedClusterNames");
    json_t *cn = json_object_get(status, "clusterName");
    if (json_is_null(nom) && json_array_size(had) > 0 && !json_is_string(cn)) {
        json_t *clear = json_pack("{s:n}", "nominatedClusterNames");
        int rc = clear ? wl_patch(x, cur, clear, 0) : -1;
        json_decref(clear);
        if (rc < 0)
            return -1;
    }
    return wl_patch(x, cur, status, 1);
}

/* Deletes a remote job (Background, preconditioned on its UID). */
static int delete_remote_job(struct rc_ctx *x, struct held *h, int i, const json_t *job,
                             struct remote_call *call)
{
    struct kc_client *c = mkcs_conn_client(h->conns[i]);
    struct kc_resource res = mk_kind_resource(h->obs.kind);
    struct kc_status st;
    const char *name = jx_str(job, "metadata.name");
    if (kc_delete(c, &res, jx_str(job, "metadata.namespace"), name, "Background",
                  jx_str(job, "metadata.uid"), &st) < 0 &&
        !kc_is_not_found(&st) && st.http != 409) {
        remote_failed(x, &call->answered, h->remotes[i].cluster, "delete job", name, &st);
        return -1;
    }
    rc_echo_note_deleted(x->echo, jx_str(job, "metadata.uid"), clk_now_ms());
    LOG_I(LG, "remote job deleted", "cluster", h->remotes[i].cluster, "job", name);
    return 0;
}

/* Touches h->remotes[i] and its connection only (removals of different
 * copies run side by side: copy_calls). */
static int remove_remote(struct rc_ctx *x, struct held *h, int i, struct remote_call *call)
{
    struct rc_remote *r = &h->remotes[i];
    struct kc_client *c = mkcs_conn_client(h->conns[i]);
    struct kc_status st;
    if (!c)
        return -1;
    if (r->job && h->obs.kind) {
        /* a pod group: every copy of its pods (Kueue's DeleteRemoteObject) */
        size_t j, n = h->group ? json_array_size(h->rmembers[i]) : 1;
        for (j = 0; j < n; j++)
            if (delete_remote_job(x, h, i, h->group ? json_array_get(h->rmembers[i], j) : r->job,
                                  call) < 0)
                return -1;
    }
    if (r->wl) {
        const char *ns = jx_str(r->wl, "metadata.namespace"), *n = jx_str(r->wl, "metadata.name");
        if (rc_has_finalizer(r->wl, RC_FINALIZER)) {
            json_t *p = rc_finalizer_removal(r->wl, RC_FINALIZER);
            int rc =
                p ? kc_patch(c, &WORKLOADS, ns, n, NULL, KC_PATCH_MERGE, p, NULL, NULL, &st) : -1;
            json_decref(p);
            if (rc < 0 && !kc_is_not_found(&st)) {
                remote_failed(x, &call->answered, r->cluster, "remove finalizer", n, &st);
                return -1;
            }
        }
        if (kc_delete(c, &WORKLOADS, ns, n, NULL, jx_str(r->wl, "metadata.uid"), &st) < 0 &&
            !kc_is_not_found(&st) && st.http != 409) {
            remote_failed(x, &call->answered, r->cluster, "delete workload", n, &st);
            return -1;
        }
        rc_echo_note_deleted(x->echo, jx_str(r->wl, "metadata.uid"), clk_now_ms());
        LOG_I(LG, "remote workload deleted", "cluster", r->cluster, "workload", n);
    }
    return 0;
}

/* Creates obj on the cluster; AlreadyExists is success when the existing
 * object carries our origin (and, for jobs, names the same Workload). */
static int create_remote(struct rc_ctx *x, struct held *h, int i, const struct kc_resource *res,
                         json_t *obj, const char *wl_name, int *created, struct remote_call *call)
{
    struct kc_client *c = mkcs_conn_client(h->conns[i]);
    const char *cluster = h->remotes[i].cluster;
    const char *ns = jx_str(obj, "metadata.namespace"), *name = jx_str(obj, "metadata.name");
    struct kc_status st;
    *created = 0;
    call->err[0] = '\0';
    if (!c)
        return -1;
    if (kc_create(c, res, ns, obj, NULL, &st) == 0) {
        *created = 1;
        return 0;
    }
    if (!kc_is_already_exists(&st)) {
        remote_failed(x, &call->answered, cluster, "create", name, &st);
        buf_cut_fmt(call->err, sizeof(call->err), "%s", st.message);
        return -1;
    }
    json_t *cur = NULL;
    if (kc_get(c, res, ns, name, &cur, &st) < 0) {
        remote_failed(x, &call->answered, cluster, "get", name, &st);
        return -1;
    }
    const char *pb = rc_prebuilt_name(cur);
    int ours = origin_matches(x, cur) && (!wl_name || (pb && strcmp(pb, wl_name) == 0));
    json_decref(cur);
    if (!ours) {
        /* invariant 1: a foreign object of the same name is never touched */
        LOG_W(LG, "a foreign object of the same name exists on the worker; left alone", "cluster",
              cluster, "resource", res->resource, "namespace", ns, "name", name);
        snprintf(call->err, sizeof(call->err),
                 "a %s of that name not made by this manager exists there", res->resource);
        return -1;
    }
    return 0;
}

static void event_on_job(struct rc_ctx *x, struct held *h, const char *etype, const char *reason,
                         const char *message);

/* Creates the worker's copy of one local job (or pod of a group), unless
 * the job is being deleted (a group's excess pod lingers so for a moment:
 * its copy would make the worker's Kueue finish the Workload OutOfSync). */
static int copy_job(struct rc_ctx *x, struct held *h, int i, const json_t *job, const char *wname)
{
    if (rc_wl_deleting(job))
        return 0;
    json_t *copy = mk_remote_copy(h->obs.kind, job, x->cfg->origin, wname);
    if (!copy)
        return -1;
    struct kc_resource res = mk_kind_resource(h->obs.kind);
    int created;
    /* a copy without the prebuilt label (LeaderWorkerSet) is shared by the
     * job's Workloads: ours by its origin alone */
    int rc = create_remote(x, h, i, &res, copy, h->obs.kind->prebuilt_allowed ? wname : NULL,
                           &created, &h->call);
    if (rc == 0 && created)
        LOG_I(LG, "remote job created", "cluster", h->remotes[i].cluster, "namespace",
              jx_str(copy, "metadata.namespace"), "job", jx_str(copy, "metadata.name"));
    /* the name went into the annotation (mk_remote_copy): say what a
     * worker's Kueue that reads only the label does with it */
    if (rc == 0 && created && h->obs.kind->prebuilt_allowed && !mk_prebuilt_fits_label(wname))
        event_on_job(x, h, "Warning", "LongWorkloadName",
                     "Workload name longer than 63 characters: the remote job names it in the "
                     "annotation kueue.x-k8s.io/prebuilt-workload-name; a worker's Kueue that "
                     "reads only the label (v0.17) admits the job under a Workload of its own. "
                     "shortWorkloadNames keeps names within 63");
    json_decref(copy);
    return rc;
}

static int create_remote_job(struct rc_ctx *x, struct held *h, int i, json_t *cur)
{
    const char *cn = jx_str(cur, "status.clusterName");
    if (!cn || strcmp(cn, h->remotes[i].cluster) != 0) {
        LOG_E(LG, "refusing to create a remote job off status.clusterName", "cluster",
              h->remotes[i].cluster);
        return -1;
    }
    if (!h->obs.job || !h->obs.kind)
        return -1;
    if (!h->group)
        return copy_job(x, h, i, h->obs.job, jx_str(cur, "metadata.name"));
    size_t j;
    json_t *pod;
    json_array_foreach(h->members, j, pod)
    {
        if (!rc_group_find(h->rmembers[i], jx_str(pod, "metadata.name")) &&
            copy_job(x, h, i, pod, jx_str(cur, "metadata.name")) < 0)
            return -1;
    }
    return 0;
}

#define JOB_ECHO_KEY_MAX (KCACHE_KEY_MAX + 96)

/* The echo key (echo.h) of the local job's writes to sub ("status" or NULL). */
static void job_echo_key(const struct held *h, const json_t *job, const char *sub, char *key,
                         size_t keylen)
{
    struct kc_resource res = mk_kind_resource(h->obs.kind);
    const char *ns = jx_str(job, "metadata.namespace");
    const char *name = jx_str(job, "metadata.name");
    snprintf(key, keylen, "%s/%s/%s/%s", res.resource, sub ? sub : "", ns ? ns : "",
             name ? name : "");
}

/* Merge-patches the local job (sub "status": its status subresource),
 * unless the same patch was written and the cached job has not shown it
 * yet (echo.h). */
static int local_job_patch(struct rc_ctx *x, struct held *h, const json_t *job, const char *sub,
                           json_t *patch)
{
    struct kc_resource res = mk_kind_resource(h->obs.kind);
    struct kc_status st;
    const char *ns = jx_str(job, "metadata.namespace");
    const char *name = jx_str(job, "metadata.name");
    char key[JOB_ECHO_KEY_MAX];
    job_echo_key(h, job, sub, key, sizeof(key));
    long long now = clk_now_ms();
    if (rc_echo_pending(x->echo, key, patch, jx_str(job, "metadata.resourceVersion"), now))
        return 0;
    json_t *out = NULL;
    if (kc_patch(x->mgr, &res, ns, name, sub, KC_PATCH_MERGE, patch, NULL, &out, &st) < 0) {
        LOG_W(LG, sub ? "job status not written" : "job not written", "job", name, "error",
              st.message);
        return -1;
    }
    rc_echo_note(x->echo, key, patch, jx_str(out, "metadata.resourceVersion"), now);
    json_decref(out);
    return 0;
}

static int local_job_status(struct rc_ctx *x, struct held *h, const json_t *job, json_t *patch)
{
    return local_job_patch(x, h, job, "status", patch);
}

/* Merge-patches the worker's copy with the spec fields edited on the manager
 * (the remote's resourceVersion as precondition: a copy changed meanwhile is
 * looked at again). */
static int remote_job_spec(struct rc_ctx *x, struct held *h, int i, const json_t *remote,
                           json_t *patch)
{
    struct kc_client *c = mkcs_conn_client(h->conns[i]);
    const char *rv = jx_str(remote, "metadata.resourceVersion");
    if (!c || (rv && jx_set_new_str(patch, "metadata.resourceVersion", rv) < 0))
        return -1;
    struct kc_resource res = mk_kind_resource(h->obs.kind);
    struct kc_status st;
    const char *name = jx_str(remote, "metadata.name");
    if (kc_patch(c, &res, jx_str(remote, "metadata.namespace"), name, NULL, KC_PATCH_MERGE, patch,
                 NULL, NULL, &st) < 0) {
        remote_failed(x, &h->call.answered, h->remotes[i].cluster, "update job spec", name, &st);
        return -1;
    }
    LOG_I(LG, "manager's spec edit forwarded to the remote job", "cluster", h->remotes[i].cluster,
          "job", name);
    return 0;
}

/* A running job's status copies are written at most once per this; a
 * final status at once. The remote job's pods move in quick steps (created,
 * running, ready) and each step was a write on the manager; Kueue's
 * MultiKueue looks at a worker's events once a second (its
 * eventsBatchPeriod), mkueue at once, then at most once a second. */
#define STATUS_BATCH_MS 1000

/* The ms until job's next status copy may be written (0: now): a final
 * status never waits (a finished job's conditions, a pod's last phase),
 * nor the last copy read fresh before the Workload finishes. */
static long status_wait(struct rc_ctx *x, const struct held *h, const json_t *job,
                        const json_t *remote, int fresh)
{
    const char *phase = jx_str(remote, "status.phase");
    if (fresh || rc_job_finished(remote) ||
        (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
        return 0;
    char key[JOB_ECHO_KEY_MAX];
    job_echo_key(h, job, "status", key, sizeof(key));
    long long last = rc_echo_written_ms(x->echo, key), now = clk_now_ms();
    return last && now - last < STATUS_BATCH_MS ? (long)(STATUS_BATCH_MS - (now - last)) : 0;
}

/* Copies the status of local job `job`'s remote copy (cached, or read from
 * the worker when fresh) to it. *after_ms: when to look again for a copy
 * held back (0: none). */
static int sync_one(struct rc_ctx *x, struct held *h, int i, const char *key, const json_t *job,
                    const json_t *cached, int fresh, long *after_ms)
{
    struct rc_remote *r = &h->remotes[i];
    if (!cached && !fresh)
        return 0;
    json_t *remote = json_incref((json_t *)cached);
    if (fresh) {
        /* the remote job has the local job's name; the cache may not show it */
        const char *ns = jx_str(job, "metadata.namespace");
        const char *name = jx_str(job, "metadata.name");
        struct kc_client *c = mkcs_conn_client(h->conns[i]);
        struct kc_resource res = mk_kind_resource(h->obs.kind);
        struct kc_status st;
        json_t *live = NULL;
        json_decref(remote);
        remote = NULL;
        if (!c)
            return -1;
        if (kc_get(c, &res, ns, name, &live, &st) < 0) {
            if (kc_is_not_found(&st)) {
                LOG_W(LG, "remote job gone before its final status was copied", "cluster",
                      r->cluster, "job", name);
                return 0;
            }
            remote_failed(x, &h->call.answered, r->cluster, "get job", name, &st);
            return -1;
        }
        const char *pb = rc_prebuilt_name(live);
        const char *wname = jx_str(h->obs.wl, "metadata.name");
        if (!origin_matches(x, live) || !pb || !wname || strcmp(pb, wname) != 0) {
            json_decref(live); /* not our copy of this Workload's job */
            return 0;
        }
        remote = live;
    }
    int deferred = 0;
    json_t *patch =
        rc_job_status_patch(h->obs.kind, job, remote, h->obs.managed_by_honoured, &deferred);
    long wait = patch ? status_wait(x, h, job, remote, fresh) : 0;
    if (wait) { /* within the batch window: the next look writes what is new then */
        json_decref(patch);
        patch = NULL;
    }
    if (deferred || wait) {
        long after = deferred ? 2000 : wait;
        if (!*after_ms || after < *after_ms)
            *after_ms = after;
    }
    json_t *spec = rc_remote_spec_patch(h->obs.kind, job, remote);
    int wrote = patch != NULL;
    int rc = wrote ? local_job_status(x, h, job, patch) : 0;
    json_decref(patch);
    if (rc == 0 && spec)
        rc = remote_job_spec(x, h, i, remote, spec);
    json_decref(spec);
    json_decref(remote);
    if (rc < 0)
        return -1;
    if (!wrote)
        return 0;
    pthread_mutex_lock(&x->mu);
    long long *t = smap_del(x->lag, key);
    pthread_mutex_unlock(&x->mu);
    if (t) {
        mt_observe(x->metrics.sync_lag, NULL, (double)(clk_now_ms() - *t) / 1000.0);
        free(t);
    }
    return 0;
}

/* The remote job's status to the local job; for a pod group, Kueue's
 * syncPodGroup: each pod's copy is created when missing, else its status
 * copied back. */
static int sync_job_status(struct rc_ctx *x, struct held *h, int i, const char *key, int fresh,
                           long *after_ms)
{
    *after_ms = 0;
    if (!h->obs.job || !h->obs.kind)
        return 0;
    if (!h->group)
        return sync_one(x, h, i, key, h->obs.job, h->remotes[i].job, fresh, after_ms);
    const char *wname = jx_str(h->obs.wl, "metadata.name");
    size_t j;
    json_t *pod;
    int rc = 0;
    json_array_foreach(h->members, j, pod)
    {
        const json_t *copy = rc_group_find(h->rmembers[i], jx_str(pod, "metadata.name"));
        if (!copy && !fresh)
            rc |= copy_job(x, h, i, pod, wname);
        else
            rc |= sync_one(x, h, i, key, pod, copy, fresh, after_ms);
    }
    return rc < 0 ? -1 : 0;
}

static int deactivate_remote(struct rc_ctx *x, struct held *h, int i, const char *msg)
{
    struct rc_remote *r = &h->remotes[i];
    struct kc_client *c = mkcs_conn_client(h->conns[i]);
    if (!c || !r->wl)
        return -1;
    json_t *conds = rc_conds_with(jx_get(r->wl, "status.conditions"), "DeactivationTarget", "True",
                                  "EvictedOnManagerCluster", msg, h->now);
    json_t *p =
        conds ? json_pack("{s:{s:s?},s:{s:o}}", "metadata", "resourceVersion",
                          jx_str(r->wl, "metadata.resourceVersion"), "status", "conditions", conds)
              : NULL;
    struct kc_status st;
    int rc =
        p ? kc_patch(c, &WORKLOADS, jx_str(r->wl, "metadata.namespace"),
                     jx_str(r->wl, "metadata.name"), "status", KC_PATCH_MERGE, p, NULL, NULL, &st)
          : -1;
    json_decref(p);
    if (rc < 0 && p)
        remote_failed(x, &h->call.answered, r->cluster, "deactivate",
                      jx_str(r->wl, "metadata.name"), &st);
    return rc < 0 ? -1 : 0;
}

static int remote_priority(struct rc_ctx *x, struct held *h, int i)
{
    struct rc_remote *r = &h->remotes[i];
    struct kc_client *c = mkcs_conn_client(h->conns[i]);
    if (!c || !r->wl)
        return -1;
    json_t *spec = jx_get(h->obs.wl, "spec");
    json_t *p = json_pack("{s:{s:O?,s:O?}}", "spec", "priority", json_object_get(spec, "priority"),
                          "priorityClassRef", json_object_get(spec, "priorityClassRef"));
    struct kc_status st;
    int rc = p ? kc_patch(c, &WORKLOADS, jx_str(r->wl, "metadata.namespace"),
                          jx_str(r->wl, "metadata.name"), NULL, KC_PATCH_MERGE, p, NULL, NULL, &st)
               : -1;
    json_decref(p);
    if (rc < 0 && p)
        remote_failed(x, &h->call.answered, r->cluster, "update priority",
                      jx_str(r->wl, "metadata.name"), &st);
    return rc < 0 ? -1 : 0;
}

/* Merge-patches the manager Workload *cur with p (stolen; NULL counts as
 * out of memory) and replaces *cur with the answer. 0, or -1 (*st says why). */
static int patch_wl(struct rc_ctx *x, json_t **cur, json_t *p, struct kc_status *st)
{
    json_t *out = NULL;
    memset(st, 0, sizeof(*st));
    int rc = p ? kc_patch(x->mgr, &WORKLOADS, jx_str(*cur, "metadata.namespace"),
                          jx_str(*cur, "metadata.name"), NULL, KC_PATCH_MERGE, p, NULL, &out, st)
               : -1;
    if (rc == 0)
        wl_written(x, p, out);
    json_decref(p);
    if (rc < 0)
        return -1;
    json_decref(*cur);
    *cur = out;
    return 0;
}

static int remove_finalizer(struct rc_ctx *x, json_t **cur)
{
    struct kc_status st;
    if (patch_wl(x, cur, rc_finalizer_removal(*cur, RC_FINALIZER), &st) < 0)
        return kc_is_not_found(&st) ? 0 : -1;
    return 0;
}

static int delete_wl(struct rc_ctx *x, json_t *cur)
{
    struct kc_status st;
    if (kc_delete(x->mgr, &WORKLOADS, jx_str(cur, "metadata.namespace"),
                  jx_str(cur, "metadata.name"), "Background", jx_str(cur, "metadata.uid"),
                  &st) < 0 &&
        !kc_is_not_found(&st))
        return -1;
    LOG_I(LG, "workload deleted: its job is gone", "workload", jx_str(cur, "metadata.name"));
    return 0;
}

static int wl_deactivate(struct rc_ctx *x, json_t **cur)
{
    struct kc_status st;
    if (patch_wl(x, cur, json_pack("{s:{s:b}}", "spec", "active", 0), &st) < 0)
        return -1;
    LOG_I(LG, "workload deactivated: an admission check is Rejected", "workload",
          jx_str(*cur, "metadata.name"));
    return 0;
}

static int local_suspend(struct rc_ctx *x, struct held *h, int value)
{
    if (!h->obs.job || !h->obs.kind || !h->obs.kind->suspend_path)
        return 0;
    json_t *p = json_object();
    int rc = p && jx_set(p, h->obs.kind->suspend_path, json_boolean(value)) == 0
                 ? local_job_patch(x, h, h->obs.job, NULL, p)
                 : -1;
    json_decref(p);
    return rc;
}

/* Whether the action calls the worker (and so needs one of its slots). */
static int calls_worker(const struct rc_act *a)
{
    switch (a->type) {
    case RC_ACT_REMOVE_REMOTE:
    case RC_ACT_CREATE_REMOTE_WL:
    case RC_ACT_CREATE_REMOTE_JOB:
    case RC_ACT_REMOTE_PRIORITY:
    case RC_ACT_DEACTIVATE_REMOTE:
        return 1;
    case RC_ACT_SYNC_JOB_STATUS:
        return a->value; /* a fresh read; else the cache's copy is used */
    default:
        return 0;
    }
}

/* Takes a slot of the action's worker (inflight.h), 0 or -1 when it is full. */
static int worker_enter(struct rc_ctx *x, struct held *h, const struct rc_act *a, const char *key,
                        struct remote_call *call)
{
    call->answered = RC_ANSWER_UNKNOWN;
    if (!calls_worker(a) || rc_inflight_enter(x->inflight, h->remotes[a->cluster].cluster) == 0)
        return 0;
    LOG_D(LG, "worker busy: its calls in flight are at the limit; retried later", "cluster",
          h->remotes[a->cluster].cluster, "workload", key, "action", rc_act_name(a->type));
    return -1;
}

static void worker_leave(struct rc_ctx *x, struct held *h, const struct rc_act *a, int rc,
                         struct remote_call *call)
{
    if (!calls_worker(a))
        return;
    const char *cluster = h->remotes[a->cluster].cluster;
    if (rc == 0)
        call->answered = RC_ANSWER_YES;
    if (rc_inflight_leave(x->inflight, cluster, call->answered)) {
        if (call->answered == RC_ANSWER_NONE)
            LOG_W(LG, "worker did not answer: one call at a time to it until it answers", "cluster",
                  cluster);
        else
            LOG_I(LG, "worker answers again", "cluster", cluster);
    }
}

/* A plan's calls to its copies, one per worker, made at once (fanout.h):
 * consecutive CREATE_REMOTE_WL actions (AllAtOnce nominates every worker:
 * the job waits for the slowest create, not their sum) and consecutive
 * REMOVE_REMOTE actions (a winner's losers: with 8 workers seven of them,
 * a finalizer patch and a delete each, held a reconcile thread for
 * fourteen round trips). Each call touches only its own entry and its
 * worker's h->remotes[i]; the log and the failures are told in plan
 * order, by the calling thread. */
struct copy_call {
    const struct rc_act *a;
    json_t *obj; /* a create's copy (owned) */
    int rc, created;
    struct remote_call call;
};

struct copy_calls {
    struct rc_ctx *x;
    struct held *h;
    const char *key;
    struct copy_call c[RC_MAX_ACTS];
};

static void one_copy_call(void *arg, size_t i)
{
    struct copy_calls *g = arg;
    struct copy_call *c = &g->c[i];
    int create = c->a->type == RC_ACT_CREATE_REMOTE_WL;
    c->rc = -1;
    if ((create && !c->obj) || worker_enter(g->x, g->h, c->a, g->key, &c->call) < 0)
        return;
    c->rc = create ? create_remote(g->x, g->h, c->a->cluster, &WORKLOADS, c->obj, NULL, &c->created,
                                   &c->call)
                   : remove_remote(g->x, g->h, c->a->cluster, &c->call);
    worker_leave(g->x, g->h, c->a, c->rc, &c->call);
}

/* Runs the actions from p->acts[k] on that have its type (those that may
 * run, rc_act_run); returns how many actions it consumed. Failures are
 * noted in *run as the loop's own. */
static size_t copy_calls(struct rc_ctx *x, struct held *h, const struct rc_plan *p, size_t k,
                         const char *key, const json_t *cur, struct rc_run_state *run)
{
    enum rc_act_type type = p->acts[k].type;
    struct copy_calls *g = calloc(1, sizeof(*g));
    size_t end = k, n = 0;
    while (end < p->n && p->acts[end].type == type)
        end++;
    if (!g) { /* each fails, to be retried */
        for (size_t j = k; j < end; j++)
            rc_run_failed(run, &p->acts[j]);
        return end - k;
    }
    *g = (struct copy_calls){.x = x, .h = h, .key = key};
    for (size_t j = k; j < end; j++) {
        const struct rc_act *a = &p->acts[j];
        if (rc_act_run(a, run) != RC_RUN)
            continue; /* its worker already failed in this plan */
        g->c[n].a = a;
        if (type == RC_ACT_CREATE_REMOTE_WL)
            g->c[n].obj = rc_remote_workload(cur, x->cfg->origin);
        else /* which step decided it: a removed copy is the one action a
              * reader of the log must be able to explain */
            LOG_I(LG, "removing the remote copy", "cluster", h->remotes[a->cluster].cluster,
                  "workload", key, "step", p->step);
        n++;
    }
    rc_fanout(n, one_copy_call, g, NULL);
    for (size_t i = 0; i < n; i++) {
        struct copy_call *c = &g->c[i];
        const char *cluster = h->remotes[c->a->cluster].cluster;
        if (type == RC_ACT_CREATE_REMOTE_WL && (c->rc == 0 || c->call.err[0]))
            rc_why_create_result(x->why, key, cluster, c->rc == 0 ? NULL : c->call.err);
        if (type == RC_ACT_CREATE_REMOTE_WL && c->rc == 0 && c->created) {
            rc_metric_dispatched(&x->metrics, h->cq, cluster);
            LOG_I(LG, "remote workload created", "cluster", cluster, "workload", key);
        }
        if (c->rc < 0) {
            LOG_D(LG, "action failed", "workload", key, "action", rc_act_name(c->a->type));
            rc_run_failed(run, c->a);
        }
        json_decref(c->obj);
    }
    free(g);
    return end - k;
}

/* The job's side of a why.h or placement.h Event (the job as the Event's object). */
static void event_on_job(struct rc_ctx *x, struct held *h, const char *etype, const char *reason,
                         const char *message)
{
    const struct mk_kind *k = h->obs.kind;
    if (!h->obs.job || !k)
        return;
    char av[128];
    snprintf(av, sizeof(av), "%s%s%s", k->group, *k->group ? "/" : "", k->version);
    json_t *obj = json_pack("{s:s,s:s,s:O?}", "apiVersion", av, "kind", k->kind, "metadata",
                            jx_get(h->obs.job, "metadata"));
    if (obj)
        rc_event_emit(x->events, obj, etype, reason, message);
    json_decref(obj);
}

static int execute(struct rc_ctx *x, struct held *h, const struct rc_plan *p, const char *key,
                   long *requeue_ms)
{
    json_t *cur = json_incref(h->obs.wl);
    int rc = 0;
    struct rc_run_state run_state = {0};
    for (size_t k = 0; k < p->n; k++) {
        const struct rc_act *a = &p->acts[k];
        enum rc_run run = rc_act_run(a, &run_state);
        if (run == RC_STOP)
            break;
        if (run == RC_SKIP)
            continue;
        if (a->type == RC_ACT_CREATE_REMOTE_WL || a->type == RC_ACT_REMOVE_REMOTE) {
            k += copy_calls(x, h, p, k, key, cur, &run_state) - 1;
            continue;
        }
        const char *cluster = a->cluster >= 0 ? h->remotes[a->cluster].cluster : NULL;
        long after;
        if (worker_enter(x, h, a, key, &h->call) < 0) {
            rc = -1;
            goto failed;
        }
        switch (a->type) {
        case RC_ACT_WL_STATUS: {
            rc = wl_status(x, &cur, a->patch);
            h->status_written |= rc == 0;
            /* the choice of a worker, a step of the bench's timeline */
            const char *won = jx_str(a->patch, "clusterName");
            if (rc == 0 && won)
                LOG_I(LG, "cluster name written", "workload", key, "cluster", won);
            break;
        }
        case RC_ACT_REMOVE_REMOTE:    /* copy_calls, above */
        case RC_ACT_CREATE_REMOTE_WL: /* copy_calls, above */
            break;
        case RC_ACT_CREATE_REMOTE_JOB:
            rc = create_remote_job(x, h, a->cluster, cur);
            break;
        case RC_ACT_SYNC_JOB_STATUS:
            rc = sync_job_status(x, h, a->cluster, key, a->value, &after);
            if (rc == 0 && after && (*requeue_ms < 0 || *requeue_ms > after))
                *requeue_ms = after;
            break;
        case RC_ACT_REMOTE_PRIORITY:
            rc = remote_priority(x, h, a->cluster);
            break;
        case RC_ACT_DEACTIVATE_REMOTE:
            rc = deactivate_remote(x, h, a->cluster, a->message);
            break;
        case RC_ACT_REMOVE_FINALIZER:
            rc = remove_finalizer(x, &cur);
            break;
        case RC_ACT_DELETE_WL:
            rc = delete_wl(x, cur);
            break;
        case RC_ACT_LOCAL_SUSPEND:
            rc = local_suspend(x, h, a->value);
            break;
        case RC_ACT_LOCAL_JOB_STATUS:
            rc = local_job_status(x, h, h->obs.job, a->patch);
            break;
        case RC_ACT_WL_DEACTIVATE:
            rc = wl_deactivate(x, &cur);
            break;
        case RC_ACT_EVENT:
            if (a->value) { /* why.h: rate limited, on the Workload and its job */
                int ok =
                    a->value == RC_WHY_DATA
                        ? rc_why_event_allow_tag(x->why, key, "data", clk_now_ms())
                        : rc_why_event_allow(x->why, key, (enum rc_why_step)a->value, clk_now_ms());
                if (!ok)
                    break;
                event_on_job(x, h, a->etype, a->reason, a->message);
            }
            rc_event_emit(x->events, cur, a->etype, a->reason, a->message);
            if (strcmp(a->reason, "MultiKueue") == 0)
                LOG_I(LG, a->message, "workload", key);
            else if (strcmp(a->reason, RC_REASON_DRIFT) == 0)
                LOG_W(LG, a->message, "workload", key);
            break;
        case RC_ACT_COUNT_ADMITTED:
            rc_metric_admitted(&x->metrics, h->cq, cluster);
            break;
        case RC_ACT_DRIFT_MARK: {
            const char *ruid = jx_str(h->remotes[a->cluster].wl, "metadata.uid");
            rc = drift_mark(x, key, jx_str(h->obs.wl, "metadata.uid"), cluster,
                            a->value ? (ruid ? ruid : "") : NULL);
            if (rc == 0 && a->value)
                LOG_W(LG,
                      "remote workload differed from the manager's: removed, to be re-created once",
                      "cluster", cluster, "workload", key, "field", a->message);
            break;
        }
        }
        worker_leave(x, h, a, rc, &h->call);
        if (rc == 0)
            continue;
        LOG_D(LG, "action failed", "workload", key, "action", rc_act_name(a->type));
    failed:
        /* what waits for the retry: rc_act_run */
        rc_run_failed(&run_state, a);
        rc = 0;
    }
    h->cur = cur; /* the Workload as last written, for placement() */
    return run_state.any_failed ? -1 : 0;
}

/* Layer 2 waits (placement.h rc_place_wait_ms); 1 once due, else 0 with
 * *requeue_ms set to look again then. */
static int pods_had_time(const struct held *h, const json_t *wl, long *requeue_ms)
{
    long left = rc_place_wait_ms(wl, h->obs.check, h->now);
    if (left <= 0)
        return 1;
    if (*requeue_ms < 0 || *requeue_ms > left)
        *requeue_ms = left;
    return 0;
}

/* Issue 13, layer 2 (placement.h): once the job runs on status.clusterName
 * and its pods had RC_PLACEMENT_DELAY_MS to start, they are watched there
 * (podwatch.h; a lone Pod is its own remote copy, kept current by the
 * worker's job cache) and summarised on the manager:
 * the Placement condition and one Warning Event per reason (at most one per
 * Workload, cluster and reason in RC_WHY_EVENT_PERIOD_MS), on the Workload
 * and its job. Best effort: a failed write is retried by the next pod
 * change or reconcile. */
static void placement(struct rc_ctx *x, struct held *h, const char *key, long *requeue_ms)
{
    json_t *wl = h->cur ? h->cur : h->obs.wl;
    const char *cn = jx_str(wl, "status.clusterName");
    const char *ns = jx_str(wl, "metadata.namespace");
    const struct rc_remote *r = NULL;
    for (size_t i = 0; cn && i < h->obs.nremotes; i++)
        if (strcmp(h->remotes[i].cluster, cn) == 0)
            r = &h->remotes[i];
    char sel[512];
    int how = -1;
    if (r && r->job && ns && h->obs.kind && !rc_wl_finished(wl) && !rc_wl_deleting(wl))
        how = rc_place_selector(h->obs.kind->kind, r->job, sel, sizeof(sel));
    if (how != 0)
        rc_podwatch_drop(x->podwatch, key); /* nothing (more) to watch */
    json_t *pods;
    if (how == RC_PLACE_ITSELF) /* a lone Pod: its own updates enqueue the key */
        pods = json_pack("[O]", r->job);
    else if (how < 0 || !pods_had_time(h, wl, requeue_ms) ||
             rc_podwatch_ensure(x->podwatch, x->clusters, key, cn, ns, sel) < 0)
        return;
    else
        pods = rc_podwatch_pods(x->podwatch, key);
    if (!pods)
        return; /* not listed yet: the watch's first events enqueue the key */
    struct rc_place_sum sum;
    rc_place_summarise(pods, &sum);
    json_decref(pods);
    struct rc_place_plan plan;
    if (rc_place_decide(wl, cn, &sum, h->now, &plan) < 0)
        return;
    if (plan.conds) {
        json_t *st = json_pack("{s:O}", "conditions", plan.conds);
        json_t *cur = json_incref(wl);
        if (st && wl_patch(x, &cur, st, 0) == 0)
            LOG_I(LG, "placement", "workload", key, "message",
                  jx_str(rc_cond_find(cur, RC_PLACE_COND), "message"));
        json_decref(st);
        json_decref(cur);
    }
    for (size_t i = 0; i < plan.nev; i++) {
        char tag[128];
        snprintf(tag, sizeof(tag), "%s/%s", cn, plan.ev[i].reason);
        if (!rc_why_event_allow_tag(x->why, key, tag, clk_now_ms()))
            continue;
        rc_event_emit(x->events, wl, "Warning", plan.ev[i].reason, plan.ev[i].message);
        event_on_job(x, h, "Warning", plan.ev[i].reason, plan.ev[i].message);
    }
    rc_place_plan_clear(&plan);
}

/* One reconcile's time under the step that decided it (the metric
 * mkueue_workload_step_duration_seconds): which steps a job's reconciles
 * go to, and what each costs. */
static void count_step(struct rc_ctx *x, const char *step, uint64_t t0_ns)
{
    const char *v[] = {step};
    mt_observe(x->metrics.wl_steps, v, (double)(clk_now_ns() - t0_ns) / 1e9);
}

int rc_reconcile_workload(struct rc_ctx *x, const char *key, long *requeue_ms)
{
    uint64_t t0 = clk_now_ns();
    struct held *h = calloc(1, sizeof(*h));
    *requeue_ms = -1;
    if (!h)
        return -1;
    int rc = observe(x, key, h);
    if (rc == 2) { /* the cache is behind our own write (echo.h) */
        free(h);
        count_step(x, "cache-behind", t0);
        return 0;
    }
    if (rc == 1) {
        free(h);
        drift_forget(x, key); /* the Workload is gone */
        rc_podwatch_drop(x->podwatch, key);
        count_step(x, "gone", t0);
        return 0;
    }
    struct rc_plan *plan = malloc(sizeof(*plan));
    if (!plan) {
        release(h);
        free(h);
        return -1;
    }
    rc_decide(&h->obs, plan);
    *requeue_ms = plan->requeue_ms;
    if (log_enabled(LOG_DEBUG) && plan->n) {
        char acts[512] = "";
        size_t w = 0;
        for (size_t i = 0; i < plan->n && w < sizeof(acts); i++)
            w += (size_t)snprintf(acts + w, sizeof(acts) - w, "%s%s", i ? "," : "",
                                  rc_act_name(plan->acts[i].type));
        LOG_D(LG, "plan", "workload", key, "step", plan->step, "actions", acts);
    }
    rc = execute(x, h, plan, key, requeue_ms);
    if (rc == 0 && x->podwatch)
        placement(x, h, key, requeue_ms);

    int in_cache = 0;
    json_t *still = kcache_get(x->workloads, key);
    in_cache = still != NULL;
    json_decref(still);
    if (rc < 0 && !in_cache && rc_wl_deleting(h->obs.wl)) {
        rc_remember_deleted(x, key, h->obs.wl); /* retry the cleanup */
    }
    if (rc == 0 && !in_cache)
        drift_forget(x, key); /* gone, and cleaned up */
    /* Incremental rounds live in memory, per Workload. A round starts once
     * its nomination is written, even when a worker's part of the plan
     * failed: a busy or refusing worker must not end the round early. */
    const char *st = plan->step;
    if (strcmp(st, "nominate") == 0 && h->have_nom && h->nom.new_round && h->status_written) {
        long long *t = malloc(sizeof(*t));
        void *old = NULL;
        if (t) {
            *t = clk_now_ms();
            pthread_mutex_lock(&x->mu);
            if (smap_put(x->rounds, key, t, &old) < 0)
                free(t);
            pthread_mutex_unlock(&x->mu);
            free(old);
        }
    } else if (rc == 0 && strcmp(st, "nominate") != 0 && strcmp(st, "waiting-other-checks") != 0) {
        pthread_mutex_lock(&x->mu);
        free(smap_del(x->rounds, key));
        pthread_mutex_unlock(&x->mu);
    }
    count_step(x, plan->step[0] ? plan->step : "none", t0);
    rc_plan_clear(plan);
    free(plan);
    release(h);
    free(h);
    return rc;
}
