#include "wlstatus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonx.h"
#include "pack.h"
#include "kinds/kinds.h"
#include "patch.h"

void rc_now_rfc3339(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

long long rc_parse_time_ms(const char *s)
{
    if (!s)
        return -1;
    struct tm tm = {0};
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return -1;
    long long ms = 0;
    if (*end == '.') {
        double frac = strtod(end, (char **)&end);
        ms = (long long)(frac * 1000);
    }
    if (*end != 'Z')
        return -1; /* the apiserver always writes UTC */
    return (long long)timegm(&tm) * 1000 + ms;
}

void rc_format_time(long long ms, char out[32])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, 32, "1970-01-01T00:00:00Z");
}

json_t *rc_check_in_state(const json_t *wl, const char *state, const char *skip)
{
    size_t i;
    json_t *c;
    json_array_foreach(jx_get(wl, "status.admissionChecks"), i, c)
    {
        const char *st = jx_str(c, "state"), *name = jx_str(c, "name");
        if (st && strcmp(st, state) == 0 && !(skip && name && strcmp(name, skip) == 0))
            return c;
    }
    return NULL;
}

long long rc_checks_retry_at_ms(const json_t *checks)
{
    long long at = 0;
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c)
    {
        const char *st = jx_str(c, "state");
        json_t *after = json_object_get(c, "requeueAfterSeconds");
        long long since = rc_parse_time_ms(jx_str(c, "lastTransitionTime"));
        if (!st || strcmp(st, "Retry") != 0 || !json_is_integer(after) || since < 0)
            continue;
        long long s = json_integer_value(after);
        if (s <= 0 || s > 0x7fffffffLL) /* int32 in Kueue's API */
            continue;
        if (since + s * 1000 > at)
            at = since + s * 1000;
    }
    return at;
}

static json_t *find_by(const json_t *arr, const char *key, const char *value)
{
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c)
    {
        const char *v = jx_str(c, key);
        if (v && strcmp(v, value) == 0)
            return c;
    }
    return NULL;
}

json_t *rc_cond_find(const json_t *obj, const char *type)
{
    return find_by(jx_get(obj, "status.conditions"), "type", type);
}

int rc_cond_true(const json_t *obj, const char *type)
{
    const char *s = jx_str(rc_cond_find(obj, type), "status");
    return s && strcmp(s, "True") == 0;
}

static json_t *truncated(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return json_string(s);
    /* cut on a UTF-8 boundary */
    while (n > max || (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80))
        n--;
    return json_stringn(s, n);
}

json_t *rc_conds_with(const json_t *conds, const char *type, const char *status, const char *reason,
                      const char *message, const char *now)
{
    json_t *out = json_is_array(conds) ? json_deep_copy(conds) : json_array();
    if (!out)
        return NULL;
    json_t *c = find_by(out, "type", type);
    const char *ltt = now;
    if (c) {
        const char *old = jx_str(c, "status");
        const char *oldt = jx_str(c, "lastTransitionTime");
        if (old && oldt && strcmp(old, status) == 0)
            ltt = oldt;
    }
    json_t *n = json_pack("{s:s,s:s,s:s,s:o,s:s}", "type", type, "status", status, "reason", reason,
                          "message", truncated(message ? message : "", RC_MAX_CMSG),
                          "lastTransitionTime", ltt);
    if (!n)
        goto fail;
    if (c) {
        size_t i;
        json_t *v;
        json_array_foreach(out, i, v)
        {
            if (v == c) {
                json_t *og = json_object_get(c, "observedGeneration");
                if (og)
                    json_object_set(n, "observedGeneration", og);
                json_array_set_new(out, i, n);
                return out;
            }
        }
    }
    if (json_array_append_new(out, n) < 0)
        goto fail;
    return out;
fail:
    json_decref(out);
    return NULL;
}

json_t *rc_check_find(const json_t *wl, const char *name)
{
    return find_by(jx_get(wl, "status.admissionChecks"), "name", name);
}

