/* Connections to the worker clusters: see clusters.h.
 *
 * Locks: the set's `lock` guards the cluster map and every cluster entry;
 * a connection's `lock` only guards its `stopped` flag against readers of its
 * informers. Neither is held while calling out (on_state) or while stopping
 * informers, which may block up to the client's request timeout. */
#include "clusters.h"
#include "errf.h"

#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "buf.h"
#include "fileio.h"
#include "jsonx.h"
#include "kube_config.h"
#include "kube_secrets.h"
#include "kube_watch.h"
#include "log.h"
#include "queue.h"
#include "strmap.h"

#define LOGGER   "clusters"
#define HASH_LEN 32

#define MONITOR_MS 250L

struct mkcs_conn;

/* What a cache handler needs to call the watch's on_event. */
struct watch_ud {
    struct mkcs_conn *conn;
    const struct mkcs_watch *w;
};

struct mkcs_conn {
    int refs; /* atomic */
    char *name;
    struct kcfg *cfg;
    struct kc_client *client;
    struct kc_client *meta_client; /* PartialObjectMetadata, for metadata_only watches; or NULL */
    size_t n;
    struct kcache *caches[MKCS_MAX_WATCHES];
    struct kw_informer *infs[MKCS_MAX_WATCHES];
    struct watch_ud wud[MKCS_MAX_WATCHES];
    pthread_mutex_t lock;
    int stopped;                 /* informers are being or have been stopped */
    struct mkcs_conn *next_dead; /* reaper queue link */
};

struct cluster {
    char *name;
    struct mkcs_conn *conn; /* current connection (the set's reference) or NULL */
    /* Kubeconfig bytes behind conn or behind a parse refusal: unchanged bytes
     * are not parsed again. */
    unsigned char hash[HASH_LEN];
    int has_hash;
    /* Why there is no connection (when conn is NULL). */
    char reason[64];
    char message[512];
    long build_failures; /* consecutive client/informer start failures */
    long long lost_ms;   /* first observed loss, 0 while connected */
    int seen;            /* mark for mkcs_sync's sweep */
    /* The state last reported through on_state. */
    int notified;
    int n_connected;
    char n_reason[64];
    char n_detail[512];
};

struct mkcs {
    char *secret_namespace;
    char *kubeconfig_dir;
    size_t n;
    struct mkcs_watch w[MKCS_MAX_WATCHES]; /* strings owned */
    struct kc_options client;
    int has_client_opts;
    void (*on_state)(const char *cluster, void *ud);
    void *ud;
    long backoff_initial_ms, backoff_max_ms, monitor_ms;
    size_t max_objects;

    pthread_mutex_t lock;
    struct smap *clusters; /* name -> struct cluster */

    pthread_cond_t wake; /* monitor and reaper wake-ups (monotonic clock) */
    int shutdown;
    pthread_t monitor, reaper;
    int has_monitor, has_reaper;
    struct mkcs_conn *dead; /* connections waiting to be stopped */
};

/* ---- connections ------------------------------------------------------------ */

static void conn_free(struct mkcs_conn *c)
{
    for (size_t i = 0; i < c->n; i++)
        kcache_free(c->caches[i]);
    kc_free(c->client);
    kc_free(c->meta_client);
    kcfg_free(c->cfg);
    pthread_mutex_destroy(&c->lock);
    free(c->name);
    free(c);
}

void mkcs_put(struct mkcs_conn *c)
{
    if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
        conn_free(c);
}

const char *mkcs_conn_name(const struct mkcs_conn *c)
{
    return c->name;
}

struct kc_client *mkcs_conn_client(struct mkcs_conn *c)
{
    return c->client;
}

struct kcache *mkcs_conn_cache(struct mkcs_conn *c, size_t watch_index)
{
    return watch_index < c->n ? c->caches[watch_index] : NULL;
}

int mkcs_conn_connected(struct mkcs_conn *c)
{
    int ok;
    pthread_mutex_lock(&c->lock);
    ok = !c->stopped;
    for (size_t i = 0; ok && i < c->n; i++)
        ok = c->wud[i].w->metadata_only || /* optional: never makes a worker unusable */
             (c->infs[i] && kw_informer_connected(c->infs[i]) && kw_informer_synced(c->infs[i]));
    pthread_mutex_unlock(&c->lock);
    return ok;
}

