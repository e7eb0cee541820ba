/* Kubernetes REST client on libcurl.
 *
 * One kc_client per API server, shared by all threads: it keeps a small pool
 * of curl easy handles (each with its kept-alive connection; a stack, so the
 * warmest is reused; extra handles are made on demand and freed after use),
 * applies a QPS/burst token bucket and a per-request timeout, and decodes
 * Kubernetes `Status` errors. Objects are jansson values; returned ones are
 * new references the caller must json_decref.
 *
 * Transport: HTTPS only, HTTP/1.1 (one request per connection at a time,
 * which is what the pool gives anyway), TLS 1.2+, peer and host always
 * verified against cfg's CA (or the system roots), client certificate and
 * key from memory (PEM), `Accept: application/json`, gzip accepted
 * (max_body counts decoded bytes), redirects not followed. */
#ifndef MKUEUE_KUBE_CLIENT_H
#define MKUEUE_KUBE_CLIENT_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "json_yajl.h"
#include "kube_config.h"

/* Returns are errf.h's MK_OK / MK_ERR_*: TRANSPORT (connect/TLS/timeout/reset; see
 * st->message), HTTP (the server answered non-2xx; see st), DECODE (the body was
 * not the JSON expected), NOMEM, TOOBIG (the response exceeded max_body), INVAL
 * (bad arguments), STOPPED (a stop flag, watch), REFUSED (the client's
 * may_write refused the write; nothing was sent). */

/* What a request ended with: always filled, also on success. */
struct kc_status {
    long http;          /* HTTP status, 0 when no response */
    char reason[64];    /* Status.reason, e.g. "NotFound", "AlreadyExists", "Conflict" */
    char message[512];  /* Status.message, or the transport error */
    long retry_after_s; /* Retry-After header (429/503) or details.retryAfterSeconds, else 0 */
    int transport_code; /* CURLcode when rc == MK_ERR_TRANSPORT */
    double throttled_s; /* seconds waited for this client's rate limiter (qps) */
    double duration_s;  /* seconds the transfer took (connection, request, response) */
};

#define kc_is_not_found(st)      ((st)->http == 404)
#define kc_is_already_exists(st) ((st)->http == 409 && strcmp((st)->reason, "AlreadyExists") == 0)
#define kc_is_conflict(st)       ((st)->http == 409 && strcmp((st)->reason, "AlreadyExists") != 0)
#define kc_is_gone(st)           ((st)->http == 410)
#define kc_is_retryable(st)      ((st)->http == 0 || (st)->http == 429 || (st)->http >= 500)

/* A resource: group "" is the core group ("/api/v1/..."). */
struct kc_resource {
    const char *group;    /* "" or "batch", "kueue.x-k8s.io", ... */
    const char *version;  /* "v1", "v1beta2", ... */
    const char *resource; /* plural, lower-case: "jobs", "workloads" */
    int namespaced;
};

struct kc_options {
    double qps;              /* default 50; <0 disables limiting */
    int burst;               /* default 100 */
    long timeout_ms;         /* per request, default 30000 */
    long connect_timeout_ms; /* default 5000 */
    size_t max_body;         /* max response body, default 64 MiB */
    int pool_size;           /* easy handles kept, default 8 */
    const char *user_agent;  /* default "mkueue/<version>" */
    /* Accept headers (copied) of requests and of streams (watches); default
     * application/json. KC_ACCEPT_METADATA_LIST and KC_ACCEPT_METADATA make
     * lists and watches answer PartialObjectMetadata: metadata only, never a
     * Secret's data (the apiserver takes the first type it can serve, and
     * refuses a list asked as an object and a watch asked as a list). */
    const char *accept;
    const char *accept_stream;
    /* Asked on the requesting thread right before each request that is not a
     * GET goes out (after the rate limiter's wait): non-zero refuses it with
     * MK_ERR_REFUSED. NULL allows every write. The reconciler refuses writes
     * once its lease may have run out (leader.h). */
    int (*may_write)(void *ud, const char *method, const char *path);
    void *may_write_ud;
    /* Told after each request (not streams) on the requesting thread: the
     * server's host:port, the method and status (st->http 0: no answer,
     * refused or failed before it; st->throttled_s, st->duration_s), for
     * client-go's rest_client_requests_total,
     * rest_client_request_duration_seconds and
     * rest_client_rate_limiter_duration_seconds. NULL: not told. */
    void (*on_done)(void *ud, const char *host, const char *method, const struct kc_status *st);
    void *on_done_ud;
};

