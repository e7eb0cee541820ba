#include "priority.h"

#include <stdio.h>
#include <string.h>

#include "errf.h"
#include "jsonx.h"

static int set_ref(struct rc_priority *out, const char *group, const char *kind, const char *name,
                   long long value, char *err, size_t errlen)
{
    if (strlen(name) >= sizeof(out->name))
        return errf(err, errlen, MK_ERR_INVAL, "priority class name too long (%zu bytes)",
                    strlen(name));
    out->group = group;
    out->kind = kind;
    snprintf(out->name, sizeof(out->name), "%s", name);
    out->value = value;
    return 0;
}

/* The pod sets' first non-empty template priorityClassName, or NULL. */
static const char *pod_priority_class(const json_t *podsets)
{
    size_t i;
    const json_t *ps;
    json_array_foreach(podsets, i, ps)
    {
        const char *pc = jx_str(ps, "template.spec.priorityClassName");
        if (pc && *pc)
            return pc;
    }
    return NULL;
}

struct dflt {
    char name[RC_PRIORITY_NAME_MAX];
    long long value;
    int found;
};

/* The global default PriorityClass with the lowest value, as Kueue picks
 * one when several are marked (a race of their creators). */
static int default_pc(const char *key, json_t *pc, void *ud)
{
    (void)key;
    struct dflt *d = ud;
    const char *name = jx_str(pc, "metadata.name");
    long long v = jx_int(pc, "value", 0);
    if (!jx_bool(pc, "globalDefault", 0) || !name || strlen(name) >= sizeof(d->name))
        return 0;
    if (!d->found || v < d->value) {
        snprintf(d->name, sizeof(d->name), "%s", name);
        d->value = v;
        d->found = 1;
    }
    return 0;
}

int rc_priority_resolve(const char *label, const char *job_class, const json_t *podsets,
                        struct kcache *wpcs, struct kcache *pcs, struct rc_priority *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (label && *label) {
        json_t *wpc = wpcs ? kcache_get(wpcs, label) : NULL;
        long long v = jx_int(wpc, "value", 0);
        json_decref(wpc);
        if (!wpc)
            return errf(err, errlen, MK_ERR,
                        "workloadpriorityclasses." RC_WPC_GROUP " \"%s\" not found", label);
        return set_ref(out, RC_WPC_GROUP, RC_WPC_KIND, label, v, err, errlen);
    }
    const char *name = job_class && *job_class ? job_class : pod_priority_class(podsets);
    if (name) {
        json_t *pc = pcs ? kcache_get(pcs, name) : NULL;
        long long v = jx_int(pc, "value", 0);
        json_decref(pc);
        if (!pc)
            return errf(err, errlen, MK_ERR, "priorityclasses." RC_PC_GROUP " \"%s\" not found",
                        name);
        return set_ref(out, RC_PC_GROUP, RC_PC_KIND, name, v, err, errlen);
    }
    struct dflt d = {0};
    if (pcs)
        kcache_foreach(pcs, NULL, default_pc, &d);
    if (d.found)
        return set_ref(out, RC_PC_GROUP, RC_PC_KIND, d.name, d.value, err, errlen);
    return 0; /* no class: priority 0 (Kueue's DefaultPriority), no reference */
}

int rc_priority_needs_update(const json_t *wl, const char *label)
{
    const json_t *ref = jx_get(wl, "spec.priorityClassRef");
    const char *group = jx_str(ref, "group"), *kind = jx_str(ref, "kind");
    int wpc = group && kind && !strcmp(group, RC_WPC_GROUP) && !strcmp(kind, RC_WPC_KIND);
    if (json_is_object(ref) && !wpc)
        return 0; /* a pod PriorityClass's priority is kept */
    const char *have = jx_str(ref, "name");
    return strcmp(have ? have : "", label ? label : "") != 0;
}

static json_t *ref_of(const struct rc_priority *p)
{
    if (!p->group)
        return json_null();
    return json_pack("{s:s,s:s,s:s}", "group", p->group, "kind", p->kind, "name", p->name);
}

int rc_priority_apply(json_t *wl, const struct rc_priority *p)
{
    if (jx_set(wl, "spec.priority", json_integer((json_int_t)p->value)) < 0)
        return -1;
    if (!p->group) {
        jx_del(wl, "spec.priorityClassRef");
        return 0;
    }
    json_t *ref = ref_of(p);
    return ref ? jx_set(wl, "spec.priorityClassRef", ref) : -1;
}

json_t *rc_priority_patch(const struct rc_priority *p, const char *rv)
{
    json_t *ref = ref_of(p);
    return ref ? json_pack("{s:{s:s?},s:{s:I,s:o}}", "metadata", "resourceVersion", rv, "spec",
                           "priority", (json_int_t)p->value, "priorityClassRef", ref)
               : NULL;
}