static void on_add(const char *key, json_t *obj, void *ud)
{
    struct watch_ud *u = ud;
    u->w->on_event(u->conn->name, key, obj, 0, u->w->ud);
}

static void on_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    struct watch_ud *u = ud;
    (void)old;
    u->w->on_event(u->conn->name, key, obj, 0, u->w->ud);
}

static void on_delete(const char *key, json_t *obj, void *ud)
{
    struct watch_ud *u = ud;
    u->w->on_event(u->conn->name, key, obj, 1, u->w->ud);
}

/* Hands the set's reference of c to the reaper. Caller holds s->lock. */
static void retire(struct mkcs *s, struct mkcs_conn *c)
{
    if (!c)
        return;
    c->next_dead = s->dead;
    s->dead = c;
    pthread_cond_broadcast(&s->wake);
}

/* Builds a connection from a parsed config (taken, also on failure). On
 * failure returns NULL with err; a half-started connection goes to the
 * reaper. Caller holds s->lock. */
static struct mkcs_conn *conn_start(struct mkcs *s, const char *name, struct kcfg *cfg, char *err,
                                    size_t errlen)
{
    struct mkcs_conn *c = calloc(1, sizeof(*c));
    if (!c || !(c->name = strdup(name))) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        free(c);
        kcfg_free(cfg);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->refs = 1;
    c->cfg = cfg;
    if (!(c->client = kc_new(cfg, s->has_client_opts ? &s->client : NULL, err, errlen)))
        goto fail;
    for (size_t i = 0; i < s->n && !c->meta_client; i++) {
        if (!s->w[i].metadata_only)
            continue;
        struct kc_options mo = s->client;
        mo.accept = KC_ACCEPT_METADATA_LIST;
        mo.accept_stream = KC_ACCEPT_METADATA;
        if (!(c->meta_client = kc_new(cfg, &mo, err, errlen)))
            goto fail;
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct mkcs_watch *w = &s->w[i];
        char logname[300];
        if (!(c->caches[i] = kcache_new())) {
            errf(err, errlen, MK_ERR_NOMEM, "out of memory");
            goto fail;
        }
        c->n = i + 1;
        if (w->transform)
            kcache_set_transform(c->caches[i], w->transform, w->ud);
        kcache_set_max_objects(c->caches[i], s->max_objects);
        c->wud[i] = (struct watch_ud){c, w};
        if (w->on_event) {
            struct kcache_handlers h = {on_add, on_update, on_delete, &c->wud[i]};
            kcache_add_handlers(c->caches[i], &h);
        }
        snprintf(logname, sizeof(logname), "%s/%s", name, w->res.resource);
        struct kw_options ko = {.name = logname,
                                .page_size = MKCS_LIST_PAGE_SIZE,
                                .max_line = MKCS_MAX_OBJECT_BYTES,
                                .backoff_initial_ms = s->backoff_initial_ms,
                                .backoff_max_ms = s->backoff_max_ms};
        c->infs[i] = kw_informer_start(w->metadata_only ? c->meta_client : c->client, &w->res, NULL,
                                       w->label_selector, c->caches[i], &ko);
        if (!c->infs[i]) {
            errf(err, errlen, MK_ERR_INVAL, "cannot start the %s informer", w->res.resource);
            goto fail;
        }
    }
    return c;
fail:
    if (c->n > 0) {
        retire(s, c); /* started informers may be mid-request: stop them off this thread */
    } else {
        conn_free(c);
    }
    return NULL;
}

/* Stops the informers of retired connections, then drops the set's
 * reference. Drains the queue before exiting on shutdown. */
static void *reaper_main(void *arg)
{
    struct mkcs *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->dead && !s->shutdown)
            pthread_cond_wait(&s->wake, &s->lock);
        struct mkcs_conn *c = s->dead;
        if (!c)
            break; /* shutdown with nothing left */
        s->dead = c->next_dead;
        pthread_mutex_unlock(&s->lock);

        pthread_mutex_lock(&c->lock);
        c->stopped = 1; /* readers stop looking at the informers */
        pthread_mutex_unlock(&c->lock);
        for (size_t i = 0; i < c->n; i++) {
            kw_informer_stop(c->infs[i]);
            c->infs[i] = NULL;
        }
        LOG_D(LOGGER, "connection stopped", "cluster", c->name);
        mkcs_put(c);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- kubeconfig sources ----------------------------------------------------- */

