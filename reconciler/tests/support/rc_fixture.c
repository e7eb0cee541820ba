#include "rc_fixture.h"

#include <string.h>

#include "kinds/adapters.h"

json_t *rcf_local_job(int suspended)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:b,s:s}}", "apiVersion", "batch/v1", "kind",
                     "Job", "metadata", "name", "a", "namespace", "ns", "uid", "job-uid", "spec",
                     "suspend", suspended, "managedBy", MK_MANAGED_BY);
}

void rcf_setup(struct rc_fixture *f, json_t *wl)
{
    memset(f, 0, sizeof(*f));
    f->o.wl = wl;
    f->o.check = "mk";
    f->o.kind = &mk_kind_job;
    f->o.owner_gvk = "batch/v1, Kind=Job";
    f->o.job = rcf_local_job(0);
    f->o.managed = 1;
    f->o.managed_by_honoured = 1;
    f->o.group_absent = -1;
    f->o.remotes = f->r;
    f->o.nremotes = 2;
    f->r[0] = (struct rc_remote){.cluster = "worker-1", .in_config = 1, .available = 1};
    f->r[1] = (struct rc_remote){.cluster = "worker-2", .in_config = 1, .available = 1};
    f->nominated = json_pack("[s,s]", "worker-1", "worker-2");
    f->o.nominated = f->nominated;
    f->o.dispatcher_writes = 1;
    f->o.dispatcher_requeue_ms = -1;
    f->o.mode = RC_MODE_STANDALONE;
    f->o.worker_lost_timeout_ms = 20000;
    f->o.resync_ms = 300000;
    f->o.now = RCF_NOW;
}

void rcf_teardown(struct rc_fixture *f)
{
    rc_plan_clear(&f->plan);
    for (int i = 0; i < 2; i++) {
        json_decref(f->r[i].wl);
        json_decref(f->r[i].job);
    }
    json_decref(f->o.wl);
    json_decref(f->o.job);
    json_decref(f->nominated);
}