#define KC_ACCEPT_METADATA_LIST "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#define KC_ACCEPT_METADATA      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

struct kc_client;

/* Creates a client. cfg is borrowed, not copied: the caller keeps ownership
 * and must keep it alive as long as the client (the token is fetched through
 * kcfg_bearer_token() per request, so token files are re-read). opt may be
 * NULL; zero fields take the defaults. The server must be https://. When
 * cfg->tls_server_name is set, it is used for SNI and certificate
 * verification while connecting to the server's real address. Returns NULL
 * and fills err. */
struct kc_client *kc_new(struct kcfg *cfg, const struct kc_options *opt, char *err, size_t errlen);
void kc_free(struct kc_client *c);
/* Sets the per-request timeout for requests started from now on (<= 0: the
 * default 30 s). Thread-safe; meant for a client one thread uses, such as
 * the Lease's, which caps each request at the time left to its deadline. */
void kc_set_timeout(struct kc_client *c, long timeout_ms);
const char *kc_server(const struct kc_client *c);

/* Path of a resource collection or object, escaped: ns may be NULL for
 * cluster-scoped or all-namespaces (ignored for cluster-scoped resources);
 * name and subresource may be NULL. Returns a malloc'd string, or NULL when
 * a segment is empty, "." or "..", or sub is given without name. */
char *kc_path(const struct kc_resource *r, const char *ns, const char *name, const char *sub);

/* metadata.managedFields, left out of every decoded answer and watch
 * event (of an object, of a list's items, of an event's object): no reader
 * here uses it, it can hold a third of an object's values, and the
 * apiserver keeps it when a write omits it. */
extern const struct jy_prune kc_unread;

/* All calls below: st may be NULL; *out (when given) is set to NULL on
 * failure, else holds the answer without kc_unread's members; a namespaced
 * resource needs ns for single-object calls and create (MK_ERR_INVAL
 * otherwise). */

/* GET one object. */
int kc_get(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
           json_t **out, struct kc_status *st);

struct kc_list_opts {
    const char *label_selector;
    const char *field_selector;
    long limit;                 /* 0 = server default */
    const char *continue_token; /* from metadata.continue */
    const char *resource_version;
};
/* One page of a list; *out is the List object (items, metadata.continue,
 * metadata.resourceVersion). */
int kc_list(struct kc_client *c, const struct kc_resource *r, const char *ns,
            const struct kc_list_opts *o, json_t **out, struct kc_status *st);
/* All pages, following `continue`, one at a time: on_page gets each page
 * (borrowed; it may change it, e.g. take its items), released before the next
 * one is fetched; on the last page metadata.continue is removed and
 * metadata.resourceVersion is the one to watch from. on_page returns MK_OK or
 * a negative code of its own, which stops the list and is returned.
 * page_size 0 = 500. A page over the client's max_body is asked again with
 * half the limit, down to 1: MK_ERR_TOOBIG then means one object (with the
 * List's envelope) exceeds max_body. */
int kc_list_pages(struct kc_client *c, const struct kc_resource *r, const char *ns,
                  const char *label_selector, const char *field_selector, long page_size,
                  int (*on_page)(json_t *page, void *ud), void *ud, struct kc_status *st);
/* All pages, following `continue`; *out is a List with every item and the
 * resourceVersion of the last page. page_size 0 = 500. */
int kc_list_all(struct kc_client *c, const struct kc_resource *r, const char *ns,
                const char *label_selector, const char *field_selector, long page_size,
                json_t **out, struct kc_status *st);

/* POST a new object (obj is not stolen). *out may be NULL. */
int kc_create(struct kc_client *c, const struct kc_resource *r, const char *ns, json_t *obj,
              json_t **out, struct kc_status *st);

