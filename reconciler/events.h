/* Kubernetes Events about manager objects, posted in the background.
 *
 * A reconcile that tells an Event goes on at once: the Event waits in a
 * bounded queue (RC_EVENTS_QUEUE_MAX, client-go's maxQueuedEvents) and one
 * sender thread posts it through the recorder's own client. Posting in the
 * reconcile itself made the workers wait on the Events' round trips: 3,000
 * queued Workloads each telling why they wait held new dispatches for
 * seconds. When the queue is full the new Event is dropped and counted
 * (mkueue_events_dropped_total), as client-go's broadcaster drops: an Event
 * is a note for a person, never worth holding a dispatch. A failed post is
 * logged at debug level and not retried; Events still queued at shutdown
 * are dropped.
 *
 * Ownership: the recorder owns the client it is given and the Events it
 * queued; rc_event_emit only reads obj. Thread-safety: rc_event_emit and
 * rc_events_queued from any thread; rc_events_free once, after the last
 * emit. */
#ifndef MKUEUE_RC_EVENTS_H
#define MKUEUE_RC_EVENTS_H

#include <jansson.h>
#include <stddef.h>

#include "kube_client.h"
#include "metrics.h"

#define RC_EVENTS_QUEUE_MAX 1000

struct rc_events;

/* A recorder posting through c (taken, also on failure); dropped: a
 * counter without labels, or NULL. NULL on allocation or thread failure. */
struct rc_events *rc_events_new(struct kc_client *c, struct mt_family *dropped);
/* Stops the sender (a post under way ends first) and frees everything;
 * NULL is a no-op. */
void rc_events_free(struct rc_events *e);

/* The Event object (new reference) for `obj` (apiVersion, kind, metadata).
 * type: Normal or Warning. */
json_t *rc_event_build(const json_t *obj, const char *type, const char *reason, const char *message,
                       const char *now);
/* Builds the Event and queues it for posting in obj's namespace; never
 * waits for the API server. e NULL: nothing. */
void rc_event_emit(struct rc_events *e, const json_t *obj, const char *type, const char *reason,
                   const char *message);

/* Events waiting to be posted (for tests and shutdown logs). */
size_t rc_events_queued(struct rc_events *e);

#endif
