/* The informer against a scripted HTTPS API server. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_cache.h"
#include "kube_client.h"
#include "kube_watch.h"
#include "log.h"
#include "support/test_https.h"

static const struct kc_resource JOBS = {"batch", "v1", "jobs", 1};

/* A hang detector, not a timing requirement: kw_informer_stop must not wait
 * for what it interrupts (a watch the fake server holds open, with a
 * timeoutSeconds of 300 or more; a backoff of 10 * this), and anything far
 * shorter than those passes, however loaded the machine. */
#define STOP_HANG_MS 60000LL

#define JOB(name, rv)                                                                              \
    "{\"kind\":\"Job\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\","                  \
    "\"resourceVersion\":\"" rv "\"}}"
#define LIST(rv, items)                                                                            \
    "{\"kind\":\"JobList\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"resourceVersion\":\"" rv    \
    "\"},\"items\":[" items "]}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"
#define STATUS(code, reason, msg)                                                                  \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"" msg         \
    "\",\"reason\":\"" reason "\",\"code\":" #code "}"
#define BOOKMARK(rv)                                                                               \
    EV("BOOKMARK", "{\"kind\":\"Job\",\"metadata\":{\"resourceVersion\":\"" rv "\"}}")

/* ---- a fake API server: scripted list and watch answers ------------------- */

struct fake {
    pthread_mutex_t lock;
    /* List answers in order; then list_body (NULL = 500). */
    const char *lists[8];
    int nlists, list_i;
    const char *list_body;
    /* Watch answers in order; then a live stream that stays open. */
    struct th_response watches[8];
    int nwatches, watch_i;
    int watch_gone; /* then every watch answers 410 Gone */
    /* What was asked. */
    int list_reqs, watch_reqs;
    long list_limit[64];
    long long list_at[64];
    char watch_query[8][512];
    char list_target[512];
};

static int fake_handler(const struct th_request *req, struct th_response *resp, void *ud)
{
    struct fake *f = ud;
    pthread_mutex_lock(&f->lock);
    if (strstr(req->query, "watch=1")) {
        if (f->watch_reqs < 8)
            snprintf(f->watch_query[f->watch_reqs], sizeof(f->watch_query[0]), "%s%s%s", req->path,
                     "?", req->query);
        f->watch_reqs++;
        if (f->watch_i < f->nwatches) {
            *resp = f->watches[f->watch_i++];
        } else if (f->watch_gone) {
            resp->status = 410;
            resp->body = STATUS(410, "Expired", "too old resource version");
        } else {
            resp->live = 1;
        }
    } else {
        if (f->list_reqs < 64) {
            f->list_at[f->list_reqs] = th_now_ms();
            const char *l = strstr(req->query, "limit=");
            f->list_limit[f->list_reqs] = l ? atol(l + 6) : 0;
        }
        f->list_reqs++;
        snprintf(f->list_target, sizeof(f->list_target), "%s", req->target);
        const char *body = f->list_i < f->nlists ? f->lists[f->list_i++] : f->list_body;
        if (body && body[0] != '!') {
            resp->body = body;
        } else {
            resp->status = 500;
            resp->body = STATUS(500, "InternalError", "etcd is sad");
        }
    }
    pthread_mutex_unlock(&f->lock);
    return 0;
}

/* Cache handler records, read from the test thread. */
struct rec {
    pthread_mutex_t lock;
    int adds, updates, deletes, resyncs;
    char log[4096];
};

static const char *rv_of(json_t *o)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
}

static void rec_add(struct rec *r, const char *what, const char *key, json_t *o)
{
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof(r->log) - n, "%s %s@%s;", what, key, rv_of(o));
}

static void on_add(const char *key, json_t *o, void *ud)
{
    struct rec *r = ud;
    pthread_mutex_lock(&r->lock);
    r->adds++;
    rec_add(r, "add", key, o);
    pthread_mutex_unlock(&r->lock);
}

