/* The status of the standalone mode's queues, as Kueue's core writes it
 * (issue 13): ClusterQueue and LocalQueue pendingWorkloads,
 * reservingWorkloads, admittedWorkloads, flavorsReservation, flavorsUsage
 * and the Active condition, so `kubectl get clusterqueues,localqueues` on
 * the manager shows the right columns. Kueue counts what its scheduler
 * cache holds; here the quota gate's pass over one ClusterQueue (gate.c)
 * counts the Workloads it has just planned, and writes a queue's status
 * only when it changes, and at most once per RC_QSTATUS_BATCH_MS per
 * ClusterQueue (with its LocalQueues): a change after a quiet spell is
 * written at once, the changes of a busy second in one write at its end.
 * Kueue batches the same way (its queue controllers reconcile a second
 * after a Workload event), so a stream of jobs does not spend the
 * manager's write budget on counters.
 *
 * Usage is counted per flavor and resource as the gate assigns it: every
 * resource on the first flavor of the queue covering it (rc_cq_quota's
 * `flavor`), since the gate reserves quota no other way.
 *
 * Pure: JSON in, JSON out. Thread-safety: reentrant. */
#ifndef MKUEUE_RC_QSTATUS_H
#define MKUEUE_RC_QSTATUS_H

#include <jansson.h>
#include <stddef.h>

#include "quota.h"

/* Kueue's texts of a queue that takes work. */
#define RC_CQ_ACTIVE_MSG "Can admit new workloads"
#define RC_LQ_ACTIVE_MSG "Can submit new workloads to localQueue"

#define RC_QSTATUS_BATCH_MS 1000 /* Kueue's UpdatesBatchPeriod */

/* Milliseconds until a queue whose status was last written at last_ms
 * (monotonic; 0: never) may be written again at now_ms; 0 when it may. */
long rc_qstatus_wait(long long last_ms, long long now_ms);

/* One Workload of the queue, after the gate's plan. */
struct rc_qs_item {
    const char *ns;           /* its namespace */
    const char *queue;        /* its LocalQueue (spec.queueName) */
    int reserved;             /* holds quota (QuotaReserved), or was just given it */
    int admitted;             /* Admitted=True */
    const struct rc_req *req; /* its requests (borrowed; NULL: none) */
};

/* The counted part of a queue's status (new reference, NULL on oom):
 * {"pendingWorkloads", "reservingWorkloads", "admittedWorkloads",
 *  "flavorsReservation", "flavorsUsage"}, with every flavor and covered
 * resource of ClusterQueue cqo listed (0 when unused), as Kueue does. With
 * lq_name NULL, the ClusterQueue's (every item; resources carry "borrowed":
 * "0", no cohorts here); else the LocalQueue lq_ns/lq_name's (its items). */
json_t *rc_queue_usage(const json_t *cqo, const struct rc_res *nominal,
                       const struct rc_qs_item *items, size_t n, const char *lq_ns,
                       const char *lq_name);

/* The status merge patch ({"status": {...}}) that makes queue object obj
 * (ClusterQueue or LocalQueue) say `usage` (borrowed) and Active True
 * reason Ready with active_msg; NULL when it already says so (no write), or
 * on oom (*oom set). New reference. */
json_t *rc_queue_status_patch(const json_t *obj, const json_t *usage, const char *active_msg,
                              int *oom);

#endif
