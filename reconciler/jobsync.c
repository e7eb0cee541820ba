#include "jobsync.h"

#include <string.h>

#include "jsonx.h"
#include "patch.h"
#include "wlstatus.h"

static int is_batch_job(const struct mk_kind *k)
{
    return k && strcmp(k->kind, "Job") == 0 && strcmp(k->group, "batch") == 0;
}

int rc_job_finished(const json_t *job)
{
    static const char *const done[] = {"Complete", "Completed", "Failed", "Succeeded", "Finished"};
    for (size_t i = 0; i < sizeof(done) / sizeof(done[0]); i++)
        if (rc_cond_true(job, done[i]))
            return 1;
    return 0;
}

static int uncounted_in_full(json_t *diff, const json_t *remote_status)
{
    json_t *u = json_object_get(remote_status, "uncountedTerminatedPods");
    json_t *sv = json_object_get(u, "succeeded"), *fv = json_object_get(u, "failed");
    json_t *full =
        json_pack("{s:O,s:O}", "succeeded", sv ? sv : json_null(), "failed", fv ? fv : json_null());
    return full ? json_object_set_new(diff, "uncountedTerminatedPods", full) : -1;
}

json_t *rc_job_status_patch(const struct mk_kind *k, const json_t *local, const json_t *remote,
                            int guard, int *deferred)
{
    *deferred = 0;
    if (!local || !remote || k->status_sync != MK_STATUS_WHOLE)
        return NULL;
    if (guard && is_batch_job(k) && jx_bool(local, "spec.suspend", 0) &&
        !jx_bool(remote, "spec.suspend", 0) && !rc_job_finished(remote)) {
        *deferred = 1;
        return NULL;
    }
    json_t *from = jx_get(local, "status");
    json_t *to = jx_get(remote, "status");
    json_t *empty = json_object();
    if (!empty)
        return NULL;
    json_t *diff = jp_merge_diff(from ? from : empty, to ? to : empty);
    json_decref(empty);
    if (!diff)
        return NULL;
    /* The API server keeps an unsuspended Job's startTime once set; a copy
     * re-created elsewhere has another one. Writing it would refuse the
     * whole patch, its terminal status included. */
    if (is_batch_job(k) && json_object_get(from, "startTime") && !jx_bool(local, "spec.suspend", 0))
        json_object_del(diff, "startTime");
    /* The diff is against our cache, which can lag the server: a pod list
     * the cache never saw would survive a merge of `{}` and the API server
     * refuses a finished Job whose uncounted pods are not empty. The lists
     * are stated in full (an array in a merge patch replaces). */
    if (is_batch_job(k) && json_object_size(diff) > 0 && uncounted_in_full(diff, to) < 0) {
        json_decref(diff);
        return NULL;
    }
    if (json_object_size(diff) == 0) {
        json_decref(diff);
        return NULL;
    }
    return json_pack("{s:o}", "status", diff);
}

json_t *rc_remote_spec_patch(const struct mk_kind *k, const json_t *local, const json_t *remote)
{
    json_t *patch = NULL;
    for (size_t i = 0; local && remote && k->spec_sync_paths && k->spec_sync_paths[i]; i++) {
        json_t *want = jx_get(local, k->spec_sync_paths[i]);
        json_t *have = jx_get(remote, k->spec_sync_paths[i]);
        if (want == have || (want && have && json_equal(want, have)))
            continue;
        if ((!patch && !(patch = json_object())) ||
            jx_set(patch, k->spec_sync_paths[i], want ? json_deep_copy(want) : json_null()) < 0) {
            json_decref(patch);
            return NULL;
        }
    }
    return patch;
}

json_t *rc_job_stopped_patch(const struct mk_kind *k, const json_t *local, const char *now)
{
    if (!is_batch_job(k) || !local || !jx_bool(local, "spec.suspend", 0) || rc_job_finished(local))
        return NULL;
    json_t *st = jx_get(local, "status");
    long long active = jx_int(st, "active", 0), ready = jx_int(st, "ready", 0);
    long long terminating = jx_int(st, "terminating", 0);
    if (active <= 0 && ready <= 0 && terminating <= 0 && !jx_str(st, "startTime"))
        return NULL;
    json_t *conds = rc_conds_with(jx_get(st, "conditions"), "Suspended", "True", "JobSuspended",
                                  "Job suspended", now);
    if (!conds)
        return NULL;
    return json_pack("{s:{s:n,s:i,s:i,s:n,s:o}}", "status", "active", "ready", 0, "terminating", 0,
                     "startTime", "conditions", conds);
}
