#include "state.h"
#include "errf.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "clock.h"
#include "clusters.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_secrets.h"
#include "jsonx.h"
#include "kube_watch.h"
#include "log.h"

#define KUEUE_GROUP   "kueue.x-k8s.io"
#define KUEUE_VERSION "v1beta2"

/* Watches on every worker, by index. The preflight's (issue 13) follow
 * mk_ref_kind's order from W_PVCS on: metadata only, names kept. */
enum { W_NAMESPACES, W_LOCALQUEUES, W_PVCS, W_CONFIGMAPS, W_SECRETS, W_SERVICEACCOUNTS, NWATCHES };

enum { C_LQ, C_CQ, C_AC, C_CONFIG, C_MKC, C_SECRET, NCACHES };

static const struct kc_resource manager_res[NCACHES] = {
    [C_LQ] = {KUEUE_GROUP, KUEUE_VERSION, "localqueues", 1},
    [C_CQ] = {KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", 0},
    [C_AC] = {KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", 0},
    [C_CONFIG] = {KUEUE_GROUP, KUEUE_VERSION, "multikueueconfigs", 0},
    [C_MKC] = {KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", 0},
    [C_SECRET] = {"", "v1", "secrets", 1},
};

struct wh_state {
    struct kcfg *cfg;
    struct kc_client *client;
    struct kcache *caches[NCACHES];
    struct kw_informer *informers[NCACHES]; /* C_SECRET: none, the poller fills it */
    struct ksec *secrets;
    struct mkcs *workers;
    struct wh_ctx ctx;
    pthread_t syncer;
    int syncer_started;
    struct clk_stop stop; /* ends the syncer */
};

int wh_state_worker_check(void *ud, const char *cluster, const char *ns, const char *lq,
                          int *has_ns, int *has_lq, char *why, size_t whylen)
{
    struct mkcs *set = ud;
    struct mkcs_conn *c = mkcs_get(set, cluster);
    if (!c || !mkcs_conn_connected(c)) {
        struct mkcs_state st;
        int known = mkcs_state(set, cluster, &st) == 0;
        if (known)
            buf_cut_fmt(why, whylen, "%s: %s", st.reason, st.message);
        else
            snprintf(why, whylen, "no connection");
        mkcs_put(c);
        return c ? WH_WORKER_STALE : WH_WORKER_UNKNOWN;
    }
    json_t *n = kcache_get(mkcs_conn_cache(c, W_NAMESPACES), ns);
    json_t *q = kcache_get_nsname(mkcs_conn_cache(c, W_LOCALQUEUES), ns, lq);
    *has_ns = n != NULL;
    *has_lq = q != NULL;
    json_decref(n);
    json_decref(q);
    mkcs_put(c);
    return WH_WORKER_READY;
}

int wh_state_object_check(void *ud, const char *cluster, enum mk_ref_kind kind, const char *ns,
                          const char *name)
{
    struct mkcs_conn *c = mkcs_get(ud, cluster);
    int rc = -1;
    if (c && (unsigned)kind < MK_REF_KINDS)
        rc = mk_ref_present(mkcs_conn_cache(c, W_PVCS + (size_t)kind), ns, name);
    mkcs_put(c);
    return rc;
}

static void sync_workers(struct wh_state *s)
{
    mkcs_sync(s->workers, s->caches[C_MKC], s->caches[C_SECRET]);
}

static void on_add(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)obj;
    sync_workers(ud);
}

static void on_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)key;
    if (old != obj) /* not a periodic resync */
        sync_workers(ud);
}

static void on_delete(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)obj;
    sync_workers(ud);
}

/* A MultiKueueCluster changed: read the Secret it names now. */
static void mkc_add(const char *key, json_t *obj, void *ud)
{
    struct wh_state *s = ud;
    ksec_kick(s->secrets);
    on_add(key, obj, ud);
}

static void mkc_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    struct wh_state *s = ud;
    if (old != obj)
        ksec_kick(s->secrets);
    on_update(key, old, obj, ud);
}

static void mkc_delete(const char *key, json_t *obj, void *ud)
{
    struct wh_state *s = ud;
    ksec_kick(s->secrets);
    on_delete(key, obj, ud);
}

/* Re-syncs the worker set every second: the caches' first list may land
 * before they are marked synced, and a Secret may arrive after its cluster. */
static void *syncer_main(void *arg)
{
    struct wh_state *s = arg;
    do
        sync_workers(s);
    while (!clk_sleep_ms(&s->stop, 1000));
    return NULL;
}

