/* ray.io/v1 RayJob, RayCluster and RayService: a head pod set and one per
 * worker group (replicas, times numOfHosts when above 1); RayJob adds the
 * submitter in K8sJobMode (the CRD's default); RayService's cluster is its
 * spec.rayClusterConfig, suspended there, and its spec.serveConfigV2 edited
 * on the manager is forwarded to the worker's copy (Kueue's remote spec
 * sync). As Kueue's raycluster.BuildPodSets and
 * RayJob.addSubmitterPodSet build them: Kueue on a worker compares its own
 * pod sets with the prebuilt Workload's (counts and containers), so any
 * difference here makes the remote Workload Finished/OutOfSync. */
#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

static int cluster_pod_sets(const json_t *spec, const char *field, json_t *out, char *err,
                            size_t errlen)
{
    if (!json_is_object(jx_get(spec, "headGroupSpec"))) {
        return errf(err, errlen, MK_ERR_INVAL, "%s.headGroupSpec is required", field);
    }
    if (mk_podset_add(out, "head", 1, jx_get(spec, "headGroupSpec.template"), err, errlen) < 0)
        return -1;
    size_t i;
    json_t *g;
    json_array_foreach(jx_get(spec, "workerGroupSpecs"), i, g)
    {
        long long replicas = mk_count_at(g, "replicas", 1);
        long long hosts = mk_count_at(g, "numOfHosts", 1);
        if (replicas < 0 || hosts < 0) {
            return errf(err, errlen, MK_ERR_INVAL,
                        "%s.workerGroupSpecs[%zu]: replicas and numOfHosts must be "
                        "non-negative integers",
                        field, i);
        }
        /* Kueue multiplies only when numOfHosts > 1: 0 counts as 1 */
        long long count = hosts > 1 ? replicas * hosts : replicas;
        if (mk_podset_add(out, jx_str(g, "groupName"), count, jx_get(g, "template"), err, errlen) <
            0)
            return -1;
    }
    return 0;
}

static int raycluster_pod_sets(const json_t *rc, json_t *out, char *err, size_t errlen)
{
    return cluster_pod_sets(jx_get(rc, "spec"), "spec", out, err, errlen);
}

static int rayservice_pod_sets(const json_t *rs, json_t *out, char *err, size_t errlen)
{
    return cluster_pod_sets(jx_get(rs, "spec.rayClusterConfig"), "spec.rayClusterConfig", out, err,
                            errlen);
}

static int rayjob_pod_sets(const json_t *rj, json_t *out, char *err, size_t errlen)
{
    if (cluster_pod_sets(jx_get(rj, "spec.rayClusterSpec"), "spec.rayClusterSpec", out, err,
                         errlen) < 0)
        return -1;
    const char *mode = jx_str(rj, "spec.submissionMode");
    if (mode && strcmp(mode, "K8sJobMode") != 0)
        return 0;
    json_t *tmpl = jx_get(rj, "spec.submitterPodTemplate");
    if (tmpl)
        return mk_podset_add(out, "submitter", 1, tmpl, err, errlen);
    /* Kueue's getSubmitterTemplate (a copy of KubeRay's default submitter):
     * the head's first image, 500m/200Mi requested, 1/1Gi limits. */
    const char *image =
        jx_str(rj, "spec.rayClusterSpec.headGroupSpec.template.spec.containers.0.image");
    if (!image) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].image is "
                    "required for the default submitter");
    }
    json_t *def = json_pack("{s:{s:[{s:s,s:s,s:{s:{s:s,s:s},s:{s:s,s:s}}}],s:s}}", "spec",
                            "containers", "name", "ray-job-submitter", "image", image, "resources",
                            "limits", "cpu", "1", "memory", "1Gi", "requests", "cpu", "500m",
                            "memory", "200Mi", "restartPolicy", "Never");
    if (!def) {
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
    int rc = mk_podset_add(out, "submitter", 1, def, err, errlen);
    json_decref(def); /* mk_podset_add took its own reference */
    return rc;
}

static const char *const rayjob_ttl[] = {"spec.ttlSecondsAfterFinished", NULL};

const struct mk_kind mk_kind_rayjob = {
    .kind = "RayJob",
    .group = "ray.io",
    .version = "v1",
    .resource = "rayjobs",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "ray.io/kuberay-operator",
    .suspend_path = "spec.suspend",
    .ttl_paths = rayjob_ttl,
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = rayjob_pod_sets,
};

const struct mk_kind mk_kind_raycluster = {
    .kind = "RayCluster",
    .group = "ray.io",
    .version = "v1",
    .resource = "rayclusters",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "ray.io/kuberay-operator",
    .suspend_path = "spec.suspend",
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = raycluster_pod_sets,
};

static const char *const rayservice_spec_sync[] = {"spec.serveConfigV2", NULL};

const struct mk_kind mk_kind_rayservice = {
    .kind = "RayService",
    .group = "ray.io",
    .version = "v1",
    .resource = "rayservices",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "ray.io/kuberay-operator",
    .suspend_path = "spec.rayClusterConfig.suspend",
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = rayservice_pod_sets,
    .spec_sync_paths = rayservice_spec_sync,
};
