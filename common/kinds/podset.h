/* Helpers for the kinds' pod_sets functions (internal to kinds/). */
#ifndef MKUEUE_KINDS_PODSET_H
#define MKUEUE_KINDS_PODSET_H

#include <jansson.h>
#include <stddef.h>

/* Appends {name (lower-cased), count, template} to out; a NULL template
 * becomes {}. The template is tmpl itself, one more reference, not a copy:
 * mk_pod_sets_shared hands it out as such (read-only), mk_pod_sets replaces
 * it with a deep copy. Returns 0, or -1 with err on a bad name or oom. */
int mk_podset_add(json_t *out, const char *name, long long count, const json_t *tmpl, char *err,
                  size_t errlen);

/* A replica count at `path` of obj: the integer, `def` when absent, -1 when
 * present but not a non-negative integer. */
long long mk_count_at(const json_t *obj, const char *path, long long def);

/* Pod sets from a Kubeflow-style replica map (`specs`: {"Master": {replicas,
 * template}, ...}), in the order of `order` (unknown types follow,
 * alphabetically). */
int mk_podsets_from_replica_specs(const json_t *specs, const char *const *order, json_t *out,
                                  const char *field, char *err, size_t errlen);

/* Pods of a batch Job spec running at once: min(parallelism, completions),
 * parallelism defaulting to 1; -1 on non-integers. */
long long mk_job_pod_count(const json_t *job_spec);

/* Removes the kueue.x-k8s.io/admission entry of a pod spec's
 * schedulingGates (and the list when it ends up empty); spec borrowed. */
void mk_pod_drop_admission_gate(json_t *spec);

/* 1 when the pod carries Kueue's admission scheduling gate. */
int mk_pod_has_admission_gate(const json_t *pod);

/* edit_remote for kinds whose worker copy carries the manager's UID. */
void mk_set_origin_uid(json_t *copy, const json_t *job);

#endif
