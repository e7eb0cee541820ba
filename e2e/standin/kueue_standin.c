/* kueue-standin: a TEST DOUBLE for stock Kueue on a worker cluster.
 *
 * Real Kueue needs a newer Kubernetes than the 1.20 apiservers of the test
 * bed, so each worker runs this instead. It does only what stock Kueue does
 * to a prebuilt Workload that MultiKueue copied there:
 *   - admits it (QuotaReserved, then Admitted, with status.admission) when
 *     its LocalQueue's ClusterQueue has nominal quota left, in order of
 *     priority then creation time (BestEffortFIFO);
 *   - starts the job carrying annotation kueue.x-k8s.io/prebuilt-workload-name
 *     (spec.suspend=false) once its Workload is admitted, and suspends it
 *     again when the Workload is evicted;
 *   - marks it Finished (Succeeded or Failed, message from the job) when that
 *     job finishes;
 *   - evicts it on request, so fault tests can drive evictions: annotate the
 *     Workload with e2e.mkueue.io/evict=<message>; it stays out until the
 *     annotation is removed.
 * Nothing more: no cohorts, no preemption, no admission checks, no pods.
 *
 * usage: kueue-standin --kubeconfig FILE [--name worker-1] [--watch GROUP/VERSION/RESOURCE]...
 * (default: every managedBy kind of common/kinds)
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_cache.h"
#include "kube_client.h"
#include "kube_config.h"
#include "jsonx.h"
#include "kinds/kinds.h"
#include "kube_watch.h"
#include "log.h"
#include "quantity.h"

#define MAX_JOB_KINDS       16
#define MAX_RES             32
#define EVICT_ANNOTATION    "e2e.mkueue.io/evict"
#define PREBUILT_ANNOTATION "kueue.x-k8s.io/prebuilt-workload-name"

static const char *LOGGER = "kueue-standin";
static volatile int stopping;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int dirty = 1;

struct informed {
    struct kc_resource res;
    struct kcache *cache;
    struct kw_informer *inf;
};

static struct kc_client *client;
static struct informed workloads = {{"kueue.x-k8s.io", "v1beta2", "workloads", 1}, NULL, NULL};
static struct informed cqueues = {{"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0}, NULL, NULL};
static struct informed lqueues = {{"kueue.x-k8s.io", "v1beta2", "localqueues", 1}, NULL, NULL};
static struct informed jobkinds[MAX_JOB_KINDS];
static int njobkinds;

/* ---- small JSON helpers ------------------------------------------------ */

static const char *str_at(json_t *o, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    return json_string_value(v);
}

static json_t *condition(json_t *obj, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static int condition_true(json_t *obj, const char *type)
{
    json_t *c = condition(obj, type);
    const char *s = c ? json_string_value(json_object_get(c, "status")) : NULL;
    return s && strcmp(s, "True") == 0;
}

static void now_rfc3339(char *out, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Returns a copy of obj's conditions with `type` set (lastTransitionTime
 * kept when the status did not change). */
static json_t *with_condition(json_t *conds, const char *type, const char *status,
                              const char *reason, const char *message)
{
    json_t *out = conds ? json_deep_copy(conds) : json_array();
    char now[32];
    now_rfc3339(now, sizeof(now));
    size_t i;
    json_t *c;
    json_array_foreach(out, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0) {
            const char *old = json_string_value(json_object_get(c, "status"));
            if (!old || strcmp(old, status) != 0)
                json_object_set_new(c, "lastTransitionTime", json_string(now));
            json_object_set_new(c, "status", json_string(status));
            json_object_set_new(c, "reason", json_string(reason));
            json_object_set_new(c, "message", json_string(message));
            return out;
        }
    }
    json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status,
                                         "reason", reason, "message", message, "lastTransitionTime",
                                         now));
    return out;
}

static void patch_status(json_t *wl, json_t *status /* stolen */, const char *what)
{
    const char *ns = str_at(wl, "metadata", "namespace", NULL);
    const char *name = str_at(wl, "metadata", "name", NULL);
    json_t *patch = json_pack("{s:o}", "status", status);
    struct kc_status st;
    int rc = kc_patch(client, &workloads.res, ns, name, "status", KC_PATCH_MERGE, patch, NULL, NULL,
                      &st);
    json_decref(patch);
    if (rc == 0)
        LOG_I(LOGGER, what, "workload", name, "namespace", ns);
    else
        LOG_W(LOGGER, "status patch failed", "workload", name, "error", st.message);
}

