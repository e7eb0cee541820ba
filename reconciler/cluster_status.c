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
        snprintf(s.message, sizeof(s.message), "worker unreachable: %.400s", perr);
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
    json_t *cur = rc_cond_find(mkc, "Active");
    const char *cs = jx_str(cur, "status"), *cr = jx_str(cur, "reason"),
               *cm = jx_str(cur, "message");
    if (cs && cr && cm && !strcmp(cs, status) && !strcmp(cr, reason) && !strcmp(cm, message))
        goto out;
    char now[32];
    rc_now_rfc3339(now);
    json_t *conds =
        rc_conds_with(jx_get(mkc, "status.conditions"), "Active", status, reason, message, now);
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        if (!strcmp(jx_str(c, "type") ? jx_str(c, "type") : "", "Active"))
            json_object_set_new(c, "observedGeneration",
                                json_integer(jx_int(mkc, "metadata.generation", 0)));
    }
    json_t *body = conds ? json_pack("{s:{s:o}}", "status", "conditions", conds) : NULL;
    struct kc_status st;
    rc = body ? kc_patch(x->mgr, &MKCS, NULL, name, "status", KC_PATCH_MERGE, body, NULL, NULL, &st)
              : -1;
    json_decref(body);
    if (rc == 0)
        LOG_I("cluster", "status", "cluster", name, "active", status, "reason", reason, "message",
              message);
    else if (body)
        LOG_W("cluster", "status not written", "cluster", name, "error", st.message);
out:
    json_decref(mkc);
    return rc < 0 ? -1 : 0;
}
