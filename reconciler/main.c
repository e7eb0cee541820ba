/* mkueue-reconciler: the MultiKueue controller of the manager cluster.
 *
 * Threads: one informer per manager resource and per worker watch (they
 * fill caches and enqueue keys), a ticker (connections, resync, GC,
 * gauges), the leader election, and a pool of reconcile workers that run
 * only while this replica leads. See ctx.h for the work queue keys. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admissioncheck.h"
#include "errf.h"
#include "clock.h"
#include "cluster_status.h"
#include "config.h"
#include "ctx.h"
#include "dispatch.h"
#include "gate.h"
#include "gc.h"
#include "heap.h"
#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/podgroup.h"
#include "kube_secrets.h"
#include "kube_watch.h"
#include "leader.h"
#include "log.h"
#include "signals.h"
#include "pack.h"
#include "probe.h"
#include "podrefs.h"
#include "podwatch.h"
#include "why.h"
#include "schema.h"
#include "wlstatus.h"
#include "workload_create.h"

static const char *LG = "main";

struct informed {
    struct kc_resource res;
    const char *ns;       /* NULL = all */
    const char *selector; /* label selector, NULL = every object */
    struct kcache **cache;
    struct kw_informer *inf;
    int optional; /* the CRD may be missing: do not wait for it */
};

struct app {
    struct rc_ctx x;
    struct rc_config cfg;
    struct kcfg *mgr_cfg;
    struct informed inf[10 + RC_MAX_KINDS];
    int ninf;
    struct ksec *secrets_poll; /* fills x.secrets: the named kubeconfig Secrets */
    struct kind_ud {
        struct app *a;
        int ki;
    } kud[RC_MAX_KINDS];
    struct rc_leader *leader;
    struct kc_client *lease; /* the Lease's own connection (leader.h) */
    struct rc_http *http;
    struct lane {
        struct app *a;
        struct wq *q;
    } lanes[2]; /* x.queue's, x.job_queue's */
    pthread_t workers[RC_MAX_THREADS];
    int nworkers;
    pthread_t ticker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int leading;
    int stopping;
};

/* ---- enqueueing from events ------------------------------------------------ */

/* The bits of a Workload the quota gate reads (gate.c, view_of): every
 * check's state (one in Retry or Rejected holds it), a backoff's
 * requeueAt, and the conditions and spec fields below. */
#define GATE_SIG_MAX 4096 /* 8 checks (the CRD's cap) of 253-byte names, and the rest */
static void gate_sig(const json_t *wl, char *out, size_t n)
{
    size_t w = (size_t)snprintf(
        out, n, "%d%d%d%d%d%d|%lld|", rc_wl_reserved(wl), rc_wl_finished(wl), rc_wl_evicted(wl),
        rc_wl_deleting(wl), jx_bool(wl, "spec.active", 1),
        jx_str(wl, "status.requeueState.requeueAt") != NULL, jx_int(wl, "spec.priority", 0));
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(wl, "status.admissionChecks"), i, c)
    {
        if (w >= n)
            break;
        const char *name = jx_str(c, "name"), *st = jx_str(c, "state");
        w += (size_t)snprintf(out + w, n - w, "%s=%s;", name ? name : "", st ? st : "");
    }
}

/* The Workload's ClusterQueue and change into the gate's index
 * (gate_index.h), and a pass of that queue after its batch window when it
 * changed. old: its state before (NULL: new). */
static void gate_note(struct app *a, const char *key, const json_t *old, const json_t *packed,
                      int gone, int changed)
{
    char cq[254];
    if (a->cfg.mode != RC_MODE_STANDALONE)
        return;
    int known = rc_cq_of(&a->x, packed, cq, sizeof(cq)) == 0; /* the record names the queue */
    enum rc_gix_change ch = RC_GIX_SAME;
    if (changed)
        ch = rc_md(packed, RC_MD_ADMISSION_CQ) || (old && rc_md(old, RC_MD_ADMISSION_CQ))
                 ? RC_GIX_QUOTA
                 : RC_GIX_CHANGED;
    rc_gix_note(a->x.gix, key, known && !gone ? cq : NULL, ch);
    if (!known || !changed)
        return;
    /* a pass reserves quota for the jobs waiting on it: ahead of upkeep */
    rc_enqueue_first(&a->x, 'q', cq, rc_gix_window_ms(a->x.gix, cq, clk_now_ms()));
}

/* The Workload's key, ahead of the upkeep of placed jobs when wl (a full
 * object, NULL: not known) waits for its dispatch: on a busy manager each
 * step of a dispatch otherwise waited for a thread behind that upkeep. */
static void enqueue_workload(struct app *a, const char *key, const json_t *wl)
{
    if (rc_wl_awaits_dispatch(wl))
        rc_enqueue_first(&a->x, 'w', key, 0);
    else
        rc_enqueue(&a->x, 'w', key);
}

static void wl_add(const char *key, json_t *obj, void *ud)
{
    struct app *a = ud;
    pthread_mutex_lock(&a->x.mu);
    json_decref(smap_del(a->x.deleted, key)); /* a new Workload of the same name */
    pthread_mutex_unlock(&a->x.mu);
    rc_enqueue(&a->x, 'w', key);
    gate_note(a, key, NULL, obj, 0, 1);
}

