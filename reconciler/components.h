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

/* Where a component may go. */
struct rc_component_view {
    char cluster[254]; /* FOLLOW: the worker to follow */
    /* "ns/name" of the first component when this one waits behind it and
     * every component exists, none with a worker: the first may choose now
     * (whichever Workload arrives last wakes it; no timer). Else empty. */
    char first[320];
    json_t *late; /* new array (NULL on oom): "ns/name" keys of the components
                   * without a worker yet, to reconcile once this one has one */
};

/* Where Workload wl (a component) may go, given that its job expects
 * `expected` Workloads; fills *v (v->late owned by the caller). */
enum rc_component rc_component_place(struct kcache *workloads, const json_t *wl, long long expected,
                                     struct rc_component_view *v);

#endif
