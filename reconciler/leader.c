#include "leader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "clock.h"
#include "jsonx.h"
#include "log.h"

static const char *LG = "leader";
static const struct kc_resource LEASES = {"coordination.k8s.io", "v1", "leases", 1};

/* MicroTime: 2006-01-02T15:04:05.000000Z */
static void micro_now(char out[40])
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 40, "%s.%06ldZ", base, (long)tv.tv_usec);
}

int rc_lease_may_acquire(const json_t *lease, const char *identity, long lease_duration_ms,
                         long long now_ms, struct rc_lease_obs *obs)
{
    if (!lease)
        return 1;
    const char *holder = jx_str(lease, "spec.holderIdentity");
    const char *renew = jx_str(lease, "spec.renewTime");
    const char *rv = jx_str(lease, "metadata.resourceVersion");
    if (!holder)
        holder = "";
    if (!renew)
        renew = "";
    if (!rv)
        rv = "";
    if (strcmp(obs->holder, holder) || strcmp(obs->renew, renew) || strcmp(obs->rv, rv) ||
        obs->seen_ms == 0) {
        snprintf(obs->holder, sizeof(obs->holder), "%s", holder);
        snprintf(obs->renew, sizeof(obs->renew), "%s", renew);
        snprintf(obs->rv, sizeof(obs->rv), "%s", rv);
        obs->seen_ms = now_ms;
    }
    if (!*holder || strcmp(holder, identity) == 0)
        return 1;
    long long dur = jx_int(lease, "spec.leaseDurationSeconds", 0) * 1000;
    if (dur <= 0)
        dur = lease_duration_ms;
    return now_ms - obs->seen_ms >= dur;
}

json_t *rc_lease_record(const json_t *cur, const char *ns, const char *name, const char *identity,
                        long lease_duration_ms, int release)
{
    char now[40];
    micro_now(now);
    json_t *l =
        cur ? json_deep_copy(cur)
            : json_pack("{s:s,s:s,s:{s:s,s:s},s:{}}", "apiVersion", "coordination.k8s.io/v1",
                        "kind", "Lease", "metadata", "name", name, "namespace", ns, "spec");
    if (!l)
        return NULL;
    json_t *spec = json_object_get(l, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(l, "spec", spec);
    }
    const char *holder = jx_str(spec, "holderIdentity");
    if (release) {
        json_object_set_new(spec, "holderIdentity", json_string(""));
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
        json_object_set_new(spec, "renewTime", json_string(now));
        return l;
    }
    if (!holder || strcmp(holder, identity) != 0) {
        json_object_set_new(spec, "acquireTime", json_string(now));
        if (holder && *holder)
            json_object_set_new(spec, "leaseTransitions",
                                json_integer(jx_int(spec, "leaseTransitions", 0) + 1));
        else if (!json_object_get(spec, "leaseTransitions"))
            json_object_set_new(spec, "leaseTransitions", json_integer(0));
    }
    json_object_set_new(spec, "holderIdentity", json_string(identity));
    json_object_set_new(spec, "leaseDurationSeconds",
                        json_integer((lease_duration_ms + 999) / 1000));
    json_object_set_new(spec, "renewTime", json_string(now));
    return l;
}

long long rc_lease_time_left(long long renewed_ms, long renew_deadline_ms, long long now_ms)
{
    return renewed_ms + renew_deadline_ms - now_ms;
}

struct rc_leader {
    struct kc_client *c; /* the Lease's own; only the election thread uses it */
    struct rc_leader_opts o;
    char ns[64], name[64], identity[128];
    pthread_t thread;
    struct clk_stop stop;
    int leading;          /* atomic */
    long long renewed_ms; /* atomic: when the last successful write of the lease started */
    struct rc_lease_obs obs;
};

/* Caps the next request at the time this replica may still act as leader
 * (a candidate waits at most renewDeadline). Returns 0, or -1 when no time
 * is left. */
static int cap_request(struct rc_leader *l)
{
    long long left = l->o.renew_deadline_ms;
    if (__atomic_load_n(&l->leading, __ATOMIC_ACQUIRE))
        left = rc_lease_time_left(__atomic_load_n(&l->renewed_ms, __ATOMIC_ACQUIRE),
                                  l->o.renew_deadline_ms, clk_now_ms());
    if (left <= 0)
        return -1;
    kc_set_timeout(l->c, (long)left);
    return 0;
}

/* One try: 1 = we hold the lease now (*started = when the write that made
 * it so started), 0 = not, -1 = error or no time left. */