static void on_update(const char *key, json_t *old, json_t *o, void *ud)
{
    struct rec *r = ud;
    pthread_mutex_lock(&r->lock);
    if (old == o) {
        r->resyncs++;
    } else {
        r->updates++;
        rec_add(r, "update", key, o);
    }
    pthread_mutex_unlock(&r->lock);
}

static void on_delete(const char *key, json_t *o, void *ud)
{
    struct rec *r = ud;
    pthread_mutex_lock(&r->lock);
    r->deletes++;
    rec_add(r, "delete", key, o);
    pthread_mutex_unlock(&r->lock);
}

struct env {
    struct th_server *s;
    struct kcfg *cfg;
    struct kc_client *c;
    struct kcache *cache;
    struct fake f;
    struct rec r;
    struct kw_informer *inf;
};

static const struct kc_options FAST = {.qps = -1, .timeout_ms = 5000};

static void env_up(struct env *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->f.lock, NULL);
    pthread_mutex_init(&e->r.lock, NULL);
    e->s = th_start(NULL);
    assert_non_null(e->s);
    th_set_handler(e->s, fake_handler, &e->f);
    e->cfg = calloc(1, sizeof(*e->cfg));
    assert_non_null(e->cfg);
    e->cfg->server = strdup(th_url(e->s));
    e->cfg->ca_pem = th_read_data("test-ca.pem", &e->cfg->ca_len);
    assert_non_null(e->cfg->ca_pem);
    e->cfg->token = strdup("tok");
    pthread_mutex_init(&e->cfg->lock, NULL);
    char err[256] = "";
    e->c = kc_new(e->cfg, &FAST, err, sizeof(err));
    if (!e->c)
        fail_msg("kc_new: %s", err);
    e->cache = kcache_new();
    struct kcache_handlers h = {on_add, on_update, on_delete, &e->r};
    assert_int_equal(kcache_add_handlers(e->cache, &h), 0);
}

static void start(struct env *e, const char *ns, const char *labels, const struct kw_options *o)
{
    struct kw_options def = {.resync_period_ms = -1, .backoff_initial_ms = 20};
    e->inf = kw_informer_start(e->c, &JOBS, ns, labels, e->cache, o ? o : &def);
    assert_non_null(e->inf);
}