/* ---- resources --------------------------------------------------------- */

struct res_list {
    int n;
    char name[MAX_RES][64];
    int64_t milli[MAX_RES];
};

static int64_t *res_slot(struct res_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0)
            return &l->milli[i];
    if (l->n == MAX_RES || strlen(name) >= sizeof(l->name[0]))
        return NULL;
    snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
    l->milli[l->n] = 0;
    return &l->milli[l->n++];
}

static void res_add_map(struct res_list *l, json_t *map, int64_t times)
{
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v)
    {
        int64_t q = 0;
        int64_t *slot = res_slot(l, k);
        if (slot && json_is_string(v) && qty_parse(json_string_value(v), &q) == 0)
            *slot += q * times;
        else if (slot && json_is_integer(v))
            *slot += json_integer_value(v) * 1000 * times;
    }
}

/* Requests of one pod set's pod, times its count. */
static void podset_requests(json_t *ps, struct res_list *out)
{
    int64_t count = json_integer_value(json_object_get(ps, "count"));
    json_t *spec = json_object_get(json_object_get(ps, "template"), "spec");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        res_add_map(out, json_object_get(json_object_get(c, "resources"), "requests"), count);
    }
}

/* First flavor of the ClusterQueue covering `res`, and the nominal quota
 * summed over its flavors. */
static const char *cq_quota(json_t *cq, const char *res, int64_t *nominal)
{
    const char *flavor = NULL;
    *nominal = 0;
    size_t i, j, k;
    json_t *rg, *fl, *r;
    json_array_foreach(json_object_get(json_object_get(cq, "spec"), "resourceGroups"), i, rg)
    {
        json_array_foreach(json_object_get(rg, "flavors"), j, fl)
        {
            json_array_foreach(json_object_get(fl, "resources"), k, r)
            {
                const char *n = json_string_value(json_object_get(r, "name"));
                int64_t q;
                if (!n || strcmp(n, res) != 0)
                    continue;
                if (!flavor)
                    flavor = json_string_value(json_object_get(fl, "name"));
                json_t *nq = json_object_get(r, "nominalQuota");
                if (json_is_string(nq) && qty_parse(json_string_value(nq), &q) == 0)
                    *nominal += q;
                else if (json_is_integer(nq))
                    *nominal += json_integer_value(nq) * 1000;
            }
        }
    }
    return flavor;
}

/* ---- the passes -------------------------------------------------------- */

struct cq_usage {
    char cq[256];
    struct res_list used;
};

static struct cq_usage *usage_of(struct cq_usage *u, int *n, int cap, const char *cq)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(u[i].cq, cq) == 0)
            return &u[i];
    if (*n == cap)
        return NULL;
    memset(&u[*n], 0, sizeof(u[*n]));
    snprintf(u[*n].cq, sizeof(u[*n].cq), "%s", cq);
    return &u[(*n)++];
}

static int holds_quota(json_t *wl)
{
    return condition_true(wl, "QuotaReserved") && !condition_true(wl, "Finished");
}

static int evict_requested(json_t *wl)
{
    return str_at(wl, "metadata", "annotations", EVICT_ANNOTATION) != NULL;
}

/* The job whose prebuilt-workload-name names this Workload, if any (borrowed). */
static json_t *job_of(json_t *wl, json_t *jobs)
{
    const char *ns = str_at(wl, "metadata", "namespace", NULL);
    const char *name = str_at(wl, "metadata", "name", NULL);
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        const char *jns = str_at(j, "metadata", "namespace", NULL);
        const char *pb = str_at(j, "metadata", "annotations", PREBUILT_ANNOTATION);
        if (!pb)
            pb = str_at(j, "metadata", "labels", PREBUILT_ANNOTATION);
        if (pb && jns && ns && strcmp(pb, name) == 0 && strcmp(jns, ns) == 0)
            return j;
    }
    return NULL;
}

/* As Kueue does with the job of an admitted prebuilt Workload: start it
 * (its kind's suspend flag false), and suspend it again on eviction. */
