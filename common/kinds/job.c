/* batch/v1 Job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

#define MIN_PARALLELISM "kueue.x-k8s.io/job-min-parallelism"

/* Pods running at once: min(parallelism, completions), parallelism default 1. */
long long mk_job_pod_count(const json_t *job_spec)
{
    long long par = mk_count_at(job_spec, "parallelism", 1);
    long long comp = mk_count_at(job_spec, "completions", par);
    if (par < 0 || comp < 0)
        return -1;
    return comp < par ? comp : par;
}

static int pod_sets(const json_t *job, json_t *out, char *err, size_t errlen)
{
    json_t *spec = jx_get(job, "spec");
    long long count = mk_job_pod_count(spec);
    if (count < 0) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "spec.parallelism and spec.completions must be non-negative integers");
    }
    if (mk_podset_add(out, "main", count, jx_get(spec, "template"), err, errlen) < 0)
        return -1;
    const char *min = jx_str(job, "metadata.annotations[" MIN_PARALLELISM "]");
    if (min) {
        char *end;
        long long m = strtoll(min, &end, 10);
        if (*min == '\0' || *end != '\0' || m < 1 || m > count) {
            return errf(err, errlen, MK_ERR_INVAL,
                        "annotation %s must be an integer from 1 to %lld", MIN_PARALLELISM, count);
        }
        json_object_set_new(json_array_get(out, json_array_size(out) - 1), "minCount",
                            json_integer(m));
    }
    return 0;
}

/* The worker's Job controller must pick its own selector and uid labels. */
static void edit_remote(json_t *copy, const json_t *job)
{
    (void)job;
    jx_del(copy, "spec.selector");
    json_t *labels = jx_get(copy, "spec.template.metadata.labels");
    json_object_del(labels, "controller-uid");
    json_object_del(labels, "batch.kubernetes.io/controller-uid");
    json_object_del(labels, "job-name");
}

static const char *const ttl[] = {"spec.ttlSecondsAfterFinished", NULL};

const struct mk_kind mk_kind_job = {
    .kind = "Job",
    .group = "batch",
    .version = "v1",
    .resource = "jobs",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "kubernetes.io/job-controller",
    .suspend_path = "spec.suspend",
    .ttl_paths = ttl,
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = pod_sets,
    .edit_remote = edit_remote,
};
