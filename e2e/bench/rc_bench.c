/* rc_bench: measures mkueue-reconciler on the three local clusters, each
 * figure beside a floor taken in the same run (the same API calls made
 * directly by this tool, without the reconciler).
 *
 *   rc_bench --dir E2E_DIR --ns NS latency N RATE
 *       N jobs applied at RATE/s: apply -> remote job exists; then their
 *       pods finish: remote job Complete -> manager job Complete. p50/p99.
 *       Floor, at the same pace (dispatch K starts at K / RATE s in its own
 *       thread, so the bed carries as many at once as it does for mkueue):
 *       the dispatch's API calls in sequence (create job, create
 *       Workload, 2 status patches (check Pending, QuotaReserved), a remote
 *       Workload on every worker side by side, the nominations patch,
 *       clusterName patch, create the remote job; then, untimed,
 *       delete the losers, Ready patch), and for the
 *       status: GET remote job + PATCH manager status; then the dispatch's
 *       again with the copies in the workers' LocalQueue, waiting for a
 *       worker's Kueue to admit one before the clusterName (mkueue waits
 *       for that too, on a watch as here; floor_worker_admission).
 *   rc_bench --dir E2E_DIR --ns NS throughput M THREADS
 *       M jobs created by THREADS threads: jobs/s until every remote job
 *       exists; floor: the same calls made directly with THREADS threads,
 *       each waiting for a worker's Kueue to admit a copy (floora's).
 *   rc_bench --dir E2E_DIR --ns NS create COUNT PREFIX
 *       creates COUNT jobs (for RSS with many tracked jobs), no waiting.
 *
 * Options: --manager CTX (the manager's kubeconfig name under E2E_DIR/kubeconfig,
 * default manager), --workers W (worker-1..worker-W, default 2, at most
 * MAX_WORKERS), --no-floor (skip the floors: one mode measures them),
 * --floor-only (latency: the floors alone, after a --no-floor run),
 * --running (the pods never end: mkueue.test/result Running), --queue LQ.
 *
 * Output: one "key value" line per figure (milliseconds, jobs/s). */
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsonx.h"
#include "kube_cache.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_watch.h"
#include "log.h"
#include "strmap.h"

#define ORIGIN_SEL "kueue.x-k8s.io/multikueue-origin=multikueue"

static const struct kc_resource JOBS = {"batch", "v1", "jobs", 1};
static const struct kc_resource PODS = {"", "v1", "pods", 1};
static const struct kc_resource WLS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};

#define MAX_WORKERS 16

static struct kc_client *mgr, *wk[MAX_WORKERS];
static int nwk = 2;
static const char *NS = "bench";
static const char *QUEUE = "team-a";
static int RUNNING;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct smap *created, *remote_seen, *remote_done, *mgr_done;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (long)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

static void note(struct smap *m, const char *name)
{
    pthread_mutex_lock(&mu);
    if (!smap_get(m, name)) {
        double *t = malloc(sizeof(*t));
        *t = now_ms();
        if (smap_put(m, name, t, NULL) < 0)
            free(t);
    }
    pthread_mutex_unlock(&mu);
}

static double get_t(struct smap *m, const char *name)
{
    pthread_mutex_lock(&mu);
    double *t = smap_get(m, name);
    double v = t ? *t : -1;
    pthread_mutex_unlock(&mu);
    return v;
}

static int complete(const json_t *job)
{
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(job, "status.conditions"), i, c)
    {
        const char *t = jx_str(c, "type"), *s = jx_str(c, "status");
        if (t && s && strcmp(t, "Complete") == 0 && strcmp(s, "True") == 0)
            return 1;
    }
    return 0;
}

static void on_remote(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)ud;
    const char *n = jx_str(obj, "metadata.name");
    if (!n ||
        strcmp(jx_str(obj, "metadata.namespace") ? jx_str(obj, "metadata.namespace") : "", NS) != 0)
        return;
    note(remote_seen, n);
    if (complete(obj))
        note(remote_done, n);
}

static void on_remote_upd(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)old;
    on_remote(key, obj, ud);
}

