/* Leader election with a coordination.k8s.io/v1 Lease, after client-go's
 * leaderelection: a candidate takes the lease when it is free or when its
 * record has not changed for leaseDuration on OUR monotonic clock (no
 * comparison of wall clocks); the leader renews every retryPeriod and
 * gives up when it could not renew within renewDeadline. Writes use the
 * lease's resourceVersion, so two candidates cannot both win. On release
 * (SIGTERM) the holder is cleared so a standby takes over at once. */
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

struct rc_leader;
/* Starts the election thread. Returns NULL on failure. */
struct rc_leader *rc_leader_start(struct kc_client *c, const struct rc_leader_opts *o);
/* Stops campaigning; when leading, releases the lease first. */
void rc_leader_stop(struct rc_leader *l);
int rc_leader_is_leader(struct rc_leader *l);

#endif