static void wl_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    struct app *a = ud;
    /* the informer's resync (old == obj) delivers every Workload again: a
     * queued one has nothing to drift, and 10,000 of them every 5 minutes
     * put ahead of new jobs cost each dispatched job 70 ms of CPU and
     * seconds of wait; its queue's index already has it (gate_index.h) */
    if (old == obj && !rc_resync_wanted(obj))
        return;
    int standalone = a->cfg.mode == RC_MODE_STANDALONE;
    json_t *n = standalone || rc_md(obj, RC_MD_ADMISSION_CQ) ? rc_unwrap(obj) : NULL;
    enqueue_workload(a, key, old != obj ? n : NULL); /* a resync is no step of a dispatch */
    if (!standalone) {
        json_decref(n);
        return;
    }
    char s1[GATE_SIG_MAX], s2[GATE_SIG_MAX];
    json_t *o = rc_unwrap(old);
    gate_sig(o, s1, sizeof(s1));
    gate_sig(n, s2, sizeof(s2));
    gate_note(a, key, old, obj, 0, strcmp(s1, s2) != 0); /* a resync: the same */
    json_decref(o);
    json_decref(n);
}

static void wl_delete(const char *key, json_t *obj, void *ud)
{
    struct app *a = ud;
    rc_remember_deleted(&a->x, key, obj);
    rc_gate_forget(&a->x, key);
    rc_enqueue(&a->x, 'w', key);
    gate_note(a, key, NULL, obj, 1, 1);
}

/* The key of the Workload of job (a record or a full object) into out; 0
 * or -1. Only a pod group's name needs the object (a label): the others'
 * is their name and uid, record fields, so a resync of 50,000 jobs
 * inflates none. */
static int job_workload_key(const struct mk_kind *kind, const json_t *job, char *out, size_t outlen)
{
    char wname[320];
    const char *ns = rc_md(job, RC_MD_NAMESPACE), *uid = rc_md(job, RC_MD_UID);
    int rc;
    if (!ns || !*ns || !uid || !*uid) /* a record's absent field is "" */
        return -1;
    if (kind->gating == MK_GATE_POD) {
        json_t *obj = rc_unwrap(job);
        rc = obj ? mk_job_workload_name(kind, obj, wname, sizeof(wname)) : -1;
        json_decref(obj);
    } else {
        rc = mk_workload_name(kind->kind, kind->group, rc_md(job, RC_MD_NAME), uid, wname,
                              sizeof(wname));
    }
    if (rc < 0)
        return -1;
    int n = snprintf(out, outlen, "%s/%s", ns, wname);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static void job_key(struct kind_ud *k, const char *key, const json_t *job, int wl_too)
{
    struct app *a = k->a;
    if (a->cfg.mode == RC_MODE_STANDALONE) {
        char jk[KCACHE_KEY_MAX + 16];
        snprintf(jk, sizeof(jk), "%d/%s", k->ki, key);
        rc_enqueue(&a->x, 'j', jk);
    }
    char wkey[KCACHE_KEY_MAX];
    if (wl_too && job_workload_key(a->x.kinds[k->ki], job, wkey, sizeof(wkey)) == 0)
        rc_enqueue(&a->x, 'w', wkey);
}

/* 1 when obj (a full object) is a pod of a pod group. Its Workload is the
 * group's, which each member's arrival and phase concern (a copy to make
 * on the group's worker, a failed pod to replace), as Kueue's pod
 * reconciler follows every pod of a group. */
static int pod_of_group(struct kind_ud *k, const json_t *obj)
{
    return k->a->x.kinds[k->ki]->gating == MK_GATE_POD && mk_pod_group_name(obj) != NULL;
}

static void job_add(const char *key, json_t *packed, void *ud)
{
    struct kind_ud *k = ud;
    json_t *obj = k->a->x.kinds[k->ki]->gating == MK_GATE_POD ? rc_unwrap(packed) : NULL;
    job_key(ud, key, packed, obj && pod_of_group(k, obj)); /* else the record suffices */
    json_decref(obj);
}

/* A job delivered again by the informer's resync is reconciled when its
 * Workload is not cached (the reconcile makes it; a LeaderWorkerSet has
 * one per replica: always): one whose Workload exists has nothing new,
 * its changes come as events, and 10,000 tracked jobs every 5 minutes
 * would wait ahead of new ones. Read from the record: the resync holds
 * the informer's other events back while it runs. */
static int job_resync_wanted(struct kind_ud *k, const json_t *packed)
{
    const struct mk_kind *kind = k->a->x.kinds[k->ki];
    char wkey[KCACHE_KEY_MAX];
    if (kind == &mk_kind_leaderworkerset || job_workload_key(kind, packed, wkey, sizeof(wkey)) < 0)
        return 1;
    json_t *wl = kcache_get(k->a->x.workloads, wkey);
    json_decref(wl);
    return wl == NULL;
}

static void job_update(const char *key, json_t *packed_old, json_t *packed, void *ud)
{
    if (packed_old == packed) { /* a resync */
        if (job_resync_wanted(ud, packed))
            job_key(ud, key, packed, 0);
        return;
    }
    json_t *old = rc_unwrap(packed_old), *obj = rc_unwrap(packed);
    /* our own status writes come back here: only spec/metadata changes
     * matter, and a group member's phase (a Failed one makes the group
     * short of a pod: WaitingForReplacementPods) */
    const char *p1 = jx_str(old, "status.phase"), *p2 = jx_str(obj, "status.phase");
    int meta = jx_int(old, "metadata.generation", 0) != jx_int(obj, "metadata.generation", 0) ||
               rc_wl_deleting(old) != rc_wl_deleting(obj) ||
               !json_equal(jx_get(old, "metadata.labels"), jx_get(obj, "metadata.labels")) ||
               (pod_of_group(ud, obj) && strcmp(p1 ? p1 : "", p2 ? p2 : "") != 0);
    if (meta)
        job_key(ud, key, obj, 1);
    json_decref(old);
    json_decref(obj);
}

static void job_delete(const char *key, json_t *packed, void *ud)
{
    job_key(ud, key, packed, 1);
}

static int enqueue_key(const char *key, json_t *obj, void *ud)
{
    (void)obj;
    struct rc_ctx *x = ((void **)ud)[0];
    char prefix = *(const char *)((void **)ud)[1];
    rc_enqueue(x, prefix, key);
    return 0;
}

static void enqueue_all(struct app *a, struct kcache *c, char prefix)
{
    void *ud[2] = {&a->x, &prefix};
    kcache_foreach(c, NULL, enqueue_key, ud);
}

static void cq_event(const char *key, json_t *obj, void *ud)
{
    (void)obj;
    struct app *a = ud;
    rc_gix_invalidate(a->x.gix, key); /* its quota or strategy may change every decision */
    if (a->cfg.mode == RC_MODE_STANDALONE)
        rc_enqueue(&a->x, 'q', key);
}

static void cq_delete(const char *key, json_t *obj, void *ud)
{
    struct app *a = ud;
    rc_gate_forget_queue(&a->x, key);
    cq_event(key, obj, ud);
}

static void cq_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    /* the informer's resync (old == obj): the ticker passes every queue at
     * the same period; the gate's own status writes (queue status) come
     * back here too: only a spec change needs another pass */
    if (old == obj ||
        jx_int(old, "metadata.generation", 0) == jx_int(obj, "metadata.generation", 0))
        return;
    cq_event(key, obj, ud);
}