static void set_suspend(json_t *job, int suspend)
{
    const struct mk_kind *k = mk_kind_of(job);
    if (!k || !k->suspend_path)
        return;
    if (jx_bool(job, k->suspend_path, 0) == suspend)
        return;
    json_t *patch = json_object();
    struct kc_resource r = mk_kind_resource(k);
    struct kc_status st;
    const char *name = jx_str(job, "metadata.name");
    if (jx_set(patch, k->suspend_path, json_boolean(suspend)) == 0 &&
        kc_patch(client, &r, jx_str(job, "metadata.namespace"), name, NULL, KC_PATCH_MERGE, patch,
                 NULL, NULL, &st) == 0)
        LOG_I(LOGGER, suspend ? "job suspended" : "job started", "job", name, "kind", k->kind);
    else
        LOG_W(LOGGER, "job suspend patch failed", "job", name, "kind", k->kind);
    json_decref(patch);
}

static void finish_if_done(json_t *wl, json_t *job)
{
    static const char *const ok_types[] = {"Complete", "Completed", "Succeeded"};
    json_t *conds = json_object_get(json_object_get(wl, "status"), "conditions");
    for (size_t i = 0; i < 3; i++) {
        if (condition_true(job, ok_types[i])) {
            patch_status(wl,
                         json_pack("{s:o}", "conditions",
                                   with_condition(conds, "Finished", "True", "Succeeded",
                                                  "Job finished successfully")),
                         "finished: succeeded");
            return;
        }
    }
    if (condition_true(job, "Failed")) {
        const char *msg = json_string_value(json_object_get(condition(job, "Failed"), "message"));
        patch_status(wl,
                     json_pack("{s:o}", "conditions",
                               with_condition(conds, "Finished", "True", "Failed",
                                              msg && *msg ? msg : "Job failed")),
                     "finished: failed");
    }
}

static void evict(json_t *wl)
{
    const char *msg = str_at(wl, "metadata", "annotations", EVICT_ANNOTATION);
    json_t *c = json_object_get(json_object_get(wl, "status"), "conditions");
    json_t *c1 = with_condition(c, "Evicted", "True", "Preempted", msg && *msg ? msg : "Evicted");
    json_t *c2 = with_condition(c1, "QuotaReserved", "False", "Pending", "Evicted by request");
    json_t *c3 =
        with_condition(c2, "Admitted", "False", "NoReservation", "The workload has no reservation");
    json_decref(c1);
    json_decref(c2);
    patch_status(wl, json_pack("{s:o,s:n}", "conditions", c3, "admission"), "evicted");
}

static json_t *find_cq_for(json_t *wl)
{
    const char *ns = str_at(wl, "metadata", "namespace", NULL);
    const char *q = str_at(wl, "spec", "queueName", NULL);
    if (!ns || !q)
        return NULL;
    json_t *lq = kcache_get_nsname(lqueues.cache, ns, q);
    const char *cqn = str_at(lq, "spec", "clusterQueue", NULL);
    json_t *cq = cqn ? kcache_get(cqueues.cache, cqn) : NULL;
    json_decref(lq);
    return cq;
}

