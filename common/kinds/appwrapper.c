/* workload.codeflare.dev/v1beta2 AppWrapper: one pod set per declared pod
 * set of each component, named "<appwrapper>-<n>" in declaration order. */
#include <stdio.h>

#include "jsonx.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

static int pod_sets(const json_t *aw, json_t *out, char *err, size_t errlen)
{
    const char *name = jx_str(aw, "metadata.name");
    size_t i, j, n = 0;
    json_t *comp, *ps;
    json_array_foreach(jx_get(aw, "spec.components"), i, comp)
    {
        json_array_foreach(jx_get(comp, "podSets"), j, ps)
        {
            char psname[64];
            long long replicas = mk_count_at(ps, "replicas", 1);
            const char *path = jx_str(ps, "path");
            json_t *tmpl = path ? jx_get(comp, path) : NULL;
            if (!tmpl) {
                snprintf(err, errlen,
                         "spec.components[%zu].podSets[%zu].path does not name a pod "
                         "template in the component",
                         i, j);
                return -1;
            }
            snprintf(psname, sizeof(psname), "%.50s-%zu", name ? name : "appwrapper", n++);
            if (mk_podset_add(out, psname, replicas, tmpl, err, errlen) < 0)
                return -1;
        }
    }
    if (n == 0) {
        snprintf(err, errlen, "spec.components declares no podSets");
        return -1;
    }
    return 0;
}

const struct mk_kind mk_kind_appwrapper = {
    .kind = "AppWrapper",
    .group = "workload.codeflare.dev",
    .version = "v1beta2",
    .resource = "appwrappers",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "workload.codeflare.dev/appwrapper-controller",
    .suspend_path = "spec.suspend",
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = pod_sets,
};