struct ns_jobs {
    struct app *a;
    int ki;
};

static int enqueue_job(const char *key, json_t *obj, void *ud)
{
    (void)obj;
    struct ns_jobs *n = ud;
    char jk[KCACHE_KEY_MAX + 16];
    snprintf(jk, sizeof(jk), "%d/%s", n->ki, key);
    rc_enqueue(&n->a->x, 'j', jk);
    return 0;
}

static int gate_reindex_one(const char *key, json_t *packed, void *ud)
{
    gate_note(ud, key, packed, packed, 0, 0);
    return 0;
}

/* The namespace's Workloads indexed again: a LocalQueue's ClusterQueue
 * decides theirs until they are admitted. */
static void gate_reindex(struct app *a, const char *ns)
{
    kcache_foreach(a->x.workloads, ns, gate_reindex_one, a);
}

/* A new LocalQueue: jobs that waited for it get their Workload now. */
static void lq_add(const char *key, json_t *obj, void *ud)
{
    (void)key;
    struct app *a = ud;
    const char *ns = jx_str(obj, "metadata.namespace");
    if (a->cfg.mode != RC_MODE_STANDALONE || !ns)
        return;
    gate_reindex(a, ns);                    /* its Workloads may have come first */
    if (jx_str(obj, "spec.clusterQueue")) { /* its status (qstatus.h) */
        rc_gix_invalidate(a->x.gix, jx_str(obj, "spec.clusterQueue"));
        rc_enqueue(&a->x, 'q', jx_str(obj, "spec.clusterQueue"));
    }
    for (int k = 0; k < a->x.nkinds; k++) {
        struct ns_jobs n = {a, k};
        kcache_foreach(a->x.jobs[k], ns, enqueue_job, &n);
    }
}

/* A LocalQueue pointed at another ClusterQueue, or deleted: its waiting
 * Workloads move (or leave every queue), and both queues count again. */
static void lq_moved(struct app *a, const json_t *old, const json_t *obj)
{
    const char *ns = jx_str(obj, "metadata.namespace");
    if (a->cfg.mode != RC_MODE_STANDALONE || !ns)
        return;
    gate_reindex(a, ns);
    const char *cqs[] = {jx_str(old, "spec.clusterQueue"),
                         obj != old ? jx_str(obj, "spec.clusterQueue") : NULL};
    for (int i = 0; i < 2; i++) {
        if (!cqs[i])
            continue;
        rc_gix_invalidate(a->x.gix, cqs[i]);
        rc_enqueue(&a->x, 'q', cqs[i]);
    }
}

static void lq_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)key;
    const char *was = jx_str(old, "spec.clusterQueue"), *now = jx_str(obj, "spec.clusterQueue");
    /* the gate's own status writes come back here, and the informer's
     * resync (old == obj: nothing moved): only a new queue counts */
    if (old != obj && (!was != !now || (was && strcmp(was, now) != 0)))
        lq_moved(ud, old, obj);
}

static void lq_delete(const char *key, json_t *obj, void *ud)
{
    (void)key;
    lq_moved(ud, obj, obj);
}

/* An AdmissionCheck created, changed or deleted: its status, and every
 * Workload that may carry it now (not at the next resync), as Kueue's
 * Workload controller watches AdmissionChecks. */
static void ac_event(const char *key, json_t *obj, void *ud)
{
    (void)obj;
    struct app *a = ud;
    rc_enqueue(&a->x, 'a', key);
    rc_enqueue_all_workloads(&a->x);
    rc_gix_invalidate(a->x.gix, NULL); /* which check is MultiKueue's may change */
}

static void ac_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    struct app *a = ud;
    if (json_equal(jx_get(old, "spec"), jx_get(obj, "spec"))) {
        rc_enqueue(&a->x, 'a', key); /* status only: the check itself */
        return;
    }
    ac_event(key, obj, ud);
}

static void config_event(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)obj;
    struct app *a = ud;
    enqueue_all(a, a->x.admissionchecks, 'a');
    rc_enqueue_all_workloads(&a->x);
}

static void config_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    if (!json_equal(jx_get(old, "spec"), jx_get(obj, "spec")))
        config_event(key, obj, ud);
}