static int try_acquire(struct rc_leader *l, long long *started)
{
    json_t *cur = NULL, *rec = NULL;
    struct kc_status st;
    int rc = -1;
    if (cap_request(l) < 0)
        return -1;
    if (kc_get(l->c, &LEASES, l->ns, l->name, &cur, &st) < 0 && !kc_is_not_found(&st)) {
        LOG_D(LG, "lease not read", "error", st.message);
        return -1;
    }
    if (!rc_lease_may_acquire(cur, l->identity, l->o.lease_duration_ms, clk_now_ms(), &l->obs)) {
        rc = 0;
        goto out;
    }
    rec = rc_lease_record(cur, l->ns, l->name, l->identity, l->o.lease_duration_ms, 0);
    if (!rec || cap_request(l) < 0)
        goto out;
    /* the server applies the write after this instant, and a standby counts
     * leaseDuration from when it sees it: a deadline counted from here is
     * never later than the standby's */
    *started = clk_now_ms();
    if (cur)
        rc = kc_update(l->c, &LEASES, l->ns, l->name, NULL, rec, NULL, &st);
    else
        rc = kc_create(l->c, &LEASES, l->ns, rec, NULL, &st);
    if (rc < 0) {
        /* Conflict / AlreadyExists: someone else wrote first */
        rc = (st.http == 409) ? 0 : -1;
        if (rc < 0)
            LOG_D(LG, "lease not written", "error", st.message);
        goto out;
    }
    rc = 1;
out:
    json_decref(cur);
    json_decref(rec);
    return rc;
}

static void release_lease(struct rc_leader *l)
{
    json_t *cur = NULL;
    struct kc_status st;
    if (cap_request(l) < 0 || kc_get(l->c, &LEASES, l->ns, l->name, &cur, &st) < 0)
        return;
    const char *holder = jx_str(cur, "spec.holderIdentity");
    if (holder && strcmp(holder, l->identity) == 0 && cap_request(l) == 0) {
        json_t *rec = rc_lease_record(cur, l->ns, l->name, l->identity, l->o.lease_duration_ms, 1);
        if (rec && kc_update(l->c, &LEASES, l->ns, l->name, NULL, rec, NULL, &st) == 0)
            LOG_I(LG, "lease released", "lease", l->name, "identity", l->identity);
        json_decref(rec);
    }
    json_decref(cur);
}

static void lose(struct rc_leader *l)
{
    __atomic_store_n(&l->leading, 0, __ATOMIC_RELEASE);
    LOG_E(LG, "leadership lost", "lease", l->name, "identity", l->identity);
    if (l->o.on_lost)
        l->o.on_lost(l->o.ud);
}

static void *run(void *arg)
{
    struct rc_leader *l = arg;
    LOG_I(LG, "campaigning", "lease", l->name, "namespace", l->ns, "identity", l->identity);
    for (;;) {
        long long started = 0;
        int got = try_acquire(l, &started);
        int leading = __atomic_load_n(&l->leading, __ATOMIC_ACQUIRE);
        if (got == 1) {
            __atomic_store_n(&l->renewed_ms, started, __ATOMIC_RELEASE);
            if (!leading) {
                __atomic_store_n(&l->leading, 1, __ATOMIC_RELEASE);
                LOG_I(LG, "became leader", "lease", l->name, "identity", l->identity);
                if (l->o.on_started)
                    l->o.on_started(l->o.ud);
            }
        } else if (leading && (got == 0 || !rc_leader_may_write(l))) {
            /* someone else holds it, or we could not renew in time */
            lose(l);
        }
        long long wake = clk_now_ms() + l->o.retry_period_ms;
        if (__atomic_load_n(&l->leading, __ATOMIC_ACQUIRE)) {
            /* wake at the deadline at the latest, to give up on time */
            long long deadline =
                __atomic_load_n(&l->renewed_ms, __ATOMIC_ACQUIRE) + l->o.renew_deadline_ms;
            if (deadline < wake)
                wake = deadline;
        }
        if (clk_sleep_until(&l->stop, wake))
            break;
    }
    if (__atomic_load_n(&l->leading, __ATOMIC_ACQUIRE)) {
        release_lease(l);
        __atomic_store_n(&l->leading, 0, __ATOMIC_RELEASE);
    }
    return NULL;
}

int rc_leader_start(struct kc_client *c, const struct rc_leader_opts *o, struct rc_leader **out)
{
    *out = NULL;
    struct rc_leader *l = calloc(1, sizeof(*l));
    if (!l)
        return -1;
    l->c = c;
    l->o = *o;
    snprintf(l->ns, sizeof(l->ns), "%s", o->namespace);
    snprintf(l->name, sizeof(l->name), "%s", o->name);
    snprintf(l->identity, sizeof(l->identity), "%s", o->identity);
    if (clk_stop_init(&l->stop) < 0) {
        free(l);
        return -1;
    }
    *out = l;
    if (pthread_create(&l->thread, NULL, run, l) != 0) {
        *out = NULL;
        clk_stop_destroy(&l->stop);
        free(l);
        return -1;
    }
    return 0;
}

void rc_leader_stop(struct rc_leader *l)
{
    if (!l)
        return;
    clk_stop_signal(&l->stop);
    pthread_join(l->thread, NULL);
    clk_stop_destroy(&l->stop);
    free(l);
}

int rc_leader_is_leader(struct rc_leader *l)
{
    return l && __atomic_load_n(&l->leading, __ATOMIC_ACQUIRE);
}

int rc_leader_may_write(struct rc_leader *l)
{
    return rc_leader_is_leader(l) &&
           rc_lease_time_left(__atomic_load_n(&l->renewed_ms, __ATOMIC_ACQUIRE),
                              l->o.renew_deadline_ms, clk_now_ms()) > 0;
}
