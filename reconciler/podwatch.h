/* The pods of dispatched jobs on their workers (issue 13, layer 2): one
 * informer per watched job, on the worker that runs it, in the job's
 * namespace, by the label selector of its pods (placement.h
 * rc_place_selector). Each keeps metadata and status only, cut to what the
 * summary reads (phase, PodScheduled, waiting containers and their image;
 * messages cut), and is bounded like every worker watch (common/clusters.h:
 * list pages, one event, the client's body cap) plus RC_PODWATCH_MAX_PODS
 * pods per job. At most RC_PODWATCH_MAX jobs are watched at once; a job past
 * that has no layer 2 until a slot frees (logged at most once a minute, with
 * how many were refused).
 *
 * Ownership: the set owns its entries; an entry holds a reference to the
 * worker connection (mkcs_get) so the client outlives the informer. An
 * informer is stopped on a thread of its own (a list in flight to a hung
 * worker ends only within the client's timeout), never on the caller's.
 *
 * Thread-safety: every function may be called from any thread; on_change
 * runs on informer threads with no lock held. */
#ifndef MKUEUE_RC_PODWATCH_H
#define MKUEUE_RC_PODWATCH_H

#include <jansson.h>

#include "clusters.h"

#define RC_PODWATCH_MAX      64   /* jobs watched at once */
#define RC_PODWATCH_MAX_PODS 1000 /* pods kept per job; more fail its informer */

struct rc_podwatch;

/* New set (rc_podwatch_free it), NULL on oom. on_change(key, ud) is called
 * when a pod of the job watched for Workload key changes. */
struct rc_podwatch *rc_podwatch_new(void (*on_change)(const char *key, void *ud), void *ud);
/* Stops every informer (waits for them) and frees. NULL is a no-op. */
void rc_podwatch_free(struct rc_podwatch *p);

/* Makes sure the pods of Workload key's job are watched on cluster, in ns,
 * by selector: starts the informer, or restarts it when the cluster,
 * selector or connection changed. Returns 0, MK_ERR_FULL when
 * RC_PODWATCH_MAX jobs are watched, MK_ERR_TRANSPORT when the cluster
 * has no connection, MK_ERR_NOMEM. */
int rc_podwatch_ensure(struct rc_podwatch *p, struct mkcs *set, const char *key,
                       const char *cluster, const char *ns, const char *selector);
/* The pods watched for key (new array) once the informer listed them;
 * NULL when not watched or not synced yet. */
json_t *rc_podwatch_pods(struct rc_podwatch *p, const char *key);
/* Stops watching for key (no-op when not watched, or p is NULL). */
void rc_podwatch_drop(struct rc_podwatch *p, const char *key);

/* The pod as the watch keeps it (kcache transform; takes obj's reference). */
json_t *rc_podwatch_cut(json_t *obj, void *ud);

#endif
