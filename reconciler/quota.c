#include "quota.h"
#include "errf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "quantity.h"
#include "queue.h"

int64_t *rc_res_slot(struct rc_res *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->name[i], name) == 0)
            return &r->milli[i];
    if (r->n == RC_MAX_RES || strlen(name) >= sizeof(r->name[0]))
        return NULL;
    snprintf(r->name[r->n], sizeof(r->name[0]), "%s", name);
    r->milli[r->n] = 0;
    r->flavor[r->n][0] = '\0';
    return &r->milli[r->n++];
}

int64_t rc_res_get(const struct rc_res *r, const char *name, int *present)
{
    for (int i = 0; i < r->n; i++) {
        if (strcmp(r->name[i], name) == 0) {
            if (present)
                *present = 1;
            return r->milli[i];
        }
    }
    if (present)
        *present = 0;
    return 0;
}

/* Checked sums and products of milli-units: an overflow is an error, never
 * a wrapped (tiny or negative) request. */
static int add_checked(int64_t *s, int64_t q, const char *name, char *err, size_t errlen)
{
    if (__builtin_add_overflow(*s, q, s)) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "resource %s: summed requests overflow (more than %" PRId64 "m)", name,
                    INT64_MAX);
    }
    return 0;
}

/* Reads a {resource: quantity} map into r: op 0 = add, 1 = max. */
static int read_map(const json_t *m, struct rc_res *r, int op, char *err, size_t errlen)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)m, name, v)
    {
        int64_t q;
        const char *s = json_string_value(v);
        char num[32];
        if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
            s = num;
        }
        if (!s || qty_parse(s, &q) < 0 || q < 0) {
            return errf(err, errlen, MK_ERR_INVAL, "resource %s: bad quantity", name);
        }
        int64_t *slot = rc_res_slot(r, name);
        if (!slot) {
            return errf(err, errlen, MK_ERR_INVAL, "too many resources");
        }
        if (op == 0) {
            if (add_checked(slot, q, name, err, errlen) < 0)
                return MK_ERR_INVAL;
        } else if (q > *slot) {
            *slot = q;
        }
    }
    return 0;
}

/* requests, with limits standing in for missing requests */
static int container_requests(const json_t *c, struct rc_res *out, char *err, size_t errlen)
{
    struct rc_res req = {0}, lim = {0};
    if (read_map(jx_get(c, "resources.requests"), &req, 0, err, errlen) < 0 ||
        read_map(jx_get(c, "resources.limits"), &lim, 0, err, errlen) < 0)
        return MK_ERR_INVAL;
    for (int i = 0; i < lim.n; i++) {
        int present;
        rc_res_get(&req, lim.name[i], &present);
        if (!present) {
            int64_t *s = rc_res_slot(&req, lim.name[i]);
            if (!s) {
                return errf(err, errlen, MK_ERR_INVAL, "too many resources");
            }
            *s = lim.milli[i];
        }
    }
    *out = req;
    return 0;
}

/* Container c's requests into out: summed (a container), or each the
 * larger of the two (max: an init container, which runs alone). */
static int fold_container(const json_t *c, int max, struct rc_res *out, char *err, size_t errlen)
{
    struct rc_res one;
    if (container_requests(c, &one, err, errlen) < 0)
        return MK_ERR_INVAL;
    for (int r = 0; r < one.n; r++) {
        int64_t *s = rc_res_slot(out, one.name[r]);
        if (!s)
            return errf(err, errlen, MK_ERR_INVAL, "too many resources");
        if (!max && add_checked(s, one.milli[r], one.name[r], err, errlen) < 0)
            return MK_ERR_INVAL;
        if (max && one.milli[r] > *s)
            *s = one.milli[r];
    }
    return MK_OK;
}

int rc_pod_requests(const json_t *spec, struct rc_res *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(spec, "containers"), i, c)
    {
        if (fold_container(c, 0, out, err, errlen) < 0)
            return MK_ERR_INVAL;
    }
    json_array_foreach(jx_get(spec, "initContainers"), i, c)
    {
        if (fold_container(c, 1, out, err, errlen) < 0)
            return MK_ERR_INVAL;
    }
    return read_map(jx_get(spec, "overhead"), out, 0, err, errlen);
}

