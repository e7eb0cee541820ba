#include "cluster_status.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "dispatch.h"
#include "jsonx.h"
#include "log.h"
#include "probe.h"
#include "wlstatus.h"

static const struct kc_resource MKCS = {"kueue.x-k8s.io", "v1beta2", "multikueueclusters", 0};

int rc_reconcile_cluster(struct rc_ctx *x, const char *name)
{
    json_t *mkc = kcache_get(x->mkclusters, name);
    const char *v[] = {name};
    struct mkcs_state s;
    int rc = 0;
    if (!mkc) {
        mt_set(x->metrics.connected, v, 0);
        goto out;
    }
    if (mkcs_state(x->clusters, name, &s) < 0 || !s.known)
        goto out; /* not handled yet: mkcs_sync comes first */
    char perr[512];
    if (s.connected && rc_probe_unreachable_since(x->probe, name, perr, sizeof(perr))) {
        s.connected = 0;
        snprintf(s.reason, sizeof(s.reason), "ClientConnectionFailed");
        buf_cut_fmt(s.message, sizeof(s.message), "worker unreachable: %s", perr);
    }
    mt_set(x->metrics.connected, v, s.connected ? 1 : 0);
    if (s.connected)
        rc_lost_forget(x, name); /* a later loss is timed from its own start */
    const char *status = s.connected ? "True" : "False";
    const char *reason =
        s.reason[0] ? s.reason : (s.connected ? "Active" : "ClientConnectionFailed");
    /* jansson refuses a string that is not UTF-8 (then no status would be
     * written and the old one stay): a worker's error text is escaped. */
    buf_utf8_sanitize(s.message, sizeof(s.message));
    const char *message = s.message[0] ? s.message : (s.connected ? "Connected" : "connecting");
    rc = rc_write_active(x, &MKCS, mkc, name, status, reason, message, "cluster", "cluster");
out:
    json_decref(mkc);
    return rc < 0 ? -1 : 0;
}
