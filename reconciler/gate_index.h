/* Which Workloads each ClusterQueue's quota gate reads (standalone mode).
 *
 * A gate pass decides one ClusterQueue; without an index it would walk every
 * cached Workload of the manager to find that queue's, so one queue's
 * dispatch would cost more the more Workloads wait in other queues. The
 * index keeps, from the Workload cache's events, the ClusterQueue of every
 * Workload (its admission's, else its LocalQueue's), and per ClusterQueue
 * the keys of its Workloads and how long its last pass took (the batch
 * window of its next pass, main.c).
 *
 * A stale entry costs a pass one lookup: the pass checks each Workload's
 * queue again. A missing entry would hide a Workload from its queue, so a
 * namespace is indexed again when one of its LocalQueues changes, and once
 * an insertion fails for lack of memory the index is "lost": rc_gix_keys
 * refuses from then on and passes walk the whole cache, as before.
 *
 * Ownership: the index copies every key and queue name it is given and owns
 * them; rc_gix_keys hands out copies. Thread-safety: every function may be
 * called from any thread (one lock of its own, never held across calls out). */
#ifndef MKUEUE_RC_GATE_INDEX_H
#define MKUEUE_RC_GATE_INDEX_H

#include <stddef.h>

struct rc_gix;

/* A new empty index, or NULL on allocation failure. */
struct rc_gix *rc_gix_new(void);
void rc_gix_free(struct rc_gix *g); /* NULL is a no-op */

/* Workload key now belongs to ClusterQueue cq; NULL or "": to none
 * (deleted, or its LocalQueue is unknown). */
void rc_gix_set(struct rc_gix *g, const char *key, const char *cq);

/* The keys of cq's Workloads: *keys a new array of *n new strings (free with
 * rc_gix_keys_free; NULL when n is 0). Returns 0, or -1 when the index is
 * lost or out of memory (nothing to free): the caller walks every Workload. */
int rc_gix_keys(struct rc_gix *g, const char *cq, char ***keys, size_t *n);
void rc_gix_keys_free(char **keys, size_t n);

/* How long cq's last pass took, in ms (0 before the first). */
long rc_gix_last_ms(struct rc_gix *g, const char *cq);
void rc_gix_set_last_ms(struct rc_gix *g, const char *cq, long ms);

/* 1 once an insertion failed (the index no longer answers), else 0. */
int rc_gix_lost(struct rc_gix *g);

#endif
