/* The simple quota gate of standalone mode (docs/design.md 1.2): per ClusterQueue,
 * the requests of reserved, unfinished Workloads stay within the nominal
 * quota (flavors summed per resource; no cohorts, no borrowing), pending
 * ones reserve in order of priority then creation time (BestEffortFIFO
 * skips a workload that does not fit, StrictFIFO stops at it). Pure. */
#ifndef MKUEUE_RC_QUOTA_H
#define MKUEUE_RC_QUOTA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define RC_MAX_RES 32

struct rc_res {
    int n;
    char name[RC_MAX_RES][64];
    int64_t milli[RC_MAX_RES];
    char flavor[RC_MAX_RES][64]; /* rc_cq_quota: first flavor covering it */
};

/* Slot of a resource (added with 0 when absent); NULL when full. */
int64_t *rc_res_slot(struct rc_res *r, const char *name);
/* Value or 0 when absent; *present tells which (may be NULL). */
int64_t rc_res_get(const struct rc_res *r, const char *name, int *present);

/* Requests of one pod: containers summed, initContainers' maximum per
 * resource when larger, plus overhead; limits stand in for missing
 * requests (as the apiserver defaults them). Every sum and product is
 * checked. Returns 0, -1 on a malformed quantity, a sum past int64
 * milli-units or too many resources (err says which). */
int rc_pod_requests(const json_t *pod_spec, struct rc_res *out, char *err, size_t errlen);
/* Requests of a Workload (spec.podSets: count x pod). */
int rc_workload_requests(const json_t *wl, struct rc_res *out, char *err, size_t errlen);
/* Nominal quota of a ClusterQueue per resource, summed over its flavors, or
 * over those named in `only` (a JSON array of names; NULL = all). */
int rc_cq_quota(const json_t *cq, const json_t *only, struct rc_res *out, char *err, size_t errlen);

/* The flavors admission check `check` of ClusterQueue cq applies to (Kueue's
 * admissionChecksStrategy.admissionChecks[].onFlavors): its onFlavors, or
 * every flavor of the queue when onFlavors is empty or the check is in the
 * flat v1beta1 spec.admissionChecks. New reference; NULL when the queue does
 * not list the check (or oom). */
json_t *rc_check_flavors(const json_t *cq, const char *check);

/* The admission checks (names; new reference, NULL on oom) that apply to a
 * Workload of cq, as Kueue's AdmissionChecksForWorkload decides: with
 * `admission` (status.admission), the checks whose flavors meet the flavors
 * assigned in it; without, only the checks on every flavor of the queue. */
json_t *rc_checks_for_workload(const json_t *cq, const json_t *admission);

/* A Workload's requests as the gate keeps them, one per Workload of a
 * queue: a few resources, so not a struct rc_res (4 KB). One allocation
 * with the names inside: free() it. */
struct rc_req {
    int n;
    struct rc_qty {
        const char *name;
        int64_t milli;
    } q[];
};
/* The compact copy of r (NULL on oom). */
struct rc_req *rc_req_of(const struct rc_res *r);
/* Value or 0 when absent (r may be NULL). */
int64_t rc_req_get(const struct rc_req *r, const char *name);

enum rc_gate_decision { RC_GATE_HOLDS = 0, RC_GATE_RESERVE, RC_GATE_WAIT };

/* About 80 bytes: a big queue has one per Workload in each pass. */
struct rc_gate_item {
    /* in */
    const char *key; /* "ns/name" */
    long long priority;
    const char *created;      /* creationTimestamp */
    const struct rc_req *req; /* borrowed; NULL: requests nothing */
    int reserved;             /* holds quota already */
    const char *invalid;      /* requests unreadable or overflowing (why; borrowed): never fits */
    /* out */
    enum rc_gate_decision decision;
    const char *reason; /* RC_GATE_WAIT (static): WaitingForQuota, ExceedsMaxQuota,
                         * NoMatchingFlavor, InvalidRequests */
    char *message;      /* RC_GATE_WAIT: why, for the QuotaReserved=False condition; owned
                         * by the item (rc_gate_release), NULL when out of memory */
};

/* Decides every pending item of one ClusterQueue. */
void rc_gate_plan(const char *cq_name, const struct rc_res *nominal, int strict_fifo,
                  struct rc_gate_item *items, size_t n);
/* The same with quota already held by Workloads not among items: *used in,
 * and out with what the items hold and were given added (all zero: none).
 * Returns 0, or -1 out of memory (every pending item waits, no message,
 * *used unchanged). */
int rc_gate_plan_from(const char *cq_name, const struct rc_res *nominal, int strict_fifo,
                      struct rc_res *used, struct rc_gate_item *items, size_t n);
/* Frees the messages rc_gate_plan wrote into items. */
void rc_gate_release(struct rc_gate_item *items, size_t n);

#endif