static void env_down(struct env *e)
{
    kw_informer_stop(e->inf);
    kcache_free(e->cache);
    kc_free(e->c);
    th_free(e->s);
    free(e->cfg->server);
    free(e->cfg->ca_pem);
    free(e->cfg->token);
    pthread_mutex_destroy(&e->cfg->lock);
    free(e->cfg);
    pthread_mutex_destroy(&e->f.lock);
    pthread_mutex_destroy(&e->r.lock);
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

static struct kw_stats stats(struct env *e)
{
    struct kw_stats st;
    kw_informer_stats(e->inf, &st);
    return st;
}

static int locked_int(pthread_mutex_t *m, const int *v)
{
    pthread_mutex_lock(m);
    int x = *v;
    pthread_mutex_unlock(m);
    return x;
}
#define FAKE(e, field) locked_int(&(e)->f.lock, &(e)->f.field)
#define REC(e, field)  locked_int(&(e)->r.lock, &(e)->r.field)

static const char *cached_rv(struct env *e, const char *key, char *out)
{
    json_t *o = kcache_get(e->cache, key);
    snprintf(out, 32, "%s", o ? rv_of(o) : "absent");
    json_decref(o);
    return out;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_list_then_watch(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", JOB("a", "5") "," JOB("b", "6"));
    struct kw_options o = {.resync_period_ms = -1, .field_selector = "status.successful=0"};
    start(&e, "ns", "app=x,tier in (a b)", &o);

    WAIT_FOR(kw_informer_synced(e.inf), 5000);
    assert_true(kcache_synced(e.cache));
    assert_int_equal(kcache_len(e.cache), 2);
    assert_int_equal(REC(&e, adds), 2);
    assert_true(kw_informer_connected(e.inf));
    pthread_mutex_lock(&e.f.lock);
    assert_non_null(strstr(e.f.list_target, "/apis/batch/v1/namespaces/ns/jobs?"));
    assert_non_null(strstr(e.f.list_target, "labelSelector=app%3Dx%2Ctier%20in%20%28a%20b%29"));
    pthread_mutex_unlock(&e.f.lock);

    /* The watch starts from the list's resourceVersion, with bookmarks. */
    WAIT_FOR(FAKE(&e, watch_reqs) >= 1, 5000);
    pthread_mutex_lock(&e.f.lock);
    const char *q = e.f.watch_query[0];
    const char *prefix = "/apis/batch/v1/namespaces/ns/jobs?watch=1&allowWatchBookmarks=true&"
                         "resourceVersion=10&timeoutSeconds=";
    assert_memory_equal(q, prefix, strlen(prefix));
    long timeout = strtol(q + strlen(prefix), NULL, 10);
    assert_true(timeout >= 300 && timeout <= 600);
    assert_non_null(strstr(q, "&labelSelector=app%3Dx%2Ctier%20in%20%28a%20b%29"));
    assert_non_null(strstr(q, "&fieldSelector=status.successful%3D0"));
    pthread_mutex_unlock(&e.f.lock);

    /* Events, one split across two writes. */
    th_live_send(e.s, EV("ADDED", JOB("c", "11")) "{\"type\":\"MODIFIED\",\"obj");
    th_live_send(e.s, "ect\":" JOB("a", "12") "}\n" EV("DELETED", JOB("b", "13")) BOOKMARK("20"));
    WAIT_FOR(stats(&e).events >= 4, 5000);
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/a", rv), "12");
    assert_string_equal(cached_rv(&e, "ns/b", rv), "absent");
    assert_string_equal(cached_rv(&e, "ns/c", rv), "11");
    pthread_mutex_lock(&e.r.lock);
    assert_string_equal(e.r.log,
                        "add ns/a@5;add ns/b@6;add ns/c@11;update ns/a@12;delete ns/b@13;");
    pthread_mutex_unlock(&e.r.lock);
    struct kw_stats st = stats(&e);
    assert_string_equal(st.resource_version, "20");
    assert_int_equal(st.relists, 1);
    assert_int_equal(st.reconnects, 0);
    assert_int_equal(st.watches, 1);
    assert_true(st.connected);
    assert_int_equal(st.disconnected_since_ms, 0);

    /* Stop returns with the watch still open: the fake server holds it
     * until env_down, and its timeoutSeconds is at least 300. */
    long long t0 = th_now_ms();
    kw_informer_stop(e.inf);
    e.inf = NULL;
    assert_true(th_now_ms() - t0 < STOP_HANG_MS);
    assert_int_equal(kcache_len(e.cache), 2); /* the cache keeps its content */
    env_down(&e);
}

/* The informer thread's transform: counts, keeps metadata only. */
static int slim_calls;
static json_t *slim(json_t *obj, void *ud)
{
    (void)ud;
    __atomic_add_fetch(&slim_calls, 1, __ATOMIC_SEQ_CST);
    json_t *out = json_pack("{s:O,s:b}", "metadata", json_object_get(obj, "metadata"), "slim", 1);
    json_decref(obj);
    return out;
}

/* A paged first list is compacted page by page, once per item. */
static void test_paged_list_transformed(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    slim_calls = 0;
    kcache_set_transform(e.cache, slim, NULL);
    e.f.lists[0] = "{\"kind\":\"JobList\",\"metadata\":{\"resourceVersion\":\"9\","
                   "\"continue\":\"p2\"},\"items\":[" JOB("a", "5") "," JOB("b", "6") "]}";
    e.f.lists[1] = LIST("10", JOB("c", "7"));
    e.f.nlists = 2;
    e.f.list_body = "!";
    struct kw_options o = {.resync_period_ms = -1, .page_size = 2};
    start(&e, "ns", NULL, &o);
    WAIT_FOR(kw_informer_synced(e.inf), 5000);
    assert_int_equal(FAKE(&e, list_reqs), 2);
    pthread_mutex_lock(&e.f.lock);
    assert_non_null(strstr(e.f.list_target, "continue=p2"));
    pthread_mutex_unlock(&e.f.lock);
    assert_int_equal(kcache_len(e.cache), 3);
    assert_int_equal(REC(&e, adds), 3);
    assert_int_equal(__atomic_load_n(&slim_calls, __ATOMIC_SEQ_CST), 3);
    json_t *a = kcache_get(e.cache, "ns/a");
    assert_true(json_is_true(json_object_get(a, "slim")));
    json_decref(a);
    /* the watch goes on from the last page's resourceVersion */
    WAIT_FOR(FAKE(&e, watch_reqs) >= 1, 5000);
    pthread_mutex_lock(&e.f.lock);
    assert_non_null(strstr(e.f.watch_query[0], "resourceVersion=10&"));
    pthread_mutex_unlock(&e.f.lock);
    env_down(&e);
}

static void test_relist_on_410_event(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.lists[0] = LIST("10", JOB("a", "5") "," JOB("b", "6") "," JOB("same", "4"));
    e.f.lists[1] = LIST("30", JOB("b", "7") "," JOB("c", "8") "," JOB("same", "4"));
    e.f.nlists = 2;
    static const char *const chunks[] = {
        EV("ERROR", STATUS(410, "Expired", "too old resource version: 10 (25)"))};
    e.f.watches[0] = (struct th_response){.chunks = chunks, .nchunks = 1, .hold_ms = 5000};
    e.f.nwatches = 1;
    start(&e, NULL, NULL, NULL);

    WAIT_FOR(stats(&e).relists >= 2, 5000);
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/a", rv), "absent");
    assert_string_equal(cached_rv(&e, "ns/b", rv), "7");
    assert_string_equal(cached_rv(&e, "ns/c", rv), "8");
    pthread_mutex_lock(&e.r.lock);
    assert_string_equal(e.r.log, "add ns/a@5;add ns/b@6;add ns/same@4;"
                                 "update ns/b@7;add ns/c@8;delete ns/a@5;");
    pthread_mutex_unlock(&e.r.lock);
    /* The new watch starts from the new list's version. */
    WAIT_FOR(FAKE(&e, watch_reqs) >= 2, 5000);
    pthread_mutex_lock(&e.f.lock);
    assert_non_null(strstr(e.f.watch_query[0], "&resourceVersion=10&"));
    assert_non_null(strstr(e.f.watch_query[1], "&resourceVersion=30&"));
    pthread_mutex_unlock(&e.f.lock);
    struct kw_stats st = stats(&e);
    assert_int_equal(st.reconnects, 0); /* 410 is routine, not a failure */
    assert_true(st.connected);
    env_down(&e);
}

static void test_relist_on_http_410(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.lists[0] = LIST("10", JOB("a", "5"));
    e.f.nlists = 1;
    e.f.list_body = LIST("40", JOB("a", "9"));
    e.f.watches[0] = (struct th_response){.status = 410, .body = STATUS(410, "Gone", "gone")};
    e.f.nwatches = 1;
    start(&e, NULL, NULL, NULL);
    WAIT_FOR(FAKE(&e, watch_reqs) >= 2, 5000);
    struct kw_stats st = stats(&e);
    assert_int_equal(st.relists, 2);
    assert_int_equal(st.reconnects, 0);
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/a", rv), "9");
    pthread_mutex_lock(&e.f.lock);
    assert_non_null(strstr(e.f.watch_query[1], "&resourceVersion=40&"));
    pthread_mutex_unlock(&e.f.lock);
    env_down(&e);
}

static void test_stream_end_rewatches_from_last_rv(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", JOB("a", "5"));
    static const char *const chunks[] = {EV("MODIFIED", JOB("a", "11")), BOOKMARK("15")};
    e.f.watches[0] = (struct th_response){.chunks = chunks, .nchunks = 2, .chunk_delay_ms = 10};
    e.f.nwatches = 1;
    struct kw_options o = {.resync_period_ms = -1, .watch_timeout_s = 42};
    start(&e, "ns", NULL, &o);
    WAIT_FOR(FAKE(&e, watch_reqs) >= 2, 5000);
    pthread_mutex_lock(&e.f.lock);
    assert_string_equal(e.f.watch_query[0], "/apis/batch/v1/namespaces/ns/jobs?watch=1&"
                                            "allowWatchBookmarks=true&resourceVersion=10&"
                                            "timeoutSeconds=42");
    assert_string_equal(e.f.watch_query[1], "/apis/batch/v1/namespaces/ns/jobs?watch=1&"
                                            "allowWatchBookmarks=true&resourceVersion=15&"
                                            "timeoutSeconds=42");
    pthread_mutex_unlock(&e.f.lock);
    struct kw_stats st = stats(&e);
    assert_int_equal(st.relists, 1); /* no relist for a stream that just ended */
    assert_int_equal(st.reconnects, 0);
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/a", rv), "11");
    env_down(&e);
}

static void test_errors_back_off_then_recover(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    struct kw_options o = {
        .resync_period_ms = -1, .backoff_initial_ms = 100, .backoff_max_ms = 400};
    start(&e, NULL, NULL, &o);
    /* The server fails: not connected, the error is kept, retries back off. */
    WAIT_FOR(stats(&e).reconnects >= 3, 5000);
    struct kw_stats st = stats(&e);
    assert_false(st.connected);
    assert_false(st.synced);
    assert_false(kw_informer_synced(e.inf));
    assert_true(st.disconnected_since_ms > 0);
    if (!strstr(st.last_error, "HTTP 500"))
        fail_msg("last_error: %s", st.last_error);
    assert_non_null(strstr(st.last_error, "etcd is sad"));
    pthread_mutex_lock(&e.f.lock);
    e.f.list_body = LIST("10", JOB("a", "5"));
    pthread_mutex_unlock(&e.f.lock);
    WAIT_FOR(kw_informer_synced(e.inf), 5000);
    st = stats(&e);
    assert_true(st.connected);
    assert_string_equal(st.last_error, "");
    assert_int_equal(st.disconnected_since_ms, 0);
    /* Jittered waits in [b/2, b] with b = 100, 200, 400, 400 ... */
    pthread_mutex_lock(&e.f.lock);
    int n = e.f.list_reqs;
    long long *at = e.f.list_at;
    assert_true(n >= 4);
    assert_true(at[1] - at[0] >= 45);
    assert_true(at[2] - at[1] >= 95);
    assert_true(at[3] - at[2] >= 195);
    for (int i = 4; i < n && i < 64; i++)
        assert_true(at[i] - at[i - 1] >= 195 && at[i] - at[i - 1] < 1500); /* capped */
    pthread_mutex_unlock(&e.f.lock);
    env_down(&e);
}

static void test_watch_error_relists(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.lists[0] = LIST("10", JOB("a", "5"));
    e.f.nlists = 1;
    e.f.list_body = LIST("20", JOB("a", "6"));
    e.f.watches[0] = (struct th_response){.status = 500, .body = STATUS(500, "InternalError", "x")};
    static const char *const garbage[] = {EV("ADDED", JOB("g", "12")) "garbage\n"};
    e.f.watches[1] = (struct th_response){.chunks = garbage, .nchunks = 1, .hold_ms = 5000};
    e.f.nwatches = 2;
    start(&e, NULL, NULL, NULL);
    /* 500 on the watch, then a stream with a malformed line: each is a
     * failure followed by a relist. */
    WAIT_FOR(FAKE(&e, watch_reqs) >= 3, 5000);
    struct kw_stats st = stats(&e);
    assert_int_equal(st.reconnects, 2);
    assert_int_equal(st.relists, 3);
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/a", rv), "6");
    /* The event before the garbage was applied, then the relist removed it. */
    assert_string_equal(cached_rv(&e, "ns/g", rv), "absent");
    assert_int_equal(REC(&e, deletes), 1);
    env_down(&e);
}

static void test_empty_stream_backs_off(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", "");
    for (int i = 0; i < 3; i++)
        e.f.watches[i] = (struct th_response){.body = ""};
    e.f.nwatches = 3;
    struct kw_options o = {.resync_period_ms = -1, .backoff_initial_ms = 100};
    start(&e, NULL, NULL, &o);
    WAIT_FOR(FAKE(&e, watch_reqs) >= 4, 5000);
    /* Three immediate closes: three failures, not a hot loop. */
    struct kw_stats st = stats(&e);
    assert_int_equal(st.reconnects, 3);
    assert_true(st.relists >= 4);
    env_down(&e);
}

static void test_bad_list_is_a_failure(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.lists[0] = "{\"kind\":\"JobList\",\"metadata\":{},\"items\":[" JOB("a", "5") "]}";
    e.f.nlists = 1;
    e.f.list_body = LIST("10", JOB("b", "5"));
    start(&e, NULL, NULL, NULL);
    WAIT_FOR(kw_informer_synced(e.inf), 5000);
    /* A list without a resourceVersion to watch from is not applied. */
    struct kw_stats st = stats(&e);
    assert_int_equal(st.reconnects, 1);
    assert_int_equal(st.relists, 1);
    pthread_mutex_lock(&e.r.lock);
    assert_string_equal(e.r.log, "add ns/b@5;");
    pthread_mutex_unlock(&e.r.lock);
    env_down(&e);
}

static void test_stop_during_backoff(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    /* a backoff far beyond the hang detector: stop must cut it short */
    struct kw_options o = {.resync_period_ms = 60000, .backoff_initial_ms = 10 * STOP_HANG_MS};
    start(&e, NULL, NULL, &o);
    WAIT_FOR(stats(&e).reconnects >= 1, 5000);
    long long t0 = th_now_ms();
    kw_informer_stop(e.inf);
    e.inf = NULL;
    assert_true(th_now_ms() - t0 < STOP_HANG_MS);
    assert_int_equal(FAKE(&e, list_reqs), 1);
    env_down(&e);
}

static void test_periodic_resync(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", JOB("a", "5") "," JOB("b", "6"));
    struct kw_options o = {.resync_period_ms = 50};
    start(&e, NULL, NULL, &o);
    WAIT_FOR(REC(&e, resyncs) >= 4, 5000);
    assert_int_equal(REC(&e, updates), 0);
    assert_int_equal(stats(&e).relists, 1); /* a resync does not call the server */
    env_down(&e);
}

/* Threads of this process named `name` (/proc/self/task/N/comm). */
static int threads_named(const char *name)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));) {
        char path[300], comm[64] = "";
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(comm, sizeof(comm), f))
            comm[strcspn(comm, "\n")] = '\0';
        if (f)
            fclose(f);
        n += strcmp(comm, name) == 0;
    }
    closedir(d);
    return n;
}