/* Admits wl into cq if its requests fit; updates usage. */
static void try_admit(json_t *wl, json_t *cq, struct res_list *used)
{
    const char *cqname = str_at(cq, "metadata", "name", NULL);
    json_t *assignments = json_array();
    struct res_list want = {0};
    size_t i;
    json_t *ps;
    json_array_foreach(json_object_get(json_object_get(wl, "spec"), "podSets"), i, ps)
    {
        struct res_list one = {0};
        podset_requests(ps, &one);
        json_t *flavors = json_object(), *usage = json_object();
        for (int r = 0; r < one.n; r++) {
            int64_t nominal;
            const char *flavor = cq_quota(cq, one.name[r], &nominal);
            int64_t *w = res_slot(&want, one.name[r]);
            int64_t *u = res_slot(used, one.name[r]);
            if (!flavor || !w || !u) {
                json_decref(flavors);
                json_decref(usage);
                goto out; /* resource not covered: stays pending */
            }
            *w += one.milli[r];
            if (*u + *w > nominal) {
                json_decref(flavors);
                json_decref(usage);
                goto out;
            }
            char q[32];
            qty_format(one.milli[r], q, sizeof(q));
            json_object_set_new(flavors, one.name[r], json_string(flavor));
            json_object_set_new(usage, one.name[r], json_string(q));
        }
        json_array_append_new(assignments,
                              json_pack("{s:O,s:o,s:o,s:O}", "name", json_object_get(ps, "name"),
                                        "flavors", flavors, "resourceUsage", usage, "count",
                                        json_object_get(ps, "count")));
    }
    for (int r = 0; r < want.n; r++)
        *res_slot(used, want.name[r]) += want.milli[r];
    char msg[320];
    snprintf(msg, sizeof(msg), "Quota reserved in ClusterQueue %s", cqname);
    json_t *conds = json_object_get(json_object_get(wl, "status"), "conditions");
    json_t *c1 = with_condition(conds, "QuotaReserved", "True", "QuotaReserved", msg);
    json_t *c2 = with_condition(c1, "Admitted", "True", "Admitted", "The workload is admitted");
    json_decref(c1);
    if (condition_true(wl, "Evicted")) {
        /* as Kueue does on re-admission: the old eviction becomes history */
        const char *old = json_string_value(json_object_get(condition(wl, "Evicted"), "message"));
        char prev[512];
        snprintf(prev, sizeof(prev), "Previously: %s", old ? old : "");
        json_t *c3 = with_condition(c2, "Evicted", "False", "QuotaReserved", prev);
        json_decref(c2);
        c2 = c3;
    }
    patch_status(wl,
                 json_pack("{s:o,s:{s:s,s:o}}", "conditions", c2, "admission", "clusterQueue",
                           cqname, "podSetAssignments", assignments),
                 "admitted");
    return;
out:
    json_decref(assignments);
}

static int by_priority_then_age(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t px = json_integer_value(json_object_get(json_object_get(x, "spec"), "priority"));
    json_int_t py = json_integer_value(json_object_get(json_object_get(y, "spec"), "priority"));
    if (px != py)
        return px > py ? -1 : 1;
    const char *tx = str_at(x, "metadata", "creationTimestamp", NULL);
    const char *ty = str_at(y, "metadata", "creationTimestamp", NULL);
    int c = strcmp(tx ? tx : "", ty ? ty : "");
    if (c)
        return c;
    return strcmp(str_at(x, "metadata", "name", NULL) ?: "",
                  str_at(y, "metadata", "name", NULL) ?: "");
}

static void pass(void)
{
    json_t *wls = kcache_list(workloads.cache, NULL);
    json_t *jobs = json_array();
    for (int k = 0; k < njobkinds; k++) {
        json_t *l = kcache_list(jobkinds[k].cache, NULL);
        json_array_extend(jobs, l);
        json_decref(l);
    }
    size_t n = json_array_size(wls), npending = 0, i;
    json_t **pending = calloc(n ? n : 1, sizeof(*pending));
    struct cq_usage usage[64];
    int nusage = 0;
    json_t *wl;
    if (!pending)
        goto out;
    json_array_foreach(wls, i, wl)
    {
        if (condition_true(wl, "Finished"))
            continue;
        if (holds_quota(wl)) {
            json_t *job = job_of(wl, jobs);
            if (evict_requested(wl)) {
                evict(wl);
                if (job)
                    set_suspend(job, 1);
                continue;
            }
            if (job && condition_true(wl, "Admitted"))
                set_suspend(job, 0);
            if (job)
                finish_if_done(wl, job);
            const char *cqn = str_at(wl, "status", "admission", "clusterQueue");
            struct cq_usage *u = cqn ? usage_of(usage, &nusage, 64, cqn) : NULL;
            size_t j;
            json_t *psa;
            json_array_foreach(
                json_object_get(json_object_get(json_object_get(wl, "status"), "admission"),
                                "podSetAssignments"),
                j, psa)
            {
                if (u)
                    res_add_map(&u->used, json_object_get(psa, "resourceUsage"), 1);
            }
        } else if (!evict_requested(wl)) {
            pending[npending++] = wl;
        }
    }
    qsort(pending, npending, sizeof(*pending), by_priority_then_age);
    for (i = 0; i < npending; i++) {
        json_t *cq = find_cq_for(pending[i]);
        if (!cq)
            continue;
        struct cq_usage *u = usage_of(usage, &nusage, 64, str_at(cq, "metadata", "name", NULL));
        if (u)
            try_admit(pending[i], cq, &u->used);
        json_decref(cq);
    }
out:
    free(pending);
    json_decref(wls);
    json_decref(jobs);
}

