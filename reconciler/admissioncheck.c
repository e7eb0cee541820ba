#include "admissioncheck.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "log.h"
#include "buf.h"
#include "wlstatus.h"

static const struct kc_resource ACS = {"kueue.x-k8s.io", "v1beta2", "admissionchecks", 0};

static void bad(struct rc_ac_state *o, const char *why)
{
    o->status = "False";
    snprintf(o->reason, sizeof(o->reason), "BadConfig");
    snprintf(o->message, sizeof(o->message), "Cannot load the AdmissionChecks parameters: %s", why);
}

void rc_ac_compute(const json_t *ac, const json_t *config, struct kcache *mkclusters,
                   struct rc_ac_state *o)
{
    memset(o, 0, sizeof(*o));
    json_t *params = jx_get(ac, "spec.parameters");
    const char *group = jx_str(params, "apiGroup"), *kind = jx_str(params, "kind");
    const char *name = jx_str(params, "name");
    char why[512];
    if (!params) {
        bad(o, "missing parameters reference");
        return;
    }
    if (!name || !*name) {
        bad(o, "empty name: bad parameters reference");
        return;
    }
    if (!group || strcmp(group, "kueue.x-k8s.io") != 0) {
        snprintf(why, sizeof(why),
                 "wrong group \"%s\", expecting \"kueue.x-k8s.io\": bad parameters reference",
                 group ? group : "");
        bad(o, why);
        return;
    }
    if (!kind || strcmp(kind, "MultiKueueConfig") != 0) {
        snprintf(why, sizeof(why),
                 "wrong kind \"%s\", expecting \"MultiKueueConfig\": bad parameters reference",
                 kind ? kind : "");
        bad(o, why);
        return;
    }
    if (!config) {
        snprintf(why, sizeof(why), "MultiKueueConfig.kueue.x-k8s.io \"%s\" not found", name);
        bad(o, why);
        return;
    }
    struct buf missing, inactive;
    buf_init(&missing, BUF_CAP_NAMES);
    buf_init(&inactive, BUF_CAP_NAMES);
    size_t i, usable = 0, total = 0;
    json_t *c;
    json_array_foreach(jx_get(config, "spec.clusters"), i, c)
    {
        const char *cn = json_string_value(c);
        if (!cn)
            continue;
        total++;
        json_t *mkc = kcache_get(mkclusters, cn);
        if (!mkc) {
            buf_printf(&missing, "%s%s", missing.len ? " " : "", cn);
        } else if (!rc_cond_true(mkc, "Active")) {
            buf_printf(&inactive, "%s%s", inactive.len ? " " : "", cn);
        } else {
            usable++;
        }
        json_decref(mkc);
    }
    if (usable == total && total > 0) {
        o->status = "True";
        snprintf(o->reason, sizeof(o->reason), "Active");
        snprintf(o->message, sizeof(o->message), "The admission check is active");
    } else {
        o->status = usable ? "True" : "False";
        snprintf(o->reason, sizeof(o->reason), usable ? "SomeActiveClusters" : "NoUsableClusters");
        int n = 0;
        if (missing.len)
            n = snprintf(o->message, sizeof(o->message), "Missing clusters: [%s]",
                         buf_cstr(&missing));
        if (inactive.len && n >= 0 && (size_t)n < sizeof(o->message))
            snprintf(o->message + n, sizeof(o->message) - (size_t)n, "%sInactive clusters: [%s]",
                     n ? ", " : "", buf_cstr(&inactive));
    }
    buf_free(&missing);
    buf_free(&inactive);
}

int rc_reconcile_admission_check(struct rc_ctx *x, const char *name)
{
    json_t *ac = kcache_get(x->admissionchecks, name);
    int rc = 0;
    if (!ac || !mkq_is_multikueue_check(ac))
        goto out;
    const char *cfgname = jx_str(ac, "spec.parameters.name");
    json_t *cfg = cfgname ? kcache_get(x->mkconfigs, cfgname) : NULL;
    struct rc_ac_state s;
    rc_ac_compute(ac, cfg, x->mkclusters, &s);
    json_decref(cfg);
    rc = rc_write_active(x, &ACS, ac, name, s.status, s.reason, s.message, "admissioncheck",
                         "admissionCheck");
out:
    json_decref(ac);
    return rc < 0 ? -1 : 0;
}