/* Every informer of the process resyncs on one shared thread (named
 * kw-resync): three that resync, one such thread, each of them resynced;
 * stopping two leaves the third resyncing. */
static void test_resync_shares_one_thread(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", JOB("a", "5") "," JOB("b", "6"));
    struct kw_options o = {.resync_period_ms = 50};
    struct kcache *more[2] = {kcache_new(), kcache_new()};
    struct rec recs[2] = {{.lock = PTHREAD_MUTEX_INITIALIZER}, {.lock = PTHREAD_MUTEX_INITIALIZER}};
    struct kw_informer *infs[2];
    start(&e, NULL, NULL, &o);
    for (int i = 0; i < 2; i++) {
        assert_non_null(more[i]);
        struct kcache_handlers h = {on_add, on_update, on_delete, &recs[i]};
        assert_int_equal(kcache_add_handlers(more[i], &h), 0);
        infs[i] = kw_informer_start(e.c, &JOBS, NULL, NULL, more[i], &o);
        assert_non_null(infs[i]);
    }
    assert_int_equal(threads_named("kw-resync"), 1);
    WAIT_FOR(REC(&e, resyncs) >= 4, 5000); /* two objects, twice each */
    WAIT_FOR(locked_int(&recs[0].lock, &recs[0].resyncs) >= 4, 5000);
    WAIT_FOR(locked_int(&recs[1].lock, &recs[1].resyncs) >= 4, 5000);
    for (int i = 0; i < 2; i++) {
        kw_informer_stop(infs[i]);
        kcache_free(more[i]);
    }
    int seen = REC(&e, resyncs);
    WAIT_FOR(REC(&e, resyncs) >= seen + 4, 5000); /* the first one goes on */
    env_down(&e);
}

