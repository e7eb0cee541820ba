/* jobset.x-k8s.io/v1alpha2 JobSet: one pod set per replicated job. */
#include <stdio.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

static int pod_sets(const json_t *js, json_t *out, char *err, size_t errlen)
{
    json_t *rjs = jx_get(js, "spec.replicatedJobs");
    if (!json_is_array(rjs) || json_array_size(rjs) == 0) {
        return errf(err, errlen, MK_ERR_INVAL, "spec.replicatedJobs must be a non-empty list");
    }
    size_t i;
    json_t *rj;
    json_array_foreach(rjs, i, rj)
    {
        long long replicas = mk_count_at(rj, "replicas", 1);
        json_t *job_spec = jx_get(rj, "template.spec");
        long long pods = mk_job_pod_count(job_spec);
        if (replicas < 0 || pods < 0) {
            return errf(err, errlen, MK_ERR_INVAL,
                        "spec.replicatedJobs[%zu]: replicas, parallelism and completions "
                        "must be non-negative integers",
                        i);
        }
        if (mk_podset_add(out, jx_str(rj, "name"), replicas * pods, jx_get(job_spec, "template"),
                          err, errlen) < 0)
            return -1;
    }
    return 0;
}

static const char *const ttl[] = {"spec.ttlSecondsAfterFinished", NULL};

const struct mk_kind mk_kind_jobset = {
    .kind = "JobSet",
    .group = "jobset.x-k8s.io",
    .version = "v1alpha2",
    .resource = "jobsets",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "jobset.sigs.k8s.io/jobset-controller",
    .suspend_path = "spec.suspend",
    .ttl_paths = ttl,
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = pod_sets,
};