/* ---- wiring ------------------------------------------------------------ */

static void poke(void)
{
    pthread_mutex_lock(&mu);
    dirty = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

static void on_add(const char *key, json_t *obj, void *ud)
{
    (void)key, (void)obj, (void)ud;
    poke();
}

static void on_update(const char *key, json_t *old, json_t *obj, void *ud)
{
    (void)key, (void)old, (void)obj, (void)ud;
    poke();
}

static const struct kcache_handlers handlers = {on_add, on_update, on_add, NULL};

static int start(struct informed *in)
{
    in->cache = kcache_new();
    if (!in->cache || kcache_add_handlers(in->cache, &handlers) < 0)
        return -1;
    in->inf = kw_informer_start(client, &in->res, NULL, NULL, in->cache, NULL);
    return in->inf ? 0 : -1;
}

static void stop(struct informed *in)
{
    if (in->inf)
        kw_informer_stop(in->inf);
    if (in->cache)
        kcache_free(in->cache);
}

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
    pthread_cond_signal(&cv); /* best effort; the loop also wakes every second */
}

static int parse_gvr(char *s, struct kc_resource *r)
{
    char *v = strchr(s, '/');
    char *res = v ? strchr(v + 1, '/') : NULL;
    if (!v || !res)
        return -1;
    *v = *res = '\0';
    r->group = s;
    r->version = v + 1;
    r->resource = res + 1;
    r->namespaced = 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *kubeconfig = NULL, *name = "worker";
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kubeconfig") == 0 && i + 1 < argc) {
            kubeconfig = argv[++i];
        } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            name = argv[++i];
        } else if (strcmp(argv[i], "--watch") == 0 && i + 1 < argc && njobkinds < MAX_JOB_KINDS) {
            if (parse_gvr(argv[++i], &jobkinds[njobkinds].res) < 0) {
                fprintf(stderr, "kueue-standin: --watch wants GROUP/VERSION/RESOURCE\n");
                return 2;
            }
            njobkinds++;
        } else {
            fprintf(stderr, "usage: kueue-standin --kubeconfig FILE [--name NAME] "
                            "[--watch GROUP/VERSION/RESOURCE]...\n");
            return 2;
        }
    }
    if (!kubeconfig) {
        fprintf(stderr, "kueue-standin: --kubeconfig is required\n");
        return 2;
    }
    /* by default every kind whose copies MultiKueue creates by prebuilt name */
    int all_kinds = njobkinds == 0;
    for (size_t i = 0; all_kinds && i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        if (k->gating == MK_GATE_MANAGED_BY && njobkinds < MAX_JOB_KINDS)
            jobkinds[njobkinds++].res = mk_kind_resource(k);
    }
    LOGGER = name;
    struct kcfg *cfg = NULL;
    if (kcfg_load_file(kubeconfig, NULL, KCFG_TRUSTED, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "kueue-standin: %s\n", err);
        return 1;
    }
    client = kc_new(cfg, NULL, err, sizeof(err));
    if (!client) {
        fprintf(stderr, "kueue-standin: %s\n", err);
        kcfg_free(cfg);
        return 1;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int rc = start(&workloads) | start(&cqueues) | start(&lqueues);
    for (int k = 0; k < njobkinds; k++)
        rc |= start(&jobkinds[k]);
    if (rc) {
        fprintf(stderr, "kueue-standin: cannot start informers\n");
        stopping = 1;
    }
    LOG_I(LOGGER, "started", "server", cfg->server);
    while (!stopping) {
        pthread_mutex_lock(&mu);
        if (!dirty) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&cv, &mu, &until);
        }
        int run = dirty;
        dirty = 0;
        pthread_mutex_unlock(&mu);
        if (run && kcache_synced(workloads.cache) && kcache_synced(cqueues.cache) &&
            kcache_synced(lqueues.cache))
            pass();
        else if (run) {
            nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL); /* not synced yet */
            poke();
        }
    }
    stop(&workloads);
    stop(&cqueues);
    stop(&lqueues);
    for (int k = 0; k < njobkinds; k++)
        stop(&jobkinds[k]);
    kc_free(client);
    kcfg_free(cfg);
    LOG_I(LOGGER, "stopped");
    return rc ? 1 : 0;
}
