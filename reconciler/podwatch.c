#include "podwatch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errf.h"
#include "jsonx.h"
#include "kube_cache.h"
#include "kube_watch.h"
#include "log.h"

#define LG           "podwatch"
#define TEXT_MAX     320 /* a kept message */
#define SELECTOR_MAX 512
#define FULL_LOG_MS  60000 /* a full table is logged at most this often */

static const struct kc_resource PODS = {"", "v1", "pods", 1};

struct entry {
    struct rc_podwatch *set;
    char key[KCACHE_KEY_MAX];
    char cluster[254];
    char ns[64];
    char selector[SELECTOR_MAX];
    struct mkcs_conn *conn;
    struct kcache *cache;
    struct kw_informer *inf;
};

struct rc_podwatch {
    pthread_mutex_t mu;
    pthread_cond_t idle; /* signalled when the last stopper ends */
    int stopping;        /* stopper threads running */
    struct entry *v[RC_PODWATCH_MAX];
    void (*on_change)(const char *key, void *ud);
    void *ud;
    unsigned long refused; /* jobs refused for a full table since the last log line */
    long long refused_logged_ms;
};

static void text(json_t *to, const char *name, const char *s)
{
    if (!s)
        return;
    char t[TEXT_MAX];
    snprintf(t, sizeof(t), "%s", s);
    json_object_set_new(to, name, json_string(t));
}

/* A container status cut to its waiting state and image; NULL when running. */
static json_t *cut_container(const json_t *c)
{
    const json_t *w = jx_get(c, "state.waiting");
    if (!w)
        return NULL;
    json_t *out = json_object(), *wo = json_object(), *state = json_object();
    if (!out || !wo || !state) {
        json_decref(out), json_decref(wo), json_decref(state);
        return NULL;
    }
    text(out, "image", jx_str(c, "image"));
    text(wo, "reason", jx_str(w, "reason"));
    text(wo, "message", jx_str(w, "message"));
    json_object_set_new(state, "waiting", wo);
    json_object_set_new(out, "state", state);
    return out;
}

json_t *rc_podwatch_cut(json_t *obj, void *ud)
{
    (void)ud;
    json_t *out = json_pack("{s:{s:s?,s:s?,s:s?},s:{s:s?}}", "metadata", "namespace",
                            jx_str(obj, "metadata.namespace"), "name", jx_str(obj, "metadata.name"),
                            "resourceVersion", jx_str(obj, "metadata.resourceVersion"), "status",
                            "phase", jx_str(obj, "status.phase"));
    json_t *st = json_object_get(out, "status");
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(obj, "status.conditions"), i, c)
    {
        const char *type = jx_str(c, "type");
        if (!st || !type || strcmp(type, "PodScheduled") != 0)
            continue;
        json_t *co = json_object();
        if (!co)
            break;
        text(co, "type", type);
        text(co, "status", jx_str(c, "status"));
        text(co, "reason", jx_str(c, "reason"));
        text(co, "message", jx_str(c, "message"));
        json_object_set_new(st, "conditions", json_pack("[o]", co));
        break;
    }
    static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
    for (size_t l = 0; st && l < 2; l++) {
        json_t *arr = NULL;
        json_array_foreach(json_object_get(json_object_get(obj, "status"), lists[l]), i, c)
        {
            json_t *cc = cut_container(c);
            if (!cc)
                continue;
            if (!arr && !(arr = json_array())) {
                json_decref(cc);
                break;
            }
            json_array_append_new(arr, cc);
            break; /* the first waiting one is all the summary reads */
        }
        if (arr)
            json_object_set_new(st, lists[l], arr);
    }
    json_decref(obj);
    return out;
}

struct rc_podwatch *rc_podwatch_new(void (*on_change)(const char *key, void *ud), void *ud)
{
    struct rc_podwatch *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->idle, NULL);
    p->on_change = on_change;
    p->ud = ud;
    return p;
}

static void entry_free(struct entry *e)
{
    kw_informer_stop(e->inf);
    kcache_free(e->cache);
    mkcs_put(e->conn);
    free(e);
}

static void *stopper(void *arg)
{
    struct entry *e = arg;
    struct rc_podwatch *p = e->set;
    entry_free(e);
    pthread_mutex_lock(&p->mu);
    if (--p->stopping == 0)
        pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Stops e off the caller's thread (inline when no thread can start). */
static void retire(struct entry *e)
{
    struct rc_podwatch *p = e->set;
    pthread_t t;
    pthread_attr_t a;
    int ok = pthread_attr_init(&a) == 0;
    pthread_mutex_lock(&p->mu);
    p->stopping++;
    pthread_mutex_unlock(&p->mu);
    if (ok && pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
        pthread_create(&t, &a, stopper, e) == 0) {
        pthread_attr_destroy(&a);
        return;
    }
    if (ok)
        pthread_attr_destroy(&a);
    stopper(e);
}

void rc_podwatch_free(struct rc_podwatch *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < RC_PODWATCH_MAX; i++)
        if (p->v[i])
            entry_free(p->v[i]);
    pthread_mutex_lock(&p->mu);
    while (p->stopping > 0) /* retired entries' handlers still point here */
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static void changed(struct entry *e)
{
    if (e->set->on_change)
        e->set->on_change(e->key, e->set->ud);
}

static void on_add(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)obj;
    changed(ud);
}

static void on_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)key;
    if (old != obj) /* not a resync */
        changed(ud);
}

