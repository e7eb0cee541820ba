#include "schema.h"
#include "errf.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "jsonx.h"
#include "log.h"

int rc_schema_keeps_managed_by(const json_t *openapi, const struct mk_kind *k)
{
    if (!openapi || !k->managed_by_path)
        return 1;
    if (strcmp(k->group, "batch") != 0 || strcmp(k->kind, "Job") != 0)
        return 1;
    json_t *spec = jx_getv(openapi, "components", "schemas", "io.k8s.api.batch.v1.JobSpec");
    if (!spec)
        spec = jx_getv(openapi, "definitions", "io.k8s.api.batch.v1.JobSpec");
    if (!spec)
        return 1; /* an unknown layout: do not guess that it is missing */
    return jx_getv(spec, "properties", "managedBy") != NULL;
}

json_t *rc_schema_parse(const char *body, size_t len, int truncated, char *err, size_t errlen)
{
    if (truncated) {
        errf(err, errlen, MK_ERR_INVAL, "%s is larger than %d bytes", RC_OPENAPI_PATH,
             RC_OPENAPI_MAX_BYTES);
        return NULL;
    }
    char why[256] = "";
    if (!body || !len) {
        errf(err, errlen, MK_ERR_INVAL, "%s: empty answer", RC_OPENAPI_PATH);
        return NULL;
    }
    json_t *doc =
        jx_loadb_bounded(body, len, RC_OPENAPI_MAX_BYTES, RC_OPENAPI_MAX_DEPTH, why, sizeof(why));
    if (!doc)
        errf(err, errlen, MK_ERR_INVAL, "%s: %s", RC_OPENAPI_PATH, why);
    else if (!json_is_object(doc)) {
        errf(err, errlen, MK_ERR_INVAL, "%s: not a JSON object", RC_OPENAPI_PATH);
        json_decref(doc);
        doc = NULL;
    }
    return doc;
}

/* kc_stream sink: stops the read once the cap is passed */
static int collect(const char *data, size_t len, void *ud)
{
    struct buf *b = ud;
    return buf_append(b, data, len) < 0 || !buf_ok(b);
}

json_t *rc_schema_fetch(struct kc_client *c)
{
    struct buf b;
    struct kc_status st;
    char err[600];
    buf_init(&b, RC_OPENAPI_MAX_BYTES);
    int rc = kc_stream(c, RC_OPENAPI_PATH, NULL, 30, NULL, collect, &b, &st);
    json_t *doc = NULL;
    if (rc < 0 && !b.overflow) {
        LOG_W("schema",
              "cannot read the batch/v1 OpenAPI schema; assuming every kind keeps "
              "managedBy",
              "path", RC_OPENAPI_PATH, "error", b.oom ? "out of memory" : st.message);
    } else if (!(doc = rc_schema_parse(b.data, b.len, b.overflow, err, sizeof(err)))) {
        LOG_W("schema", "unusable batch/v1 OpenAPI schema; assuming every kind keeps managedBy",
              "error", err);
    }
    buf_free(&b);
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