/* A server that answers every watch with 410 Gone: relists back off (as
 * client-go's reflector) instead of a list+watch round every few ms. */
static void test_gone_relists_back_off(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", JOB("a", "5"));
    e.f.watch_gone = 1;
    struct kw_options o = {.resync_period_ms = -1}; /* the default backoff */
    start(&e, NULL, NULL, &o);
    sleep_ms(3000);
    int lists = FAKE(&e, list_reqs);
    /* 0.4-0.8 s, 0.8-1.6 s, 1.6-3.2 s ... between rounds: at most 4 lists
     * in 3 s; without backoff it was dozens. */
    assert_true(lists >= 2);
    assert_true(lists < 10);
    struct kw_stats st = stats(&e);
    assert_int_equal(st.reconnects, 0); /* still no failure */
    env_down(&e);
}

/* A watch event over max_line ends the watch as an over-limit failure. */
static void test_oversized_watch_event(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", JOB("a", "5"));
    static char big[2048];
    snprintf(big, sizeof(big),
             "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\","
             "\"namespace\":\"ns\",\"resourceVersion\":\"11\"},\"pad\":\"%01500d\"}}\n",
             0);
    static const char *chunks[1];
    chunks[0] = big;
    e.f.watches[0] = (struct th_response){.chunks = chunks, .nchunks = 1, .hold_ms = 5000};
    e.f.nwatches = 1;
    struct kw_options o = {.resync_period_ms = -1, .backoff_initial_ms = 20, .max_line = 1024};
    start(&e, NULL, NULL, &o);
    WAIT_FOR(stats(&e).reconnects >= 1, 5000);
    struct kw_stats st = stats(&e);
    assert_true(st.over_limit);
    assert_non_null(strstr(st.last_error, "longer than 1024 bytes"));
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/b", rv), "absent");
    /* The next (live) watch works again and clears the flag. */
    WAIT_FOR(stats(&e).connected, 5000);
    assert_false(stats(&e).over_limit);
    env_down(&e);
}

