/* Garbage collection on one connected worker (docs/multikueue-compat.md
 * 3.10): remote Workloads and jobs carrying our origin label whose manager
 * Workload is gone (or being deleted) are deleted: the job first
 * (Background propagation), then the Workload. A remote job of a kind
 * without the prebuilt label (LeaderWorkerSet) goes when the manager's job
 * of its name is gone, being deleted, or not the one its origin uid names.
 * Objects without our origin label are never seen here (the worker caches
 * are label-filtered) and never touched. */
#ifndef MKUEUE_RC_GC_H
#define MKUEUE_RC_GC_H

#include "ctx.h"

/* Returns 0, or -1 when a deletion failed (retried next time). */
int rc_gc_cluster(struct rc_ctx *x, const char *cluster);

#endif
