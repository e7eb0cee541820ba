/* apps/v1 StatefulSet: one Workload for all replicas; its pods stay gated on
 * the manager, and the worker copy carries the manager's UID. */
#include <stdio.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

static int pod_sets(const json_t *sts, json_t *out, char *err, size_t errlen)
{
    long long replicas = mk_count_at(sts, "spec.replicas", 1);
    if (replicas < 0) {
        return errf(err, errlen, MK_ERR_INVAL, "spec.replicas must be a non-negative integer");
    }
    return mk_podset_add(out, "main", replicas, jx_get(sts, "spec.template"), err, errlen);
}

/* The worker names its pod group after the manager's UID. */
void mk_set_origin_uid(json_t *copy, const json_t *job)
{
    const char *uid = jx_str(job, "metadata.uid");
    if (uid)
        jx_set_new_str(copy, "metadata.annotations[" MK_ORIGIN_UID_ANNOTATION "]", uid);
}

const struct mk_kind mk_kind_statefulset = {
    .kind = "StatefulSet",
    .group = "apps",
    .version = "v1",
    .resource = "statefulsets",
    .gating = MK_GATE_POD_TEMPLATE,
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_NONE,
    .pod_sets = pod_sets,
    .edit_remote = mk_set_origin_uid,
};
