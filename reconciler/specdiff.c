#include "specdiff.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "quantity.h"
#include "wlstatus.h"

#define MAX_DEPTH 64 /* deeper than any Workload spec: compared as raw JSON */

/* The path of the member being compared, built on the way down and left in
 * place at the first difference. */
struct walk {
    char buf[RC_SPEC_PATH_MAX];
    size_t len;
    int cut; /* a segment did not fit: "..." at the end */
};

struct mark {
    size_t len;
    int cut;
};

static struct mark mark_of(const struct walk *w)
{
    return (struct mark){w->len, w->cut};
}

static void restore(struct walk *w, struct mark m)
{
    w->len = m.len;
    w->cut = m.cut;
    w->buf[m.len] = '\0';
}

static void push_seg(struct walk *w, const char *seg)
{
    size_t n = strlen(seg);
    if (w->cut || w->len + n + sizeof("...") > sizeof(w->buf)) {
        w->cut = 1;
        return;
    }
    memcpy(w->buf + w->len, seg, n + 1);
    w->len += n;
}

static int plain_name(const char *k)
{
    if (!*k)
        return 0;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
              *k == '_' || *k == '-'))
            return 0;
    return 1;
}

static void push_key(struct walk *w, const char *k)
{
    char seg[RC_SPEC_PATH_MAX + 4];
    if (plain_name(k))
        snprintf(seg, sizeof(seg), ".%s", k);
    else
        snprintf(seg, sizeof(seg), "[%s]", k);
    push_seg(w, seg);
}

static void push_index(struct walk *w, size_t i)
{
    char seg[32];
    snprintf(seg, sizeof(seg), "[%zu]", i);
    push_seg(w, seg);
}

/* null, [], {} and objects of nothing but those: what Go decodes to nil or
 * a zero value and a structural schema prunes. */
static int is_empty(const json_t *v, int depth)
{
    if (!v || json_is_null(v))
        return 1;
    if (json_is_array(v))
        return json_array_size(v) == 0;
    if (!json_is_object(v) || depth > MAX_DEPTH)
        return 0;
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m)
    {
        if (!is_empty(m, depth + 1))
            return 0;
    }
    return 1;
}

static int in_list(const char *s, const char *const *list)
{
    for (; s && list && *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* A resource.Quantity: members of ResourceList maps, and sizeLimit. */
static int quantity_at(const char *key, const char *parent)
{
    static const char *const maps[] = {"requests", "limits", "overhead", NULL};
    return in_list(parent, maps) || (key && strcmp(key, "sizeLimit") == 0);
}

static int as_quantity(const json_t *v, int64_t *milli)
{
    char num[64];
    const char *s = num;
    if (json_is_string(v))
        s = json_string_value(v);
    else if (json_is_integer(v))
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(num, sizeof(num), "%.17g", json_real_value(v));
    else
        return -1;
    return qty_parse(s, milli);
}

static int same(const json_t *l, const json_t *r, const char *key, const char *parent, int depth,
                struct walk *w);

/* Every non-empty member of l matches r's (members only r has are the
 * worker's defaults). Members named in skip are left out. */
static int members(const json_t *l, const json_t *r, const char *key, int depth, struct walk *w,
                   const char *const *skip)
{
    const char *k;
    json_t *lv;
    json_object_foreach((json_t *)l, k, lv)
    {
        if (in_list(k, skip))
            continue;
        struct mark m = mark_of(w);
        push_key(w, k);
        if (!same(lv, json_object_get(r, k), k, key, depth + 1, w))
            return 0;
        restore(w, m);
    }
    return 1;
}

static int same(const json_t *l, const json_t *r, const char *key, const char *parent, int depth,
                struct walk *w)
{
    if (is_empty(l, depth))
        return 1; /* pruned on the way, or defaulted by the worker */
    if (is_empty(r, depth))
        return 0; /* the worker lost a value the manager has */
    if (depth > MAX_DEPTH)
        return json_equal((json_t *)l, (json_t *)r);
    if (json_is_object(l))
        return json_is_object(r) && members(l, r, key, depth, w, NULL);
    if (json_is_array(l)) {
        if (!json_is_array(r) || json_array_size(l) != json_array_size(r))
            return 0;
        for (size_t i = 0; i < json_array_size(l); i++) {
            struct mark m = mark_of(w);
            push_index(w, i);
            if (!same(json_array_get(l, i), json_array_get(r, i), NULL, key, depth + 1, w))
                return 0;
            restore(w, m);
        }
        return 1;
    }
    if (quantity_at(key, parent)) {
        int64_t a, b;
        if (as_quantity(l, &a) == 0 && as_quantity(r, &b) == 0)
            return a == b;
    }
    if (key && json_is_string(l) && json_is_string(r) &&
        (strcmp(key, "creationTimestamp") == 0 || strcmp(key, "deletionTimestamp") == 0)) {
        long long a = rc_parse_time_ms(json_string_value(l));
        long long b = rc_parse_time_ms(json_string_value(r));
        if (a >= 0 && b >= 0)
            return a == b;
    }
    if (json_is_number(l) && json_is_number(r))
        return json_number_value(l) == json_number_value(r);
    return json_equal((json_t *)l, (json_t *)r);
}

static int same_spec(const json_t *local, const json_t *remote, const char *const *skip,
                     struct walk *w)
{
    memset(w, 0, sizeof(*w));
    push_seg(w, "spec");
    if (!json_is_object(local))
        return 1; /* nothing on the manager side to hold */
    return members(local, json_is_object(remote) ? remote : NULL, "spec", 0, w, skip);
}

int rc_spec_equal(const json_t *local, const json_t *remote, int *prio_only, char *path,
                  size_t pathlen)
{
    static const char *const gates[] = {"preemptionGates", NULL};
    static const char *const gates_prio[] = {"preemptionGates",     "priority",
                                             "priorityClassRef",    "priorityClassName",
                                             "priorityClassSource", NULL};
    struct walk w, rest;
    *prio_only = 0;
    if (path && pathlen)
        path[0] = '\0';
    if (same_spec(local, remote, gates, &w))
        return 1;
    *prio_only = same_spec(local, remote, gates_prio, &rest);
    if (path && pathlen) {
        const struct walk *at = *prio_only ? &w : &rest;
        snprintf(path, pathlen, "%s%s", at->buf, at->cut ? "..." : "");
    }
    return 0;
}
