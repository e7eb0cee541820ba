/* What the quota gate keeps per ClusterQueue between passes (standalone
 * mode), so a pass costs what changed, not the size of the manager:
 *
 * - Members: the ClusterQueue of every cached Workload (its admission's,
 *   else its LocalQueue's), kept from the Workload cache's events. Without
 *   it a pass would walk every Workload of the manager to find its queue's.
 * - Dirty keys: the queue's Workloads changed since its last pass.
 * - A settled plan: after a pass that reserved nothing, the quota its
 *   Workloads hold. While it stands, every waiting Workload was decided
 *   against it and cannot fit (BestEffortFIFO: whoever fits is reserved),
 *   so a Workload that arrives or changes while waiting is decided alone
 *   against that quota, and the others keep their decisions: a fast pass
 *   over the dirty keys gives what a full pass would. Whatever can change
 *   the held quota or the queue (a Workload that holds or held quota, the
 *   ClusterQueue, a LocalQueue, an AdmissionCheck) asks for a full pass
 *   instead, as does a recount of the queues' status (their counts are
 *   written from a full pass, at most once per RC_QSTATUS_BATCH_MS,
 *   qstatus.h). A resync is no change: the index follows every event of
 *   the caches (a relist's too) and no decision of the gate depends on
 *   the time, so the periodic pass of a settled queue reads nothing.
 * - Keys to do again: Workloads a pass decided but left unwritten (the gate
 *   writes at most RC_GATE_WAITS_MAX waits per pass, gate.h); the next
 *   fast pass reads them beside the dirty keys, and they ask for no recount
 *   (nothing of them changed).
 * - The CPU its last fast and full passes took (the batch window of its next).
 *
 * A stale member costs a pass one lookup: the pass checks each Workload's
 * queue again. A missing one would hide a Workload from its queue, so a
 * namespace is noted again when one of its LocalQueues changes, and once an
 * insertion fails for lack of memory the index is "lost": rc_gix_take
 * refuses from then on and passes walk the whole cache, as before it.
 *
 * Ownership: the index copies every key and queue name it is given and owns
 * them; rc_gix_take hands out copies. Thread-safety: every function may be
 * called from any thread (one lock of its own, never held across calls out). */
#ifndef MKUEUE_RC_GATE_INDEX_H
#define MKUEUE_RC_GATE_INDEX_H

#include <stddef.h>

#include "quota.h"

struct rc_gix;

/* What a pass reads (rc_gix_take). */
enum rc_gix_pass {
    RC_GIX_LOST = -1, /* the index cannot answer: walk every cached Workload */
    RC_GIX_FULL = 0,  /* every member */
    RC_GIX_FAST = 1   /* only the dirty keys, against the settled quota */
};

/* A new empty index, or NULL on allocation failure. */
struct rc_gix *rc_gix_new(void);
void rc_gix_free(struct rc_gix *g); /* NULL is a no-op */

/* How a Workload changed, for rc_gix_note. */
enum rc_gix_change {
    RC_GIX_SAME = 0,    /* nothing a pass reads (our own status write back) */
    RC_GIX_CHANGED = 1, /* dirty: the next pass reads it */
    RC_GIX_QUOTA = 2    /* holds or held quota: the next pass reads all */
};

/* Workload key now belongs to ClusterQueue cq (NULL or "": to none,
 * deleted, or its LocalQueue unknown). A Workload that moves is a change
 * in both queues (their counts change). */
void rc_gix_note(struct rc_gix *g, const char *key, const char *cq, enum rc_gix_change ch);

/* The next pass of cq (NULL: of every queue) reads every member. g NULL
 * (no index: with-kueue mode) is a no-op. */
void rc_gix_invalidate(struct rc_gix *g, const char *cq);

/* The queues' status of cq wants a recount by a full pass, gap_ms after the
 * last full pass began at the soonest, or RC_GIX_RECOUNT_SPACING times that
 * pass's CPU when longer (a sooner one asked for stands): the ms from
 * monotonic now_ms until then (0: now), for the caller to enqueue that
 * pass. So the counts of a queue that Workloads stream into are recounted
 * once a second while that is cheap, and a 50,000-Workload queue's
 * recounts take at most a tenth of a core. */
#define RC_GIX_RECOUNT_SPACING 10
long rc_gix_recount(struct rc_gix *g, const char *cq, long long now_ms, long gap_ms);
/* The ms from now_ms until the recount of cq already asked for (0: due);
 * -1 when none is. */
long rc_gix_recount_pending(struct rc_gix *g, const char *cq, long long now_ms);

/* Starts a pass of cq at monotonic now_ms: its keys (*keys a new array of
 * *n new strings, rc_gix_keys_free; NULL when n is 0) and, for a fast pass,
 * the settled quota into *used; the last *nredo of a fast pass's keys are
 * only to do again (rc_gix_redo), the others changed. Clears the dirty
 * keys, those to do again and the settled plan (rc_gix_settle gives it
 * back). RC_GIX_LOST also out of memory. */
enum rc_gix_pass rc_gix_take(struct rc_gix *g, const char *cq, long long now_ms, char ***keys,
                             size_t *n, size_t *nredo, struct rc_res *used);
void rc_gix_keys_free(char **keys, size_t n);

/* Workload key, decided by a pass of cq but left unwritten: read again by
 * the next pass (if still a member; else its own queue's pass has it). */
void rc_gix_redo(struct rc_gix *g, const char *cq, const char *key);

/* A pass of cq that read nothing (not mkueue's queue, or its quota
 * unreadable): the dirty keys are dropped, its next pass is full. */
void rc_gix_skip(struct rc_gix *g, const char *cq);

/* After a pass of cq that reserved nothing and wrote all it meant to: the
 * quota its Workloads hold, for the fast passes that follow. */
void rc_gix_settle(struct rc_gix *g, const char *cq, const struct rc_res *used);

#define RC_GIX_WINDOW_MIN_MS 20 /* the shortest batch window before a pass */

/* A pass of cq of that kind took ms of CPU and ended at monotonic end_ms
 * (every rc_gix_take is followed by one, also for a pass that read
 * nothing). CPU, not wall time: a pass waiting on its writes at the client's
 * budget costs no core, and its window would grow with the waits. */
void rc_gix_timed(struct rc_gix *g, const char *cq, enum rc_gix_pass pass, long ms,
                  long long end_ms);

/* The batch window before cq's next pass, from monotonic now_ms: twice the
 * CPU of the last pass of the kind it will be, at least RC_GIX_WINDOW_MIN_MS,
 * so a big queue's full passes take at most a third of a core and its fast
 * ones are not held back by them. The window counts from the end of the last pass:
 * a queue idle for longer passes at once (0), so a Workload arriving alone
 * does not wait for a batch; while a pass runs, or before the first, the
 * whole window. A status recount asked for makes it full only if
 * due within the fast window: a backlog's recount, a second away, does not
 * hold a new Workload's pass back by the full pass's time. */
long rc_gix_window_ms(struct rc_gix *g, const char *cq, long long now_ms);

#endif
