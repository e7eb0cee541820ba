/* Connections to workers (clusters.h) against scripted HTTPS API servers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clusters.h"
#include "kube_cache.h"
#include "support/test_https.h"

#define SECRET_NS "mkueue-system"
#define ORIGIN    "kueue.x-k8s.io/multikueue-origin=multikueue"
/* kc_escape(ORIGIN) */
#define ORIGIN_Q "labelSelector=kueue.x-k8s.io%2Fmultikueue-origin%3Dmultikueue"

#define NS_LIST                                                                                    \
    "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"}," \
    "\"items\":[{\"metadata\":{\"name\":\"default\",\"resourceVersion\":\"5\"}}]}"
#define LQ_LIST                                                                                    \
    "{\"kind\":\"LocalQueueList\",\"metadata\":{\"resourceVersion\":\"11\"},\"items\":[{"          \
    "\"metadata\":{\"name\":\"lq\",\"namespace\":\"team\",\"resourceVersion\":\"7\"}}]}"
#define STATUS_500                                                                                 \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"etcd is "     \
    "sad\",\"reason\":\"InternalError\",\"code\":500}"

/* ---- a fake worker API server ------------------------------------------------ */

struct fake {
    pthread_mutex_t lock;
    int fail;               /* answer 500 to everything */
    const char *fail_body;  /* instead of STATUS_500 */
    const char *watch_body; /* a watch answer instead of a quiet open stream */
    int lists, watches;
    char ns_query[2][512]; /* [0] list, [1] watch */
    char lq_query[2][512];
    char secrets_accept[2][256]; /* metadata-only watch: Accept of [0] list, [1] watch */
    int secrets_calls;
};

static int fake_handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    struct fake *f = ud;
    int watch = strstr(req->query, "watch=1") != NULL;
    int lq = strstr(req->path, "/localqueues") != NULL;
    pthread_mutex_lock(&f->lock);
    if (strstr(req->path, "/secrets")) { /* no RBAC for it on this worker */
        const char *a = th_req_header(req, "Accept");
        snprintf(f->secrets_accept[watch], sizeof(f->secrets_accept[0]), "%s", a ? a : "");
        f->secrets_calls++;
        resp->status = 403;
        resp->body = STATUS_500;
        pthread_mutex_unlock(&f->lock);
        return 0;
    }
    snprintf(lq ? f->lq_query[watch] : f->ns_query[watch], sizeof(f->ns_query[0]), "%s",
             req->target);
    if (f->fail) {
        resp->status = 500;
        resp->body = f->fail_body ? f->fail_body : STATUS_500;
    } else if (watch) {
        f->watches++;
        if (f->watch_body)
            resp->body = f->watch_body;
        else
            resp->live = 1; /* an open watch with nothing to say */
    } else {
        f->lists++;
        resp->body = lq ? LQ_LIST : NS_LIST;
    }
    pthread_mutex_unlock(&f->lock);
    return 0;
}

struct worker {
    struct th_server *srv;
    struct fake f;
};

static void worker_up(struct worker *w, int fail)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->f.lock, NULL);
    w->f.fail = fail;
    w->srv = th_start(NULL);
    assert_non_null(w->srv);
    th_set_handler(w->srv, fake_handler, &w->f);
}

static void worker_down(struct worker *w)
{
    th_free(w->srv);
    pthread_mutex_destroy(&w->f.lock);
}

static int fake_int(struct worker *w, const int *v)
{
    pthread_mutex_lock(&w->f.lock);
    int x = *v;
    pthread_mutex_unlock(&w->f.lock);
    return x;
}

static void set_fail(struct worker *w, int fail)
{
    pthread_mutex_lock(&w->f.lock);
    w->f.fail = fail;
    pthread_mutex_unlock(&w->f.lock);
}

/* ---- objects ---------------------------------------------------------------- */

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    assert_non_null(out);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

/* Kubeconfig YAML for server url; user_extra goes into the user mapping. */
static char *kubeconfig(const char *url, const char *token, const char *user_extra)
{
    char *ca = th_read_data("test-ca.pem", NULL), *ca64, *y = NULL;
    assert_non_null(ca);
    ca64 = b64(ca);
    assert_true(asprintf(&y,
                         "clusters:\n"
                         "- name: c\n"
                         "  cluster:\n"
                         "    server: %s\n"
                         "    certificate-authority-data: %s\n"
                         "users:\n"
                         "- name: u\n"
                         "  user:\n"
                         "    token: %s\n"
                         "%s"
                         "contexts:\n"
                         "- name: x\n"
                         "  context: {cluster: c, user: u}\n"
                         "current-context: x\n",
                         url, ca64, token, user_extra ? user_extra : "") > 0);
    free(ca);
    free(ca64);
    return y;
}

