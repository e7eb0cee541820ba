/* Calls in flight to each worker cluster, capped, so that one worker that
 * accepts connections and never answers cannot hold every reconcile thread
 * (reconciler/README.md "One hung worker").
 *
 * A reconcile takes a slot before an action that talks to a worker
 * (rc_inflight_enter) and gives it back after (rc_inflight_leave). The cap
 * per worker is the number of reconcile threads minus one (at least 1)
 * while the worker answers, and 1 once a call to it ended without an answer
 * (transport error or timeout) and none has been answered since: the worker
 * is then suspect, and only one thread at a time waits on it. All suspect
 * workers together hold at most the number of threads minus one (at least
 * 1), so several hung workers still leave a thread to the others. A full
 * worker refuses at once and never makes the caller wait: the caller skips
 * that worker's part of its plan and retries it with backoff.
 *
 * Ownership: the set owns its entries (one per cluster name seen, at most
 * RC_INFLIGHT_MAX_CLUSTERS; names are copied). Thread-safety: every function
 * may be called from any thread. */
#ifndef MKUEUE_RC_INFLIGHT_H
#define MKUEUE_RC_INFLIGHT_H

/* Cluster names tracked at once; past it (stale names of deleted
 * MultiKueueClusters are forgotten when idle) a new name is refused. */
#define RC_INFLIGHT_MAX_CLUSTERS 256

/* The outcome of a call, for rc_inflight_leave. */
enum rc_answer {
    RC_ANSWER_NONE = 0,    /* the worker did not answer (transport error, timeout) */
    RC_ANSWER_YES = 1,     /* the worker answered (any HTTP status) */
    RC_ANSWER_UNKNOWN = -1 /* no call was made, or it failed before reaching the worker */
};

struct rc_inflight;

/* A set for `threads` reconcile threads, or NULL on allocation failure. */
struct rc_inflight *rc_inflight_new(int threads);
void rc_inflight_free(struct rc_inflight *f); /* NULL is a no-op */

/* Pure: calls one worker may have in flight. */
int rc_inflight_cap(int threads, int suspect);
/* Pure: calls all suspect workers together may have in flight. */
int rc_inflight_suspect_cap(int threads);

/* Takes a slot on the cluster: 0, or -1 when the cluster is full (or cannot
 * be tracked). A NULL set always gives a slot. */
int rc_inflight_enter(struct rc_inflight *f, const char *cluster);
/* Gives the slot back; the answer updates whether the worker is suspect.
 * Returns 1 when that changed (the caller logs it), else 0. */
int rc_inflight_leave(struct rc_inflight *f, const char *cluster, enum rc_answer answered);
/* Current counts, for tests and logs: 0, or -1 when the cluster is unknown. */
int rc_inflight_get(struct rc_inflight *f, const char *cluster, int *in_flight, int *suspect);

#endif
