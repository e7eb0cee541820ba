/* Reading and computing Workload status: conditions, admission checks,
 * ownership, timestamps. Pure functions on jansson values; the new arrays
 * they return are meant for merge patches (which replace arrays whole). */
#ifndef MKUEUE_RC_WLSTATUS_H
#define MKUEUE_RC_WLSTATUS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define RC_FINALIZER "kueue.x-k8s.io/resource-in-use"
#define RC_JOB_UID   "kueue.x-k8s.io/job-uid"
#define RC_MAX_MSG   32768 /* admission check message limit */
#define RC_MAX_CMSG  32768 /* condition message limit */

/* Wall-clock time now as RFC 3339 UTC with seconds ("2024-05-01T10:00:00Z"). */
void rc_now_rfc3339(char out[32]);

/* The condition of that type in obj.status.conditions (borrowed) or NULL. */
json_t *rc_cond_find(const json_t *obj, const char *type);
/* 1 when the condition exists with status "True". */
int rc_cond_true(const json_t *obj, const char *type);
/* A new copy of `conds` (may be NULL) with the condition set; its
 * lastTransitionTime is `now` when the status changes, else kept. Returns a
 * new reference, NULL on oom. */
json_t *rc_conds_with(const json_t *conds, const char *type, const char *status, const char *reason,
                      const char *message, const char *now);
/* The status merge patch that sets obj's `Active` condition (with
 * observedGeneration, as Kueue writes it on AdmissionChecks and
 * MultiKueueClusters): *out gets a new reference, or NULL when the condition
 * already says exactly this. Returns 0, -1 on allocation failure. */
int rc_active_patch(const json_t *obj, const char *status, const char *reason, const char *message,
                    json_t **out);

/* status.admissionChecks entry of that name (borrowed) or NULL. */
json_t *rc_check_find(const json_t *wl, const char *name);
/* A new copy of `checks` with the named entry set to state/message; the
 * entry is appended when absent; lastTransitionTime changes with the state;
 * retryCount is incremented when bump_retry. New reference or NULL. */
json_t *rc_checks_with(const json_t *checks, const char *name, const char *state,
                       const char *message, const char *now, int bump_retry);
/* Kueue's resetChecksOnEviction on a new copy of `checks`: every check not
 * Pending becomes Pending with `Reset to Pending after eviction.
 * Previously: <state>` and lastTransitionTime now; only a Retry keeps (and
 * bumps) its retryCount, requeueAfterSeconds stays, the rest (podSetUpdates)
 * goes. New reference or NULL. */
json_t *rc_checks_reset_on_eviction(const json_t *checks, const char *now);
/* `msg` followed by `, Previously: "<prev>"`, truncated to RC_MAX_MSG. Caller
 * frees. */
char *rc_msg_previously(const char *msg, const char *prev);

/* Workload predicates. */
int rc_wl_reserved(const json_t *wl);  /* QuotaReserved=True */
int rc_wl_finished(const json_t *wl);  /* Finished=True */
int rc_wl_evicted(const json_t *wl);   /* Evicted=True */
int rc_wl_admitted(const json_t *wl);  /* Admitted=True */
int rc_wl_deleting(const json_t *obj); /* metadata.deletionTimestamp set */
/* 1 when wl (NULL: 0) waits for its dispatch: it holds quota, no worker
 * is chosen (status.clusterName), it is neither finished nor being
 * deleted. Its reconciles go first (main.c, rc_enqueue_first). */
int rc_wl_awaits_dispatch(const json_t *wl);
int rc_has_finalizer(const json_t *obj, const char *finalizer);
/* The merge patch that takes `finalizer` off obj, keeping its other
 * finalizers, with obj's resourceVersion as precondition: new reference,
 * NULL on allocation failure. */
json_t *rc_finalizer_removal(const json_t *obj, const char *finalizer);
/* The manager Workload a remote job belongs to: its prebuilt-workload-name
 * label (as Kueue reads it), else the annotation older mkueue versions
 * wrote; borrowed, NULL when neither. */
const char *rc_prebuilt_name(const json_t *job);

/* The controller ownerReference (else the first one), borrowed, or NULL. */
json_t *rc_wl_owner(const json_t *wl);

/* Spec comparison with remote copies: specdiff.h. */

/* Of the remotes (array of Workloads or NULLs, n entries), the index whose
 * condition `type` is True with the earliest lastTransitionTime, or -1.
 * Condition times have one-second resolution, so ties are common under a
 * burst; they are spread, not given to the lowest index: the tied entry at
 * position `tie % count` wins. Kueue leaves ties to Go's random map order;
 * a seed from the Workload's UID spreads as evenly and keeps the choice
 * stable across reconciles of one Workload. */
int rc_earliest_true(json_t *const *wls, const int *eligible, size_t n, const char *type,
                     uint64_t tie);

/* Kueue's field manager of a Workload's admission status (its
 * constants.AdmissionName): Kueue's scheduler, its eviction and its
 * MultiKueue controller all write that status by server-side apply with
 * force under this name. */
#define RC_ADMISSION_MANAGER "kueue-admission"

/* 1 when the status merge patch writes status.clusterName or
 * status.nominatedClusterNames and nothing outside the admission status
 * (the members rc_admission_apply carries). Kueue clears those two on
 * eviction by leaving them out of its apply, which removes only fields no
 * other manager owns: they must be written under RC_ADMISSION_MANAGER. */
int rc_admission_patch(const json_t *patch);

/* The server-side apply body Kueue's workload.PatchAdmissionStatus sends
 * for `wl` with the status merge patch (RFC 7386) applied: apiVersion, kind,
 * name, namespace, uid and resourceVersion (a precondition, as Kueue's
 * strict apply), and the admission status as Kueue's PrepareWorkloadPatch
 * builds it: admission, requeueState (with count or requeueAt),
 * resourceRequests (without an admission), its conditions (QuotaReserved,
 * BlockedOnPreemptionGates, Evicted, Admitted, Preempted, Requeued,
 * DeactivationTarget, Finished), accumulatedPastExecutionTimeSeconds,
 * schedulingStats.evictions, clusterName, nominatedClusterNames,
 * unhealthyNodes, preemptionGates and admissionChecks, empty lists left out
 * (but nominatedClusterNames is sent as [] when the patch sets clusterName
 * over stored nominations: one request, as the CRD forbids both at once).
 * Every member the manager owns is sent again: an apply drops what it leaves
 * out. New reference, NULL on oom. */
json_t *rc_admission_apply(const json_t *wl, const json_t *patch);

/* Milliseconds since the epoch of an RFC 3339 time, or -1. */
long long rc_parse_time_ms(const char *s);
/* The RFC 3339 time (seconds, UTC) of ms since the epoch, into out. */
void rc_format_time(long long ms, char out[32]);

/* The first admission check of wl in `state` other than `skip` (NULL: any),
 * borrowed, or NULL. */
json_t *rc_check_in_state(const json_t *wl, const char *state, const char *skip);
/* When the checks in Retry let the Workload be queued again, as Kueue's
 * GetMaxRetryTime: the latest lastTransitionTime + requeueAfterSeconds of
 * those that set a delay (KEP-3258), in ms since the epoch; 0 when none. */
long long rc_checks_retry_at_ms(const json_t *checks);

#endif
