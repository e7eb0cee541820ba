/* Standalone mode: the manager Workload of a job whose queue leads to a
 * MultiKueue AdmissionCheck, built the way Kueue's job integration does
 * (name, owner reference, pod sets, queueName, priority, finalizer). Its
 * first status is the quota gate's (gate.c). */
#ifndef MKUEUE_RC_WORKLOAD_CREATE_H
#define MKUEUE_RC_WORKLOAD_CREATE_H

#include <jansson.h>

#include "ctx.h"

/* The Workload for `job` (new reference) or NULL with err, with priority 0
 * and no priorityClassRef (rc_priority_apply sets them; priority.h). */
json_t *rc_build_workload(const struct mk_kind *k, const json_t *job, const char *queue, char *err,
                          size_t errlen);

/* The Workload of a pod group (kinds/podgroup.h) from its pods: named after
 * the group, owned by every pod (no controller), annotated
 * kueue.x-k8s.io/is-group-workload, pod sets by role. NULL with Kueue's
 * message in err while the group is incomplete or inconsistent. */
json_t *rc_build_group_workload(const json_t *pods, const char *queue, char *err, size_t errlen);

/* The status of a Workload's first write (the gate's, while it waits):
 * every check of the ClusterQueue Pending, and
 * QuotaReserved False with reason and message (new reference). checks is an
 * array of names. */
json_t *rc_initial_status(const json_t *checks, const char *reason, const char *message,
                          const char *now);

/* Reconciles manager job "ns/name" of enabled kind index ki: creates its
 * Workload when missing; updates its priority when the job's
 * kueue.x-k8s.io/priority-class label changed (priority.h). Returns 0 or
 * -1 (retry with backoff). */
int rc_reconcile_job(struct rc_ctx *x, int ki, const char *key);

#endif