static void on_mgr(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)ud;
    const char *n = jx_str(obj, "metadata.name");
    if (n && complete(obj))
        note(mgr_done, n);
}

static void on_mgr_upd(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)old;
    on_mgr(key, obj, ud);
}

/* queue NULL: no queue label (the floor's jobs must stay invisible to mkueue) */
static json_t *job_obj(const char *name, const char *queue)
{
    json_t *j =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:i,s:i,s:{s:{s:s,s:[{s:s,s:s,s:[s],"
                  "s:{s:{s:s}}}]}}}}",
                  "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name, "namespace",
                  NS, "labels", queue ? "kueue.x-k8s.io/queue-name" : "bench",
                  queue ? queue : "floor", "spec", "parallelism", 1, "completions", 1, "template",
                  "spec", "restartPolicy", "Never", "containers", "name", "main", "image",
                  "busybox", "command", "true", "resources", "requests", "cpu", "1m");
    if (RUNNING)
        jx_set(j, "spec.template.metadata.annotations",
               json_pack("{s:s}", "mkueue.test/result", "Running"));
    return j;
}

static int create_job(const char *name)
{
    json_t *j = job_obj(name, QUEUE);
    struct kc_status st;
    int rc = kc_create(mgr, &JOBS, NS, j, NULL, &st);
    if (rc < 0)
        fprintf(stderr, "create %s: %s\n", name, st.message);
    json_decref(j);
    if (rc == 0)
        note(created, name);
    return rc;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void pct(const char *what, double *v, size_t n)
{
    if (n == 0) {
        printf("%s_p50_ms n/a\n%s_p99_ms n/a\n%s_samples 0\n", what, what, what);
        return;
    }
    qsort(v, n, sizeof(*v), cmp_d);
    size_t i99 = (size_t)(0.99 * (double)(n - 1) + 0.5);
    printf("%s_p50_ms %.1f\n%s_p99_ms %.1f\n%s_samples %zu\n", what, v[(n - 1) / 2], what, v[i99],
           what, n);
}

/* ---- the floor: the dispatch's API calls made directly ------------------------ */

/* 1 when Workload o's condition Admitted is True */
static int admitted(const json_t *o)
{
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(o, "status.conditions"), i, c)
    {
        const char *t = jx_str(c, "type"), *v = jx_str(c, "status");
        if (t && v && !strcmp(t, "Admitted") && !strcmp(v, "True"))
            return 1;
    }
    return 0;
}

/* The worker whose Kueue admitted a floor copy first, seen by a watch on
 * every worker's Workloads as mkueue sees it (admitted_on: name -> worker
 * index + 1, set by on_copy); -1 after 30 s. */
static struct smap *admitted_on;
static pthread_cond_t admitted_cv = PTHREAD_COND_INITIALIZER; /* with mu: admitted_on grew */

static void on_copy(const char *key, json_t *obj, void *ud)
{
    (void)key;
    const char *n = jx_str(obj, "metadata.name");
    if (!n || !admitted(obj) || jx_get(obj, "metadata.deletionTimestamp"))
        return; /* a copy of an earlier run, going */
    pthread_mutex_lock(&mu);
    if (!smap_get(admitted_on, n) && smap_put(admitted_on, n, ud, NULL) < 0)
        fprintf(stderr, "floor: no memory to note %s\n", n);
    pthread_cond_broadcast(&admitted_cv);
    pthread_mutex_unlock(&mu);
}

static void on_copy_upd(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)old;
    on_copy(key, obj, ud);
}

static int first_admitted(const char *name)
{
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end); /* the condition variable's clock */
    end.tv_sec += 30;
    int rc = 0;
    pthread_mutex_lock(&mu);
    intptr_t w;
    while (!(w = (intptr_t)smap_get(admitted_on, name)) && rc == 0)
        rc = pthread_cond_timedwait(&admitted_cv, &mu, &end);
    pthread_mutex_unlock(&mu);
    return w ? (int)w - 1 : -1;
}

/* One copy per worker, created side by side as mkueue's AllAtOnce does
 * (reconciler/fanout.h): a thread per worker but the first, the caller
 * making the first. */
struct copy_call {
    int w, rc;
    json_t *wl;
};

static void *create_copy(void *arg)
{
    struct copy_call *c = arg;
    struct kc_status st;
    c->rc = kc_create(wk[c->w], &WLS, NS, c->wl, NULL, &st);
    if (c->rc < 0)
        fprintf(stderr, "floor copy on worker-%d: %s\n", c->w + 1, st.message);
    return NULL;
}

static int create_copies(json_t *wl)
{
    struct copy_call c[MAX_WORKERS] = {{0}};
    pthread_t th[MAX_WORKERS];
    int started[MAX_WORKERS] = {0}, rc = 0;
    for (int w = 0; w < nwk; w++)
        c[w] = (struct copy_call){w, 0, wl};
    for (int w = 1; w < nwk; w++)
        started[w] = pthread_create(&th[w], NULL, create_copy, &c[w]) == 0;
    create_copy(&c[0]);
    for (int w = 1; w < nwk; w++) {
        if (started[w])
            pthread_join(th[w], NULL);
        else
            create_copy(&c[w]); /* no thread: made here, after the others */
        rc |= c[w].rc;
    }
    return rc | c[0].rc;
}

/* AllAtOnce's nominations: every worker */
static json_t *nominations(void)
{
    json_t *names = json_array();
    for (int w = 0; w < nwk; w++) {
        char cluster[32];
        snprintf(cluster, sizeof(cluster), "worker-%d", w + 1);
        json_array_append_new(names, json_string(cluster));
    }
    return json_pack("{s:{s:o}}", "status", "nominatedClusterNames", names);
}

/* admit: the copies go to the workers' LocalQueue QUEUE and the clusterName
 * is written once a worker's Kueue admitted one, as mkueue must wait for
 * that (else the copies name no queue there and the first worker wins).
 * The time ends when the remote job exists; the losers' copies go after
 * it, as mkueue removes them (reconciler/decide.c, step d). */
static double floor_dispatch(const char *name, int admit)
{
    struct kc_status st;
    double t0 = now_ms();
    json_t *j = job_obj(name, NULL), *out = NULL;
    if (kc_create(mgr, &JOBS, NS, j, &out, &st) < 0)
        goto fail;
    const char *uid = jx_str(out, "metadata.uid");
    json_t *wl = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:[{s:s,s:i,s:O}]}}", "apiVersion",
                           "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name", name,
                           "namespace", NS, "labels", "kueue.x-k8s.io/job-uid", uid ? uid : "",
                           "spec", "queueName", "floor-none", "podSets", "name", "main", "count", 1,
                           "template", jx_get(j, "spec.template"));
    json_decref(out);
    out = NULL;
    int rc = kc_create(mgr, &WLS, NS, wl, NULL, &st);
    static const char *const patches[] = {
        "{\"status\":{\"admissionChecks\":[{\"name\":\"mk\",\"state\":\"Pending\",\"message\":\"\","
        "\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}}",
        "{\"status\":{\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":"
        "\"QuotaReserved\",\"message\":\"m\",\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}}",
        "{\"status\":{\"admissionChecks\":[{\"name\":\"mk\",\"state\":\"Ready\",\"message\":\"x\","
        "\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}}"};
    for (int i = 0; rc == 0 && i < 2; i++) {
        json_t *p = json_loads(patches[i], 0, NULL);
        rc = kc_patch(mgr, &WLS, NS, name, "status", KC_PATCH_MERGE, p, NULL, NULL, &st);
        json_decref(p);
    }
    /* the remote copies (no origin label: the reconciler must not see them) */
    jx_del(wl, "metadata.labels");
    if (admit)
        jx_set(wl, "spec.queueName", json_string(QUEUE));
    if (rc == 0 && create_copies(wl) < 0) {
        snprintf(st.message, sizeof(st.message), "a copy was not created");
        rc = -1;
    }
    json_decref(wl);
    if (rc == 0) { /* after the copies, as mkueue's nominate writes them (decide.c) */
        json_t *p = nominations();
        rc = kc_patch(mgr, &WLS, NS, name, "status", KC_PATCH_MERGE, p, NULL, NULL, &st);
        json_decref(p);
    }
    int win = 0;
    if (rc == 0 && admit && (win = first_admitted(name)) < 0) {
        snprintf(st.message, sizeof(st.message), "no worker admitted the copy in 30 s");
        rc = -1;
    }
    if (rc == 0) {
        char cluster[32];
        snprintf(cluster, sizeof(cluster), "worker-%d", win + 1);
        json_t *p =
            json_pack("{s:{s:s,s:n}}", "status", "clusterName", cluster, "nominatedClusterNames");
        rc = kc_patch(mgr, &WLS, NS, name, "status", KC_PATCH_MERGE, p, NULL, NULL, &st);
        json_decref(p);
    }
    if (rc == 0 && admit) {
        /* labelled as mkueue's remote job is, so the worker's Kueue runs it
         * under the admitted copy (prebuilt Workload) as it runs mkueue's */
        jx_set_new_str(j, "metadata.labels[kueue.x-k8s.io/queue-name]", QUEUE);
        jx_set_new_str(j, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]", name);
    }
    if (rc == 0)
        rc = kc_create(wk[win], &JOBS, NS, j, NULL, &st);
    double t = now_ms() - t0;
    for (int w = 0; rc == 0 && w < nwk; w++)
        if (w != win)
            rc = kc_delete(wk[w], &WLS, NS, name, NULL, NULL, &st);
    if (rc == 0) {
        json_t *p = json_loads(patches[2], 0, NULL);
        rc = kc_patch(mgr, &WLS, NS, name, "status", KC_PATCH_MERGE, p, NULL, NULL, &st);
        json_decref(p);
    }
    json_decref(j);
    if (rc < 0)
        goto fail;
    return t;
