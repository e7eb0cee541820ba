/* Pod groups as Kueue's pod integration reads them: the pods of a namespace
 * that share the label kueue.x-k8s.io/pod-group-name make one Workload,
 * named after the group, once kueue.x-k8s.io/pod-group-total-count of them
 * exist; its pod sets are the group's roles, named by Kueue's role hash.
 * Pure functions of the pods (JSON borrowed, results new or written into the
 * caller's buffers); shared by the webhook (the role hash annotation) and
 * the reconciler (the Workload). Thread-safe. */
#ifndef MKUEUE_KINDS_PODGROUP_H
#define MKUEUE_KINDS_PODGROUP_H

#include <jansson.h>
#include <stddef.h>

#define MK_POD_GROUP_TOTAL_ANNOTATION "kueue.x-k8s.io/pod-group-total-count"
#define MK_ROLE_HASH_ANNOTATION       "kueue.x-k8s.io/role-hash"
#define MK_IS_GROUP_WORKLOAD          "kueue.x-k8s.io/is-group-workload"
#define MK_ROLE_HASH_LEN              8 /* hex digits, as Kueue trims sha256 */

/* The pod's group name (borrowed) or NULL when it has none (or ""). */
const char *mk_pod_group_name(const json_t *pod);

/* The group's total count from the pod's annotation (>= 1), or -1 with
 * Kueue's message in err when missing or not a positive integer. */
long long mk_pod_group_total(const json_t *pod, char *err, size_t errlen);

/* Kueue's role hash of a pod spec: the first 8 hex digits of the sha256 of
 * the JSON {"spec":{affinity, containers, initContainers, nodeSelector,
 * overhead, priority, resourceClaims, runtimeClassName, tolerations,
 * topologySpreadConstraints}} as Go encodes it (keys of the shape sorted,
 * each container reduced to {ports, resources:{requests}}, absent fields
 * null). out has room for MK_ROLE_HASH_LEN + 1. Returns 0, or MK_ERR_NOMEM. */
int mk_role_hash_of_spec(const json_t *spec, char *out);

/* The pod's role: its kueue.x-k8s.io/role-hash annotation when set (as Kueue
 * reads it), else mk_role_hash_of_spec. Returns 0 or an MK_ERR_* code. */
int mk_pod_role(const json_t *pod, char *out, size_t outlen);

/* A pod that can still run or has succeeded (Kueue's isPodRunnableOrSucceeded):
 * not Failed, and not being deleted before it was bound to a node. */
int mk_pod_runnable(const json_t *pod);

/* The Workload pod sets of a group, from its pods (any order): the runnable
 * ones, the first `total` in the order Kueue keeps them (mk_pod_group_excess),
 * counted per role and sorted by role name,
 * each {name: role, count, template: {spec}} of the first pod of the role.
 * NULL with Kueue's message in err when the group is not complete
 * ("'<group>' group has fewer runnable pods than expected"), when its pods
 * disagree on the total count or the queue, or when it has more than 8
 * roles ("pod group can't include more than 8 roles"). */
json_t *mk_pod_group_pod_sets(const json_t *pods, char *err, size_t errlen);

/* The pods Kueue deletes as the group's excess (its cleanupExcessPods): of
 * the runnable ones, those past the total count when podsets is NULL (no
 * Workload yet), else those past their role's count in podsets (the
 * Workload's spec.podSets; pods of no listed role are left alone). Kueue
 * keeps ungated pods before gated ones, then the oldest (creationTimestamp),
 * then (ours, for ties) by name. Returns a new array of the pods (new
 * references), empty when none; NULL when memory runs out. */
json_t *mk_pod_group_excess(const json_t *pods, const json_t *podsets);

/* How many pods the group lacks (Kueue's absentPods): for each pod set of
 * podsets (the Workload's spec.podSets), its count less its role's
 * runnable pods, when that is more than none. Drives Kueue's
 * WaitingForReplacementPods. -1 when a pod's role cannot be read (Kueue
 * then changes nothing) or memory runs out. */
long long mk_pod_group_absent(const json_t *pods, const json_t *podsets);

/* The name of the Workload a job belongs to: a grouped Pod's group name,
 * else mk_workload_name of the job. Returns 0, or -1 when it has none. */
struct mk_kind;
int mk_job_workload_name(const struct mk_kind *k, const json_t *job, char *out, size_t outlen);

#endif