enum kc_patch_type {
    KC_PATCH_MERGE, /* application/merge-patch+json (RFC 7386) */
    KC_PATCH_JSON,  /* application/json-patch+json (RFC 6902) */
    KC_PATCH_APPLY  /* application/apply-patch+yaml (server-side apply; JSON is valid YAML) */
};
/* PATCH an object or its subresource ("status"); field_manager is required for
 * KC_PATCH_APPLY (force=true is sent) and optional otherwise. *out may be NULL. */
int kc_patch(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
             const char *subresource, enum kc_patch_type type, json_t *patch,
             const char *field_manager, json_t **out, struct kc_status *st);

/* PUT a whole object (used for the rare full update, e.g. finalizer removal
 * with resourceVersion precondition). */
int kc_update(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
              const char *subresource, json_t *obj, json_t **out, struct kc_status *st);

/* DELETE with propagationPolicy ("Background", "Foreground", "Orphan" or NULL)
 * and an optional UID precondition. 404 is returned as MK_ERR_HTTP. */
int kc_delete(struct kc_client *c, const struct kc_resource *r, const char *ns, const char *name,
              const char *propagation, const char *precondition_uid, struct kc_status *st);

/* Raw request: method GET, POST, PUT, PATCH or DELETE; path starts with
 * '/', query without '?' (already escaped) or NULL, body may be NULL;
 * content_type defaults to application/json when there is a body. *out (may be NULL) receives the
 * parsed JSON body on 2xx. Used by the above and for discovery (/openapi/v2, /version). */
int kc_request(struct kc_client *c, const char *method, const char *path, const char *query,
               const char *content_type, const char *body, size_t body_len, json_t **out,
               struct kc_status *st);

/* A stream's stop, set from another thread. kc_stop_request wakes the
 * stream's wait at once (curl_multi_wakeup), so an idle stream sleeps until
 * data, its own timeouts or a stop instead of waking on a short timer
 * (each wakeup cost every watch thread CPU while idle). kc_stop_init
 * before use, kc_stop_destroy after the last stream using it returned. */
struct kc_stop {
    int requested;      /* atomic */
    pthread_mutex_t mu; /* guards waiting */
    CURLM *waiting;     /* the running stream's multi handle, else NULL */
};
void kc_stop_init(struct kc_stop *s);
void kc_stop_destroy(struct kc_stop *s);
/* Thread-safe; any number of times. */
void kc_stop_request(struct kc_stop *s);
/* 1 once requested; NULL is never stopped. */
int kc_stop_requested(struct kc_stop *s);

/* Streaming GET for watches: calls on_data for each chunk as it arrives
 * until the server closes, an error occurs, on_data returns non-zero, or
 * stop is requested (at once, from any thread; stop may be NULL).
 * timeout_s bounds the whole stream (0 = none). Not subject to the
 * per-request timeout, but to the QPS limiter once at start. Chunks are raw
 * (not split on lines). Returns 0 when the server ended the stream,
 * MK_ERR_STOPPED when stop or on_data ended it, MK_ERR_HTTP with the
 * decoded Status on a non-2xx answer (on_data is not called then),
 * MK_ERR_TRANSPORT on errors and timeout. Uses its own connection. */
typedef int (*kc_data_fn)(const char *data, size_t len, void *ud);
int kc_stream(struct kc_client *c, const char *path, const char *query, long timeout_s,
              struct kc_stop *stop, kc_data_fn on_data, void *ud, struct kc_status *st);

/* Decodes a Kubernetes Status object (e.g. a watch ERROR event's object)
 * into st: reason, message, details.retryAfterSeconds (when st has none
 * yet); st->http = http, or the Status' code when http is 0. */
/* The status of a failed curl option setting: MK_ERR_NOMEM for
 * CURLE_OUT_OF_MEMORY (the string and blob options copy), else
 * MK_ERR_INVAL; 0 for CURLE_OK. Pure. */
int kc_setup_status(CURLcode e);

void kc_status_from_json(const json_t *obj, long http, struct kc_status *st);

/* Escapes a string for a URL query value or path segment (RFC 3986
 * unreserved kept). Returns malloc'd string. */
char *kc_escape(const char *s);

#endif
