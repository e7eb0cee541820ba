/* Is a worker's copy of a Workload still the manager's Workload? Compared
 * the way Kueue's MultiKueue controller compares (isRemoteSpecOutOfSync in
 * pkg/controller/admissionchecks/multikueue/workload.go: both specs decoded
 * into typed structs, remote preemptionGates cleared, then
 * equality.Semantic.DeepEqual), on the JSON the two API servers store:
 *
 *  - null, {} and [] (and objects holding only such values) count as
 *    absent: Go decodes them all to nil or the zero value, and a structural
 *    schema prunes nulls and `creationTimestamp: null`;
 *  - a member only the remote has is tolerated: the worker's schema
 *    defaults (container port `protocol: TCP`, podSet `count`,
 *    `spec.active`);
 *  - a member only the manager has counts only when it is not empty (a
 *    worker whose schema does not know a field prunes it: a real
 *    difference, reported);
 *  - arrays compare element by element, lengths must match;
 *  - quantities (members of `requests`, `limits`, `overhead`, and
 *    `sizeLimit`) compare by value ("1000m" = "1" = 1), times
 *    (`creationTimestamp`, `deletionTimestamp`) by instant, numbers by
 *    value; everything else by JSON equality.
 *
 * Pure functions on borrowed jansson values. */
#ifndef MKUEUE_RC_SPECDIFF_H
#define MKUEUE_RC_SPECDIFF_H

#include <jansson.h>
#include <stddef.h>

#define RC_SPEC_PATH_MAX 256 /* room for a differing field's path */

/* 1 when the remote copy's spec `remote` holds the manager's spec `local`
 * for MultiKueue purposes (preemptionGates ignored on both sides), else 0.
 * Either may be NULL or a non-object (then it counts as {}). *prio_only is
 * set when they differ in priority/priorityClassRef only. When path is not
 * NULL (pathlen > 0) and the specs differ, it receives the first differing
 * field in the manager's member order, outside the priority fields unless
 * they are the only difference, e.g.
 * "spec.podSets[0].template.spec.containers[0].image" (keys that are not
 * plain names in brackets: "requests[nvidia.com/gpu]"; cut with "..." when
 * it does not fit); else it is set to "". */
int rc_spec_equal(const json_t *local, const json_t *remote, int *prio_only, char *path,
                  size_t pathlen);

#endif