struct wh_state *wh_state_start(const struct wh_state_opts *o, char *err, size_t errlen)
{
    struct wh_state *s = calloc(1, sizeof(*s));
    if (!s) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (clk_stop_init(&s->stop) < 0) {
        errf(err, errlen, MK_ERR_INVAL, "cannot create a condition variable");
        free(s);
        return NULL;
    }

    int rc = o->kubeconfig
                 ? kcfg_load_file(o->kubeconfig, o->context, KCFG_TRUSTED, &s->cfg, err, errlen)
                 : kcfg_in_cluster(NULL, &s->cfg, err, errlen);
    if (rc < 0)
        goto fail;
    struct kc_options kopt = {.qps = o->qps};
    s->client = kc_new(s->cfg, &kopt, err, errlen);
    if (!s->client)
        goto fail;
    for (int i = 0; i < NCACHES; i++) {
        s->caches[i] = kcache_new();
        if (!s->caches[i]) {
            errf(err, errlen, MK_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    struct mkcs_watch watches[NWATCHES] = {
        [W_NAMESPACES] = {.res = {"", "v1", "namespaces", 0}},
        [W_LOCALQUEUES] = {.res = {KUEUE_GROUP, KUEUE_VERSION, "localqueues", 1}},
    };
    mk_ref_watches(&watches[W_PVCS]);
    struct mkcs_options mo = {
        .secret_namespace = o->ns,
        .kubeconfig_dir = o->kubeconfig_dir,
        .watches = watches,
        .nwatches = NWATCHES,
    };
    s->workers = mkcs_new(&mo, err, errlen);
    if (!s->workers)
        goto fail;
    struct kcache_handlers h = {on_add, on_update, on_delete, s};
    struct kcache_handlers mh = {mkc_add, mkc_update, mkc_delete, s};
    if (kcache_add_handlers(s->caches[C_MKC], &mh) < 0 ||
        kcache_add_handlers(s->caches[C_SECRET], &h) < 0) {
        errf(err, errlen, MK_ERR_INVAL, "cannot register cache handlers");
        goto fail;
    }
    s->ctx = (struct wh_ctx){
        .q = {s->caches[C_LQ], s->caches[C_CQ], s->caches[C_AC], s->caches[C_CONFIG],
              s->caches[C_MKC]},
        .workers = {wh_state_worker_check, s->workers, wh_state_object_check},
    };
    struct ksec_options so = {.ns = o->ns};
    if (!(s->secrets =
              ksec_start(s->client, s->caches[C_MKC], s->caches[C_SECRET], &so, err, errlen)))
        goto fail;
    for (int i = 0; i < NCACHES; i++) {
        if (i == C_SECRET)
            continue; /* read by name (kube_secrets.h), not listed */
        struct kw_options wo = {.name = manager_res[i].resource};
        s->informers[i] =
            kw_informer_start(s->client, &manager_res[i], NULL, NULL, s->caches[i], &wo);
        if (!s->informers[i]) {
            errf(err, errlen, MK_ERR_INVAL, "cannot start the %s informer",
                 manager_res[i].resource);
            goto fail;
        }
    }
    if (pthread_create(&s->syncer, NULL, syncer_main, s) != 0) {
        errf(err, errlen, MK_ERR_INVAL, "cannot start the worker syncer");
        goto fail;
    }
    s->syncer_started = 1;
    return s;
fail:
    wh_state_stop(s);
    return NULL;
}

void wh_state_stop(struct wh_state *s)
{
    if (!s)
        return;
    if (s->syncer_started) {
        clk_stop_signal(&s->stop);
        pthread_join(s->syncer, NULL);
    }
    for (int i = 0; i < NCACHES; i++)
        kw_informer_stop(s->informers[i]);
    ksec_stop(s->secrets);
    mkcs_free(s->workers);
    for (int i = 0; i < NCACHES; i++)
        kcache_free(s->caches[i]);
    kc_free(s->client);
    kcfg_free(s->cfg);
    clk_stop_destroy(&s->stop);
    free(s);
}

const struct wh_ctx *wh_state_ctx(struct wh_state *s)
{
    return &s->ctx;
}

int wh_state_ready(struct wh_state *s)
{
    return wh_ctx_synced(&s->ctx) && kcache_synced(s->caches[C_SECRET]);
}

void wh_state_collect(struct wh_state *s, struct wh_metrics *m)
{
    const char *const mv[] = {"manager"};
    mt_set(m->synced, mv, wh_state_ready(s));
    json_t *names = mkcs_names(s->workers);
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n)
    {
        struct mkcs_state st;
        const char *const wv[] = {json_string_value(n)};
        int ok = mkcs_state(s->workers, wv[0], &st) == 0 && st.connected;
        mt_set(m->synced, wv, ok);
    }
    json_decref(names);
}