static void mkc_event(const char *key, json_t *obj, void *ud)
{
    (void)obj;
    struct app *a = ud;
    ksec_kick(a->secrets_poll); /* the Secret it names, now */
    if (a->x.clusters)
        mkcs_sync(a->x.clusters, a->x.mkclusters, a->x.secrets);
    rc_enqueue(&a->x, 'c', key);
    enqueue_all(a, a->x.admissionchecks, 'a');
}

static void mkc_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)old;
    mkc_event(key, obj, ud);
}

static void secret_event(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)obj;
    struct app *a = ud;
    if (a->x.clusters)
        mkcs_sync(a->x.clusters, a->x.mkclusters, a->x.secrets);
}

static void secret_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)old;
    secret_event(key, obj, ud);
}

static void remote_wl_event(const char *cluster, const char *key, json_t *obj, int deleted,
                            void *ud)
{
    (void)cluster;
    struct app *a = ud;
    /* a copy's reservation may be the one the dispatch waits for */
    json_t *wl =
        !deleted && rc_md(obj, RC_MD_ADMISSION_CQ) ? rc_cache_get(a->x.workloads, key) : NULL;
    enqueue_workload(a, key, wl);
    json_decref(wl);
}

static void remote_job_event(const char *cluster, const char *key, json_t *obj, int deleted,
                             void *ud)
{
    (void)cluster, (void)key, (void)deleted;
    struct app *a = ud;
    const char *ns = rc_md(obj, RC_MD_NAMESPACE);
    const char *pb = rc_prebuilt_name(obj);
    if (!ns || !pb)
        return;
    char wkey[KCACHE_KEY_MAX];
    snprintf(wkey, sizeof(wkey), "%s/%s", ns, pb);
    rc_note_remote_event(&a->x, wkey);
    rc_enqueue(&a->x, 'w', wkey);
}

/* A pod of a dispatched job changed on its worker (podwatch.h). */
static void pods_changed(const char *key, void *ud)
{
    struct app *a = ud;
    rc_enqueue(&a->x, 'w', key);
}

static void cluster_state(const char *cluster, void *ud)
{
    struct app *a = ud;
    rc_enqueue(&a->x, 'c', cluster);
    enqueue_all(a, a->x.admissionchecks, 'a');
    rc_enqueue_all_workloads(&a->x);
    struct mkcs_state s;
    /* clean up what waited for it; gcInterval 0 turns the collector off, on
     * reconnect too */
    if (a->cfg.gc_interval_ms > 0 && mkcs_state(a->x.clusters, cluster, &s) == 0 && s.connected)
        rc_enqueue(&a->x, 'g', cluster);
}

/* ---- workers ------------------------------------------------------------------ */

static int process(struct app *a, const char *key, long *requeue_ms)
{
    *requeue_ms = -1;
    const char *k = key + 2;
    switch (key[0]) {
    case 'w':
        return rc_reconcile_workload(&a->x, k, requeue_ms);
    case 'j': {
        char *end;
        long ki = strtol(k, &end, 10);
        if (*end != '/' || ki < 0 || ki >= a->x.nkinds)
            return 0;
        return rc_reconcile_job(&a->x, (int)ki, end + 1);
    }
    case 'q':
        return rc_reconcile_gate(&a->x, k);
    case 'a':
        return rc_reconcile_admission_check(&a->x, k);
    case 'c':
        return rc_reconcile_cluster(&a->x, k);
    case 'g':
        return rc_gc_cluster(&a->x, k);
    }
    return 0;
}

/* The guard of every write to the manager and the workers (kc_options.
 * may_write): with leader election, none once the lease may have run out. */
static int may_write(void *ud, const char *method, const char *path)
{
    struct app *a = ud;
    if (rc_leader_may_write(a->leader))
        return 0;
    LOG_W(LG, "write refused: not leader", "method", method, "path", path);
    return 1;
}

static void *worker(void *arg)
{
    struct app *a = ((struct lane *)arg)->a;
    struct wq *q = ((struct lane *)arg)->q;
    rc_heap_thread_cache();
    pthread_mutex_lock(&a->mu);
    while (!a->leading && !a->stopping)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    char *key;
    while (wq_get(q, &key) == 0) {
        if (a->cfg.leader_elect && !rc_leader_may_write(a->leader)) {
            /* lease renewal is late: no new work (the writes are refused anyway) */
            wq_add_after(q, key, a->cfg.retry_period_ms);
            wq_done(q, key);
            free(key);
            continue;
        }
        long long t0 = clk_now_ms();
        long requeue;
        int rc = process(a, key, &requeue);
        const char *v[] = {rc_key_kind(key[0]), rc < 0 ? "error" : "ok"};
        mt_observe(a->x.metrics.reconcile, v, (double)(clk_now_ms() - t0) / 1000.0);
        if (rc < 0)
            wq_add_rate_limited(q, key);
        else
            wq_forget(q, key);
        if (requeue >= 0)
            wq_add_after(q, key, requeue);
        wq_done(q, key);
        free(key);
    }
    return NULL;
}

static void on_started(void *ud)
{
    struct app *a = ud;
    rc_metrics_set_role(a->cfg.leader_elect ? "leader" : "standalone");
    mt_set(a->x.metrics.leader, NULL, 1);
    pthread_mutex_lock(&a->mu);
    a->leading = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    /* what happened while we were not leading */
    rc_enqueue_all_workloads(&a->x);
    rc_gix_invalidate(a->x.gix, NULL);
    enqueue_all(a, a->x.clusterqueues, 'q');
    enqueue_all(a, a->x.admissionchecks, 'a');
    enqueue_all(a, a->x.mkclusters, 'c');
    for (int k = 0; k < a->x.nkinds && a->cfg.mode == RC_MODE_STANDALONE; k++) {
        struct ns_jobs n = {a, k};
        kcache_foreach(a->x.jobs[k], NULL, enqueue_job, &n);
    }
}