struct load {
    char *data; /* kubeconfig bytes (malloc'd) */
    size_t len;
    char err[400]; /* when data is NULL: the reason, after "load client config failed: " */
};

static void load_clear(struct load *l)
{
    if (l->data)
        OPENSSL_cleanse(l->data, l->len); /* credentials */
    free(l->data);
    l->data = NULL;
}

static void load_secret(struct mkcs *s, struct kcache *secrets, const char *name, struct load *l)
{
    json_t *sec = secrets ? kcache_get_nsname(secrets, s->secret_namespace, name) : NULL;
    const char *b64 = jx_str(jx_getv(sec, "data"), KSEC_KEY);
    const char *unreadable = jx_str(sec, KSEC_ERROR_FIELD);
    int rc;
    if (!sec)
        snprintf(l->err, sizeof(l->err), "Secret \"%.200s\" not found", name);
    else if (unreadable)
        snprintf(l->err, sizeof(l->err), "%s", unreadable);
    else if (!b64)
        snprintf(l->err, sizeof(l->err), "key \"kubeconfig\" not found in secret \"%.200s\"", name);
    else if ((rc = kcfg_base64_decode(b64, &l->data, &l->len)) != 0)
        snprintf(l->err, sizeof(l->err), "key \"kubeconfig\" in secret \"%.200s\" is %s", name,
                 rc == MK_ERR_NOMEM ? "too large to decode" : "not valid base64");
    json_decref(sec);
}

/* Go-style error text: "no such file or directory". */
static void errno_text(int e, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", strerror(e));
    if (out[0] >= 'A' && out[0] <= 'Z')
        out[0] = (char)(out[0] - 'A' + 'a');
}

static int has_dotdot(const char *p)
{
    for (const char *seg = p; *seg;) {
        size_t n = strcspn(seg, "/");
        if (n == 2 && seg[0] == '.' && seg[1] == '.')
            return 1;
        seg += n;
        seg += *seg == '/';
    }
    return 0;
}

static void load_path(struct mkcs *s, const char *path, struct load *l)
{
    char dir[PATH_MAX], real[PATH_MAX], why[128];
    if (!s->kubeconfig_dir) {
        snprintf(l->err, sizeof(l->err),
                 "Path kubeconfigs are not allowed (no kubeconfig folder is configured)");
        return;
    }
    if (path[0] != '/') {
        snprintf(l->err, sizeof(l->err), "path must be absolute");
        return;
    }
    if (has_dotdot(path)) {
        snprintf(l->err, sizeof(l->err), "path contains \"..\"");
        return;
    }
    if (!realpath(s->kubeconfig_dir, dir)) {
        errno_text(errno, why, sizeof(why));
        snprintf(l->err, sizeof(l->err), "kubeconfig folder %.200s: %s", s->kubeconfig_dir, why);
        return;
    }
    if (!realpath(path, real)) {
        errno_text(errno, why, sizeof(why));
        snprintf(l->err, sizeof(l->err), "open %.200s: %s", path, why);
        return;
    }
    size_t n = strlen(dir);
    if (!(strcmp(dir, "/") == 0 || (strncmp(real, dir, n) == 0 && real[n] == '/'))) {
        snprintf(l->err, sizeof(l->err), "kubeconfig path is not under the allowed prefix");
        return;
    }
    int rc = fio_read_file(real, KCFG_MAX_BYTES, &l->data, &l->len);
    if (rc == MK_ERR_TOOBIG) {
        snprintf(l->err, sizeof(l->err), "%.200s: kubeconfig is larger than %d bytes", path,
                 KCFG_MAX_BYTES);
    } else if (rc) {
        errno_text(rc == MK_ERR_IO ? errno : ENOMEM, why, sizeof(why));
        snprintf(l->err, sizeof(l->err), "open %.200s: %s", path, why);
    }
}

static void load_source(struct mkcs *s, const json_t *mkc, struct kcache *secrets, struct load *l)
{
    const char *type, *loc;
    if (mkq_kubeconfig_source(mkc, &type, &loc) != 0) {
        if (jx_get(mkc, "spec.clusterSource.clusterProfileRef") ||
            jx_get(mkc, "spec.clusterProfileRef"))
            snprintf(l->err, sizeof(l->err), "clusterProfileRef is not supported");
        else
            snprintf(l->err, sizeof(l->err), "no kubeConfig location is set");
    } else if (strcmp(type, "Secret") == 0) {
        load_secret(s, secrets, loc, l);
    } else if (strcmp(type, "Path") == 0) {
        load_path(s, loc, l);
    } else {
        snprintf(l->err, sizeof(l->err), "unsupported locationType \"%.100s\"", type);
    }
}