/* Upserts Secret <SECRET_NS>/name with data.<key> = base64(value), or no
 * data at all when key is NULL. */
static void put_secret(struct kcache *c, const char *name, const char *key, const char *value)
{
    json_t *o = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", name, "namespace", SECRET_NS,
                          "resourceVersion", "1");
    assert_non_null(o);
    if (key && value) {
        char *v = b64(value);
        json_object_set_new(o, "data", json_pack("{s:s}", key, v));
        free(v);
    }
    assert_int_equal(kcache_upsert(c, o), 0);
}

static void put_secret_raw_data(struct kcache *c, const char *name, const char *data)
{
    json_t *o = json_pack("{s:{s:s,s:s},s:{s:s}}", "metadata", "name", name, "namespace", SECRET_NS,
                          "data", "kubeconfig", data);
    assert_int_equal(kcache_upsert(c, o), 0);
}

/* A MultiKueueCluster in the v1beta2 layout, or v1beta1 when old_layout. */
static void put_mkc(struct kcache *c, const char *name, const char *type, const char *location,
                    int old_layout)
{
    json_t *src = json_pack("{s:s,s:s}", "locationType", type, "location", location);
    json_t *spec = old_layout ? json_pack("{s:o}", "kubeConfig", src)
                              : json_pack("{s:{s:o}}", "clusterSource", "kubeConfig", src);
    json_t *o = json_pack("{s:{s:s},s:o}", "metadata", "name", name, "spec", spec);
    assert_non_null(o);
    assert_int_equal(kcache_upsert(c, o), 0);
}

static void del_obj(struct kcache *c, const char *ns, const char *name)
{
    json_t *o = ns ? json_pack("{s:{s:s,s:s}}", "metadata", "name", name, "namespace", ns)
                   : json_pack("{s:{s:s}}", "metadata", "name", name);
    assert_int_equal(kcache_remove(c, o), 1);
    json_decref(o);
}

/* ---- the set under test -------------------------------------------------------- */

struct rec {
    pthread_mutex_t lock;
    int states;     /* on_state calls */
    int last_known; /* mkcs_state as seen from inside on_state */
    int last_connected;
    char events[2048]; /* "cluster key[-];" from on_event */
    struct mkcs *s;
};

static void on_state(const char *cluster, void *ud)
{
    struct rec *r = ud;
    struct mkcs_state st;
    mkcs_state(r->s, cluster, &st); /* allowed from the callback */
    pthread_mutex_lock(&r->lock);
    r->states++;
    r->last_known = st.known;
    r->last_connected = st.connected;
    pthread_mutex_unlock(&r->lock);
}

static void on_event(const char *cluster, const char *key, json_t *obj, int deleted, void *ud)
{
    struct rec *r = ud;
    (void)obj;
    pthread_mutex_lock(&r->lock);
    size_t n = strlen(r->events);
    snprintf(r->events + n, sizeof(r->events) - n, "%s %s%s;", cluster, key, deleted ? "-" : "");
    pthread_mutex_unlock(&r->lock);
}

/* The LocalQueue watch's transform: marks what it stores. */
static json_t *mark(json_t *obj, void *ud)
{
    if (!ud) /* the watch's ud; without it nothing is marked and the test fails */
        return obj;
    json_t *out = json_copy(obj);
    json_decref(obj);
    if (out)
        json_object_set_new(out, "marked", json_true());
    return out;
}

static int rec_states(struct rec *r)
{
    pthread_mutex_lock(&r->lock);
    int n = r->states;
    pthread_mutex_unlock(&r->lock);
    return n;
}

static int rec_last_connected(struct rec *r)
{
    pthread_mutex_lock(&r->lock);
    int c = r->last_connected;
    pthread_mutex_unlock(&r->lock);
    return c;
}

static const struct kc_options CLIENT = {.qps = -1, .timeout_ms = 3000, .connect_timeout_ms = 2000};