static void on_lost(void *ud)
{
    (void)ud;
    /* as controller-runtime: never write again without the lease */
    LOG_E(LG, "lost the lease; exiting");
    _exit(1);
}

/* ---- ticker ------------------------------------------------------------------- */

static void *ticker(void *arg)
{
    struct app *a = arg;
    long long last_resync = clk_now_ms(), last_gc = clk_now_ms(), last_trim = 0;
    for (;;) {
        long long until = clk_now_ms() + 1000;
        pthread_mutex_lock(&a->mu);
        while (!a->stopping && !clk_cond_wait_until(&a->cv, &a->mu, until))
            ;
        int stop = a->stopping;
        pthread_mutex_unlock(&a->mu);
        if (stop)
            break;
        long long now = clk_now_ms();
        mkcs_sync(a->x.clusters, a->x.mkclusters, a->x.secrets);
        if (now - last_resync >= a->cfg.resync_ms) {
            last_resync = now;
            rc_enqueue_resync_workloads(&a->x);
            /* a pass of every queue, not a full one: the index follows the
             * caches' events (a relist included) and no decision of the gate
             * depends on the time, so a settled queue has nothing to read;
             * a full pass of a 50,000-Workload queue costs seconds of CPU */
            enqueue_all(a, a->x.clusterqueues, 'q');
            enqueue_all(a, a->x.admissionchecks, 'a');
            enqueue_all(a, a->x.mkclusters, 'c');
        }
        if (a->cfg.gc_interval_ms > 0 && now - last_gc >= a->cfg.gc_interval_ms) {
            last_gc = now;
            json_t *names = mkcs_names(a->x.clusters);
            size_t i;
            json_t *n;
            json_array_foreach(names, i, n)
            {
                rc_enqueue(&a->x, 'g', json_string_value(n));
            }
            json_decref(names);
        }
        if (now - last_trim >= 30000) {
            last_trim = now;
            rc_heap_release(); /* give freed list pages back: RSS tracks the live set */
        }
    }
    return NULL;
}

static void before_render(void *ud)
{
    struct app *a = ud;
    struct wq *const queues[] = {a->x.queue, a->x.job_queue};
    rc_metrics_queue_progress(&a->x.metrics, queues, 2);
    mt_set(a->x.metrics.tracked, NULL, (double)kcache_len(a->x.workloads));
    mt_set(a->x.metrics.heap, NULL, (double)rc_heap_in_use());
    json_t *names = mkcs_names(a->x.clusters);
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n)
    {
        struct mkcs_state s;
        const char *v[] = {json_string_value(n)};
        if (mkcs_state(a->x.clusters, v[0], &s) == 0)
            mt_set(a->x.metrics.connected, v, s.connected ? 1 : 0);
    }
    json_decref(names);
}

static int ready(void *ud)
{
    struct app *a = ud;
    for (int i = 0; i < a->ninf; i++)
        if (!a->inf[i].optional && !kcache_synced(*a->inf[i].cache))
            return 0;
    return kcache_synced(a->x.secrets);
}

/* ---- setup -------------------------------------------------------------------- */

static int add_informer(struct app *a, struct kc_resource res, const char *ns,
                        struct kcache **cache, const struct kcache_handlers *h, int optional)
{
    *cache = kcache_new();
    if (!*cache || (h && kcache_add_handlers(*cache, h) < 0))
        return -1;
    /* the bulk of the memory: every manager job and Workload, kept compact */
    if (h && (h->on_add == wl_add || h->on_add == job_add))
        kcache_set_transform(*cache, rc_pack, NULL);
    struct informed *in = &a->inf[a->ninf++];
    in->res = res;
    in->ns = ns;
    in->selector = NULL;
    in->cache = cache;
    in->optional = optional;
    return 0;
}

static int start_informers(struct app *a)
{
    for (int i = 0; i < a->ninf; i++) {
        struct informed *in = &a->inf[i];
        struct kw_options o = {.name = in->res.resource, .resync_period_ms = a->cfg.resync_ms};
        in->inf = kw_informer_start(a->x.mgr, &in->res, in->ns, in->selector, *in->cache, &o);
        if (!in->inf)
            return -1;
    }
    return 0;
}

static void identity(struct app *a)
{
    if (a->cfg.identity[0])
        return;
    char host[64] = "mkueue";
    gethostname(host, sizeof(host) - 1);
    unsigned r = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&r, sizeof(r), 1, f) != 1)
            r = (unsigned)getpid();
        fclose(f);
    }
    snprintf(a->cfg.identity, sizeof(a->cfg.identity), "%.60s_%08x", host, r);
}