/* ---- cluster state ---------------------------------------------------------- */

static void cluster_free(void *p)
{
    struct cluster *cl = p;
    free(cl->name);
    free(cl);
}

/* The current state of cl; updates its first-loss time. Caller holds the
 * set's lock. `detail` (optional) gets the message without the attempt
 * count, which is what on_state transitions compare. */
static void cluster_state(struct cluster *cl, struct mkcs_state *out, char *detail, size_t dlen)
{
    char d[512] = "";
    long attempts = 0;
    long long lost = 0;
    memset(out, 0, sizeof(*out));
    out->known = 1;
    if (cl->conn) {
        int connected = 1, have_err = 0, over_limit = 0;
        for (size_t i = 0; i < cl->conn->n; i++) {
            struct kw_stats st;
            if (cl->conn->wud[i].w->metadata_only)
                continue; /* optional (mkcs_watch) */
            kw_informer_stats(cl->conn->infs[i], &st);
            if (st.connected && st.synced)
                continue;
            connected = 0;
            if (st.disconnected_since_ms && (!lost || st.disconnected_since_ms < lost))
                lost = st.disconnected_since_ms;
            if (!have_err && st.last_error[0]) {
                have_err = 1;
                snprintf(d, sizeof(d), "%s", st.last_error);
                attempts = st.reconnects;
                over_limit = st.over_limit;
            }
        }
        if (connected) {
            cl->lost_ms = 0;
            snprintf(out->reason, sizeof(out->reason), "Active");
            snprintf(d, sizeof(d), "Connected");
            snprintf(out->message, sizeof(out->message), "Connected");
        } else {
            if (!have_err)
                snprintf(d, sizeof(d), "connecting");
            snprintf(out->reason, sizeof(out->reason), "%s",
                     over_limit ? MKCS_REASON_LIMIT : "ClientConnectionFailed");
            snprintf(out->message, sizeof(out->message), "%.440s; connection attempts: %ld", d,
                     attempts);
        }
        out->connected = connected;
    } else {
        snprintf(out->reason, sizeof(out->reason), "%s", cl->reason);
        snprintf(out->message, sizeof(out->message), "%s", cl->message);
        snprintf(d, sizeof(d), "%s", cl->message);
        if (strcmp(cl->reason, "ClientConnectionFailed") == 0) {
            snprintf(out->message, sizeof(out->message), "%.440s; connection attempts: %ld",
                     cl->message, cl->build_failures);
        }
    }
    /* Informer errors quote worker text cut to fit: whole characters only. */
    buf_utf8_sanitize(out->message, sizeof(out->message));
    buf_utf8_sanitize(d, sizeof(d));
    if (!out->connected && !cl->lost_ms)
        cl->lost_ms = lost ? lost : clk_now_ms();
    out->disconnected_since_ms = cl->lost_ms;
    if (detail)
        snprintf(detail, dlen, "%s", d);
}

/* Names of clusters whose reported state changed, to call on_state with
 * once the lock is released. */
struct changes {
    char **names;
    size_t n, cap;
};

static void changes_add(struct changes *ch, const char *name)
{
    if (ch->n == ch->cap) {
        size_t cap = ch->cap ? ch->cap * 2 : 8;
        char **p = realloc(ch->names, cap * sizeof(*p));
        if (!p)
            return; /* the monitor reports it again on its next tick */
        ch->names = p;
        ch->cap = cap;
    }
    if ((ch->names[ch->n] = strdup(name)))
        ch->n++;
}

static void changes_fire(struct mkcs *s, struct changes *ch)
{
    for (size_t i = 0; i < ch->n; i++) {
        if (s->on_state)
            s->on_state(ch->names[i], s->ud);
        free(ch->names[i]);
    }
    free(ch->names);
    memset(ch, 0, sizeof(*ch));
}

