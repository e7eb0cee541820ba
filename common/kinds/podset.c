#include "podset.h"
#include "errf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

int mk_podset_add(json_t *out, const char *name, long long count, const json_t *tmpl, char *err,
                  size_t errlen)
{
    char lower[64];
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n >= sizeof(lower)) {
        return errf(err, errlen, MK_ERR_INVAL, "pod set name \"%s\" must have 1 to 63 characters",
                    name ? name : "");
    }
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    if (count < 0) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "pod set %s: replica count must be a non-negative integer", lower);
    }
    json_t *t = tmpl ? json_incref((json_t *)tmpl) : json_object(); /* shared: see podset.h */
    json_t *ps =
        t ? json_pack("{s:s,s:I,s:o}", "name", lower, "count", (json_int_t)count, "template", t)
          : NULL;
    if (!ps || json_array_append_new(out, ps) < 0) {
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
    return 0;
}

long long mk_count_at(const json_t *obj, const char *path, long long def)
{
    json_t *v = jx_get(obj, path);
    if (!v || json_is_null(v))
        return def;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    return json_integer_value(v);
}

static int in_order(const char *key, const char *const *order)
{
    for (size_t i = 0; order && order[i]; i++)
        if (strcasecmp(key, order[i]) == 0)
            return 1;
    return 0;
}

static int add_replica(const json_t *specs, const char *type, json_t *out, const char *field,
                       char *err, size_t errlen)
{
    json_t *spec = json_object_get(specs, type);
    long long count = mk_count_at(spec, "replicas", 1);
    if (count < 0) {
        return errf(err, errlen, MK_ERR_INVAL, "%s.%s.replicas must be a non-negative integer",
                    field, type);
    }
    return mk_podset_add(out, type, count, json_object_get(spec, "template"), err, errlen);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int mk_podsets_from_replica_specs(const json_t *specs, const char *const *order, json_t *out,
                                  const char *field, char *err, size_t errlen)
{
    if (!json_is_object(specs)) {
        return errf(err, errlen, MK_ERR_INVAL, "%s must be an object of replica specs", field);
    }
    for (size_t i = 0; order && order[i]; i++) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)specs, key, v)
        {
            if (strcasecmp(key, order[i]) == 0 && add_replica(specs, key, out, field, err, errlen))
                return -1;
        }
    }
    /* other replica types, alphabetically so the result is deterministic */
    const char *rest[32];
    size_t nrest = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)specs, key, v)
    {
        if (in_order(key, order))
            continue;
        if (nrest == sizeof(rest) / sizeof(rest[0])) {
            return errf(err, errlen, MK_ERR_INVAL, "%s has too many replica types", field);
        }
        rest[nrest++] = key;
    }
    qsort(rest, nrest, sizeof(rest[0]), cmp_str);
    for (size_t i = 0; i < nrest; i++)
        if (add_replica(specs, rest[i], out, field, err, errlen))
            return -1;
    return 0;
}