/* The context's own state: maps, metrics, the configured job kinds. */
static int setup_state(struct app *a, char *err, size_t errlen)
{
    struct rc_ctx *x = &a->x;
    x->cfg = &a->cfg;
    mk_set_short_workload_names(a->cfg.short_workload_names); /* before any thread */
    pthread_mutex_init(&x->mu, NULL);
    x->rounds = smap_new();
    x->deleted = smap_new();
    x->lag = smap_new();
    x->assumed = smap_new();
    x->qstatus_at = smap_new();
    x->gate_views = smap_new();
    /* only standalone mode's gate reads it */
    x->gix = a->cfg.mode == RC_MODE_STANDALONE ? rc_gix_new() : NULL;
    x->drift = smap_new();
    x->lost = smap_new();
    x->why = rc_why_new();
    x->echo = rc_echo_new();
    x->podwatch = rc_podwatch_new(pods_changed, a);
    if (!x->rounds || !x->deleted || !x->lag || !x->assumed || !x->qstatus_at || !x->gate_views ||
        (a->cfg.mode == RC_MODE_STANDALONE && !x->gix) || !x->drift || !x->lost || !x->why ||
        !x->echo || !x->podwatch || rc_metrics_init(&x->metrics) < 0) {
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < a->cfg.nintegrations && x->nkinds < RC_MAX_KINDS; i++) {
        char why[256];
        x->kinds[x->nkinds] = rc_integration_kind(a->cfg.integrations[i], why, sizeof(why));
        if (x->kinds[x->nkinds])
            x->nkinds++;
    }
    /* as Kueue's multiKueue.externalFrameworks: adapters of their own,
     * whatever the integrations list says */
    for (int i = 0; i < a->cfg.nexternal; i++) {
        char why[512];
        if (mk_kinds_add_external(a->cfg.external[i], why, sizeof(why)) < 0)
            return errf(err, errlen, MK_ERR_INVAL, "externalFrameworks: %s", why);
        if (x->nkinds == RC_MAX_KINDS)
            return errf(err, errlen, MK_ERR_INVAL, "more than %d job kinds", RC_MAX_KINDS);
        x->kinds[x->nkinds++] = mk_kind_at(mk_kinds_count() - 1);
    }
    return 0;
}

/* The manager's clients (requests; the Lease's own when electing) and the
 * work queue. */