fail:
    fprintf(stderr, "floor %s: %s\n", name, st.message);
    json_decref(j);
    return -1;
}

static void floor_cleanup(const char *name)
{
    struct kc_status st;
    kc_delete(mgr, &JOBS, NS, name, "Background", NULL, &st);
    kc_delete(mgr, &WLS, NS, name, NULL, NULL, &st);
    for (int w = 0; w < nwk; w++) { /* the job is on the worker that admitted its copy */
        kc_delete(wk[w], &JOBS, NS, name, "Background", NULL, &st);
        kc_delete(wk[w], &WLS, NS, name, NULL, NULL, &st);
    }
}

/* status floor: GET the remote job, PATCH the manager job's status */
static double floor_status(const char *name)
{
    struct kc_status st;
    double t0 = now_ms();
    json_t *job = NULL;
    if (kc_get(wk[0], &JOBS, NS, name, &job, &st) < 0)
        return -1;
    json_t *p = json_pack("{s:{s:i}}", "status", "active", 1);
    int rc = kc_patch(mgr, &JOBS, NS, name, "status", KC_PATCH_MERGE, p, NULL, NULL, &st);
    json_decref(p);
    json_decref(job);
    return rc < 0 ? -1 : now_ms() - t0;
}

/* The floor at the latency run's pace: dispatch K starts at K / RATE s in
 * its own thread, whatever the ones before are doing, as jobs are applied.
 * Writes the dispatch times (and, with st, the status floor's) that ended. */
