#include "kube_secrets.h"
#include "errf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "queue.h"
#include "strmap.h"

#define LOGGER "secrets"

static const struct kc_resource SECRETS = {"", "v1", "secrets", 1};

struct ksec {
    struct kc_client *client;
    struct kcache *mkclusters, *out;
    char *ns;
    long interval_ms;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop, kicked;
    struct smap *last_err; /* name -> malloc'd last error, to log changes only */
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *ksec_wanted(json_t *mkclusters)
{
    const char *v[KSEC_MAX_SECRETS];
    size_t n = 0, i;
    json_t *mkc, *out = json_array();
    if (!out)
        return NULL;
    json_array_foreach(mkclusters, i, mkc)
    {
        const char *type, *loc;
        if (mkq_kubeconfig_source(mkc, &type, &loc) != 0 || strcmp(type, "Secret") != 0 || !loc ||
            !*loc || n == KSEC_MAX_SECRETS)
            continue;
        v[n++] = loc;
    }
    qsort(v, n, sizeof(v[0]), cmp_str);
    for (i = 0; i < n; i++) {
        if (i > 0 && strcmp(v[i], v[i - 1]) == 0)
            continue;
        if (json_array_append_new(out, json_string(v[i])) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *ksec_slim(json_t *secret)
{
    json_t *meta = json_object_get(secret, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    json_t *kc = json_object_get(json_object_get(secret, "data"), KSEC_KEY);
    json_t *out = NULL;
    if (!name)
        goto out;
    out = json_pack("{s:{s:s,s:O?,s:O?}}", "metadata", "name", name, "namespace",
                    json_object_get(meta, "namespace"), "resourceVersion",
                    json_object_get(meta, "resourceVersion"));
    if (out && json_is_string(kc) &&
        json_object_set_new(out, "data", json_pack("{s:O}", KSEC_KEY, kc)) != 0) {
        json_decref(out);
        out = NULL;
    }
out:
    json_decref(secret);
    return out;
}

/* A stand-in for a Secret that could not be read, carrying why. */
static json_t *stub(const char *ns, const char *name, const char *why)
{
    return json_pack("{s:{s:s,s:s,s:s},s:s}", "metadata", "name", name, "namespace", ns,
                     "resourceVersion", "", KSEC_ERROR_FIELD, why);
}

static void note_error(struct ksec *k, const char *name, const char *why)
{
    char *prev = smap_get(k->last_err, name);
    if (prev && strcmp(prev, why) == 0)
        return;
    LOG_W(LOGGER, "cannot read a kubeconfig Secret", "namespace", k->ns, "name", name, "error",
          why);
    char *d = strdup(why);
    void *old = NULL;
    if (d && smap_put(k->last_err, name, d, &old) != 0)
        free(d);
    free(old);
}

static void clear_error(struct ksec *k, const char *name)
{
    free(smap_del(k->last_err, name));
}

static void poll_once(struct ksec *k)
{
    json_t *list = kcache_list(k->mkclusters, NULL);
    json_t *names = list ? ksec_wanted(list) : NULL;
    json_t *items = json_array();
    size_t i;
    json_t *jn;
    if (!names || !items) {
        LOG_E(LOGGER, "out of memory");
        goto out;
    }
    json_array_foreach(names, i, jn)
    {
        const char *name = json_string_value(jn);
        json_t *obj = NULL, *keep = NULL;
        struct kc_status st;
        int rc = kc_get(k->client, &SECRETS, k->ns, name, &obj, &st);
        if (rc == MK_OK) {
            clear_error(k, name);
            keep = ksec_slim(obj);
        } else if (rc == MK_ERR_HTTP && kc_is_not_found(&st)) {
            clear_error(k, name);
        } else {
            char why[700];
            snprintf(why, sizeof(why), "cannot read secret \"%.200s\": %.380s", name, st.message);
            note_error(k, name, why);
            keep = kcache_get_nsname(k->out, k->ns, name);
            if (!keep || json_object_get(keep, KSEC_ERROR_FIELD)) {
                json_decref(keep);
                keep = stub(k->ns, name, why); /* transient errors keep the last good copy */
            }
        }
        if (keep && json_array_append_new(items, keep) != 0) {
            LOG_E(LOGGER, "out of memory");
            goto out;
        }
    }
    kcache_replace(k->out, items); /* synced once it succeeds */
out:
    json_decref(list);
    json_decref(names);
    json_decref(items);
}

static void *poll_main(void *arg)
{
    struct ksec *k = arg;
    pthread_mutex_lock(&k->lock);
    while (!k->stop) {
        k->kicked = 0;
        pthread_mutex_unlock(&k->lock);
        if (kcache_synced(k->mkclusters))
            poll_once(k);
        pthread_mutex_lock(&k->lock);
        /* Until synced, look again soon; after, at the interval or a kick. */
        long wait = kcache_synced(k->out) ? k->interval_ms : 200;
        long long deadline = clk_now_ms() + wait;
        while (!k->stop && !k->kicked && clk_cond_wait_until(&k->wake, &k->lock, deadline) == 0)
            ;
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

static void free_val(void *v)
{
    free(v);
}

static void ksec_free(struct ksec *k)
{
    smap_free(k->last_err, free_val);
    pthread_cond_destroy(&k->wake);
    pthread_mutex_destroy(&k->lock);
    free(k->ns);
    free(k);
}

struct ksec *ksec_start(struct kc_client *client, struct kcache *mkclusters, struct kcache *out,
                        const struct ksec_options *o, char *err, size_t errlen)
{
    if (!client || !mkclusters || !out || !o || !o->ns || !*o->ns) {
        errf(err, errlen, MK_ERR_INVAL,
             "kubeconfig secrets: client, caches and namespace are required");
        return NULL;
    }
    struct ksec *k = calloc(1, sizeof(*k));
    if (!k) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    k->client = client;
    k->mkclusters = mkclusters;
    k->out = out;
    k->interval_ms = o->interval_ms > 0 ? o->interval_ms : KSEC_DEFAULT_INTERVAL_MS;
    pthread_mutex_init(&k->lock, NULL);
    clk_cond_init(&k->wake);
    k->ns = strdup(o->ns);
    k->last_err = smap_new();
    if (!k->ns || !k->last_err) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        ksec_free(k);
        return NULL;
    }
    if (pthread_create(&k->thread, NULL, poll_main, k) != 0) {
        errf(err, errlen, MK_ERR_INVAL, "cannot start the kubeconfig secrets thread");
        ksec_free(k);
        return NULL;
    }
    return k;
}

void ksec_kick(struct ksec *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    k->kicked = 1;
    pthread_cond_broadcast(&k->wake);
    pthread_mutex_unlock(&k->lock);
}

void ksec_stop(struct ksec *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    k->stop = 1;
    pthread_cond_broadcast(&k->wake);
    pthread_mutex_unlock(&k->lock);
    pthread_join(k->thread, NULL);
    ksec_free(k);
}
