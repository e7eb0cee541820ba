/* Kubernetes Events about manager objects (best effort: a failure is
 * logged, never retried). */
#ifndef MKUEUE_RC_EVENTS_H
#define MKUEUE_RC_EVENTS_H

#include <jansson.h>

#include "kube_client.h"

/* The Event object (new reference) for `obj` (apiVersion, kind, metadata).
 * type: Normal or Warning. */
json_t *rc_event_build(const json_t *obj, const char *type, const char *reason, const char *message,
                       const char *now);
/* Builds and posts it in obj's namespace. */
void rc_event_emit(struct kc_client *c, const json_t *obj, const char *type, const char *reason,
                   const char *message);

#endif