struct env {
    struct rec r;
    struct mkcs *s;
    struct kcache *mkcs, *secrets;
    struct mkcs_watch w[3];
    size_t nwatches; /* 2, or 3 with the optional metadata-only watch */
};

static void env_up_n(struct env *e, const char *kubeconfig_dir, size_t nwatches)
{
    char err[256] = "";
    memset(e, 0, sizeof(*e));
    e->nwatches = nwatches;
    e->w[2] = (struct mkcs_watch){{"", "v1", "secrets", 1}, NULL, NULL, NULL, NULL, 1};
    pthread_mutex_init(&e->r.lock, NULL);
    e->w[0] = (struct mkcs_watch){{"", "v1", "namespaces", 0}, NULL, on_event, &e->r, NULL, 0};
    e->w[1] = (struct mkcs_watch){
        {"kueue.x-k8s.io", "v1beta2", "localqueues", 1}, ORIGIN, on_event, &e->r, mark, 0};
    struct mkcs_options o = {.secret_namespace = SECRET_NS,
                             .kubeconfig_dir = kubeconfig_dir,
                             .watches = e->w,
                             .nwatches = e->nwatches,
                             .client = &CLIENT,
                             .on_state = on_state,
                             .ud = &e->r,
                             .backoff_initial_ms = 40,
                             .backoff_max_ms = 160,
                             .monitor_interval_ms = 20};
    e->s = mkcs_new(&o, err, sizeof(err));
    if (!e->s)
        fail_msg("mkcs_new: %s", err);
    e->r.s = e->s;
    e->mkcs = kcache_new();
    e->secrets = kcache_new();
    assert_non_null(e->mkcs);
    assert_non_null(e->secrets);
    kcache_set_synced(e->mkcs, 1);
    kcache_set_synced(e->secrets, 1);
}

static void env_up(struct env *e, const char *kubeconfig_dir)
{
    env_up_n(e, kubeconfig_dir, 2);
}

static void env_down(struct env *e)
{
    mkcs_free(e->s);
    kcache_free(e->mkcs);
    kcache_free(e->secrets);
    pthread_mutex_destroy(&e->r.lock);
}