static int check_one(const char *key, void *val, void *ud)
{
    struct cluster *cl = val;
    struct changes *ch = ud;
    struct mkcs_state st;
    char detail[512];
    (void)key;
    cluster_state(cl, &st, detail, sizeof(detail));
    if (cl->notified && cl->n_connected == st.connected && !strcmp(cl->n_reason, st.reason) &&
        !strcmp(cl->n_detail, detail))
        return 0;
    LOG_I(LOGGER, st.connected ? "cluster connected" : "cluster not connected", "cluster", cl->name,
          "reason", st.reason, "message", st.message);
    cl->notified = 1;
    cl->n_connected = st.connected;
    snprintf(cl->n_reason, sizeof(cl->n_reason), "%s", st.reason);
    snprintf(cl->n_detail, sizeof(cl->n_detail), "%s", detail);
    changes_add(ch, cl->name);
    return 0;
}

static void *monitor_main(void *arg)
{
    struct mkcs *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->shutdown) {
        long long until = clk_now_ms() + s->monitor_ms;
        while (!s->shutdown && !clk_cond_wait_until(&s->wake, &s->lock, until))
            ;
        if (s->shutdown)
            break;
        struct changes ch = {0};
        smap_foreach(s->clusters, check_one, &ch);
        pthread_mutex_unlock(&s->lock);
        changes_fire(s, &ch);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- sync ------------------------------------------------------------------- */

static int sha256(const char *data, size_t len, unsigned char out[HASH_LEN])
{
    unsigned int n = 0;
    return EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) == 1 && n == HASH_LEN ? 0 : -1;
}

/* No connection: reason and "load client config failed: ..." message. */
static void set_error(struct mkcs *s, struct cluster *cl, const char *reason, const char *fmt,
                      const char *err)
{
    struct mkcs_state st;
    if (cl->conn) {
        cluster_state(cl, &st, NULL, 0); /* record a loss before dropping the connection */
        retire(s, cl->conn);
        cl->conn = NULL;
    }
    snprintf(cl->reason, sizeof(cl->reason), "%s", reason);
    snprintf(cl->message, sizeof(cl->message), fmt, err);
}

static void sync_one(struct mkcs *s, struct cluster *cl, const json_t *mkc, struct kcache *secrets)
{
    struct load l = {0};
    unsigned char h[HASH_LEN];
    struct kcfg *cfg = NULL;
    char err[400];

    load_source(s, mkc, secrets, &l);
    if (!l.data) {
        cl->has_hash = 0;
        set_error(s, cl, "BadKubeConfig", "load client config failed: %s", l.err);
        goto out;
    }
    if (sha256(l.data, l.len, h) != 0) {
        set_error(s, cl, "BadKubeConfig", "load client config failed: %s", "cannot hash");
        goto out;
    }
    if (cl->has_hash && memcmp(h, cl->hash, HASH_LEN) == 0)
        goto out; /* unchanged: keep the connection or the refusal */

    int rc = kcfg_parse(l.data, l.len, NULL, KCFG_UNTRUSTED, NULL, &cfg, err, sizeof(err));
    if (rc < 0) {
        set_error(s, cl, rc == MK_ERR_REFUSED ? "InsecureKubeConfig" : "BadKubeConfig",
                  "load client config failed: %s", err);
        memcpy(cl->hash, h, HASH_LEN);
        cl->has_hash = 1;
        goto out;
    }
    struct mkcs_conn *c = conn_start(s, cl->name, cfg, err, sizeof(err));
    if (!c) {
        cl->has_hash = 0; /* retried on the next sync */
        cl->build_failures++;
        set_error(s, cl, "ClientConnectionFailed", "%s", err);
        LOG_W(LOGGER, "cannot start a connection", "cluster", cl->name, "error", err);
        goto out;
    }
    LOG_I(LOGGER, cl->conn ? "kubeconfig changed, reconnecting" : "connecting", "cluster", cl->name,
          "server", kc_server(c->client));
    if (cl->conn) {
        struct mkcs_state st;
        cluster_state(cl, &st, NULL, 0); /* the first-loss time survives the restart */
        retire(s, cl->conn);
    }
    cl->conn = c;
    memcpy(cl->hash, h, HASH_LEN);
    cl->has_hash = 1;
    cl->build_failures = 0;
    cl->reason[0] = cl->message[0] = '\0';
out:
    load_clear(&l);
}

struct sweep {
    struct cluster **v;
    size_t n;
};

