/* What a worker sends, through everything the reconciler reads it with.
 * The input is decoded as the informers decode a watch line (jx_loadb,
 * kc_unread pruned), then stands for a remote Workload copy, a remote job
 * of every kind and a list of pods, at once. Beside "never a crash" it
 * checks what each reader promises:
 *   - pack.h: a record unwraps to the object (less the two fields it drops)
 *     and its fields read as the object's;
 *   - specdiff.h: every spec holds itself;
 *   - jobsync.h: a status patch is {"status": a non-empty object};
 *   - placement.h: the summary's counts add up, its texts fit their caps;
 *   - decide.h: with the input as worker-1's copies under a manager Workload
 *     in one of a few states, every action names a cluster of the
 *     observation, at most one cluster gets the job, and only the one
 *     status.clusterName names (before or by the same plan; the seed
 *     workload-admitted-pending.json reaches the job's create through the
 *     clusterName written in the same plan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "jobsync.h"
#include "jsonx.h"
#include "kinds/adapters.h"
#include "kube_client.h"
#include "log.h"
#include "pack.h"
#include "placement.h"
#include "specdiff.h"
#include "why.h"
#include "wlstatus.h"
#include "fuzz_support.h"

#define NOW "2024-01-01T01:00:00Z"

/* Text that goes into an Event or a condition must stay UTF-8 when cut
 * to its buffer (jansson, like the API server, refuses anything else). */
/* metav1.Condition's reason pattern, ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$,
 * at most 1024 bytes: the API server refuses a status holding another. */
static int condition_reason(const char *r)
{
    static const char tail[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
    size_t n = r ? strlen(r) : 0;
    if (n == 0 || n > 1024 || !strchr(tail, r[0]) || (r[0] >= '0' && r[0] <= '9') || r[0] == '_' ||
        !strchr(tail, r[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr(tail, r[i]) && r[i] != ',' && r[i] != ':')
            return 0;
    return 1;
}

static void check_pack(const json_t *v)
{
    json_t *rec = rc_pack(json_incref((json_t *)v), NULL);
    if (!rec)
        return; /* not an object with metadata: the cache keeps it as it is */
    json_t *full = rc_unwrap(rec);
    json_t *want = json_deep_copy(v);
    if (!full || !want)
        abort();
    json_t *md = json_object_get(want, "metadata");
    json_object_del(md, "managedFields");
    json_object_del(json_object_get(md, "annotations"),
                    "kubectl.kubernetes.io/last-applied-configuration");
    if (!json_equal(full, want))
        abort();
    for (int f = 0; f < RC_MD_COUNT; f++) {
        if (f == RC_MD_FINALIZERS)
            continue; /* records only */
        const char *a = rc_md(rec, (enum rc_md)f), *b = rc_md(v, (enum rc_md)f);
        if (strcmp(a ? a : "", b ? b : "") != 0) /* a record's "" reads as absent */
            abort();
    }
    json_decref(want);
    json_decref(full);
    json_decref(rec);
}

static void check_spec(const json_t *v)
{
    char path[RC_SPEC_PATH_MAX];
    int prio = -1;
    const json_t *specs[] = {v, jx_get(v, "spec")};
    for (size_t i = 0; i < 2; i++) {
        if (rc_spec_equal(specs[i], specs[i], &prio, path, sizeof(path)) != 1 || path[0])
            abort();
        (void)rc_spec_equal(jx_get(specs[i], "podSets"), specs[i], &prio, path, sizeof(path));
        if (strlen(path) >= sizeof(path))
            abort();
    }
}

/* A local job of kind k, suspended or not, with a status of its own. */
static json_t *local_job(const struct mk_kind *k, int suspended)
{
    char api[128];
    snprintf(api, sizeof(api), "%s%s%s", k->group, *k->group ? "/" : "", k->version);
    json_t *j = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{},s:{s:s,s:i}}", "apiVersion", api, "kind",
                          k->kind, "metadata", "name", "a", "namespace", "ns", "uid", "u", "spec",
                          "status", "startTime", "2024-01-01T00:00:00Z", "active", 1);
    if (!j)
        abort();
    if (k->suspend_path)
        jx_set(j, k->suspend_path, json_boolean(suspended));
    if (k->managed_by_path)
        jx_set_new_str(j, k->managed_by_path, MK_MANAGED_BY);
    return j;
}

static void check_job(const json_t *v, unsigned flags)
{
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        json_t *local = local_job(k, flags & 1);
        int deferred = -1;
        json_t *p = rc_job_status_patch(k, local, v, flags & 2, &deferred);
        if (deferred != 0 && deferred != 1)
            abort();
        if (p && (!json_is_object(jx_get(p, "status")) || !json_object_size(jx_get(p, "status")) ||
                  json_object_size(p) != 1 || deferred))
            abort();
        json_decref(p);
        json_decref(rc_remote_spec_patch(k, local, v));
        json_decref(rc_remote_spec_patch(k, v, local));
        json_decref(rc_job_stopped_patch(k, v, NOW));
        (void)rc_job_finished(v);
        char sel[512];
        int rc = rc_place_selector(k->kind, v, sel, sizeof(sel));
        if (rc == 0 && strnlen(sel, sizeof(sel)) >= sizeof(sel))
            abort();
        json_decref(local);
    }
}

