#include "qstatus.h"

#include <stdint.h>
#include <string.h>

#include "jsonx.h"
#include "quantity.h"
#include "wlstatus.h"

long rc_qstatus_wait(long long last_ms, long long now_ms)
{
    if (last_ms <= 0 || now_ms - last_ms >= RC_QSTATUS_BATCH_MS || now_ms < last_ms)
        return 0;
    return (long)(last_ms + RC_QSTATUS_BATCH_MS - now_ms);
}

static int mine(const struct rc_qs_item *it, const char *ns, const char *name)
{
    return !name ||
           (it->ns && it->queue && strcmp(it->ns, ns) == 0 && strcmp(it->queue, name) == 0);
}

/* [{name: flavor, resources: [{name, total[, borrowed]}]}] over the queue's
 * flavors: sum[i] (the total of nominal's resource i) on that resource's
 * flavor, 0 elsewhere. */
static json_t *flavors(const json_t *cqo, const struct rc_res *nominal, const int64_t *sum,
                       int cq_shape)
{
    json_t *out = json_array();
    size_t g, f, r;
    json_t *rg, *fl, *res;
    json_array_foreach(jx_get(cqo, "spec.resourceGroups"), g, rg)
    {
        json_array_foreach(jx_get(rg, "flavors"), f, fl)
        {
            const char *fname = jx_str(fl, "name");
            json_t *list = json_array();
            json_t *one =
                fname && list ? json_pack("{s:s,s:O}", "name", fname, "resources", list) : NULL;
            json_decref(list);
            if (!one || json_array_append_new(out, one) < 0)
                goto oom;
            json_array_foreach(jx_get(fl, "resources"), r, res)
            {
                const char *rname = jx_str(res, "name");
                if (!rname)
                    continue;
                int64_t total = 0;
                for (int i = 0; i < nominal->n; i++)
                    if (strcmp(nominal->name[i], rname) == 0 &&
                        strcmp(nominal->flavor[i], fname) == 0)
                        total = sum[i];
                char q[64];
                qty_format(total, q, sizeof(q));
                json_t *u = cq_shape ? json_pack("{s:s,s:s,s:s}", "name", rname, "total", q,
                                                 "borrowed", "0")
                                     : json_pack("{s:s,s:s}", "name", rname, "total", q);
                if (!u || json_array_append_new(list, u) < 0)
                    goto oom;
            }
        }
    }
    if (out)
        return out;
oom:
    json_decref(out);
    return NULL;
}

json_t *rc_queue_usage(const json_t *cqo, const struct rc_res *nominal,
                       const struct rc_qs_item *items, size_t n, const char *lq_ns,
                       const char *lq_name)
{
    int64_t reserved[RC_MAX_RES] = {0}, admitted[RC_MAX_RES] = {0};
    long long pending = 0, reserving = 0, adm = 0;
    for (size_t k = 0; k < n; k++) {
        const struct rc_qs_item *it = &items[k];
        if (!mine(it, lq_ns, lq_name))
            continue;
        if (!it->reserved) {
            pending++;
            continue;
        }
        reserving++;
        adm += it->admitted != 0;
        for (int i = 0; i < nominal->n && it->req; i++) {
            int64_t v = rc_req_get(it->req, nominal->name[i]);
            /* the gate kept every sum within int64; a status never wraps */
            if (__builtin_add_overflow(reserved[i], v, &reserved[i]))
                reserved[i] = INT64_MAX;
            if (it->admitted && __builtin_add_overflow(admitted[i], v, &admitted[i]))
                admitted[i] = INT64_MAX;
        }
    }
    int cq_shape = lq_name == NULL;
    json_t *fr = flavors(cqo, nominal, reserved, cq_shape);
    json_t *fu = fr ? flavors(cqo, nominal, admitted, cq_shape) : NULL;
    json_t *out = fu ? json_pack("{s:I,s:I,s:I,s:O,s:O}", "pendingWorkloads", (json_int_t)pending,
                                 "reservingWorkloads", (json_int_t)reserving, "admittedWorkloads",
                                 (json_int_t)adm, "flavorsReservation", fr, "flavorsUsage", fu)
                     : NULL;
    json_decref(fr);
    json_decref(fu);
    return out;
}

json_t *rc_queue_status_patch(const json_t *obj, const json_t *usage, const char *active_msg,
                              int *oom)
{
    *oom = 0;
    json_t *cond = NULL;
    if (rc_active_patch(obj, "True", "Ready", active_msg, &cond) < 0) {
        *oom = 1;
        return NULL;
    }
    int same = !cond;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)usage, k, v)
    {
        json_t *had = json_object_get(json_object_get(obj, "status"), k);
        same = same && had && json_equal(had, v);
    }
    if (same)
        return NULL;
    json_t *patch = cond ? cond : json_pack("{s:{}}", "status");
    json_t *st = json_object_get(patch, "status");
    if (!st || json_object_update(st, (json_t *)usage) < 0) {
        json_decref(patch);
        *oom = 1;
        return NULL;
    }
    return patch;
}