/* A list page over the client's max_body is asked again with half the
 * limit; when one object alone is too big the list fails over-limit. */
static void test_list_page_too_big(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    kc_free(e.c);
    struct kc_options small = FAST;
    small.max_body = 4096;
    char err[256] = "";
    e.c = kc_new(e.cfg, &small, err, sizeof(err));
    assert_non_null(e.c);
    static char body[8192];
    snprintf(body, sizeof(body),
             LIST("10", "{\"kind\":\"Job\",\"metadata\":{\"name\":\"a\",\"namespace\":"
                        "\"ns\",\"resourceVersion\":\"5\"},\"pad\":\"%05000d\"}"),
             0);
    e.f.list_body = body;
    struct kw_options o = {.resync_period_ms = -1, .backoff_initial_ms = 20, .page_size = 4};
    start(&e, NULL, NULL, &o);
    WAIT_FOR(stats(&e).reconnects >= 1, 5000);
    struct kw_stats st = stats(&e);
    assert_true(st.over_limit);
    assert_false(st.synced);
    assert_non_null(strstr(st.last_error, "exceeds 4096 bytes"));
    pthread_mutex_lock(&e.f.lock);
    assert_true(e.f.list_reqs >= 3);
    assert_int_equal(e.f.list_limit[0], 4);
    assert_int_equal(e.f.list_limit[1], 2);
    assert_int_equal(e.f.list_limit[2], 1);
    pthread_mutex_unlock(&e.f.lock);
    env_down(&e);
}