static void on_delete(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)obj;
    changed(ud);
}

static struct entry *entry_start(struct rc_podwatch *p, struct mkcs_conn *conn, const char *key,
                                 const char *cluster, const char *ns, const char *selector)
{
    struct entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->cache = kcache_new())) {
        free(e);
        mkcs_put(conn);
        return NULL;
    }
    e->set = p;
    e->conn = conn;
    snprintf(e->key, sizeof(e->key), "%s", key);
    snprintf(e->cluster, sizeof(e->cluster), "%s", cluster);
    snprintf(e->ns, sizeof(e->ns), "%s", ns);
    snprintf(e->selector, sizeof(e->selector), "%s", selector);
    kcache_set_transform(e->cache, rc_podwatch_cut, NULL);
    kcache_set_max_objects(e->cache, RC_PODWATCH_MAX_PODS);
    struct kcache_handlers h = {on_add, on_update, on_delete, e};
    kcache_add_handlers(e->cache, &h);
    char name[300];
    snprintf(name, sizeof(name), "%s/pods of %s", cluster, key);
    struct kw_options ko = {.name = name,
                            .page_size = MKCS_LIST_PAGE_SIZE,
                            .max_line = MKCS_MAX_OBJECT_BYTES,
                            .resync_period_ms = -1};
    e->inf = kw_informer_start(mkcs_conn_client(conn), &PODS, ns, selector, e->cache, &ko);
    if (!e->inf) {
        entry_free(e);
        return NULL;
    }
    return e;
}

static int find(struct rc_podwatch *p, const char *key)
{
    for (int i = 0; i < RC_PODWATCH_MAX; i++)
        if (p->v[i] && strcmp(p->v[i]->key, key) == 0)
            return i;
    return -1;
}

int rc_podwatch_ensure(struct rc_podwatch *p, struct mkcs *set, const char *key,
                       const char *cluster, const char *ns, const char *selector)
{
    if (strlen(key) >= KCACHE_KEY_MAX || strlen(selector) >= SELECTOR_MAX || strlen(ns) >= 64 ||
        strlen(cluster) >= 254)
        return MK_ERR_TOOBIG;
    struct mkcs_conn *conn = mkcs_get(set, cluster);
    if (!conn)
        return MK_ERR_TRANSPORT;
    struct entry *old = NULL;
    pthread_mutex_lock(&p->mu);
    int i = find(p, key);
    if (i >= 0) {
        struct entry *e = p->v[i];
        if (e->conn == conn && strcmp(e->cluster, cluster) == 0 && strcmp(e->ns, ns) == 0 &&
            strcmp(e->selector, selector) == 0) {
            pthread_mutex_unlock(&p->mu);
            mkcs_put(conn);
            return 0;
        }
        old = e; /* another cluster, selector or connection: start anew */
        p->v[i] = NULL;
    } else {
        for (i = 0; i < RC_PODWATCH_MAX && p->v[i]; i++)
            ;
        if (i == RC_PODWATCH_MAX) {
            /* a big dispatch asks again on every event of thousands of
             * jobs: a line a minute says it, with how many were refused */
            long long now = clk_now_ms();
            char refused[24] = "";
            p->refused++;
            if (!p->refused_logged_ms || now - p->refused_logged_ms >= FULL_LOG_MS) {
                snprintf(refused, sizeof(refused), "%lu", p->refused);
                p->refused = 0;
                p->refused_logged_ms = now;
            }
            pthread_mutex_unlock(&p->mu);
            mkcs_put(conn);
            if (refused[0])
                LOG_W(LG, "too many jobs watched; no placement summary for some", "workload", key,
                      "refused", refused);
            return MK_ERR_FULL;
        }
    }
    /* started without the lock (a Workload's reconciles run one at a time);
     * the table is checked again below, as other keys may fill it meanwhile */
    pthread_mutex_unlock(&p->mu);
    if (old)
        retire(old);
    struct entry *e = entry_start(p, conn, key, cluster, ns, selector);
    if (!e)
        return MK_ERR_NOMEM;
    pthread_mutex_lock(&p->mu);
    int j = find(p, key);
    if (j < 0)
        for (j = 0; j < RC_PODWATCH_MAX && p->v[j]; j++)
            ;
    struct entry *drop = NULL;
    if (j == RC_PODWATCH_MAX) {
        drop = e; /* filled meanwhile by others */
    } else {
        drop = p->v[j];
        p->v[j] = e;
    }
    pthread_mutex_unlock(&p->mu);
    if (drop)
        retire(drop);
    LOG_D(LG, "watching pods", "workload", key, "cluster", cluster, "selector", selector);
    return drop == e ? MK_ERR_FULL : 0;
}

json_t *rc_podwatch_pods(struct rc_podwatch *p, const char *key)
{
    json_t *out = NULL;
    if (!p)
        return NULL;
    pthread_mutex_lock(&p->mu);
    int i = find(p, key);
    if (i >= 0 && kcache_synced(p->v[i]->cache))
        out = kcache_list(p->v[i]->cache, NULL);
    pthread_mutex_unlock(&p->mu);
    return out;
}

void rc_podwatch_drop(struct rc_podwatch *p, const char *key)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    int i = find(p, key);
    struct entry *e = i >= 0 ? p->v[i] : NULL;
    if (e)
        p->v[i] = NULL;
    pthread_mutex_unlock(&p->mu);
    if (e)
        retire(e);
}
