#include "schema.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "log.h"

int rc_schema_keeps_managed_by(const json_t *openapi, const struct mk_kind *k)
{
    if (!openapi || !k->managed_by_path)
        return 1;
    if (strcmp(k->group, "batch") != 0 || strcmp(k->kind, "Job") != 0)
        return 1;
    json_t *spec = jx_getv(openapi, "definitions", "io.k8s.api.batch.v1.JobSpec");
    if (!spec)
        return 1; /* an unknown layout: do not guess that it is missing */
    return jx_getv(spec, "properties", "managedBy") != NULL;
}

json_t *rc_schema_fetch(struct kc_client *c)
{
    json_t *doc = NULL;
    struct kc_status st;
    if (kc_request(c, "GET", "/openapi/v2", NULL, NULL, NULL, 0, &doc, &st) < 0) {
        LOG_W("schema", "cannot read /openapi/v2; assuming every kind keeps managedBy", "error",
              st.message);
        return NULL;
    }
    return doc;
}

int rc_kind_served(struct kc_client *c, const struct mk_kind *k)
{
    char path[512];
    if (k->group[0])
        snprintf(path, sizeof(path), "/apis/%s/%s", k->group, k->version);
    else
        snprintf(path, sizeof(path), "/api/%s", k->version);
    json_t *list = NULL;
    struct kc_status st;
    if (kc_request(c, "GET", path, NULL, NULL, NULL, 0, &list, &st) < 0)
        return kc_is_not_found(&st) ? 0 : -1;
    int served = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(list, "resources"), i, r)
    {
        const char *name = jx_str(r, "name");
        if (name && strcmp(name, k->resource) == 0)
            served = 1;
    }
    json_decref(list);
    return served;
}
