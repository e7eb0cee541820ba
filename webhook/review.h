/* AdmissionReview (admission.k8s.io/v1 and v1beta1) decoding and encoding.
 *
 * The body is untrusted: it is decoded with a size and depth bound, and
 * every field we read is type-checked. A review that cannot be answered
 * (malformed JSON, no request, no uid, wrong types) is refused with a
 * message naming the field, which the server sends as HTTP 400: such a
 * review never gets `allowed: true`. */
#ifndef MKUEUE_WH_REVIEW_H
#define MKUEUE_WH_REVIEW_H

#include <jansson.h>
#include <stddef.h>

#include "buf.h"
#include "jsonx.h"

#define WH_MAX_BODY  (3u * 1024 * 1024) /* default body cap */
#define WH_MAX_DEPTH 128                /* JSON nesting of a review */
/* Decoded size of one review (jx_scan_cost) at most: a 2.9 MiB UPDATE with a
 * big annotation or thousands of env vars takes a few MiB; 3 MiB of empty
 * objects would take about 250 MiB. */
#define WH_MAX_DECODED (24u * 1024 * 1024)
/* All requests' bodies and decoded reviews at once, by default. */
#define WH_MAX_INFLIGHT (48u * 1024 * 1024)

enum wh_op { WH_CREATE, WH_UPDATE, WH_DELETE, WH_CONNECT };

struct wh_review {
    json_t *root; /* the whole review; owned */
    int v1beta1;  /* answer in admission.k8s.io/v1beta1 */
    const char *uid;
    enum wh_op op;
    const char *operation; /* "CREATE", ... */
    /* request.kind */
    const char *group;
    const char *version;
    const char *kind;
    const char *sub_resource; /* "" when none */
    const char *ns;           /* request.namespace, else the object's; "" when none */
    const char *name;         /* request.name, else the object's; "" when none */
    json_t *object;           /* borrowed from root; NULL when absent (DELETE) */
    json_t *old_object;       /* borrowed from root; NULL when absent */
    int dry_run;
};

/* Decodes a review of at most max_bytes; sc is jx_scan of the body when the
 * caller has scanned it already (NULL: scanned here). On success fills r
 * (release with wh_review_clear) and returns 0; on failure returns -1 with a
 * message in err ("request.uid: missing", "body: JSON nesting deeper than
 * 128") and r is cleared. */
int wh_review_decode(const char *body, size_t len, size_t max_bytes, const struct jx_scan *sc,
                     struct wh_review *r, char *err, size_t errlen);
void wh_review_clear(struct wh_review *r);

/* What we answer. Strings and JSON are owned by the verdict. */
struct wh_verdict {
    int allowed;
    int code;           /* status.code of a denial (403 policy, 503 retry) */
    const char *reason; /* static: metrics label of a denial ("localqueue_not_found") */
    char *message;      /* denial message (malloc'd) or NULL */
    json_t *patch;      /* JSON Patch ops (array) or NULL; sent only when non-empty */
    json_t *warnings;   /* array of strings or NULL */
};

void wh_verdict_init(struct wh_verdict *v);
void wh_verdict_clear(struct wh_verdict *v);
/* Denies with a printf-style message; code 403 unless set before. */
void wh_verdict_deny(struct wh_verdict *v, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends a printf-style warning. */
void wh_verdict_warn(struct wh_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 1 when the verdict carries a non-empty patch. */
int wh_verdict_patched(const struct wh_verdict *v);

/* Appends the AdmissionReview answering r (same apiVersion) to out: uid
 * echoed, allowed, status on denial, warnings, and patch + patchType only
 * when there is a patch and the request is not a DELETE. A denial never
 * carries a patch. Returns 0, or -1 on oom/overflow of out. */
int wh_review_respond(const struct wh_review *r, const struct wh_verdict *v, struct buf *out);

#endif