static int setup_clients(struct app *a, char *err, size_t errlen)
{
    struct rc_ctx *x = &a->x;
    int rc = a->cfg.kubeconfig[0]
                 ? kcfg_load_file(a->cfg.kubeconfig, NULL, KCFG_TRUSTED, &a->mgr_cfg, err, errlen)
                 : kcfg_in_cluster(NULL, &a->mgr_cfg, err, errlen);
    if (rc < 0)
        return rc;
    int (*guard)(void *, const char *, const char *) = a->cfg.leader_elect ? may_write : NULL;
    struct kc_options ko = {.qps = a->cfg.qps,
                            .burst = a->cfg.burst,
                            .timeout_ms = 15000,
                            .may_write = guard,
                            .may_write_ud = a,
                            .on_done = rc_metric_request,
                            .on_done_ud = &x->metrics};
    x->mgr = kc_new(a->mgr_cfg, &ko, err, errlen);
    ko.pool_size = 1; /* one sender (events.h) */
    struct kc_client *ec = x->mgr ? kc_new(a->mgr_cfg, &ko, err, errlen) : NULL;
    if (!ec)
        return MK_ERR;
    if (!(x->events = rc_events_new(ec, x->metrics.events_dropped)))
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    if (a->cfg.leader_elect) {
        /* not rate-limited with the rest, one connection, no guard */
        struct kc_options lko = {.qps = -1, .pool_size = 1, .timeout_ms = a->cfg.renew_deadline_ms};
        if (!(a->lease = kc_new(a->mgr_cfg, &lko, err, errlen)))
            return MK_ERR;
    }
    struct wq_observer obs;
    rc_metrics_queue_observer(&x->metrics, &obs);
    struct wq_options qo = {.base_delay_ms = 200, .max_delay_ms = 60000, .observer = &obs};
    x->queue = wq_new(&qo);
    x->job_queue = wq_new(&qo);
    if (!x->queue || !x->job_queue) {
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* Discovery, once at start: which job kinds the manager serves, and
 * whether its schema keeps their managedBy. */
static void discover_kinds(struct app *a)
{
    struct rc_ctx *x = &a->x;
    /* A kind whose CRD the manager does not serve is left out: watching it
     * would fail forever, on the manager and on every worker. */
    int kept = 0;
    for (int k = 0; k < x->nkinds; k++) {
        if (rc_kind_served(x->mgr, x->kinds[k]) == 0) {
            LOG_W(LG,
                  "the manager does not serve this job kind (CRD not installed): not handled; "
                  "restart after installing it",
                  "kind", x->kinds[k]->kind, "group", x->kinds[k]->group);
            const char *gk[] = {x->kinds[k]->group, x->kinds[k]->kind};
            mt_set(x->metrics.not_served, gk, 1);
            continue;
        }
        x->kinds[kept++] = x->kinds[k];
    }
    x->nkinds = kept;

    /* managedBy kept by the manager's schema? (read once) */
    json_t *openapi = rc_schema_fetch(x->mgr);
    for (int k = 0; k < x->nkinds; k++) {
        x->managed_by_kept[k] = rc_schema_keeps_managed_by(openapi, x->kinds[k]);
        if (!x->managed_by_kept[k])
            LOG_W(LG,
                  "the manager's schema drops managedBy for this kind: a job is dispatched when "
                  "its queue leads to a MultiKueue AdmissionCheck (queue fallback)",
                  "kind", x->kinds[k]->kind, "field", x->kinds[k]->managed_by_path);
    }
    json_decref(openapi);
    rc_heap_release();
}

/* The manager's informers (started by start_informers once leading) and the
 * kubeconfig Secrets read by name. */
static int setup_informers(struct app *a, char *err, size_t errlen)
{
    struct rc_ctx *x = &a->x;
    static const char *G = "kueue.x-k8s.io", *V = "v1beta2";
    const struct kcache_handlers wlh = {wl_add, wl_update, wl_delete, a};
    const struct kcache_handlers cqh = {cq_event, cq_update, cq_delete, a};
    const struct kcache_handlers lqh = {lq_add, lq_update, lq_delete, a};
    const struct kcache_handlers ach = {ac_event, ac_update, ac_event, a};
    const struct kcache_handlers cfh = {config_event, config_update, config_event, a};
    const struct kcache_handlers mkh = {mkc_event, mkc_update, mkc_event, a};
    const struct kcache_handlers sch = {secret_event, secret_update, secret_event, a};
    if (add_informer(a, (struct kc_resource){G, V, "workloads", 1}, NULL, &x->workloads, &wlh, 0) <
            0 ||
        add_informer(a, (struct kc_resource){G, V, "localqueues", 1}, NULL, &x->localqueues, &lqh,
                     0) < 0 ||
        add_informer(a, (struct kc_resource){G, V, "clusterqueues", 0}, NULL, &x->clusterqueues,
                     &cqh, 0) < 0 ||
        add_informer(a, (struct kc_resource){G, V, "admissionchecks", 0}, NULL, &x->admissionchecks,
                     &ach, 0) < 0 ||
        add_informer(a, (struct kc_resource){G, V, "multikueueconfigs", 0}, NULL, &x->mkconfigs,
                     &cfh, 0) < 0 ||
        add_informer(a, (struct kc_resource){G, V, "multikueueclusters", 0}, NULL, &x->mkclusters,
                     &mkh, 0) < 0 ||
        add_informer(a, (struct kc_resource){"scheduling.k8s.io", "v1", "priorityclasses", 0}, NULL,
                     &x->priorityclasses, NULL, 1) < 0 ||
        /* optional: a chart upgraded from before it has no such CRD (helm
         * installs crds/ only on install); a job naming one then waits */
        add_informer(a, (struct kc_resource){G, V, "workloadpriorityclasses", 0}, NULL, &x->wpcs,
                     NULL, 1) < 0) {
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < x->nkinds; k++) {
        a->kud[k] = (struct kind_ud){a, k};
        const struct kcache_handlers jh = {job_add, job_update, job_delete, &a->kud[k]};
        if (add_informer(a, mk_kind_resource(x->kinds[k]), NULL, &x->jobs[k], &jh,
                         strcmp(x->kinds[k]->group, "batch") != 0) < 0) {
            return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        }
        /* not every Pod of the manager: those the webhook gated and marked */
        if (x->kinds[k]->gating == MK_GATE_POD)
            a->inf[a->ninf - 1].selector = MK_MANAGED_LABEL "=true";
    }
    /* kubeconfig Secrets: read by name (kube_secrets.h), not listed */
    if (!(x->secrets = kcache_new()) || kcache_add_handlers(x->secrets, &sch) < 0) {
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
    x->q = (struct mkq_caches){x->localqueues, x->clusterqueues, x->admissionchecks, x->mkconfigs,
                               x->mkclusters};
    return 0;
}

/* The worker connections: remote Workloads and jobs with our origin. */
static int setup_workers(struct app *a, char *err, size_t errlen)
{
    struct rc_ctx *x = &a->x;
    static const char *G = "kueue.x-k8s.io", *V = "v1beta2";
    static char selector[128];
    snprintf(selector, sizeof(selector), "%s=%s", MK_ORIGIN_LABEL, a->cfg.origin);
    struct mkcs_watch watches[1 + RC_MAX_KINDS + MK_REF_KINDS];
    /* remote copies compacted like the manager's (readers unwrap them) */
    watches[0] =
        (struct mkcs_watch){{G, V, "workloads", 1}, selector, remote_wl_event, a, rc_pack, 0};
    for (int k = 0; k < x->nkinds; k++)
        watches[1 + k] = (struct mkcs_watch){
            mk_kind_resource(x->kinds[k]), selector, remote_job_event, a, rc_pack, 0};
    size_t nwatches = (size_t)(1 + x->nkinds);
    if (a->cfg.data_aware) { /* names of what jobs reference (podrefs.h), metadata only */
        x->refs_watch = (int)nwatches;
        mk_ref_watches(&watches[nwatches]);
        nwatches += MK_REF_KINDS;
    }
    int (*guard)(void *, const char *, const char *) = a->cfg.leader_elect ? may_write : NULL;
    struct kc_options wko = {.qps = a->cfg.worker_qps,
                             .burst = a->cfg.worker_burst,
                             .timeout_ms = a->cfg.worker_timeout_ms,
                             .connect_timeout_ms = 3000,
                             .may_write = guard,
                             .may_write_ud = a,
                             .on_done = rc_metric_request,
                             .on_done_ud = &x->metrics};
    struct mkcs_options mo = {
        .secret_namespace = a->cfg.namespace,
        .kubeconfig_dir = a->cfg.kubeconfig_dir[0] ? a->cfg.kubeconfig_dir : NULL,
        .watches = watches,
        .nwatches = nwatches,
        .client = &wko,
        .on_state = cluster_state,
        .ud = a,
    };
    x->clusters = mkcs_new(&mo, err, errlen);
    if (!x->clusters)
        return MK_ERR;
    /* the jobs' lane takes the same slots: a hung worker still leaves the
     * Workload lane a thread */
    if (!(x->inflight = rc_inflight_new(a->cfg.workers)))
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    return 0;
}

static int setup(struct app *a, char *err, size_t errlen)
{
    int rc = setup_state(a, err, errlen);
    if (rc == 0)
        rc = setup_clients(a, err, errlen);
    if (rc == 0) {
        discover_kinds(a);
        rc = setup_informers(a, err, errlen);
    }
    if (rc == 0)
        rc = setup_workers(a, err, errlen);
    return rc;
}

static void json_decref_void(void *p)
{
    json_decref(p);
}

static void teardown(struct app *a)
{
    struct rc_ctx *x = &a->x;
    if (x->queue)
        wq_shutdown(x->queue);
    if (x->job_queue)
        wq_shutdown(x->job_queue);
    pthread_mutex_lock(&a->mu);
    a->stopping = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < a->nworkers; i++)
        pthread_join(a->workers[i], NULL);
    if (a->ticker)
        pthread_join(a->ticker, NULL);
    rc_leader_stop(a->leader); /* releases the lease after the last write */
    rc_http_stop(a->http);
    rc_probe_stop(x->probe);
    for (int i = 0; i < a->ninf; i++)
        kw_informer_stop(a->inf[i].inf);
    ksec_stop(a->secrets_poll);
    rc_podwatch_free(x->podwatch); /* before the connections it holds, and the queue */
    mkcs_free(x->clusters);
    kcache_free(x->secrets);
    for (int i = 0; i < a->ninf; i++)
        kcache_free(*a->inf[i].cache);
    wq_free(x->queue);
    wq_free(x->job_queue);
    kc_free(x->mgr);
    rc_events_free(x->events);
    kc_free(a->lease);
    kcfg_free(a->mgr_cfg);
    smap_free(x->rounds, free);
    smap_free(x->deleted, json_decref_void);
    smap_free(x->lag, free);
    smap_free(x->assumed, free);
    smap_free(x->qstatus_at, free);
    smap_free(x->gate_views, rc_gate_view_free);
    rc_gix_free(x->gix);
    smap_free(x->drift, json_decref_void);
    smap_free(x->lost, free);
    rc_inflight_free(x->inflight);
    rc_why_free(x->why);
    rc_echo_free(x->echo);
    rc_metrics_free(&x->metrics);
    pthread_mutex_destroy(&x->mu);
}

int main(int argc, char **argv)
{
    static struct app app;
    rc_heap_tune();
    struct app *a = &app;
    char err[1024];
    rc_config_defaults(&a->cfg);
    int r = rc_config_from_args(&a->cfg, argc, argv, err, sizeof(err));
    if (r == 1)
        return 0;
    if (r < 0 || rc_config_validate(&a->cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "mkueue-reconciler: %s\n", err);
        return 2;
    }
    log_set_level(a->cfg.log_level);
    identity(a);
    pthread_mutex_init(&a->mu, NULL);
    if (clk_cond_init(&a->cv) < 0) {
        fprintf(stderr, "mkueue-reconciler: cannot create a condition variable\n");
        return 1;
    }

    /* signals are taken by sigwait in main only */
    sigset_t sigs;
    sigs_block_stop(&sigs);

    int code = 1;
    if (setup(a, err, sizeof(err)) < 0) {
        LOG_E(LG, "cannot start", "error", err);
        goto out;
    }
    LOG_I(LG, "starting", "version", MKUEUE_VERSION, "mode",
          a->cfg.mode == RC_MODE_STANDALONE ? "standalone" : "with-kueue", "origin", a->cfg.origin,
          "dispatcher", a->cfg.dispatcher_name, "identity", a->cfg.identity, "allocator",
          rc_heap_allocator(), "thread_caches", rc_heap_thread_caches());
    if (a->cfg.metrics_addr[0] && strcmp(a->cfg.metrics_addr, "0") != 0) {
        a->http = rc_http_start(a->cfg.metrics_addr, &a->x.metrics, ready, before_render, a, err,
                                sizeof(err));
        if (!a->http) {
            LOG_E(LG, "cannot serve metrics", "error", err);
            goto out;
        }
    }
    if (start_informers(a) < 0) {
        LOG_E(LG, "cannot start informers");
        goto out;
    }
    char serr[256];
    struct ksec_options so = {.ns = a->cfg.namespace};
    if (!(a->secrets_poll =
              ksec_start(a->x.mgr, a->x.mkclusters, a->x.secrets, &so, serr, sizeof(serr)))) {
        LOG_E(LG, "cannot read kubeconfig Secrets", "error", serr);
        goto out;
    }
    /* wait for the manager's caches: decisions on a partial view are wrong */
    while (!ready(a)) {
        int sig;
        sigset_t pending;
        sigpending(&pending);
        if (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT)) {
            sigwait(&sigs, &sig);
            code = 0;
            goto out;
        }
        clk_nap_ms(50);
    }
    LOG_I(LG, "caches synced");
    mkcs_sync(a->x.clusters, a->x.mkclusters, a->x.secrets);
    if (a->cfg.probe_interval_ms > 0)
        a->x.probe = rc_probe_start(&a->x, a->cfg.probe_interval_ms, cluster_state, a);
    if (pthread_create(&a->ticker, NULL, ticker, a) != 0)
        goto out;
    a->lanes[0] = (struct lane){a, a->x.queue};
    a->lanes[1] = (struct lane){a, a->x.job_queue};
    for (int i = 0; i < a->cfg.workers + RC_JOB_THREADS(a->cfg.workers); i++)
        if (pthread_create(&a->workers[a->nworkers], NULL, worker,
                           &a->lanes[i < a->cfg.workers ? 0 : 1]) == 0)
            a->nworkers++;
    if (a->cfg.leader_elect) {
        rc_metrics_set_role("follower");
        struct rc_leader_opts lo = {
            .namespace = a->cfg.namespace,
            .name = a->cfg.lease_name,
            .identity = a->cfg.identity,
            .lease_duration_ms = a->cfg.lease_duration_ms,
            .renew_deadline_ms = a->cfg.renew_deadline_ms,
            .retry_period_ms = a->cfg.retry_period_ms,
            .on_started = on_started,
            .on_lost = on_lost,
            .ud = a,
        };
        if (rc_leader_start(a->lease, &lo, &a->leader) < 0)
            goto out;
    } else {
        rc_metrics_set_role("standalone");
        on_started(a);
    }
    int sig;
    sigwait(&sigs, &sig);
    LOG_I(LG, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    code = 0;
out:
    teardown(a);
    return code;
}