json_t *rc_checks_with(const json_t *checks, const char *name, const char *state,
                       const char *message, const char *now, int bump_retry)
{
    json_t *out = json_is_array(checks) ? json_deep_copy(checks) : json_array();
    if (!out)
        return NULL;
    json_t *c = find_by(out, "name", name);
    if (!c) {
        c = json_object();
        if (!c || json_array_append_new(out, c) < 0)
            goto fail;
        json_object_set_new(c, "name", json_string(name));
    }
    const char *old = jx_str(c, "state");
    if (!old || strcmp(old, state) != 0 || !jx_str(c, "lastTransitionTime"))
        json_object_set_new(c, "lastTransitionTime", json_string(now));
    json_object_set_new(c, "state", json_string(state));
    json_object_set_new(c, "message", truncated(message ? message : "", RC_MAX_MSG));
    if (bump_retry)
        json_object_set_new(c, "retryCount", json_integer(jx_int(c, "retryCount", 0) + 1));
    return out;
fail:
    json_decref(out);
    return NULL;
}

json_t *rc_checks_reset_on_eviction(const json_t *checks, const char *now)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;
    if (!out)
        return NULL;
    json_array_foreach(checks, i, c)
    {
        const char *st = jx_str(c, "state");
        json_t *n;
        if (st && strcmp(st, "Pending") == 0) {
            n = json_deep_copy(c);
        } else {
            char msg[128];
            snprintf(msg, sizeof(msg), "Reset to Pending after eviction. Previously: %s",
                     st ? st : "");
            n = json_pack("{s:O?,s:s,s:s,s:s}", "name", json_object_get(c, "name"), "state",
                          "Pending", "message", msg, "lastTransitionTime", now);
            json_t *ra = json_object_get(c, "requeueAfterSeconds");
            if (n && ra)
                json_object_set(n, "requeueAfterSeconds", ra);
            if (n && st && strcmp(st, "Retry") == 0)
                json_object_set_new(n, "retryCount", json_integer(jx_int(c, "retryCount", 0) + 1));
        }
        if (!n || json_array_append_new(out, n) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

char *rc_msg_previously(const char *msg, const char *prev)
{
    char *s = NULL;
    if (asprintf(&s, "%s, Previously: \"%s\"", msg, prev ? prev : "") < 0)
        return NULL;
    if (strlen(s) > RC_MAX_MSG)
        s[RC_MAX_MSG] = '\0';
    return s;
}

int rc_wl_reserved(const json_t *wl)
{
    return rc_cond_true(wl, "QuotaReserved");
}

int rc_wl_finished(const json_t *wl)
{
    return rc_cond_true(wl, "Finished");
}

int rc_wl_evicted(const json_t *wl)
{
    return rc_cond_true(wl, "Evicted");
}

int rc_wl_admitted(const json_t *wl)
{
    return rc_cond_true(wl, "Admitted");
}

int rc_wl_deleting(const json_t *obj)
{
    return rc_md(obj, RC_MD_DELETION) != NULL;
}

int rc_wl_awaits_dispatch(const json_t *wl)
{
    return wl && rc_wl_reserved(wl) && !jx_str(wl, "status.clusterName") && !rc_wl_finished(wl) &&
           !rc_wl_deleting(wl);
}

int rc_has_finalizer(const json_t *obj, const char *finalizer)
{
    if (rc_packed(obj)) {
        size_t n = strlen(finalizer);
        for (const char *p = rc_md(obj, RC_MD_FINALIZERS); p;) {
            const char *end = strchr(p, '\n');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len == n && memcmp(p, finalizer, n) == 0)
                return 1;
            p = end ? end + 1 : NULL;
        }
        return 0;
    }
    size_t i;
    json_t *f;
    json_array_foreach(jx_get(obj, "metadata.finalizers"), i, f)
    {
        if (json_is_string(f) && strcmp(json_string_value(f), finalizer) == 0)
            return 1;
    }
    return 0;
}

int rc_active_patch(const json_t *obj, const char *status, const char *reason, const char *message,
                    json_t **out)
{
    *out = NULL;
    json_t *cur = rc_cond_find(obj, "Active");
    const char *cs = jx_str(cur, "status"), *cr = jx_str(cur, "reason"),
               *cm = jx_str(cur, "message");
    if (cs && cr && cm && !strcmp(cs, status) && !strcmp(cr, reason) && !strcmp(cm, message))
        return 0;
    char now[32];
    rc_now_rfc3339(now);
    json_t *conds =
        rc_conds_with(jx_get(obj, "status.conditions"), "Active", status, reason, message, now);
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        if (!strcmp(jx_str(c, "type") ? jx_str(c, "type") : "", "Active") &&
            json_object_set_new(c, "observedGeneration",
                                json_integer(jx_int(obj, "metadata.generation", 0))) < 0) {
            json_decref(conds);
            return -1;
        }
    }
    *out = conds ? json_pack("{s:{s:o}}", "status", "conditions", conds) : NULL;
    return *out ? 0 : -1;
}