static int sweep_one(const char *key, void *val, void *ud)
{
    struct cluster *cl = val;
    struct sweep *sw = ud;
    (void)key;
    if (!cl->seen)
        sw->v[sw->n++] = cl;
    return 0;
}

static int unmark(const char *key, void *val, void *ud)
{
    (void)key, (void)ud;
    ((struct cluster *)val)->seen = 0;
    return 0;
}

void mkcs_sync(struct mkcs *s, struct kcache *mkclusters, struct kcache *secrets)
{
    struct changes ch = {0};
    if (!mkclusters || !kcache_synced(mkclusters) || (secrets && !kcache_synced(secrets)))
        return;
    json_t *list = kcache_list(mkclusters, NULL);
    if (!list)
        return;
    pthread_mutex_lock(&s->lock);
    smap_foreach(s->clusters, unmark, NULL);
    size_t i;
    json_t *mkc;
    json_array_foreach(list, i, mkc)
    {
        const char *name = jx_str(mkc, "metadata.name");
        if (!name || !*name)
            continue;
        struct cluster *cl = smap_get(s->clusters, name);
        if (!cl) {
            if (!(cl = calloc(1, sizeof(*cl))) || !(cl->name = strdup(name)) ||
                smap_put(s->clusters, name, cl, NULL) != 0) {
                if (cl)
                    free(cl->name);
                free(cl);
                LOG_E(LOGGER, "out of memory", "cluster", name);
                continue;
            }
        }
        cl->seen = 1;
        sync_one(s, cl, mkc, secrets);
    }
    /* Removed clusters (on allocation failure, the next sync removes them). */
    struct sweep sw = {calloc(smap_len(s->clusters) + 1, sizeof(struct cluster *)), 0};
    if (sw.v) {
        smap_foreach(s->clusters, sweep_one, &sw);
        for (size_t k = 0; k < sw.n; k++) {
            struct cluster *cl = sw.v[k];
            LOG_I(LOGGER, "cluster removed", "cluster", cl->name);
            retire(s, cl->conn);
            smap_del(s->clusters, cl->name);
            changes_add(&ch, cl->name);
            cluster_free(cl);
        }
        free(sw.v);
    }
    smap_foreach(s->clusters, check_one, &ch);
    pthread_mutex_unlock(&s->lock);
    json_decref(list);
    changes_fire(s, &ch);
}

/* ---- queries ---------------------------------------------------------------- */

int mkcs_state(struct mkcs *s, const char *cluster, struct mkcs_state *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->lock);
    struct cluster *cl = cluster ? smap_get(s->clusters, cluster) : NULL;
    if (cl)
        cluster_state(cl, out, NULL, 0);
    pthread_mutex_unlock(&s->lock);
    return cl ? 0 : -1;
}

struct mkcs_conn *mkcs_get(struct mkcs *s, const char *cluster)
{
    struct mkcs_conn *c = NULL;
    pthread_mutex_lock(&s->lock);
    struct cluster *cl = cluster ? smap_get(s->clusters, cluster) : NULL;
    if (cl && cl->conn) {
        c = cl->conn;
        __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
    }
    pthread_mutex_unlock(&s->lock);
    return c;
}

static int add_name(const char *key, void *val, void *ud)
{
    (void)val;
    return json_array_append_new(ud, json_string(key)) != 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

json_t *mkcs_names(struct mkcs *s)
{
    json_t *arr = json_array(), *sorted = NULL;
    if (!arr)
        return NULL;
    pthread_mutex_lock(&s->lock);
    int bad = smap_foreach(s->clusters, add_name, arr);
    pthread_mutex_unlock(&s->lock);
    size_t n = json_array_size(arr);
    json_t **v = calloc(n ? n : 1, sizeof(*v));
    if (bad || !v || !(sorted = json_array()))
        goto out;
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, n, sizeof(*v), cmp_names);
    for (size_t i = 0; i < n; i++)
        if (json_array_append(sorted, v[i]) != 0) {
            json_decref(sorted);
            sorted = NULL;
            break;
        }
out:
    free(v);
    json_decref(arr);
    return sorted;
}

/* ---- life cycle ------------------------------------------------------------- */

static char *dup_opt(const char *p, int *oom)
{
    char *d = p ? strdup(p) : NULL;
    if (p && !d)
        *oom = 1;
    return d;
}

