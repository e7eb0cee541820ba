/* Standalone mode's quota gate, run per ClusterQueue: reserves quota for
 * pending Workloads (QuotaReserved, status.admission) and tells the others
 * why they wait. Reservations written but not yet seen in the cache are
 * remembered, so a quick second pass cannot over-commit the queue. */
#ifndef MKUEUE_RC_GATE_H
#define MKUEUE_RC_GATE_H

#include <jansson.h>

#include "ctx.h"
#include "quota.h"

/* The status patch reserving `nominal`'s flavors for wl in ClusterQueue cq
 * (object cqo, borrowed; NULL leaves status.admissionChecks alone): with it,
 * status.admissionChecks becomes the checks that apply to the assigned
 * flavors (onFlavors, as Kueue), states kept, new ones Pending. New
 * reference, NULL on oom. */
json_t *rc_reserve_patch(const json_t *wl, const char *cq, const json_t *cqo,
                         const struct rc_res *nominal, const char *now);

/* The most Workloads one pass tells why they wait (one status write each):
 * the rest are written by the passes that follow at once (gate_index.h,
 * rc_gix_redo), so a backlog of new Workloads (10,000 jobs created
 * together, a restart) does not hold its queue's next reservation for
 * minutes at the client's write budget. Reservations are never put off. */
#define RC_GATE_WAITS_MAX 100

/* One pass over the ClusterQueue. Returns 0, -1 when a write failed. */
int rc_reconcile_gate(struct rc_ctx *x, const char *cq);

/* Forgets when the queue status of ClusterQueue cq was written (deleted). */
void rc_gate_forget_queue(struct rc_ctx *x, const char *cq);

/* Frees one of x->gate_views' values (for smap_free at exit). */
void rc_gate_view_free(void *v);

/* Forgets what the gate assumed about a Workload, and its view (deleted). */
void rc_gate_forget(struct rc_ctx *x, const char *key);

#endif