json_t *rc_finalizer_removal(const json_t *obj, const char *finalizer)
{
    json_t *rest = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(jx_get(obj, "metadata.finalizers"), i, f)
    {
        if (rest && json_is_string(f) && strcmp(json_string_value(f), finalizer) != 0 &&
            json_array_append(rest, f) < 0) {
            json_decref(rest);
            return NULL;
        }
    }
    if (!rest)
        return NULL;
    return json_pack("{s:{s:s?,s:o}}", "metadata", "resourceVersion",
                     jx_str(obj, "metadata.resourceVersion"), "finalizers", rest);
}

const char *rc_prebuilt_name(const json_t *job)
{
    const char *pb = rc_md(job, RC_MD_PREBUILT_LABEL);
    return pb ? pb : rc_md(job, RC_MD_PREBUILT_ANNOT);
}

json_t *rc_wl_owner(const json_t *wl)
{
    json_t *refs = jx_get(wl, "metadata.ownerReferences");
    size_t i;
    json_t *r;
    json_array_foreach(refs, i, r)
    {
        if (jx_bool(r, "controller", 0))
            return r;
    }
    return json_array_get(refs, 0);
}

int rc_earliest_true(json_t *const *wls, const int *eligible, size_t n, const char *type,
                     uint64_t tie)
{
    const char *best_t = NULL;
    size_t ntied = 0;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0 finds the earliest time and how many share it; pass 1 picks one */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!wls[i] || (eligible && !eligible[i]) || !rc_cond_true(wls[i], type))
                continue;
            const char *t = jx_str(rc_cond_find(wls[i], type), "lastTransitionTime");
            if (!t)
                t = "";
            /* RFC 3339 UTC with a fixed layout orders as text */
            int c = best_t ? strcmp(t, best_t) : -1;
            if (pass == 0 && c < 0) {
                best_t = t;
                ntied = 1;
            } else if (pass == 0 && c == 0) {
                ntied++;
            } else if (pass == 1 && c == 0 && k++ == tie % ntied) {
                return (int)i;
            }
        }
        if (!best_t)
            return -1;
    }
    return -1;
}

/* Kueue's admissionManagedConditions, in its order. */
static const char *const admission_conds[] = {
    "QuotaReserved", "BlockedOnPreemptionGates", "Evicted",  "Admitted", "Preempted",
    "Requeued",      "DeactivationTarget",       "Finished",
};

/* status members of Kueue's admission status patch */
static const char *const admission_members[] = {
    "admission",
    "requeueState",
    "resourceRequests",
    "conditions",
    "accumulatedPastExecutionTimeSeconds",
    "schedulingStats",
    "clusterName",
    "nominatedClusterNames",
    "unhealthyNodes",
    "preemptionGates",
    "admissionChecks",
};

static int is_admission_member(const char *key)
{
    for (size_t i = 0; i < sizeof(admission_members) / sizeof(admission_members[0]); i++)
        if (strcmp(key, admission_members[i]) == 0)
            return 1;
    return 0;
}

