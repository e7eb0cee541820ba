/* Standalone mode: a job's Workload priority, resolved the way Kueue's
 * jobframework resolves it (ExtractPriority, UpdateWorkloadPriority):
 *   1. the job's kueue.x-k8s.io/priority-class label names a
 *      WorkloadPriorityClass: its value, priorityClassRef
 *      {kueue.x-k8s.io, WorkloadPriorityClass, name}; the class missing is
 *      an error (no Workload is written, the job is retried);
 *   2. else the job's own priority class (Kubeflow's and MPIJob's
 *      runPolicy.schedulingPolicy.priorityClass, kinds.h), else the first
 *      pod set's template priorityClassName, names a PriorityClass: its
 *      value, priorityClassRef {scheduling.k8s.io, PriorityClass, name};
 *      missing is an error as well;
 *   3. else the global default PriorityClass (the lowest value when several
 *      are), else priority 0 and no reference.
 * The label wins over the pod PriorityClass. An existing Workload is
 * updated when the label no longer names its class, and only when its
 * priority came from a WorkloadPriorityClass or from nothing (a Workload
 * whose priority is a pod PriorityClass's keeps it), as Kueue does.
 *
 * Pure functions of their inputs: the caches are read, never written. The
 * caller owns every object; results are new references or caller storage. */
#ifndef MKUEUE_RC_PRIORITY_H
#define MKUEUE_RC_PRIORITY_H

#include <jansson.h>
#include <stddef.h>

#include "kube_cache.h"

#define RC_WPC_LABEL         "kueue.x-k8s.io/priority-class"
#define RC_WPC_GROUP         "kueue.x-k8s.io"
#define RC_WPC_KIND          "WorkloadPriorityClass"
#define RC_PC_GROUP          "scheduling.k8s.io"
#define RC_PC_KIND           "PriorityClass"
#define RC_PRIORITY_NAME_MAX 254 /* a DNS-1123 subdomain (253) and its NUL */

struct rc_priority {
    const char *group, *kind;        /* static strings; NULL: no reference */
    char name[RC_PRIORITY_NAME_MAX]; /* the class; "" with no reference */
    long long value;
};

/* The priority of a Workload whose pod sets are `podsets` (a Workload's
 * spec.podSets) for a job whose label is `label` and whose own priority
 * class is `job_class` (either NULL or "" when not set).
 * wpcs and pcs are the WorkloadPriorityClass and PriorityClass caches (either
 * may be NULL: nothing found there). Returns 0, or MK_ERR with err set to
 * Kueue's text (`workloadpriorityclasses.kueue.x-k8s.io "x" not found`) or
 * MK_ERR_INVAL for a name too long. */
int rc_priority_resolve(const char *label, const char *job_class, const json_t *podsets,
                        struct kcache *wpcs, struct kcache *pcs, struct rc_priority *out, char *err,
                        size_t errlen);

/* 1 when Workload `wl` must be updated for a job labelled `label` (NULL or
 * ""): its priorityClassRef is absent or a WorkloadPriorityClass, and names
 * another class than the label. 0 otherwise. */
int rc_priority_needs_update(const json_t *wl, const char *label);

/* Sets spec.priority and spec.priorityClassRef (removed when p has no
 * reference) of Workload `wl` (modified in place). Returns 0 or -1 (oom). */
int rc_priority_apply(json_t *wl, const struct rc_priority *p);

/* The merge patch writing p into a Workload at resourceVersion rv (NULL:
 * unconditional): spec.priority and spec.priorityClassRef (null with no
 * reference). New reference, or NULL (oom). */
json_t *rc_priority_patch(const struct rc_priority *p, const char *rv);

#endif
