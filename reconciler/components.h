/* Jobs of several Workloads (a LeaderWorkerSet makes one per replica: Kueue's
 * "component workloads", annotated kueue.x-k8s.io/component-workload-index
 * and sharing the owner's kueue.x-k8s.io/job-uid label). As Kueue's
 * MultiKueue controller places them: none is dispatched before all exist;
 * the first (lowest index) chooses a worker like any Workload, and the
 * others follow it to that worker. Reads the manager's Workload cache;
 * thread-safe as it is. */
#ifndef MKUEUE_RC_COMPONENTS_H
#define MKUEUE_RC_COMPONENTS_H

#include <jansson.h>
#include <stddef.h>

#include "kube_cache.h"

enum rc_component {
    RC_COMPONENT_FREE,   /* the first: dispatched as any Workload */
    RC_COMPONENT_FOLLOW, /* goes to the worker another component has (cluster) */
    RC_COMPONENT_WAIT,   /* not all exist yet, or the first has no worker yet */
};

/* Where Workload wl (a component) may go, given that its job expects
 * `expected` Workloads; cluster (len bytes) receives the worker to follow.
 * *late (new array, may be NULL on oom) lists "ns/name" keys of the
 * components without a worker yet, to reconcile once this one has one. */
enum rc_component rc_component_place(struct kcache *workloads, const json_t *wl, long long expected,
                                     char *cluster, size_t len, json_t **late);

#endif