int rc_admission_patch(const json_t *patch)
{
    if (!json_is_object(patch))
        return 0;
    int names = json_object_get(patch, "clusterName") != NULL ||
                json_object_get(patch, "nominatedClusterNames") != NULL;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)patch, key, v)
    {
        if (!is_admission_member(key))
            return 0;
    }
    return names;
}

static int nonempty(const json_t *v)
{
    return v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0);
}

/* out[key] = copy of in[key] when it is there and not an empty list */
static int copy_member(json_t *out, const json_t *in, const char *key)
{
    json_t *v = json_object_get(in, key);
    if (!nonempty(v))
        return 0;
    json_t *c = json_deep_copy(v);
    return c && json_object_set_new(out, key, c) == 0 ? 0 : -1;
}

json_t *rc_admission_apply(const json_t *wl, const json_t *patch)
{
    json_t *cur = jx_get(wl, "status");
    json_t *s = json_is_object(cur) ? json_deep_copy(cur) : json_object();
    json_t *st = json_object();
    json_t *conds = json_array();
    const char *api = jx_str(wl, "apiVersion");
    json_t *body = json_pack("{s:s,s:s,s:{s:s*,s:s*,s:s*,s:s*}}", "apiVersion",
                             api ? api : "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata",
                             "name", jx_str(wl, "metadata.name"), "namespace",
                             jx_str(wl, "metadata.namespace"), "uid", jx_str(wl, "metadata.uid"),
                             "resourceVersion", jx_str(wl, "metadata.resourceVersion"));
    if (!s || !st || !conds || !body || (json_is_object(patch) && jp_merge_apply(s, patch) < 0))
        goto fail;
    int rc = copy_member(st, s, "admission");
    json_t *rq = json_object_get(s, "requeueState");
    if (json_is_object(rq) &&
        (nonempty(json_object_get(rq, "count")) || nonempty(json_object_get(rq, "requeueAt"))))
        rc |= copy_member(st, s, "requeueState");
    if (!nonempty(json_object_get(s, "admission")))
        rc |= copy_member(st, s, "resourceRequests");
    for (size_t i = 0; i < sizeof(admission_conds) / sizeof(admission_conds[0]); i++) {
        json_t *c = find_by(json_object_get(s, "conditions"), "type", admission_conds[i]);
        if (c)
            rc |= json_array_append_new(conds, json_deep_copy(c));
    }
    if (json_array_size(conds) > 0)
        rc |= json_object_set(st, "conditions", conds);
    rc |= copy_member(st, s, "accumulatedPastExecutionTimeSeconds");
    json_t *stats = json_object_get(s, "schedulingStats");
    if (json_is_object(stats)) {
        json_t *o = json_object();
        rc |= o ? copy_member(o, stats, "evictions") : -1;
        rc |= json_object_set_new(st, "schedulingStats", o);
    }
    rc |= copy_member(st, s, "clusterName");
    rc |= copy_member(st, s, "nominatedClusterNames");
    /* Setting clusterName: Kueue's webhook takes it only from the stored
     * nominations, and the CRD forbids both at once, so the same request
     * empties the list; an explicit [] takes the atomic list over from any
     * other manager (an External dispatcher) instead of leaving it there. */
    if (nonempty(json_object_get(s, "clusterName")) &&
        !nonempty(json_object_get(s, "nominatedClusterNames")) &&
        nonempty(jx_get(wl, "status.nominatedClusterNames")))
        rc |= json_object_set_new(st, "nominatedClusterNames", json_array());
    rc |= copy_member(st, s, "unhealthyNodes");
    rc |= copy_member(st, s, "preemptionGates");
    rc |= copy_member(st, s, "admissionChecks");
    if (rc != 0 || json_object_set(body, "status", st) < 0)
        goto fail;
    json_decref(s);
    json_decref(st);
    json_decref(conds);
    return body;
fail:
    json_decref(s);
    json_decref(st);
    json_decref(conds);
    json_decref(body);
    return NULL;
}
