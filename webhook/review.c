#include "review.h"
#include "errf.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

/* What no handler reads, left out of the decoded review: the object's
 * managedFields (a third of a kubectl-applied Job's values) and the
 * request's descriptions of who asked and how. */
static const struct jy_path unread[] = {
    {{"request", "object", "metadata", "managedFields"}},
    {{"request", "oldObject", "metadata", "managedFields"}},
    {{"request", "userInfo"}},
    {{"request", "options"}},
    {{"request", "resource"}},
    {{"request", "requestKind"}},
    {{"request", "requestResource"}},
};
static const struct jy_prune review_prune = JY_PRUNE_OF(unread);

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"

void wh_review_clear(struct wh_review *r)
{
    json_decref(r->root);
    memset(r, 0, sizeof(*r));
}

/* A string member: 0 and *out set (NULL when absent and optional), -1 with err. */
static int get_str(const json_t *obj, const char *key, const char *where, int required,
                   const char **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required) {
            return errf(err, errlen, MK_ERR_INVAL, "%s.%s: missing", where, key);
        }
        return 0;
    }
    if (!json_is_string(v)) {
        return errf(err, errlen, MK_ERR_INVAL, "%s.%s: expected a string", where, key);
    }
    *out = json_string_value(v);
    return 0;
}

/* An object member: NULL when absent or null, -1 on another type. */
static int get_obj(const json_t *obj, const char *key, const char *where, json_t **out, char *err,
                   size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        return errf(err, errlen, MK_ERR_INVAL, "%s.%s: expected an object", where, key);
    }
    *out = v;
    return 0;
}

static int decode_kind(json_t *req, struct wh_review *r, char *err, size_t errlen)
{
    json_t *kind;
    if (get_obj(req, "kind", "request", &kind, err, errlen) < 0)
        return -1;
    if (!kind) {
        return errf(err, errlen, MK_ERR_INVAL, "request.kind: missing");
    }
    if (get_str(kind, "group", "request.kind", 0, &r->group, err, errlen) < 0 ||
        get_str(kind, "version", "request.kind", 1, &r->version, err, errlen) < 0 ||
        get_str(kind, "kind", "request.kind", 1, &r->kind, err, errlen) < 0)
        return -1;
    if (!r->group)
        r->group = "";
    if (!*r->version || !*r->kind) {
        return errf(err, errlen, MK_ERR_INVAL, "request.kind: version and kind must not be empty");
    }
    return 0;
}

static int decode_op(json_t *req, struct wh_review *r, char *err, size_t errlen)
{
    static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
    if (get_str(req, "operation", "request", 1, &r->operation, err, errlen) < 0)
        return -1;
    for (int i = 0; i < 4; i++) {
        if (strcmp(r->operation, ops[i]) == 0) {
            r->op = (enum wh_op)i;
            return 0;
        }
    }
    return errf(err, errlen, MK_ERR_INVAL, "request.operation: unknown operation \"%.32s\"",
                r->operation);
}

static int decode_objects(json_t *req, struct wh_review *r, char *err, size_t errlen)
{
    if (get_obj(req, "object", "request", &r->object, err, errlen) < 0 ||
        get_obj(req, "oldObject", "request", &r->old_object, err, errlen) < 0)
        return -1;
    if ((r->op == WH_CREATE || r->op == WH_UPDATE) && !r->object) {
        return errf(err, errlen, MK_ERR_INVAL, "request.object: missing for %s", r->operation);
    }
    if (r->op == WH_UPDATE && !r->old_object) {
        return errf(err, errlen, MK_ERR_INVAL, "request.oldObject: missing for UPDATE");
    }
    json_t *obj = r->object ? r->object : r->old_object;
    json_t *meta = NULL;
    if (obj && get_obj(obj, "metadata", "request.object", &meta, err, errlen) < 0)
        return -1;
    const char *ns = NULL, *name = NULL, *ons = NULL, *oname = NULL;
    if (get_str(req, "namespace", "request", 0, &ns, err, errlen) < 0 ||
        get_str(req, "name", "request", 0, &name, err, errlen) < 0 ||
        (meta && get_str(meta, "namespace", "request.object.metadata", 0, &ons, err, errlen) < 0) ||
        (meta && get_str(meta, "name", "request.object.metadata", 0, &oname, err, errlen) < 0))
        return -1;
    /* The apiserver may not have copied the namespace into the object yet. */
    r->ns = ns && *ns ? ns : ons ? ons : "";
    r->name = name && *name ? name : oname ? oname : "";
    return 0;
}

