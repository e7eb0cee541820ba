/* leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: one Workload per replica
 * index, each with a leader (1) and workers (size-1), or "main" (size) when
 * there is no leader template. The pod sets here are those of one replica. */
#include <stdio.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

static int pod_sets(const json_t *lws, json_t *out, char *err, size_t errlen)
{
    json_t *t = jx_get(lws, "spec.leaderWorkerTemplate");
    long long size = mk_count_at(t, "size", 1);
    if (size < 1) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "spec.leaderWorkerTemplate.size must be a positive integer");
    }
    json_t *leader = jx_get(t, "leaderTemplate");
    if (!leader)
        return mk_podset_add(out, "main", size, jx_get(t, "workerTemplate"), err, errlen);
    if (mk_podset_add(out, "leader", 1, leader, err, errlen) < 0)
        return -1;
    return mk_podset_add(out, "worker", size - 1, jx_get(t, "workerTemplate"), err, errlen);
}

const struct mk_kind mk_kind_leaderworkerset = {
    .kind = "LeaderWorkerSet",
    .group = "leaderworkerset.x-k8s.io",
    .version = "v1",
    .resource = "leaderworkersets",
    .gating = MK_GATE_POD_TEMPLATE,
    .prebuilt_allowed = 0,
    .status_sync = MK_STATUS_NONE,
    .pod_sets = pod_sets,
    .edit_remote = mk_set_origin_uid,
};

long long mk_lws_replicas(const json_t *lws)
{
    long long n = mk_count_at(lws, "spec.replicas", 1);
    return n > MK_LWS_MAX_REPLICAS ? -1 : n;
}

int mk_lws_workload_name(const json_t *lws, long long index, char *out, size_t outlen)
{
    const char *name = jx_str(lws, "metadata.name");
    char replica[300];
    if (!name || index < 0 ||
        snprintf(replica, sizeof(replica), "%s-%lld", name, index) >= (int)sizeof(replica))
        return -1;
    return mk_workload_name(mk_kind_leaderworkerset.kind, mk_kind_leaderworkerset.group, replica,
                            jx_str(lws, "metadata.uid"), out, outlen);
}