static void check_placement(const json_t *v, const json_t *mgr)
{
    json_t *pods = json_is_array(v) ? json_incref((json_t *)v) : json_pack("[O]", v);
    struct rc_place_sum s;
    rc_place_summarise(pods, &s);
    int held = s.other;
    if (s.n > RC_PLACE_MAX_GROUPS || s.started < 0 || s.started > s.total || s.other < 0)
        abort();
    for (size_t i = 0; i < s.n; i++) {
        char msg[RC_PLACE_MSG_MAX];
        held += s.g[i].pods;
        if (s.g[i].pods <= 0 || strnlen(s.g[i].reason, sizeof(s.g[i].reason)) == 64 ||
            strnlen(s.g[i].detail, RC_PLACE_DETAIL_MAX) == RC_PLACE_DETAIL_MAX)
            abort();
        rc_place_group_msg("worker-1", &s, i, msg, sizeof(msg));
        if (strnlen(msg, sizeof(msg)) == sizeof(msg) || !fuzz_valid_text(msg) ||
            !fuzz_valid_text(s.g[i].reason) || !fuzz_valid_text(s.g[i].detail))
            abort();
    }
    if (held > s.total - s.started)
        abort();
    struct rc_place_plan plan;
    if (rc_place_decide(mgr, "worker-1", &s, NOW, &plan) != 0 || plan.nev > s.n)
        abort();
    for (size_t i = 0; i < plan.nev; i++)
        if (!fuzz_valid_text(plan.ev[i].message) || !fuzz_valid_text(plan.ev[i].reason))
            abort();
    json_t *c = NULL;
    for (size_t i = 0; (c = json_array_get(plan.conds, i)); i++)
        if (!condition_reason(jx_str(c, "reason")) || !fuzz_valid_text(jx_str(c, "message")) ||
            strlen(jx_str(c, "message")) >= RC_WHY_MAX)
            abort();
    rc_place_plan_clear(&plan);
    json_decref(pods);
}

