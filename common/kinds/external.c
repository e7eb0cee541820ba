/* External kinds: Kueue's multiKueue.externalFrameworks, the generic
 * adapter. A kind named "Kind.version.group" in the configuration is
 * dispatched like the built-in managedBy kinds: managedBy at
 * spec.managedBy (cleared on the worker's copy), no suspend flag, the whole
 * status copied back, the remote copy deleted with Background propagation
 * (as every remote job). Kueue leaves the manager Workload to the kind's own
 * integration; mkueue builds it from one pod template (see kinds.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

#define PART_MAX 253 /* a DNS subdomain: the longest group or resource */

struct ext_spec {
    char kind[64], version[64], group[PART_MAX + 1], resource[PART_MAX + 1];
    char pod_template_path[PART_MAX + 1], count_path[PART_MAX + 1];
};

/* Copies s[0..n) into out (cap bytes) when it fits and is not empty. */
static int put(char *out, size_t cap, const char *s, size_t n)
{
    if (n == 0 || n >= cap)
        return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

/* a lower-case DNS name part or a path: what a URL or jsonx path may carry */
static int plain(const char *s, int path)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!isalnum(c) && c != '-' && c != '.' && !(path && strchr("_[]/", c)))
            return 0;
    }
    return 1;
}

static int parse(const char *spec, struct ext_spec *e, char *err, size_t errlen)
{
    memset(e, 0, sizeof(*e));
    if (!spec || strlen(spec) >= MK_EXTERNAL_SPEC_MAX)
        return errf(err, errlen, MK_ERR_INVAL, "external framework: empty or too long");
    const char *end = strchr(spec, ';');
    size_t nlen = end ? (size_t)(end - spec) : strlen(spec);
    /* "Kind.version.group": the group may itself contain dots (Kueue's ParseKindArg) */
    const char *d1 = memchr(spec, '.', nlen);
    const char *d2 = d1 ? memchr(d1 + 1, '.', nlen - (size_t)(d1 + 1 - spec)) : NULL;
    if (!d2 || put(e->kind, sizeof(e->kind), spec, (size_t)(d1 - spec)) < 0 ||
        put(e->version, sizeof(e->version), d1 + 1, (size_t)(d2 - d1 - 1)) < 0 ||
        put(e->group, sizeof(e->group), d2 + 1, nlen - (size_t)(d2 + 1 - spec)) < 0 ||
        !isupper((unsigned char)e->kind[0]) || !plain(e->version, 0) || !plain(e->group, 0)) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "external framework \"%.*s\": not Kind.version.group (e.g. "
                    "PipelineRun.v1.tekton.dev)",
                    (int)nlen, spec);
    }
    for (const char *c = e->kind; *c; c++)
        if (!isalnum((unsigned char)*c))
            return errf(err, errlen, MK_ERR_INVAL, "external framework %s: bad kind", e->kind);
    while (end) {
        const char *item = end + 1;
        end = strchr(item, ';');
        size_t ilen = end ? (size_t)(end - item) : strlen(item);
        const char *eq = memchr(item, '=', ilen);
        static const char *const keys[] = {"resource", "podTemplatePath", "countPath"};
        char *dst[] = {e->resource, e->pod_template_path, e->count_path};
        size_t j = 0;
        while (eq && j < 3 &&
               ((size_t)(eq - item) != strlen(keys[j]) || strncmp(item, keys[j], strlen(keys[j]))))
            j++;
        if (!eq || j == 3 ||
            put(dst[j], PART_MAX + 1, eq + 1, ilen - (size_t)(eq + 1 - item)) < 0 ||
            !plain(dst[j], j > 0)) {
            return errf(err, errlen, MK_ERR_INVAL,
                        "external framework %s: \"%.*s\" is not resource=, podTemplatePath= or "
                        "countPath= with a value",
                        e->kind, (int)ilen, item);
        }
    }
    if (!e->resource[0]) { /* the lower-case plural, as kubebuilder names it */
        size_t n = strlen(e->kind);
        for (size_t i = 0; i < n; i++)
            e->resource[i] = (char)tolower((unsigned char)e->kind[i]);
        memcpy(e->resource + n, "s", 2);
    }
    if (!e->pod_template_path[0])
        snprintf(e->pod_template_path, sizeof(e->pod_template_path), "spec.template");
    return 0;
}

int mk_external_check(const char *spec, char *err, size_t errlen)
{
    struct ext_spec e;
    return parse(spec, &e, err, errlen);
}

int mk_kinds_add_external(const char *spec, char *err, size_t errlen)
{
    struct ext_spec *e = malloc(sizeof(*e));
    struct mk_kind *k = calloc(1, sizeof(*k));
    if (!e || !k) {
        free(e);
        free(k);
        return errf(err, errlen, MK_ERR_NOMEM, "out of memory");
    }
    int rc = parse(spec, e, err, errlen);
    if (rc == 0) {
        /* the strings live in *e, which lives as long as the kind */
        *k = (struct mk_kind){
            .kind = e->kind,
            .group = e->group,
            .version = e->version,
            .resource = e->resource,
            .gating = MK_GATE_MANAGED_BY,
            .managed_by_path = "spec.managedBy",
            .external = 1,
            .prebuilt_allowed = 1,
            .status_sync = MK_STATUS_WHOLE,
            .pod_template_path = e->pod_template_path,
            .count_path = e->count_path[0] ? e->count_path : NULL,
        };
        if (mk_kinds_register(k) == 0)
            return 0;
        rc = errf(err, errlen, MK_ERR_INVAL,
                  "external framework %s.%s.%s: the kind or resource %s is already handled, or "
                  "too many kinds",
                  e->kind, e->version, e->group, e->resource);
    }
    free(e);
    free(k);
    return rc;
}

int mk_external_pod_sets(const struct mk_kind *k, const json_t *job, json_t *out, char *err,
                         size_t errlen)
{
    json_t *tmpl = jx_get(job, k->pod_template_path);
    if (!json_is_object(tmpl)) {
        return errf(err, errlen, MK_ERR_INVAL, "%s: no pod template at %s", k->kind,
                    k->pod_template_path);
    }
    long long count = k->count_path ? mk_count_at(job, k->count_path, 1) : 1;
    if (count < 0) {
        return errf(err, errlen, MK_ERR_INVAL, "%s: %s must be a non-negative integer", k->kind,
                    k->count_path);
    }
    return mk_podset_add(out, "main", count, tmpl, err, errlen);
}
