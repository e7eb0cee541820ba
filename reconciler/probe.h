/* Reachability probes of connected workers. A watch on a partitioned or
 * frozen API server can stay silent for minutes without an error, so the
 * informers alone would keep such a worker "connected". Every interval,
 * each connected worker gets GET /version; a failure marks it unreachable
 * from the START of the failed probe (monotonic), until a probe succeeds.
 * Decisions treat an unreachable worker as lost (workerLostTimeout). */
#ifndef MKUEUE_RC_PROBE_H
#define MKUEUE_RC_PROBE_H

#include "ctx.h"

struct rc_probe;

/* on_change(cluster, ud) is called from a probe thread on each transition. */
struct rc_probe *rc_probe_start(struct rc_ctx *x, long interval_ms,
                                void (*on_change)(const char *cluster, void *ud), void *ud);
void rc_probe_stop(struct rc_probe *p);

/* Monotonic ms since when the cluster has been unreachable, 0 when fine. */
long long rc_probe_unreachable_since(struct rc_probe *p, const char *cluster, char *err,
                                     size_t errlen);

#endif