struct floor_one {
    int k, admit, threaded;
    double dispatch, status;
    pthread_t th;
};

static void *floor_run(void *arg)
{
    struct floor_one *f = arg;
    char name[64];
    snprintf(name, sizeof(name), f->admit ? "floora-%d" : "floor-%d", f->k);
    f->dispatch = floor_dispatch(name, f->admit);
    f->status = f->dispatch >= 0 && !f->admit ? floor_status(name) : -1;
    return NULL;
}

static void floor_paced(int n, double rate, int admit, double *d, size_t *nd, double *st,
                        size_t *nst)
{
    struct floor_one *f = calloc((size_t)n, sizeof(*f));
    if (!f) {
        fprintf(stderr, "floor: no memory for %d dispatches\n", n);
        return;
    }
    double start = now_ms();
    for (int k = 0; k < n; k++) {
        f[k] = (struct floor_one){.k = k, .admit = admit, .dispatch = -1, .status = -1};
        sleep_ms(start + k * 1000.0 / rate - now_ms());
        f[k].threaded = pthread_create(&f[k].th, NULL, floor_run, &f[k]) == 0;
        if (!f[k].threaded)
            floor_run(&f[k]); /* no thread: run here, late */
    }
    for (int k = 0; k < n; k++) {
        if (f[k].threaded)
            pthread_join(f[k].th, NULL);
        if (f[k].dispatch >= 0)
            d[(*nd)++] = f[k].dispatch;
        if (st && f[k].status >= 0)
            st[(*nst)++] = f[k].status;
    }
    free(f);
}

