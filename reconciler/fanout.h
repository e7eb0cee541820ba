/* Independent calls made side by side: a plan's remote Workload copies
 * (AllAtOnce: one per worker) are created at once, so the job reaches its
 * workers after the slowest create, not after the sum of them.
 *
 * rc_fanout runs fn(arg, i) for every i in [0, n): the calling thread takes
 * part, and at most RC_FANOUT_WIDTH - 1 short-lived threads help it; each
 * takes the next index until none is left. A helper that cannot be started
 * leaves its share to the others (slower, nothing skipped). It returns once
 * every call has returned.
 *
 * Ownership: nothing kept; fn owns what it touches, and calls of different
 * i run concurrently (they must not share unguarded state). Thread-safety:
 * reentrant. */
#ifndef MKUEUE_RC_FANOUT_H
#define MKUEUE_RC_FANOUT_H

#include <stddef.h>

#define RC_FANOUT_WIDTH 8 /* calls in flight at once, the caller included */

/* The calls made, by how many threads (helpers started, plus the caller),
 * for tests and logs. */
struct rc_fanout_stats {
    size_t threads;
};

void rc_fanout(size_t n, void (*fn)(void *arg, size_t i), void *arg, struct rc_fanout_stats *stats);

#endif