/* The manager Workload of the observation, in one of four states. */
static json_t *manager_wl(unsigned state)
{
    static const char *const check_state[] = {"Pending", "Pending", "Ready", "Ready"};
    json_t *wl = json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:[s],s:[{s:s,s:s,s:s,s:s,s:b}]},"
        "s:{s:s,s:i,s:[{s:s,s:i,s:{}}]},s:{s:[{s:s,s:s,s:s,s:s}]}}",
        "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name",
        "job-a-12345", "namespace", "ns", "uid", "wl-uid", "resourceVersion", "10", "finalizers",
        RC_FINALIZER, "ownerReferences", "apiVersion", "batch/v1", "kind", "Job", "name", "a",
        "uid", "u", "controller", 1, "spec", "queueName", "team-a", "priority", 0, "podSets",
        "name", "main", "count", 1, "template", "status", "admissionChecks", "name", "mk", "state",
        check_state[state], "message", "", "lastTransitionTime", "2024-01-01T00:00:00Z");
    if (!wl)
        abort();
    if (state >= 1) {
        json_t *c = rc_conds_with(jx_get(wl, "status.conditions"), "QuotaReserved", "True",
                                  "QuotaReserved", "ok", "2024-01-01T00:00:00Z");
        jx_set(wl, "status.conditions", c);
    }
    if (state >= 2)
        jx_set_new_str(wl, "status.clusterName", state == 2 ? "worker-1" : "worker-2");
    return wl;
}

static void check_decide(const json_t *v, unsigned flags)
{
    struct rc_remote r[2] = {
        {.cluster = "worker-1", .in_config = 1, .available = 1},
        {.cluster = "worker-2", .in_config = 1, .available = !(flags & 16)},
    };
    json_t *wl = manager_wl(flags >> 2 & 3);
    json_t *job = local_job(&mk_kind_job, flags & 1);
    json_t *nominated = json_pack("[s,s]", "worker-1", "worker-2");
    r[0].wl = (json_t *)v;
    r[0].job = flags & 32 ? (json_t *)v : NULL;
    r[1].wl = flags & 64 ? (json_t *)v : NULL;
    struct rc_obs o = {
        .wl = wl,
        .check = "mk",
        .kind = &mk_kind_job,
        .owner_gvk = "batch/v1, Kind=Job",
        .job = job,
        .managed = 1,
        .managed_by_honoured = 1,
        .remotes = r,
        .nremotes = 2,
        .nominated = nominated,
        .dispatcher_writes = 1,
        .dispatcher_requeue_ms = -1,
        .mode = flags & 128 ? RC_MODE_WITH_KUEUE : RC_MODE_STANDALONE,
        .worker_lost_timeout_ms = 20000,
        .resync_ms = 300000,
        .now = NOW,
        .explain = 1,
    };
    static struct rc_plan plan; /* large: off the stack */
    rc_decide(&o, &plan);
    const char *recorded = jx_str(wl, "status.clusterName");
    int job_on = -1;
    if (plan.n > RC_MAX_ACTS)
        abort();
    for (size_t i = 0; i < plan.n; i++) {
        const struct rc_act *a = &plan.acts[i];
        if (a->cluster < -1 || a->cluster >= (int)o.nremotes)
            abort();
        if (a->type == RC_ACT_WL_STATUS && jx_str(a->patch, "clusterName"))
            recorded = jx_str(a->patch, "clusterName");
        if (a->type == RC_ACT_CREATE_REMOTE_JOB) {
            if (a->cluster < 0 || (job_on >= 0 && job_on != a->cluster) || !recorded ||
                strcmp(recorded, r[a->cluster].cluster) != 0)
                abort();
            job_on = a->cluster;
        }
        if ((a->type == RC_ACT_WL_STATUS || a->type == RC_ACT_LOCAL_JOB_STATUS) &&
            !json_is_object(a->patch))
            abort();
        if (!fuzz_valid_text(a->message) || !fuzz_valid_text(a->reason))
            abort();
    }
    rc_plan_clear(&plan);
    json_decref(nominated);
    json_decref(job);
    json_decref(wl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        log_set_level(LOG_ERROR);
        init = 1;
    }
    if (size < 1)
        return 0;
    unsigned flags = data[0];
    json_t *v = jx_loadb((const char *)data + 1, size - 1, 0, &kc_unread, NULL);
    if (!v)
        return 0;
    json_t *mgr = manager_wl(flags >> 2 & 3);
    check_pack(v);
    check_spec(v);
    check_job(v, flags);
    check_placement(v, mgr);
    check_decide(v, flags);
    json_decref(mgr);
    json_decref(v);
    return 0;
}
