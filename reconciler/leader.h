/* Leader election with a coordination.k8s.io/v1 Lease, after client-go's
 * leaderelection: a candidate takes the lease when it is free or when its
 * record has not changed for leaseDuration on OUR monotonic clock (no
 * comparison of wall clocks); the leader renews every retryPeriod and
 * gives up when it could not renew within renewDeadline. Writes use the
 * lease's resourceVersion, so two candidates cannot both win. On release
 * (SIGTERM) the holder is cleared so a standby takes over at once.
 *
 * No two leaders: the deadline is counted from the start of the last
 * successful lease write, which is never later than the instant a standby
 * starts counting leaseDuration (> renewDeadline) from. Each lease request
 * is capped at the time left to that deadline, on a client of the Lease's
 * own (a hung manager connection of the workers cannot delay it), and
 * rc_leader_may_write() refuses every other write from the deadline on,
 * even before the election thread has noticed the loss.
 *
 * Thread-safety: one election thread; rc_leader_is_leader and
 * rc_leader_may_write may be called from any thread. */
#ifndef MKUEUE_RC_LEADER_H
#define MKUEUE_RC_LEADER_H

#include <jansson.h>

#include "kube_client.h"

struct rc_leader_opts {
    const char *namespace;
    const char *name;
    const char *identity;
    long lease_duration_ms, renew_deadline_ms, retry_period_ms;
    /* Called from the election thread. on_lost must not return to normal
     * work: the process stops writing (main exits). */
    void (*on_started)(void *ud);
    void (*on_lost)(void *ud);
    void *ud;
};

/* Pure step of the election: given the lease read from the server (NULL =
 * absent), whether we may write it now. obs_* remember the last record
 * seen and when (monotonic ms) it changed. Returns 1 = write (take or
 * renew), 0 = someone else holds it. */
struct rc_lease_obs {
    char holder[256];
    char renew[64];
    char rv[64];
    long long seen_ms; /* monotonic time the record last changed */
};
int rc_lease_may_acquire(const json_t *lease, const char *identity, long lease_duration_ms,
                         long long now_ms, struct rc_lease_obs *obs);

/* The lease object to write (new reference): `cur` updated (or a new one
 * when NULL) with us as holder, renewTime now, acquireTime and
 * leaseTransitions bumped when the holder changes; release=1 clears the
 * holder. */
json_t *rc_lease_record(const json_t *cur, const char *ns, const char *name, const char *identity,
                        long lease_duration_ms, int release);

/* Milliseconds this replica may still write when its last successful lease
 * write started at renewed_ms (monotonic); <= 0: no more writes. */
long long rc_lease_time_left(long long renewed_ms, long renew_deadline_ms, long long now_ms);

struct rc_leader;
/* Starts the election thread on c, a client only the Lease uses (borrowed;
 * its request timeout is set before each request). *out is set before the
 * thread starts, so the callbacks and other threads may use it. Returns 0,
 * or -1 (and *out NULL) on failure. */
int rc_leader_start(struct kc_client *c, const struct rc_leader_opts *o, struct rc_leader **out);
/* Stops campaigning; when leading, releases the lease first. */
void rc_leader_stop(struct rc_leader *l);
int rc_leader_is_leader(struct rc_leader *l);
/* 1 while this replica leads and its renew deadline has not passed
 * (monotonic), else 0 (also for NULL): the guard of every write to the
 * manager or a worker. */
int rc_leader_may_write(struct rc_leader *l);

#endif
