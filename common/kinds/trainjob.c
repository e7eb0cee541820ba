/* trainer.kubeflow.org/v1alpha1 TrainJob.
 *
 * Kueue derives TrainJob pod sets from the JobSet its (Cluster)TrainingRuntime
 * would generate. mkueue does not resolve runtimes: the Workload gets one pod
 * set "node" of spec.trainer.numNodes pods (default 1) asking for
 * spec.trainer.resourcesPerNode, which is what quota is charged on. */
#include <string.h>

#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"
#include "errf.h"

static int pod_sets(const json_t *tj, json_t *out, char *err, size_t errlen)
{
    long long nodes = mk_count_at(tj, "spec.trainer.numNodes", 1);
    json_t *res = jx_get(tj, "spec.trainer.resourcesPerNode");
    json_t *container = json_pack("{s:s}", "name", "node");
    if (!container)
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    if (json_is_object(res))
        json_object_set(container, "resources", res);
    json_t *tmpl = json_pack("{s:{s:[o]}}", "spec", "containers", container);
    int rc = mk_podset_add(out, "node", nodes, tmpl, err, errlen);
    json_decref(tmpl);
    return rc;
}

/* Patches written by the manager's Kueue describe the manager's flavors. */
static void edit_remote(json_t *copy, const json_t *job)
{
    (void)job;
    json_t *patches = jx_get(copy, "spec.runtimePatches");
    for (size_t i = json_array_size(patches); i-- > 0;) {
        const char *m = jx_str(json_array_get(patches, i), "manager");
        if (m && strcmp(m, "kueue.x-k8s.io/manager") == 0)
            json_array_remove(patches, i);
    }
}

const struct mk_kind mk_kind_trainjob = {
    .kind = "TrainJob",
    .group = "trainer.kubeflow.org",
    .version = "v1alpha1",
    .resource = "trainjobs",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "trainer.kubeflow.org/trainjob-controller",
    .suspend_path = "spec.suspend",
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = pod_sets,
    .edit_remote = edit_remote,
};