int wh_review_decode(const char *body, size_t len, size_t max_bytes, const struct jx_scan *sc,
                     struct wh_review *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    char jerr[200];
    r->root = jx_loadb_scanned(body, len, sc, max_bytes, WH_MAX_DEPTH, 0, &review_prune, jerr,
                               sizeof(jerr));
    if (!r->root) {
        errf(err, errlen, MK_ERR_INVAL, "body: %s", jerr);
        goto fail;
    }
    if (!json_is_object(r->root)) {
        errf(err, errlen, MK_ERR_INVAL, "body: expected an AdmissionReview object");
        goto fail;
    }
    const char *api, *kind;
    if (get_str(r->root, "apiVersion", "review", 1, &api, err, errlen) < 0 ||
        get_str(r->root, "kind", "review", 1, &kind, err, errlen) < 0)
        goto fail;
    if (strcmp(api, API_V1) == 0) {
        r->v1beta1 = 0;
    } else if (strcmp(api, API_V1BETA1) == 0) {
        r->v1beta1 = 1;
    } else {
        errf(err, errlen, MK_ERR_INVAL,
             "review.apiVersion: \"%.64s\" is not admission.k8s.io/v1 or v1beta1", api);
        goto fail;
    }
    if (strcmp(kind, "AdmissionReview") != 0) {
        errf(err, errlen, MK_ERR_INVAL, "review.kind: \"%.64s\" is not AdmissionReview", kind);
        goto fail;
    }
    json_t *req;
    if (get_obj(r->root, "request", "review", &req, err, errlen) < 0)
        goto fail;
    if (!req) {
        errf(err, errlen, MK_ERR_INVAL, "review.request: missing");
        goto fail;
    }
    if (get_str(req, "uid", "request", 1, &r->uid, err, errlen) < 0)
        goto fail;
    if (!*r->uid || strlen(r->uid) > 128) {
        errf(err, errlen, MK_ERR_INVAL, "request.uid: must be 1 to 128 characters");
        goto fail;
    }
    if (decode_kind(req, r, err, errlen) < 0 || decode_op(req, r, err, errlen) < 0 ||
        get_str(req, "subResource", "request", 0, &r->sub_resource, err, errlen) < 0 ||
        decode_objects(req, r, err, errlen) < 0)
        goto fail;
    if (!r->sub_resource)
        r->sub_resource = "";
    json_t *dry = json_object_get(req, "dryRun");
    if (dry && !json_is_null(dry) && !json_is_boolean(dry)) {
        errf(err, errlen, MK_ERR_INVAL, "request.dryRun: expected a boolean");
        goto fail;
    }
    r->dry_run = json_is_true(dry);
    return 0;
fail:
    wh_review_clear(r);
    return -1;
}

void wh_verdict_init(struct wh_verdict *v)
{
    memset(v, 0, sizeof(*v));
    v->allowed = 1;
}

void wh_verdict_clear(struct wh_verdict *v)
{
    free(v->message);
    json_decref(v->patch);
    json_decref(v->warnings);
    wh_verdict_init(v);
}

/* The formatted message (caller frees), or NULL without memory. */
static char *format(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static char *format(const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL; /* undefined after a failed vasprintf */
    return msg;
}

void wh_verdict_deny(struct wh_verdict *v, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = format(fmt, ap);
    va_end(ap);
    free(v->message);
    v->message = msg;
    v->allowed = 0;
    v->reason = reason;
    if (!v->code)
        v->code = 403;
    json_decref(v->patch);
    v->patch = NULL;
}

void wh_verdict_warn(struct wh_verdict *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = format(fmt, ap);
    va_end(ap);
    if (!msg)
        return;
    if (!v->warnings)
        v->warnings = json_array();
    json_array_append_new(v->warnings, json_string(msg));
    free(msg);
}

int wh_verdict_patched(const struct wh_verdict *v)
{
    return v->allowed && json_array_size(v->patch) > 0;
}

/* Standard base64 (padded) of the compact patch, malloc'd. */
static char *patch_base64(const json_t *ops)
{
    struct buf txt;
    buf_init(&txt, BUF_CAP_JSON_TEXT);
    char *out = NULL;
    if (jx_dump(ops, JSON_COMPACT, &txt) == 0 && (out = malloc(4 * ((txt.len + 2) / 3) + 1)))
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)txt.data, (int)txt.len);
    buf_free(&txt);
    return out;
}

int wh_review_respond(const struct wh_review *r, const struct wh_verdict *v, struct buf *out)
{
    json_t *resp = json_pack("{s:s, s:b}", "uid", r->uid, "allowed", v->allowed ? 1 : 0);
    json_t *review = NULL;
    char *b64 = NULL;
    int rc = -1;
    if (!resp)
        goto out;
    if (!v->allowed) {
        const char *reason = v->code == 503 ? "ServiceUnavailable" : "Forbidden";
        json_t *st =
            json_pack("{s:s, s:i, s:s, s:s}", "status", "Failure", "code", v->code, "reason",
                      reason, "message", v->message ? v->message : "denied by mkueue-webhook");
        if (!st || json_object_set_new(resp, "status", st) < 0)
            goto out;
    } else if (wh_verdict_patched(v) && r->op != WH_DELETE) {
        b64 = patch_base64(v->patch);
        if (!b64 || json_object_set_new(resp, "patch", json_string(b64)) < 0 ||
            json_object_set_new(resp, "patchType", json_string("JSONPatch")) < 0)
            goto out;
    }
    if (json_array_size(v->warnings) > 0 && json_object_set(resp, "warnings", v->warnings) < 0)
        goto out;
    review = json_pack("{s:s, s:s, s:O}", "apiVersion", r->v1beta1 ? API_V1BETA1 : API_V1, "kind",
                       "AdmissionReview", "response", resp);
    if (!review)
        goto out;
    rc = jx_dump(review, JSON_COMPACT, out);
out:
    free(b64);
    json_decref(review);
    json_decref(resp);
    return rc;
}
