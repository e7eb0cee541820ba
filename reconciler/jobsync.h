/* Remote job status -> local job status (docs/multikueue-compat.md 3.7 and 4): the whole
 * status, with batch/Job's guard for a suspended local job; and the spec
 * fields a kind forwards the other way. Pure. */
#ifndef MKUEUE_RC_JOBSYNC_H
#define MKUEUE_RC_JOBSYNC_H

#include <jansson.h>

#include "kinds/kinds.h"

/* 1 when the job reports a final condition (Complete/Completed/Failed/
 * Succeeded/Finished = True). */
int rc_job_finished(const json_t *job);

/* The merge patch for the local job's status subresource ({"status": ...})
 * that makes its status equal to the remote's, or NULL when nothing is to
 * be written. Guard (batch/Job with a managedBy the manager honours): while
 * the local job is suspended and the remote runs unfinished, nothing is
 * copied (setting startTime on a suspended Job is refused by newer
 * apiservers) and *deferred is set: the caller looks again shortly. */
json_t *rc_job_status_patch(const struct mk_kind *k, const json_t *local, const json_t *remote,
                            int guard, int *deferred);

/* The merge patch for the worker's copy that forwards the spec fields the
 * kind syncs (spec_sync_paths: RayService spec.serveConfigV2) where the
 * manager's job differs from the remote, or NULL when none differs (or on
 * oom: the next sync tries again). As Kueue's remote spec sync, after the
 * status copy, in place (no re-admission). */
json_t *rc_remote_spec_patch(const struct mk_kind *k, const json_t *local, const json_t *remote);

/* The status merge patch ({"status": ...}) that shows a stopped batch/Job
 * as the Job controller shows one (docs/multikueue-compat.md 3.7): no
 * active, ready or terminating pods, no startTime, Suspended=True
 * JobSuspended "Job suspended" (lastTransitionTime `now`); NULL when the
 * job is not a suspended, unfinished batch/Job or already shows that.
 * Kueue, stopping a job, restores its pod template, which Kubernetes
 * allows only on a suspended Job with no active pods; on the manager no
 * Job controller resets what mkueue mirrored from the removed copy. */
json_t *rc_job_stopped_patch(const struct mk_kind *k, const json_t *local, const char *now);

#endif
