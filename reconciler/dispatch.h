/* The MultiKueue workload reconciler: observes a manager Workload, its job
 * and its remote copies (from caches), asks rc_decide for a plan and
 * performs it. */
#ifndef MKUEUE_RC_DISPATCH_H
#define MKUEUE_RC_DISPATCH_H

#include <jansson.h>

#include "ctx.h"

/* Reconciles Workload "ns/name". Returns 0, or -1 when an action failed
 * (the caller retries with backoff). *requeue_ms gets a timed requeue
 * (-1 = none). */
int rc_reconcile_workload(struct rc_ctx *x, const char *key, long *requeue_ms);

/* The copy of a manager Workload to create on a worker (docs/multikueue-compat.md 2.6):
 * name, namespace, labels (minus kueue.x-k8s.io/job-uid, plus the origin
 * label), annotations and spec; no owner references, finalizers or status.
 * New reference or NULL. */
json_t *rc_remote_workload(const json_t *wl, const char *origin);

/* Remembers the last state of a deleted Workload so its cleanup can still
 * run (obj borrowed; a deletionTimestamp is added when missing). */
void rc_remember_deleted(struct rc_ctx *x, const char *key, const json_t *obj);
void rc_forget_deleted(struct rc_ctx *x, const char *key);

/* Forgets when the cluster was first seen unavailable (ctx.h: x->lost):
 * it is connected and reachable again, so a later loss counts from then. */
void rc_lost_forget(struct rc_ctx *x, const char *cluster);

/* Notes when a remote job event arrived, for the status sync lag metric. */
void rc_note_remote_event(struct rc_ctx *x, const char *key);

#endif