int rc_workload_requests(const json_t *wl, struct rc_res *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    size_t i;
    json_t *ps;
    json_array_foreach(jx_get(wl, "spec.podSets"), i, ps)
    {
        long long count = jx_int(ps, "count", 1);
        if (count < 0 || count > 1000000) {
            return errf(err, errlen, MK_ERR_INVAL, "podSets[%zu].count out of range", i);
        }
        struct rc_res pod;
        if (rc_pod_requests(jx_get(ps, "template.spec"), &pod, err, errlen) < 0)
            return MK_ERR_INVAL;
        for (int r = 0; r < pod.n; r++) {
            int64_t *s = rc_res_slot(out, pod.name[r]);
            int64_t total;
            if (!s) {
                return errf(err, errlen, MK_ERR_INVAL, "too many resources");
            }
            if (__builtin_mul_overflow(pod.milli[r], (int64_t)count, &total)) {
                return errf(err, errlen, MK_ERR_INVAL,
                            "resource %s: podSets[%zu] count %lld times the pod's requests "
                            "overflows (more than %" PRId64 "m)",
                            pod.name[r], i, count, INT64_MAX);
            }
            if (add_checked(s, total, pod.name[r], err, errlen) < 0)
                return MK_ERR_INVAL;
        }
    }
    return 0;
}

/* 1 when the JSON array of strings a holds s. */
static int has_str(const json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (json_is_string(v) && s && strcmp(json_string_value(v), s) == 0)
            return 1;
    }
    return 0;
}

static json_t *all_flavors(const json_t *cq)
{
    json_t *out = json_array();
    size_t g, f;
    json_t *rg, *fl;
    json_array_foreach(jx_get(cq, "spec.resourceGroups"), g, rg)
    {
        json_array_foreach(jx_get(rg, "flavors"), f, fl)
        {
            const char *name = jx_str(fl, "name");
            if (out && name && !has_str(out, name) &&
                json_array_append_new(out, json_string(name)) < 0) {
                json_decref(out);
                return NULL;
            }
        }
    }
    return out;
}

