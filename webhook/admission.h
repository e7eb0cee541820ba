/* The admission decisions: mutation (mutate.c: default queue, managedBy,
 * suspend, pod gates, pod-template marks) and validation (validate.c: queue
 * preconditions on the manager and on the workers, immutability), the
 * helpers both use (admission.c), and the dispatcher that turns an HTTP
 * request into an AdmissionReview answer, with its metrics (admit.c).
 * mutate.c and validate.c depend on this header only, not on each other.
 *
 * Decisions read in-memory caches only (struct wh_ctx): never the network.
 * The worker side is an interface so tests fill it by hand. The decisions
 * and wh_admit run on the server's threads at once; wh_metrics_register runs
 * once, at start-up. */
#ifndef MKUEUE_WH_ADMISSION_H
#define MKUEUE_WH_ADMISSION_H

#include <stddef.h>

#include "budget.h"
#include "buf.h"
#include "kinds/kinds.h"
#include "metrics.h"
#include "podrefs.h"
#include "queue.h"
#include "review.h"

enum wh_worker_state {
    WH_WORKER_READY = 0,  /* connected and its caches synced: checked */
    WH_WORKER_STALE = 1,  /* known but not connected (never yet, or lost): skipped */
    WH_WORKER_UNKNOWN = 2 /* no connection for that name (e.g. bad kubeconfig): skipped */
};

struct wh_workers {
    /* Returns an enum wh_worker_state; when READY, *has_ns and *has_lq say
     * whether namespace ns and LocalQueue ns/lq are in that worker's caches.
     * `why` gets a short reason for the other states ("disconnected"). */
    int (*check)(void *ud, const char *cluster, const char *ns, const char *lq, int *has_ns,
                 int *has_lq, char *why, size_t whylen);
    void *ud;
    /* Preflight (may be NULL: none): 1 when the worker has object ns/name of
     * that kind, 0 when not, -1 when it cannot tell (not checked). */
    int (*has_object)(void *ud, const char *cluster, enum mk_ref_kind kind, const char *ns,
                      const char *name);
};

struct wh_ctx {
    struct mkq_caches q; /* the manager's caches (all five must be set) */
    struct wh_workers workers;
};

/* ---- shared by mutation and validation (admission.c) ----------------------- */

/* 1 when every manager cache has synced. */
int wh_ctx_synced(const struct wh_ctx *c);

/* Denies v with code 503, reason not_synced and a "retry in a few seconds"
 * message: a job with the queue label while the caches have not synced. */
void wh_deny_not_synced(struct wh_verdict *v);

/* The job's kueue.x-k8s.io/queue-name label (borrowed) or NULL. */
const char *wh_queue_label(const json_t *obj);

/* 1 when s is a DNS-1123 subdomain (Kubernetes' IsDNS1123Subdomain). */
int wh_dns1123_subdomain(const char *s);

/* ---- the decisions (mutate.c, validate.c) ---------------------------------- */

/* Fills v (initialised by the caller) for review r of a job of kind k.
 * Mutation sets v->patch (possibly empty); it denies only an object with the
 * queue label while the caches have not synced (unlabelled ones pass
 * untouched, the default LocalQueue unapplied). Validation denies or
 * allows, with warnings. Both return 0, or -1 on oom (v is then a denial). */
int wh_mutate(const struct wh_ctx *c, const struct mk_kind *k, const struct wh_review *r,
              struct wh_verdict *v);
int wh_validate(const struct wh_ctx *c, const struct mk_kind *k, const struct wh_review *r,
                struct wh_verdict *v);

/* ---- metrics (admit.c) ---------------------------------------------------- */

struct wh_metrics {
    struct mt_family *requests; /* mkueue_webhook_requests_total{webhook,kind,operation,decision} */
    struct mt_family *duration; /* mkueue_webhook_request_duration_seconds{webhook} */
    struct mt_family *denials;  /* mkueue_webhook_denials_total{kind,reason} */
    struct mt_family *bad;      /* mkueue_webhook_bad_requests_total{code} */
    struct mt_family *in_flight;    /* mkueue_webhook_requests_in_flight */
    struct mt_family *synced;       /* mkueue_webhook_cache_synced{cluster} */
    struct mt_family *cert_expiry;  /* mkueue_webhook_serving_cert_expiry_seconds */
    struct mt_family *cert_reloads; /* mkueue_webhook_serving_cert_reloads_total{result} */
};

/* Registers the families in reg. Returns 0 or -1. */
int wh_metrics_register(struct mt_registry *reg, struct wh_metrics *m);

/* ---- HTTP dispatch (admit.c) ---------------------------------------------- */

/* What an admission path means: *mutate 1/0; *kind the per-kind endpoint's
 * kind, or NULL for the generic "/mutate" and "/validate" (which dispatch on
 * request.kind). Returns 1 for an admission path, 0 otherwise. */
int wh_admission_path(const char *path, int *mutate, const struct mk_kind **kind);

struct wh_admitter {
    const struct wh_ctx *ctx;
    struct wh_metrics *m; /* may be NULL */
    size_t max_body;      /* 0 = WH_MAX_BODY */
    /* mkueue's own namespace: like kube-system, always allowed untouched
     * whatever the registration says (invariant 11); NULL = none. */
    const char *own_ns;
    /* Decoded size of one review (jx_scan_cost), checked before decoding:
     * above it 400; 0 = WH_MAX_DECODED. */
    size_t max_decoded;
    /* Shared with the server: a review's decoded size is taken from it for
     * the time of the decision; over it 429. NULL = unlimited. */
    struct wh_budget *budget;
};

/* Answers the POST of `body` to admission `path`. Returns the HTTP status
 * (200 with an AdmissionReview, 400 with a text message for a malformed
 * review or one whose decoded size is over max_decoded, 429 when the budget
 * is spent by other requests, 404 for an unknown path, 500 on oom) and appends the body to out;
 * *ctype gets its content type. The review's JSON lives in a request scope
 * (reqmem.h): nothing of it outlives the call. */
int wh_admit(const struct wh_admitter *a, const char *path, const char *body, size_t len,
             struct buf *out, const char **ctype);

#endif