/* ---- remote pods finish ----------------------------------------------------------- */

static int finish_pod(const char *job)
{
    for (int w = 0; w < nwk; w++) {
        char sel[300];
        snprintf(sel, sizeof(sel), "job-name=%s", job);
        json_t *list = NULL;
        struct kc_status st;
        struct kc_list_opts o = {.label_selector = sel};
        if (kc_list(wk[w], &PODS, NS, &o, &list, &st) < 0)
            continue;
        json_t *pod = json_array_get(jx_get(list, "items"), 0);
        if (pod) {
            json_t *p = json_loads(
                "{\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"name\":\"main\","
                "\"image\":\"busybox\",\"imageID\":\"\",\"ready\":false,\"restartCount\":0,"
                "\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}",
                0, NULL);
            int rc = kc_patch(wk[w], &PODS, NS, jx_str(pod, "metadata.name"), "status",
                              KC_PATCH_MERGE, p, NULL, NULL, &st);
            json_decref(p);
            json_decref(list);
            return rc;
        }
        json_decref(list);
    }
    return -1;
}

/* ---- throughput ---------------------------------------------------------------------- */

struct tp {
    int from, to;
    const char *prefix;
    int floor;
};

static void *tp_run(void *arg)
{
    struct tp *t = arg;
    for (int i = t->from; i < t->to; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s-%d", t->prefix, i);
        if (t->floor)
            floor_dispatch(name, 1); /* each waits for a worker's admission, as mkueue must */
        else
            create_job(name);
    }
    return NULL;
}

