/* v1 Pod (gated by a scheduling gate) and apps/v1 Deployment (whose pods are
 * dispatched one by one as single-pod Workloads; no Deployment Workload). */
#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

static int pod_pod_sets(const json_t *pod, json_t *out, char *err, size_t errlen)
{
    json_t *tmpl = json_pack("{s:O}", "spec", jx_get(pod, "spec") ?: json_null());
    int rc = tmpl ? mk_podset_add(out, "main", 1, tmpl, err, errlen) : -1;
    json_decref(tmpl);
    return rc;
}

/* The worker's pod is created without the manager's admission gate: the
 * worker's Kueue gates it again if its webhook handles the namespace, and
 * ungates it once the prebuilt Workload is admitted; otherwise it runs at
 * once, its Workload being admitted already. Other gates stay. */
void mk_pod_drop_admission_gate(json_t *spec)
{
    json_t *gates = json_object_get(spec, "schedulingGates");
    if (!json_is_array(gates))
        return;
    for (size_t i = json_array_size(gates); i-- > 0;) {
        const char *n = jx_str(json_array_get(gates, i), "name");
        if (n && strcmp(n, MK_ADMISSION_GATE) == 0)
            json_array_remove(gates, i);
    }
    if (json_array_size(gates) == 0)
        json_object_del(spec, "schedulingGates");
}

int mk_pod_has_admission_gate(const json_t *pod)
{
    size_t i;
    json_t *g;
    json_array_foreach(jx_get(pod, "spec.schedulingGates"), i, g)
    {
        const char *n = jx_str(g, "name");
        if (n && strcmp(n, MK_ADMISSION_GATE) == 0)
            return 1;
    }
    return 0;
}

static void pod_edit_remote(json_t *copy, const json_t *pod)
{
    (void)pod;
    mk_pod_drop_admission_gate(json_object_get(copy, "spec"));
}

static int deployment_pod_sets(const json_t *d, json_t *out, char *err, size_t errlen)
{
    (void)d, (void)out;
    return errf(err, errlen, MK_ERR_INVAL,
                "a Deployment has no Workload: each of its pods is dispatched alone");
}

const struct mk_kind mk_kind_pod = {
    .kind = "Pod",
    .group = "",
    .version = "v1",
    .resource = "pods",
    .gating = MK_GATE_POD,
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = pod_pod_sets,
    .edit_remote = pod_edit_remote,
};

const struct mk_kind mk_kind_deployment = {
    .kind = "Deployment",
    .group = "apps",
    .version = "v1",
    .resource = "deployments",
    .gating = MK_GATE_POD_TEMPLATE,
    .status_sync = MK_STATUS_NONE,
    .pod_sets = deployment_pod_sets,
};