static void sync_(struct env *e)
{
    mkcs_sync(e->s, e->mkcs, e->secrets);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#define WAIT_FOR(cond, ms)                                                                         \
    do {                                                                                           \
        long long until_ = th_now_ms() + (ms);                                                     \
        while (!(cond) && th_now_ms() < until_)                                                    \
            sleep_ms(5);                                                                           \
        if (!(cond))                                                                               \
            fail_msg("timed out waiting for %s", #cond);                                           \
    } while (0)

static struct mkcs_state state(struct env *e, const char *cluster)
{
    struct mkcs_state st;
    mkcs_state(e->s, cluster, &st);
    return st;
}

static int connected(struct env *e, const char *cluster)
{
    return state(e, cluster).connected;
}

static int message_has(struct env *e, const char *cluster, const char *want)
{
    return strstr(state(e, cluster).message, want) != NULL;
}

static long attempts(struct env *e, const char *cluster)
{
    struct mkcs_state st = state(e, cluster);
    const char *p = strstr(st.message, "; connection attempts: ");
    return p ? strtol(p + strlen("; connection attempts: "), NULL, 10) : -1;
}

static void expect_state(struct env *e, const char *cluster, const char *reason,
                         const char *message)
{
    struct mkcs_state st = state(e, cluster);
    assert_int_equal(st.known, 1);
    assert_int_equal(st.connected, 0);
    assert_string_equal(st.reason, reason);
    assert_string_equal(st.message, message);
    assert_true(st.disconnected_since_ms > 0);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_connects_and_fills_caches(void **unused)
{
    (void)unused;
    struct worker w;
    struct env e;
    worker_up(&w, 0);
    env_up(&e, NULL);
    char *kc = kubeconfig(th_url(w.srv), "tok", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    put_mkc(e.mkcs, "worker-1", "Secret", "w1", 0);

    /* Not synced caches: nothing happens yet. */
    kcache_set_synced(e.secrets, 0);
    sync_(&e);
    assert_int_equal(state(&e, "worker-1").known, 0);
    kcache_set_synced(e.secrets, 1);

    sync_(&e);
    assert_int_equal(state(&e, "worker-1").known, 1);
    WAIT_FOR(connected(&e, "worker-1"), 5000);
    struct mkcs_state st = state(&e, "worker-1");
    assert_string_equal(st.reason, "Active");
    assert_string_equal(st.message, "Connected");
    assert_int_equal(st.disconnected_since_ms, 0);
    WAIT_FOR(fake_int(&w, &w.f.watches) >= 2, 5000);

    /* The label selector goes to both the list and the watch of its watch only. */
    pthread_mutex_lock(&w.f.lock);
    assert_non_null(strstr(w.f.lq_query[0], "/apis/kueue.x-k8s.io/v1beta2/localqueues?"));
    assert_non_null(strstr(w.f.lq_query[0], ORIGIN_Q));
    assert_non_null(strstr(w.f.lq_query[1], "watch=1"));
    assert_non_null(strstr(w.f.lq_query[1], ORIGIN_Q));
    assert_non_null(strstr(w.f.ns_query[0], "/api/v1/namespaces"));
    assert_null(strstr(w.f.ns_query[0], "labelSelector"));
    assert_null(strstr(w.f.ns_query[1], "labelSelector"));
    pthread_mutex_unlock(&w.f.lock);

    struct mkcs_conn *c = mkcs_get(e.s, "worker-1");
    assert_non_null(c);
    assert_string_equal(mkcs_conn_name(c), "worker-1");
    assert_non_null(mkcs_conn_client(c));
    assert_true(mkcs_conn_connected(c));
    json_t *ns = kcache_get(mkcs_conn_cache(c, 0), "default");
    json_t *lq = kcache_get(mkcs_conn_cache(c, 1), "team/lq");
    assert_non_null(ns);
    assert_non_null(lq);
    /* each watch's own transform */
    assert_true(json_is_true(json_object_get(lq, "marked")));
    assert_null(json_object_get(ns, "marked"));
    json_decref(ns);
    json_decref(lq);
    assert_null(mkcs_conn_cache(c, 2));

    /* Handlers got the cluster name; on_state saw the connection. */
    pthread_mutex_lock(&e.r.lock);
    assert_non_null(strstr(e.r.events, "worker-1 default;"));
    assert_non_null(strstr(e.r.events, "worker-1 team/lq;"));
    pthread_mutex_unlock(&e.r.lock);
    WAIT_FOR(rec_last_connected(&e.r) == 1, 2000); /* reported by the monitor */
    pthread_mutex_lock(&e.r.lock);
    assert_int_equal(e.r.last_known, 1);
    assert_true(e.r.states >= 2); /* connecting, then connected */
    pthread_mutex_unlock(&e.r.lock);

    /* Unchanged kubeconfig (a new resourceVersion of the same bytes): kept. */
    int states = rec_states(&e.r);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    sync_(&e);
    struct mkcs_conn *same = mkcs_get(e.s, "worker-1");
    assert_ptr_equal(same, c);
    mkcs_put(same);
    sleep_ms(100);
    assert_int_equal(rec_states(&e.r), states);
    assert_int_equal(fake_int(&w, &w.f.lists), 2);

    json_t *names = mkcs_names(e.s);
    assert_int_equal(json_array_size(names), 1);
    assert_string_equal(json_string_value(json_array_get(names, 0)), "worker-1");
    json_decref(names);

    /* Unknown clusters. */
    struct mkcs_state none;
    assert_int_equal(mkcs_state(e.s, "nope", &none), -1);
    assert_int_equal(none.known, 0);
    assert_null(mkcs_get(e.s, "nope"));

    /* A connection held across mkcs_free stays readable until put. */
    env_down(&e);
    assert_int_equal(mkcs_conn_connected(c), 0);
    assert_int_equal(kcache_len(mkcs_conn_cache(c, 1)), 1);
    mkcs_put(c);
    worker_down(&w);
    free(kc);
}

/* A metadata_only watch (issue 13's preflight): PartialObjectMetadata asked
 * for its list and its watch, and optional: refused by the worker (no RBAC),
 * it leaves the worker connected. */
static void test_metadata_only_watch_is_optional(void **unused)
{
    (void)unused;
    struct worker w;
    struct env e;
    worker_up(&w, 0);
    env_up_n(&e, NULL, 3);
    char *kc = kubeconfig(th_url(w.srv), "tok", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    put_mkc(e.mkcs, "worker-1", "Secret", "w1", 0);
    sync_(&e);
    WAIT_FOR(connected(&e, "worker-1"), 5000);
    WAIT_FOR(fake_int(&w, &w.f.secrets_calls) >= 2, 5000); /* refused, and tried again */
    assert_true(connected(&e, "worker-1"));
    assert_string_equal(state(&e, "worker-1").message, "Connected");
    struct mkcs_conn *c = mkcs_get(e.s, "worker-1");
    assert_true(mkcs_conn_connected(c));
    assert_false(kcache_synced(mkcs_conn_cache(c, 2))); /* readers see it is not there */
    mkcs_put(c);
    pthread_mutex_lock(&w.f.lock);
    assert_string_equal(w.f.secrets_accept[0], KC_ACCEPT_METADATA_LIST);
    pthread_mutex_unlock(&w.f.lock);
    env_down(&e);
    worker_down(&w);
    free(kc);
}

static void test_bad_kubeconfigs(void **unused)
{
    (void)unused;
    struct env e;
    env_up(&e, NULL);
    put_mkc(e.mkcs, "worker-1", "Secret", "w1", 1); /* v1beta1 layout */

    sync_(&e);
    expect_state(&e, "worker-1", "BadKubeConfig",
                 "load client config failed: Secret \"w1\" not found");
    assert_null(mkcs_get(e.s, "worker-1"));
    long long since = state(&e, "worker-1").disconnected_since_ms;
    int states = rec_states(&e.r);
    assert_true(states >= 1);

    /* No data, or another key. */
    put_secret(e.secrets, "w1", NULL, NULL);
    sync_(&e);
    expect_state(&e, "worker-1", "BadKubeConfig",
                 "load client config failed: key \"kubeconfig\" not found in secret \"w1\"");
    assert_int_equal(rec_states(&e.r), states + 1);
    put_secret(e.secrets, "w1", "config", "x");
    sync_(&e);
    expect_state(&e, "worker-1", "BadKubeConfig",
                 "load client config failed: key \"kubeconfig\" not found in secret \"w1\"");
    assert_int_equal(rec_states(&e.r), states + 1); /* same state: no call */

    put_secret_raw_data(e.secrets, "w1", "!!not base64");
    sync_(&e);
    expect_state(&e, "worker-1", "BadKubeConfig",
                 "load client config failed: key \"kubeconfig\" in secret \"w1\" is not valid "
                 "base64");

    /* Safety refusals name the field; malformed YAML is a bad config. */
    char *kc = kubeconfig("https://127.0.0.1:1", "t", "    exec: {command: /bin/sh}\n");
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    free(kc);
    sync_(&e);
    expect_state(&e, "worker-1", "InsecureKubeConfig",
                 "load client config failed: users[0].user.exec: exec credential plugins are not "
                 "allowed");
    kc = kubeconfig("http://127.0.0.1:1", "t", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    free(kc);
    sync_(&e);
    expect_state(&e, "worker-1", "InsecureKubeConfig",
                 "load client config failed: clusters[0].cluster.server: only https:// servers "
                 "are allowed");
    put_secret(e.secrets, "w1", "kubeconfig", "clusters: [unclosed\n");
    sync_(&e);
    assert_string_equal(state(&e, "worker-1").reason, "BadKubeConfig");
    assert_true(message_has(&e, "worker-1", "load client config failed: invalid YAML at line"));

    /* ClusterProfiles are not supported. */
    json_t *o = json_pack("{s:{s:s},s:{s:{s:{s:s}}}}", "metadata", "name", "worker-2", "spec",
                          "clusterSource", "clusterProfileRef", "name", "p");
    assert_int_equal(kcache_upsert(e.mkcs, o), 0);
    sync_(&e);
    expect_state(&e, "worker-2", "BadKubeConfig",
                 "load client config failed: clusterProfileRef is not supported");

    /* A cluster that never connected keeps its first-loss time. */
    assert_int_equal(state(&e, "worker-1").disconnected_since_ms, since);
    json_t *names = mkcs_names(e.s);
    assert_int_equal(json_array_size(names), 2);
    assert_string_equal(json_string_value(json_array_get(names, 0)), "worker-1");
    assert_string_equal(json_string_value(json_array_get(names, 1)), "worker-2");
    json_decref(names);
    env_down(&e);
}

static void test_secret_change_restarts(void **unused)
{
    (void)unused;
    struct worker a, b;
    struct env e;
    worker_up(&a, 0);
    worker_up(&b, 0);
    env_up(&e, NULL);
    char *kca = kubeconfig(th_url(a.srv), "tok", NULL);
    char *kcb = kubeconfig(th_url(b.srv), "tok", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kca);
    put_mkc(e.mkcs, "worker-1", "Secret", "w1", 0);
    sync_(&e);
    WAIT_FOR(connected(&e, "worker-1"), 5000);
    struct mkcs_conn *old = mkcs_get(e.s, "worker-1");
    assert_non_null(old);

    put_secret(e.secrets, "w1", "kubeconfig", kcb);
    sync_(&e);
    struct mkcs_conn *cur = mkcs_get(e.s, "worker-1");
    assert_non_null(cur);
    assert_ptr_not_equal(cur, old);
    WAIT_FOR(connected(&e, "worker-1"), 5000);
    assert_true(fake_int(&b, &b.f.lists) >= 2);
    assert_true(mkcs_conn_connected(cur));

    /* The old connection is stopped but still readable while held. */
    WAIT_FOR(!mkcs_conn_connected(old), 5000);
    assert_string_equal(mkcs_conn_name(old), "worker-1");
    assert_int_equal(kcache_len(mkcs_conn_cache(old, 0)), 1);
    mkcs_put(old);
    mkcs_put(cur);

    env_down(&e);
    worker_down(&a);
    worker_down(&b);
    free(kca);
    free(kcb);
}

static void test_removed_cluster(void **unused)
{
    (void)unused;
    struct worker w;
    struct env e;
    worker_up(&w, 0);
    env_up(&e, NULL);
    char *kc = kubeconfig(th_url(w.srv), "tok", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    put_mkc(e.mkcs, "worker-1", "Secret", "w1", 0);
    sync_(&e);
    WAIT_FOR(connected(&e, "worker-1"), 5000);
    struct mkcs_conn *c = mkcs_get(e.s, "worker-1");
    int states = rec_states(&e.r);

    del_obj(e.mkcs, NULL, "worker-1");
    sync_(&e);
    assert_int_equal(state(&e, "worker-1").known, 0);
    assert_null(mkcs_get(e.s, "worker-1"));
    assert_int_equal(rec_states(&e.r), states + 1);
    pthread_mutex_lock(&e.r.lock);
    assert_int_equal(e.r.last_known, 0); /* on_state runs after the removal */
    pthread_mutex_unlock(&e.r.lock);
    json_t *names = mkcs_names(e.s);
    assert_int_equal(json_array_size(names), 0);
    json_decref(names);
    WAIT_FOR(!mkcs_conn_connected(c), 5000);
    mkcs_put(c);

    env_down(&e);
    worker_down(&w);
    free(kc);
}

static void test_unreachable_worker(void **unused)
{
    (void)unused;
    struct worker w;
    struct env e;
    worker_up(&w, 1);
    env_up(&e, NULL);
    char *kc = kubeconfig(th_url(w.srv), "tok", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    put_mkc(e.mkcs, "worker-1", "Secret", "w1", 0);
    sync_(&e);

    /* Before any answer. */
    struct mkcs_state st = state(&e, "worker-1");
    long long since = st.disconnected_since_ms;
    assert_true(since > 0);
    assert_int_equal(st.connected, 0);

    WAIT_FOR(attempts(&e, "worker-1") >= 1, 5000);
    st = state(&e, "worker-1");
    assert_string_equal(st.reason, "ClientConnectionFailed");
    assert_non_null(strstr(st.message, "list: HTTP 500 InternalError: etcd is sad"));
    assert_int_equal(st.disconnected_since_ms, since);
    struct mkcs_conn *c = mkcs_get(e.s, "worker-1"); /* a client exists, not connected */
    assert_non_null(c);
    assert_int_equal(mkcs_conn_connected(c), 0);
    mkcs_put(c);

    /* Retries neither move the first-loss time nor call on_state each time. */
    sleep_ms(100); /* the monitor reports the first error */
    int states = rec_states(&e.r);
    long n = attempts(&e, "worker-1");
    WAIT_FOR(attempts(&e, "worker-1") >= n + 2, 5000);
    assert_int_equal(state(&e, "worker-1").disconnected_since_ms, since);
    assert_int_equal(rec_states(&e.r), states);

    /* A new kubeconfig while disconnected: the first-loss time is kept. */
    free(kc);
    kc = kubeconfig(th_url(w.srv), "other-token", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    sync_(&e);
    WAIT_FOR(attempts(&e, "worker-1") >= 1, 5000);
    assert_int_equal(state(&e, "worker-1").disconnected_since_ms, since);

    /* The worker comes back. */
    set_fail(&w, 0);
    WAIT_FOR(connected(&e, "worker-1"), 5000);
    st = state(&e, "worker-1");
    assert_string_equal(st.reason, "Active");
    assert_int_equal(st.disconnected_since_ms, 0);
    WAIT_FOR(rec_last_connected(&e.r) == 1, 2000);

    /* And goes away again: a new first-loss time, seen by the monitor. */
    long long before = th_now_ms();
    worker_down(&w);
    WAIT_FOR(!connected(&e, "worker-1"), 10000);
    since = state(&e, "worker-1").disconnected_since_ms;
    assert_true(since >= before);
    WAIT_FOR(rec_last_connected(&e.r) == 0, 2000);
    env_down(&e);
    free(kc);
}

/* A worker that sends an event over the cap is failed with mkueue's reason,
 * not parsed; a worker's error body that is not UTF-8 still reaches the
 * state's message, escaped (jansson would refuse it in a status). */
static void test_worker_limits_and_bad_text(void **unused)
{
    (void)unused;
    struct worker w;
    struct env e;
    worker_up(&w, 0);
    size_t n = MKCS_MAX_OBJECT_BYTES + 4096;
    char *huge = malloc(n + 1);
    assert_non_null(huge);
    int h =
        snprintf(huge, n, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"},\"p\":\"");
    memset(huge + h, 'x', n - (size_t)h - 4);
    memcpy(huge + n - 4, "\"}}\n", 4);
    huge[n] = '\0';
    pthread_mutex_lock(&w.f.lock);
    w.f.watch_body = huge;
    pthread_mutex_unlock(&w.f.lock);
    env_up(&e, NULL);
    char *kc = kubeconfig(th_url(w.srv), "tok", NULL);
    put_secret(e.secrets, "w1", "kubeconfig", kc);
    put_mkc(e.mkcs, "worker-1", "Secret", "w1", 0);
    sync_(&e);
    WAIT_FOR(strcmp(state(&e, "worker-1").reason, MKCS_REASON_LIMIT) == 0, 10000);
    assert_false(connected(&e, "worker-1"));
    assert_true(message_has(&e, "worker-1", "longer than 2097152 bytes"));

    pthread_mutex_lock(&w.f.lock);
    w.f.fail_body = "bad \xff\xfe gateway \xc3";
    w.f.fail = 1;
    pthread_mutex_unlock(&w.f.lock);
    WAIT_FOR(message_has(&e, "worker-1", "gateway"), 10000);
    struct mkcs_state st = state(&e, "worker-1");
    assert_string_equal(st.reason, "ClientConnectionFailed");
    json_t *js = json_string(st.message);
    assert_non_null(js);
    json_decref(js);
    assert_non_null(strstr(st.message, "bad \xef\xbf\xbd\xef\xbf\xbd gateway"));
    env_down(&e);
    worker_down(&w);
    free(kc);
    free(huge);
}

static void write_file(const char *path, const char *content)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(content, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

static void test_path_sources(void **unused)
{
    (void)unused;
    struct worker w;
    struct env e;
    char root[] = "/tmp/mkcs-test-XXXXXX", allowed[128], outside[128], p[256], q[256];
    assert_non_null(mkdtemp(root));
    snprintf(allowed, sizeof(allowed), "%s/allowed", root);
    snprintf(outside, sizeof(outside), "%s/outside", root);
    assert_int_equal(mkdir(allowed, 0700), 0);
    assert_int_equal(mkdir(outside, 0700), 0);
    worker_up(&w, 0);
    char *kc = kubeconfig(th_url(w.srv), "tok", NULL);
    snprintf(p, sizeof(p), "%s/w.yaml", allowed);
    write_file(p, kc);
    snprintf(p, sizeof(p), "%s/x.yaml", outside);
    write_file(p, kc);
    snprintf(p, sizeof(p), "%s/escape.yaml", allowed);
    snprintf(q, sizeof(q), "%s/x.yaml", outside);
    assert_int_equal(symlink(q, p), 0);
    snprintf(p, sizeof(p), "%s/inside.yaml", allowed);
    assert_int_equal(symlink("w.yaml", p), 0);

    /* The allowed folder is given through a symlink-free path and a trailing
     * slash: both resolve the same. */
    snprintf(p, sizeof(p), "%s/", allowed);
    env_up(&e, p);
    static const struct {
        const char *name, *file, *want;
    } cases[] = {
        {"ok", "/allowed/w.yaml", NULL},
        {"ok-link", "/allowed/inside.yaml", NULL},
        {"relative", "w.yaml", "load client config failed: path must be absolute"},
        {"dotdot", "/allowed/../outside/x.yaml", "load client config failed: path contains \"..\""},
        {"outside", "/outside/x.yaml",
         "load client config failed: kubeconfig path is not under the allowed prefix"},
        {"symlink", "/allowed/escape.yaml",
         "load client config failed: kubeconfig path is not under the allowed prefix"},
        {"missing", "/allowed/none.yaml", "load client config failed: open "},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    for (size_t i = 0; i < n; i++) {
        if (cases[i].file[0] == '/')
            snprintf(p, sizeof(p), "%s%s", root, cases[i].file);
        else
            snprintf(p, sizeof(p), "%s", cases[i].file);
        put_mkc(e.mkcs, cases[i].name, "Path", p, (int)(i % 2));
    }
    sync_(&e);
    WAIT_FOR(connected(&e, "ok") && connected(&e, "ok-link"), 5000);
    for (size_t i = 0; i < n; i++) {
        if (!cases[i].want)
            continue;
        struct mkcs_state st = state(&e, cases[i].name);
        assert_string_equal(st.reason, "BadKubeConfig");
        if (strncmp(st.message, cases[i].want, strlen(cases[i].want)) != 0)
            fail_msg("%s: got \"%s\"", cases[i].name, st.message);
    }
    assert_true(message_has(&e, "missing", "none.yaml: no such file or directory"));
    env_down(&e);

    /* Without a kubeconfig folder, Path sources are refused. */
    env_up(&e, NULL);
    snprintf(p, sizeof(p), "%s/allowed/w.yaml", root);
    put_mkc(e.mkcs, "ok", "Path", p, 0);
    sync_(&e);
    assert_string_equal(state(&e, "ok").reason, "BadKubeConfig");
    assert_true(message_has(&e, "ok", "Path kubeconfigs are not allowed"));
    env_down(&e);

    worker_down(&w);
    free(kc);
    const char *files[] = {
        "allowed/w.yaml", "allowed/escape.yaml", "allowed/inside.yaml", "outside/x.yaml", "allowed",
        "outside"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", root, files[i]);
        assert_int_equal(remove(p), 0);
    }
    assert_int_equal(rmdir(root), 0);
}

static void test_options(void **unused)
{
    (void)unused;
    char err[256] = "";
    struct mkcs_watch w[MKCS_MAX_WATCHES + 1];
    memset(w, 0, sizeof(w));
    struct mkcs_options o = {0};
    assert_null(mkcs_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "secret_namespace"));
    o.secret_namespace = SECRET_NS;
    o.watches = w;
    o.nwatches = MKCS_MAX_WATCHES + 1;
    assert_null(mkcs_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "at most"));
    o.nwatches = 1;
    assert_null(mkcs_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "watch 0"));
    mkcs_free(NULL);
    mkcs_put(NULL);

    /* No watches is valid (a connection with a client only). */
    o.nwatches = 0;
    struct mkcs *s = mkcs_new(&o, err, sizeof(err));
    assert_non_null(s);
    mkcs_sync(s, NULL, NULL); /* no cache: nothing to do */
    mkcs_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connects_and_fills_caches),
        cmocka_unit_test(test_metadata_only_watch_is_optional),
        cmocka_unit_test(test_bad_kubeconfigs),
        cmocka_unit_test(test_secret_change_restarts),
        cmocka_unit_test(test_removed_cluster),
        cmocka_unit_test(test_unreachable_worker),
        cmocka_unit_test(test_path_sources),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_worker_limits_and_bad_text),
    };
    return cmocka_run_group_tests_name("clusters", tests, NULL, NULL);
}
