#include "schema.h"

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