static double run_threads(int m, int threads, const char *prefix, int floor)
{
    pthread_t th[64];
    struct tp tp[64];
    if (threads > 64)
        threads = 64;
    double t0 = now_ms();
    for (int i = 0; i < threads; i++) {
        tp[i] = (struct tp){m * i / threads, m * (i + 1) / threads, prefix, floor};
        pthread_create(&th[i], NULL, tp_run, &tp[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return now_ms() - t0;
}

static int count_seen(const char *prefix, int m)
{
    int n = 0;
    for (int i = 0; i < m; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        n += get_t(remote_seen, name) >= 0;
    }
    return n;
}

static struct kc_client *client_for(const char *dir, const char *c, struct kcfg **cfg)
{
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/kubeconfig/%s.yaml", dir, c);
    if (kcfg_load_file(path, NULL, KCFG_TRUSTED, cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        exit(1);
    }
    struct kc_options o = {.qps = -1, .pool_size = 32};
    struct kc_client *k = kc_new(*cfg, &o, err, sizeof(err));
    if (!k) {
        fprintf(stderr, "%s: %s\n", c, err);
        exit(1);
    }
    return k;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *manager = "manager";
    int i = 1, no_floor = 0, floor_only = 0;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        /* the flags without a value */
        if (!strcmp(argv[i], "--no-floor"))
            no_floor = 1;
        else if (!strcmp(argv[i], "--floor-only"))
            floor_only = 1;
        else if (!strcmp(argv[i], "--running"))
            RUNNING = 1;
        if (!strcmp(argv[i], "--no-floor") || !strcmp(argv[i], "--floor-only") ||
            !strcmp(argv[i], "--running")) {
            i--;
            continue;
        }
        if (i + 1 >= argc)
            break;
        if (!strcmp(argv[i], "--manager"))
            manager = argv[i + 1];
        else if (!strcmp(argv[i], "--workers"))
            nwk = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--ns"))
            NS = argv[i + 1];
        else if (!strcmp(argv[i], "--queue"))
            QUEUE = argv[i + 1];
    }
    if (!dir || i >= argc || nwk < 2 || nwk > MAX_WORKERS) {
        fprintf(
            stderr,
            "usage: rc_bench --dir E2E_DIR [--manager CTX] [--workers 2..%d] [--ns NS] "
            "[--queue LQ] [--no-floor | --floor-only] [--running] latency N RATE | throughput M "
            "THREADS | create COUNT PREFIX\n",
            MAX_WORKERS);
        return 2;
    }
    const char *mode = argv[i];
    log_set_level(LOG_WARN);
    struct kcfg *cm, *cw[MAX_WORKERS];
    mgr = client_for(dir, manager, &cm);
    for (int w = 0; w < nwk; w++) {
        char c[32];
        snprintf(c, sizeof(c), "worker-%d", w + 1);
        wk[w] = client_for(dir, c, &cw[w]);
    }
    created = smap_new();
    remote_seen = smap_new();
    remote_done = smap_new();
    mgr_done = smap_new();
    admitted_on = smap_new();

    if (!strcmp(mode, "create") && i + 2 < argc) {
        int n = atoi(argv[i + 1]);
        double t = run_threads(n, 8, argv[i + 2], 0);
        printf("created %d in %.0f ms\n", n, t);
        return 0;
    }

    struct kcache *rc[MAX_WORKERS], *mc = kcache_new();
    struct kw_informer *inf[MAX_WORKERS + 1];
    const struct kcache_handlers rh = {on_remote, on_remote_upd, NULL, NULL};
    const struct kcache_handlers mh = {on_mgr, on_mgr_upd, NULL, NULL};
    for (int w = 0; w < nwk; w++) {
        rc[w] = kcache_new();
        kcache_add_handlers(rc[w], &rh);
        inf[w] = kw_informer_start(wk[w], &JOBS, NS, ORIGIN_SEL, rc[w], NULL);
    }
    kcache_add_handlers(mc, &mh);
    inf[nwk] = kw_informer_start(mgr, &JOBS, NS, NULL, mc, NULL);
    for (int w = 0; w <= nwk; w++)
        while (!kcache_synced(w < nwk ? rc[w] : mc))
            sleep_ms(20);
    /* the floor's admission is watched on the workers, as mkueue watches it */
    struct kcache *cc[MAX_WORKERS] = {0};
    struct kw_informer *cinf[MAX_WORKERS] = {0};
    for (int w = 0; w < nwk && !no_floor; w++) {
        const struct kcache_handlers ch = {on_copy, on_copy_upd, NULL, (void *)(intptr_t)(w + 1)};
        cc[w] = kcache_new();
        kcache_add_handlers(cc[w], &ch);
        cinf[w] = kw_informer_start(wk[w], &WLS, NS, NULL, cc[w], NULL);
        while (!kcache_synced(cc[w]))
            sleep_ms(20);
    }

    if (!strcmp(mode, "latency") && i + 2 < argc) {
        int n = atoi(argv[i + 1]);
        double rate = atof(argv[i + 2]);
        double *disp = calloc((size_t)n, sizeof(double)), *stat = calloc((size_t)n, sizeof(double));
        double *fd = calloc((size_t)n, sizeof(double)), *fs = calloc((size_t)n, sizeof(double));
        double *t0 = calloc((size_t)n, sizeof(double)), *fa = calloc((size_t)n, sizeof(double));
        size_t nd = 0, ns = 0, nfd = 0, nfs = 0, nfa = 0;
        double start = now_ms();
        for (int k = 0; k < n && !floor_only; k++) {
            char name[64];
            snprintf(name, sizeof(name), "lat-%d", k);
            sleep_ms(start + k * 1000.0 / rate - now_ms());
            t0[k] = now_ms();
            if (create_job(name) < 0)
                t0[k] = -1;
        }
        double deadline = now_ms() + 120000;
        for (int k = 0; k < n && !floor_only; k++) {
            char name[64];
            snprintf(name, sizeof(name), "lat-%d", k);
            while (get_t(remote_seen, name) < 0 && now_ms() < deadline)
                sleep_ms(10);
            if (t0[k] >= 0 && get_t(remote_seen, name) >= 0)
                disp[nd++] = get_t(remote_seen, name) - t0[k];
        }
        /* completions, paced the same way */
        start = now_ms();
        for (int k = 0; k < n && !floor_only; k++) {
            char name[64];
            snprintf(name, sizeof(name), "lat-%d", k);
            sleep_ms(start + k * 1000.0 / rate - now_ms());
            finish_pod(name);
        }
        deadline = now_ms() + 120000;
        for (int k = 0; k < n && !floor_only; k++) {
            char name[64];
            snprintf(name, sizeof(name), "lat-%d", k);
            while ((get_t(remote_done, name) < 0 || get_t(mgr_done, name) < 0) &&
                   now_ms() < deadline)
                sleep_ms(10);
            if (get_t(remote_done, name) >= 0 && get_t(mgr_done, name) >= 0)
                stat[ns++] = get_t(mgr_done, name) - get_t(remote_done, name);
        }
        /* floors, same count, same pace: the bed carries as many at once
         * as it does for the reconciler */
        if (!no_floor) {
            floor_paced(n, rate, 0, fd, &nfd, fs, &nfs);
            floor_paced(n, rate, 1, fa, &nfa, NULL, NULL);
            for (int k = 0; k < n; k++) {
                char name[64];
                snprintf(name, sizeof(name), "floor-%d", k);
                floor_cleanup(name);
                snprintf(name, sizeof(name), "floora-%d", k);
                floor_cleanup(name);
            }
        }
        if (!floor_only)
            pct("dispatch_apply_to_remote_job", disp, nd);
        if (!no_floor) {
            pct("dispatch_floor_direct_calls", fd, nfd);
            pct("dispatch_floor_worker_admission", fa, nfa);
        }
        if (!floor_only)
            pct("status_remote_complete_to_manager", stat, ns);
        if (!no_floor)
            pct("status_floor_direct_calls", fs, nfs);
        free(disp);
        free(stat);
        free(fd);
        free(fs);
        free(fa);
        free(t0);
    } else if (!strcmp(mode, "throughput") && i + 2 < argc) {
        int m = atoi(argv[i + 1]), threads = atoi(argv[i + 2]);
        double t0 = now_ms();
        run_threads(m, threads, "tp", 0);
        double deadline = now_ms() + 600000;
        while (count_seen("tp", m) < m && now_ms() < deadline)
            sleep_ms(50);
        double t = now_ms() - t0;
        int seen = count_seen("tp", m);
        printf("throughput_jobs %d\nthroughput_dispatched %d\nthroughput_seconds %.1f\n"
               "throughput_jobs_per_s %.1f\n",
               m, seen, t / 1000, seen / (t / 1000));
        double tf = no_floor ? 0 : run_threads(m, threads, "tpf", 1);
        if (!no_floor)
            printf("throughput_floor_seconds %.1f\nthroughput_floor_jobs_per_s %.1f\n", tf / 1000,
                   m / (tf / 1000));
        for (int k = 0; k < m && !no_floor; k++) {
            char name[64];
            snprintf(name, sizeof(name), "tpf-%d", k);
            floor_cleanup(name);
        }
    } else {
        fprintf(stderr, "rc_bench: unknown mode %s\n", mode);
        return 2;
    }
    for (int k = 0; k <= nwk; k++)
        kw_informer_stop(inf[k]);
    for (int w = 0; w < nwk; w++)
        if (cinf[w])
            kw_informer_stop(cinf[w]);
    return 0;
}