/* The cache's object cap: a list or a watch that would pass it fails. */
static void test_object_cap(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    kcache_set_max_objects(e.cache, 2);
    e.f.lists[0] = LIST("10", JOB("a", "5") "," JOB("b", "6") "," JOB("c", "7"));
    e.f.nlists = 1;
    e.f.list_body = LIST("20", JOB("a", "5") "," JOB("b", "6"));
    static const char *const chunks[] = {EV("MODIFIED", JOB("a", "21"))
                                             EV("ADDED", JOB("c", "22"))};
    e.f.watches[0] = (struct th_response){.chunks = chunks, .nchunks = 1, .hold_ms = 5000};
    e.f.nwatches = 1;
    start(&e, NULL, NULL, NULL);
    WAIT_FOR(stats(&e).reconnects >= 1, 5000);
    struct kw_stats st = stats(&e);
    assert_true(st.over_limit);
    assert_non_null(strstr(st.last_error, "more than 2 objects"));
    assert_int_equal(kcache_len(e.cache), 0);
    /* The second list fits; the watch's third object does not. */
    WAIT_FOR(stats(&e).reconnects >= 2, 5000);
    st = stats(&e);
    assert_true(st.over_limit);
    assert_non_null(strstr(st.last_error, "watch: more than 2 objects"));
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/a", rv), "21");
    assert_string_equal(cached_rv(&e, "ns/c", rv), "absent");
    assert_true(kcache_len(e.cache) <= 2);
    env_down(&e);
}