json_t *rc_check_flavors(const json_t *cq, const char *check)
{
    size_t i;
    json_t *v;
    json_array_foreach(jx_get(cq, "spec.admissionChecksStrategy.admissionChecks"), i, v)
    {
        const char *name = jx_str(v, "name");
        if (!name || !check || strcmp(name, check) != 0)
            continue;
        json_t *on = jx_get(v, "onFlavors");
        if (json_array_size(on) == 0)
            return all_flavors(cq);
        json_t *out = json_array();
        size_t k;
        json_t *fl;
        json_array_foreach(on, k, fl)
        {
            if (out && json_is_string(fl) && json_array_append(out, fl) < 0) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    json_array_foreach(jx_get(cq, "spec.admissionChecks"), i, v)
    {
        if (json_is_string(v) && check && strcmp(json_string_value(v), check) == 0)
            return all_flavors(cq);
    }
    return NULL;
}

json_t *rc_checks_for_workload(const json_t *cq, const json_t *admission)
{
    json_t *names = mkq_cluster_queue_checks(cq);
    json_t *all = all_flavors(cq);
    json_t *assigned = json_array();
    json_t *out = json_array();
    if (!names || !all || !assigned || !out)
        goto fail;
    size_t i;
    json_t *v;
    json_array_foreach(jx_get(admission, "podSetAssignments"), i, v)
    {
        const char *res;
        json_t *fl;
        json_object_foreach(jx_get(v, "flavors"), res, fl)
        {
            if (json_is_string(fl) && !has_str(assigned, json_string_value(fl)) &&
                json_array_append(assigned, fl) < 0)
                goto fail;
        }
    }
    json_array_foreach(names, i, v)
    {
        const char *name = json_string_value(v);
        if (has_str(out, name))
            continue;
        json_t *fl = rc_check_flavors(cq, name);
        if (!fl)
            goto fail;
        int applies = 0;
        size_t k;
        json_t *f;
        if (admission) { /* assigned flavors meet the check's */
            json_array_foreach(assigned, k, f)
            {
                if (has_str(fl, json_string_value(f)))
                    applies = 1;
            }
        } else { /* before admission: only the checks on every flavor of the queue */
            applies = 1;
            json_array_foreach(all, k, f)
            {
                if (!has_str(fl, json_string_value(f)))
                    applies = 0;
            }
        }
        json_decref(fl);
        if (applies && json_array_append(out, v) < 0)
            goto fail;
    }
    json_decref(names);
    json_decref(all);
    json_decref(assigned);
    return out;
fail:
    json_decref(names);
    json_decref(all);
    json_decref(assigned);
    json_decref(out);
    return NULL;
}

int rc_cq_quota(const json_t *cq, const json_t *only, struct rc_res *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    size_t g, f, r;
    json_t *rg, *fl, *res;
    json_array_foreach(jx_get(cq, "spec.resourceGroups"), g, rg)
    {
        json_array_foreach(jx_get(rg, "flavors"), f, fl)
        {
            if (only && !has_str(only, jx_str(fl, "name")))
                continue;
            json_array_foreach(jx_get(fl, "resources"), r, res)
            {
                const char *name = jx_str(res, "name");
                json_t *qv = jx_get(res, "nominalQuota");
                const char *s = json_string_value(qv);
                char num[32];
                if (json_is_integer(qv)) {
                    snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(qv));
                    s = num;
                }
                int64_t q;
                if (!name || !s || qty_parse(s, &q) < 0 || q < 0) {
                    return errf(err, errlen, MK_ERR_INVAL,
                                "resourceGroups[%zu].flavors[%zu]: bad nominalQuota", g, f);
                }
                int present;
                rc_res_get(out, name, &present);
                int64_t *slot = rc_res_slot(out, name);
                if (!slot) {
                    return errf(err, errlen, MK_ERR_INVAL, "too many resources");
                }
                if (__builtin_add_overflow(*slot, q, slot)) {
                    return errf(err, errlen, MK_ERR_INVAL,
                                "resource %s: nominal quota summed over flavors overflows", name);
                }
                if (!present)
                    snprintf(out->flavor[slot - out->milli], sizeof(out->flavor[0]), "%s",
                             jx_str(fl, "name") ? jx_str(fl, "name") : "");
            }
        }
    }
    return 0;
}

struct rc_req *rc_req_of(const struct rc_res *r)
{
    size_t names = 0;
    for (int i = 0; i < r->n; i++)
        names += strlen(r->name[i]) + 1;
    size_t head = sizeof(struct rc_req) + (size_t)r->n * sizeof(struct rc_qty);
    struct rc_req *out = malloc(head + names);
    if (!out)
        return NULL;
    char *p = (char *)out + head;
    out->n = r->n;
    for (int i = 0; i < r->n; i++) {
        size_t len = strlen(r->name[i]) + 1;
        memcpy(p, r->name[i], len);
        out->q[i] = (struct rc_qty){p, r->milli[i]};
        p += len;
    }
    return out;
}

int64_t rc_req_get(const struct rc_req *r, const char *name)
{
    for (int i = 0; r && i < r->n; i++)
        if (strcmp(r->q[i].name, name) == 0)
            return r->q[i].milli;
    return 0;
}

/* Sets a waiting item's reason and message (formatted). */
__attribute__((format(printf, 3, 4))) static void wait_for(struct rc_gate_item *it,
                                                           const char *reason, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    it->reason = reason;
    free(it->message);
    it->message = strdup(msg);
}

void rc_gate_release(struct rc_gate_item *items, size_t n)
{
    for (size_t i = 0; items && i < n; i++) {
        free(items[i].message);
        items[i].message = NULL;
    }
}

static int by_order(const void *a, const void *b, void *base)
{
    const struct rc_gate_item *x = (const struct rc_gate_item *)base + *(const size_t *)a;
    const struct rc_gate_item *y = (const struct rc_gate_item *)base + *(const size_t *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");
    if (c)
        return c;
    return strcmp(x->key ? x->key : "", y->key ? y->key : "");
}

void rc_gate_plan(const char *cq, const struct rc_res *nominal, int strict,
                  struct rc_gate_item *items, size_t n)
{
    struct rc_res used = {0};
    rc_gate_plan_from(cq, nominal, strict, &used, items, n);
}

int rc_gate_plan_from(const char *cq, const struct rc_res *nominal, int strict, struct rc_res *base,
                      struct rc_gate_item *items, size_t n)
{
    struct rc_res used = *base;
    for (int i = 0; i < nominal->n; i++)
        rc_res_slot(&used, nominal->name[i]);
    size_t *order = calloc(n ? n : 1, sizeof(*order));
    size_t npend = 0;
    for (size_t i = 0; i < n; i++) {
        items[i].decision = RC_GATE_HOLDS;
        items[i].reason = "";
        free(items[i].message);
        items[i].message = NULL;
        const struct rc_req *req = items[i].req;
        if (items[i].reserved) {
            for (int r = 0; req && r < req->n; r++) {
                int64_t *s = rc_res_slot(&used, req->q[r].name);
                if (s && __builtin_add_overflow(*s, req->q[r].milli, s))
                    *s = INT64_MAX; /* held already: saturate, nothing else fits */
            }
        } else if (order) {
            order[npend++] = i;
        }
    }
    if (!order) {
        for (size_t i = 0; i < n; i++)
            if (!items[i].reserved)
                items[i].decision = RC_GATE_WAIT;
        return -1;
    }
    qsort_r(order, npend, sizeof(*order), by_order, items);
    const char *blocker = NULL;
    for (size_t k = 0; k < npend; k++) {
        struct rc_gate_item *it = &items[order[k]];
        const struct rc_req *req = it->req;
        it->decision = RC_GATE_WAIT;
        if (blocker) {
            wait_for(it, "WaitingForQuota",
                     "Waiting for quota: ClusterQueue %s is StrictFIFO and %s is ahead", cq,
                     blocker);
            continue;
        }
        if (it->invalid) {
            wait_for(it, "InvalidRequests",
                     "ClusterQueue %s cannot count the workload's requests: %.400s", cq,
                     it->invalid);
            continue; /* never fits, never blocks */
        }
        int fits = 1;
        for (int r = 0; req && r < req->n && fits; r++) {
            const char *name = req->q[r].name;
            int64_t want = req->q[r].milli;
            if (want == 0)
                continue;
            int covered;
            int64_t nom = rc_res_get(nominal, name, &covered);
            int64_t in_use = rc_res_get(&used, name, NULL), sum;
            char a[32], b[32], c[32];
            qty_format(in_use, a, sizeof(a));
            qty_format(nom, b, sizeof(b));
            qty_format(want, c, sizeof(c));
            if (!covered) {
                wait_for(it, "NoMatchingFlavor", "ClusterQueue %s does not cover resource %s", cq,
                         name);
                fits = 0;
            } else if (want > nom) {
                wait_for(it, "ExceedsMaxQuota",
                         "ClusterQueue %s: the workload requests %s %s, more than the nominal "
                         "quota of %s",
                         cq, c, name, b);
                fits = 0;
            } else if (__builtin_add_overflow(in_use, want, &sum) || sum > nom) {
                wait_for(it, "WaitingForQuota",
                         "Waiting for quota: ClusterQueue %s: %s of %s %s in use, the workload "
                         "requests %s",
                         cq, a, b, name, c);
                fits = 0;
            }
        }
        if (!fits) {
            /* a workload that can never fit does not block a StrictFIFO queue */
            if (strict && strcmp(it->reason, "WaitingForQuota") == 0)
                blocker = it->key;
            continue;
        }
        it->decision = RC_GATE_RESERVE;
        for (int r = 0; req && r < req->n; r++) {
            int64_t *s = rc_res_slot(&used, req->q[r].name);
            if (s)
                *s += req->q[r].milli; /* fits: in_use + req <= nominal, checked above */
        }
    }
    free(order);
    *base = used;
    return 0;
}
