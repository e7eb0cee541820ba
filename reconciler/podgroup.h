/* A pod group's pods in the reconciler's caches (kinds/podgroup.h says what
 * a group is). The manager's Pod cache holds packed pods (pack.h); the
 * workers' caches keep the prebuilt-workload label in the record. Results
 * are new arrays of unwrapped pods (the caller owns them), sorted by name;
 * NULL only when memory runs out. Thread-safe as the caches are. */
#ifndef MKUEUE_RC_PODGROUP_H
#define MKUEUE_RC_PODGROUP_H

#include <jansson.h>

#include "kube_cache.h"

/* The manager pods of group `group` in namespace ns. */
json_t *rc_group_pods(struct kcache *pods, const char *ns, const char *group);

/* A worker's copies of Workload wl_name's pods in namespace ns (our origin:
 * the worker cache only holds those). */
json_t *rc_group_remote_pods(struct kcache *pods, const char *ns, const char *wl_name);

/* Takes the pods listed in drop (the same objects, as mk_pod_group_excess
 * returns them) out of pods. */
void rc_group_drop(json_t *pods, const json_t *drop);

/* The pod named `name` in pods (borrowed), or NULL. */
json_t *rc_group_find(const json_t *pods, const char *name);

/* 1 when wl is the Workload of a pod group (Kueue's is-group-workload). */
int rc_is_group_workload(const json_t *wl);

#endif
