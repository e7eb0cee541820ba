#include "leader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "jsonx.h"
#include "log.h"

static const char *LG = "leader";
static const struct kc_resource LEASES = {"coordination.k8s.io", "v1", "leases", 1};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

struct rc_leader {
    struct kc_client *c;
    struct rc_leader_opts o;
    char ns[64], name[64], identity[128];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int leading;
    long long last_renew_ms;
    struct rc_lease_obs obs;
};

/* One try: 1 = we hold the lease now, 0 = not, -1 = error. */
static int try_acquire(struct rc_leader *l)
{
    json_t *cur = NULL, *rec = NULL;
    struct kc_status st;
    int rc = -1;
    if (kc_get(l->c, &LEASES, l->ns, l->name, &cur, &st) < 0 && !kc_is_not_found(&st)) {
        LOG_D(LG, "lease not read", "error", st.message);
        return -1;
    }
    if (!rc_lease_may_acquire(cur, l->identity, l->o.lease_duration_ms, mono_ms(), &l->obs)) {
        rc = 0;
        goto out;
    }
    rec = rc_lease_record(cur, l->ns, l->name, l->identity, l->o.lease_duration_ms, 0);
    if (!rec)
        goto out;
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
    if (kc_get(l->c, &LEASES, l->ns, l->name, &cur, &st) < 0)
        return;
    const char *holder = jx_str(cur, "spec.holderIdentity");
    if (holder && strcmp(holder, l->identity) == 0) {
        json_t *rec = rc_lease_record(cur, l->ns, l->name, l->identity, l->o.lease_duration_ms, 1);
        if (rec && kc_update(l->c, &LEASES, l->ns, l->name, NULL, rec, NULL, &st) == 0)
            LOG_I(LG, "lease released", "lease", l->name, "identity", l->identity);
        json_decref(rec);
    }
    json_decref(cur);
}

/* Sleeps ms unless stopped; returns 1 when stopped. */
static int nap(struct rc_leader *l, long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &until) == 0)
        ;
    int s = l->stop;
    pthread_mutex_unlock(&l->mu);
    return s;
}

static void *run(void *arg)
{
    struct rc_leader *l = arg;
    LOG_I(LG, "campaigning", "lease", l->name, "namespace", l->ns, "identity", l->identity);
    for (;;) {
        int got = try_acquire(l);
        long long now = mono_ms();
        if (got == 1) {
            l->last_renew_ms = now;
            if (!__atomic_load_n(&l->leading, __ATOMIC_ACQUIRE)) {
                __atomic_store_n(&l->leading, 1, __ATOMIC_RELEASE);
                LOG_I(LG, "became leader", "lease", l->name, "identity", l->identity);
                if (l->o.on_started)
                    l->o.on_started(l->o.ud);
            }
        } else if (__atomic_load_n(&l->leading, __ATOMIC_ACQUIRE) &&
                   (got == 0 || now - l->last_renew_ms >= l->o.renew_deadline_ms)) {
            /* someone else holds it, or we could not renew in time */
            __atomic_store_n(&l->leading, 0, __ATOMIC_RELEASE);
            LOG_E(LG, "leadership lost", "lease", l->name, "identity", l->identity);
            if (l->o.on_lost)
                l->o.on_lost(l->o.ud);
        }
        if (nap(l, l->o.retry_period_ms))
            break;
    }
    if (__atomic_load_n(&l->leading, __ATOMIC_ACQUIRE)) {
        release_lease(l);
        __atomic_store_n(&l->leading, 0, __ATOMIC_RELEASE);
    }
    return NULL;
}

struct rc_leader *rc_leader_start(struct kc_client *c, const struct rc_leader_opts *o)
{
    struct rc_leader *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->c = c;
    l->o = *o;
    snprintf(l->ns, sizeof(l->ns), "%s", o->namespace);
    snprintf(l->name, sizeof(l->name), "%s", o->name);
    snprintf(l->identity, sizeof(l->identity), "%s", o->identity);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (pthread_create(&l->thread, NULL, run, l) != 0) {
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l);
        return NULL;
    }
    return l;
}

void rc_leader_stop(struct rc_leader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

int rc_leader_is_leader(struct rc_leader *l)
{
    return l && __atomic_load_n(&l->leading, __ATOMIC_ACQUIRE);
}