/* kw_informer_stop's contract: prompt with the watch open, no handler called,
 * the cache keeps its content; NULL is a no-op. */
static void test_stop_keeps_cache(void **state)
{
    (void)state;
    struct env e;
    env_up(&e);
    e.f.list_body = LIST("10", JOB("a", "5") "," JOB("b", "6"));
    start(&e, NULL, NULL, NULL);
    WAIT_FOR(stats(&e).synced && FAKE(&e, watch_reqs) >= 1, 5000);
    assert_int_equal(REC(&e, adds), 2);
    long long t0 = th_now_ms(); /* the watch stays open on the fake server's side */
    kw_informer_stop(e.inf);
    e.inf = NULL;
    assert_true(th_now_ms() - t0 < STOP_HANG_MS);
    kw_informer_stop(NULL);
    assert_int_equal(kcache_len(e.cache), 2);
    char rv[32];
    assert_string_equal(cached_rv(&e, "ns/a", rv), "5");
    assert_string_equal(cached_rv(&e, "ns/b", rv), "6");
    assert_int_equal(REC(&e, adds), 2);
    assert_int_equal(REC(&e, updates), 0);
    assert_int_equal(REC(&e, deletes), 0);
    env_down(&e);
}

static int quiet(void **state)
{
    (void)state;
    log_set_level(LOG_ERROR);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_then_watch),
        cmocka_unit_test(test_paged_list_transformed),
        cmocka_unit_test(test_relist_on_410_event),
        cmocka_unit_test(test_relist_on_http_410),
        cmocka_unit_test(test_stream_end_rewatches_from_last_rv),
        cmocka_unit_test(test_errors_back_off_then_recover),
        cmocka_unit_test(test_watch_error_relists),
        cmocka_unit_test(test_empty_stream_backs_off),
        cmocka_unit_test(test_bad_list_is_a_failure),
        cmocka_unit_test(test_stop_during_backoff),
        cmocka_unit_test(test_periodic_resync),
        cmocka_unit_test(test_resync_shares_one_thread),
        cmocka_unit_test(test_gone_relists_back_off),
        cmocka_unit_test(test_oversized_watch_event),
        cmocka_unit_test(test_list_page_too_big),
        cmocka_unit_test(test_object_cap),
        cmocka_unit_test(test_stop_keeps_cache),
    };
    return cmocka_run_group_tests_name("kube_informer", tests, quiet, NULL);
}