static void free_strings(struct mkcs *s)
{
    free(s->secret_namespace);
    free(s->kubeconfig_dir);
    free((char *)s->client.user_agent);
    for (size_t i = 0; i < s->n; i++) {
        free((char *)s->w[i].res.group);
        free((char *)s->w[i].res.version);
        free((char *)s->w[i].res.resource);
        free((char *)s->w[i].label_selector);
    }
}

struct mkcs *mkcs_new(const struct mkcs_options *o, char *err, size_t errlen)
{
    struct mkcs *s;
    int oom = 0;
    if (!o || !o->secret_namespace || !*o->secret_namespace) {
        errf(err, errlen, MK_ERR_INVAL, "secret_namespace is required");
        return NULL;
    }
    if (o->nwatches > MKCS_MAX_WATCHES || (o->nwatches && !o->watches)) {
        errf(err, errlen, MK_ERR_INVAL, "at most %d watches", MKCS_MAX_WATCHES);
        return NULL;
    }
    for (size_t i = 0; i < o->nwatches; i++) {
        const struct kc_resource *r = &o->watches[i].res;
        if (!r->group || !r->version || !*r->version || !r->resource || !*r->resource) {
            errf(err, errlen, MK_ERR_INVAL, "watch %zu: group, version and resource are required",
                 i);
            return NULL;
        }
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->secret_namespace = dup_opt(o->secret_namespace, &oom);
    s->kubeconfig_dir =
        dup_opt(o->kubeconfig_dir && *o->kubeconfig_dir ? o->kubeconfig_dir : NULL, &oom);
    s->n = o->nwatches;
    for (size_t i = 0; i < s->n; i++) {
        s->w[i] = o->watches[i];
        s->w[i].res.group = dup_opt(o->watches[i].res.group, &oom);
        s->w[i].res.version = dup_opt(o->watches[i].res.version, &oom);
        s->w[i].res.resource = dup_opt(o->watches[i].res.resource, &oom);
        s->w[i].label_selector = dup_opt(o->watches[i].label_selector, &oom);
    }
    if (o->client) {
        s->client = *o->client;
        s->client.user_agent = dup_opt(o->client->user_agent, &oom);
        s->client.accept = s->client.accept_stream = NULL; /* metadata_only decides */
    }
    if (!s->client.max_body || s->client.max_body > MKCS_MAX_PAGE_BYTES)
        s->client.max_body = MKCS_MAX_PAGE_BYTES;
    s->has_client_opts = 1;
    s->max_objects = o->max_objects ? o->max_objects : MKCS_DEFAULT_MAX_OBJECTS;
    s->on_state = o->on_state;
    s->ud = o->ud;
    s->backoff_initial_ms = o->backoff_initial_ms; /* 0: the informer's defaults */
    s->backoff_max_ms = o->backoff_max_ms;
    s->monitor_ms = o->monitor_interval_ms > 0 ? o->monitor_interval_ms : MONITOR_MS;
    s->clusters = smap_new();
    if (oom || !s->clusters) {
        errf(err, errlen, MK_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (clk_cond_init(&s->wake) < 0) {
        errf(err, errlen, MK_ERR_INVAL, "cannot create a condition variable");
        goto fail;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->has_reaper = pthread_create(&s->reaper, NULL, reaper_main, s) == 0;
    s->has_monitor = s->has_reaper && pthread_create(&s->monitor, NULL, monitor_main, s) == 0;
    if (!s->has_monitor) {
        errf(err, errlen, MK_ERR_INVAL, "cannot start threads");
        mkcs_free(s);
        return NULL;
    }
    return s;
fail:
    smap_free(s->clusters, NULL);
    free_strings(s);
    free(s);
    return NULL;
}

static int retire_all(const char *key, void *val, void *ud)
{
    struct cluster *cl = val;
    (void)key;
    retire(ud, cl->conn);
    cl->conn = NULL;
    return 0;
}

void mkcs_free(struct mkcs *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->shutdown = 1;
    smap_foreach(s->clusters, retire_all, s);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    if (s->has_monitor)
        pthread_join(s->monitor, NULL);
    if (s->has_reaper)
        pthread_join(s->reaper, NULL); /* it drains the queue first */
    /* Without a reaper (start-up failure) nothing was ever retired. */
    smap_free(s->clusters, cluster_free);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free_strings(s);
    free(s);
}
