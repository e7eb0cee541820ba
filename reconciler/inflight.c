#include "inflight.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "strmap.h"

struct entry {
    int in_flight;
    int suspect;
};

struct rc_inflight {
    pthread_mutex_t mu;
    struct smap *m; /* cluster name -> struct entry * */
    int threads;
};

int rc_inflight_cap(int threads, int suspect)
{
    if (suspect || threads <= 2)
        return 1;
    return threads - 1;
}

int rc_inflight_suspect_cap(int threads)
{
    return threads > 1 ? threads - 1 : 1;
}

struct rc_inflight *rc_inflight_new(int threads)
{
    struct rc_inflight *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    if (!(f->m = smap_new())) {
        free(f);
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    f->threads = threads;
    return f;
}

void rc_inflight_free(struct rc_inflight *f)
{
    if (!f)
        return;
    smap_free(f->m, free);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

#define NAME_MAX_BYTES 254 /* a MultiKueueCluster name (DNS subdomain) and its NUL */

static int drop_idle(const char *key, void *val, void *ud)
{
    const struct entry *e = val;
    char *victim = ud;
    if (e->in_flight == 0 && !e->suspect) {
        snprintf(victim, NAME_MAX_BYTES, "%s", key);
        return 1;
    }
    return 0;
}

static int add_suspect(const char *key, void *val, void *ud)
{
    (void)key;
    const struct entry *e = val;
    if (e->suspect)
        *(int *)ud += e->in_flight;
    return 0;
}

/* Room for one more call to entry e (under mu): its own cap, and for a
 * suspect worker the cap of all suspect workers together. */
static int has_room(struct rc_inflight *f, const struct entry *e)
{
    if (e->in_flight >= rc_inflight_cap(f->threads, e->suspect))
        return 0;
    if (!e->suspect)
        return 1;
    int held = 0;
    smap_foreach(f->m, add_suspect, &held);
    return held < rc_inflight_suspect_cap(f->threads);
}

int rc_inflight_enter(struct rc_inflight *f, const char *cluster)
{
    if (!f)
        return 0;
    int rc = -1;
    pthread_mutex_lock(&f->mu);
    struct entry *e = smap_get(f->m, cluster);
    if (!e) {
        if (smap_len(f->m) >= RC_INFLIGHT_MAX_CLUSTERS) {
            char victim[NAME_MAX_BYTES] = "";
            if (smap_foreach(f->m, drop_idle, victim))
                free(smap_del(f->m, victim));
        }
        if (smap_len(f->m) < RC_INFLIGHT_MAX_CLUSTERS && (e = calloc(1, sizeof(*e))) &&
            smap_put(f->m, cluster, e, NULL) < 0) {
            free(e);
            e = NULL;
        }
    }
    if (e && has_room(f, e)) {
        e->in_flight++;
        rc = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int rc_inflight_leave(struct rc_inflight *f, const char *cluster, enum rc_answer answered)
{
    if (!f)
        return 0;
    int changed = 0;
    pthread_mutex_lock(&f->mu);
    struct entry *e = smap_get(f->m, cluster);
    if (e) {
        if (e->in_flight > 0)
            e->in_flight--;
        if (answered != RC_ANSWER_UNKNOWN) {
            int suspect = answered == RC_ANSWER_NONE;
            changed = suspect != e->suspect;
            e->suspect = suspect;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return changed;
}

int rc_inflight_get(struct rc_inflight *f, const char *cluster, int *in_flight, int *suspect)
{
    int rc = -1;
    *in_flight = *suspect = 0;
    if (!f)
        return -1;
    pthread_mutex_lock(&f->mu);
    const struct entry *e = smap_get(f->m, cluster);
    if (e) {
        *in_flight = e->in_flight;
        *suspect = e->suspect;
        rc = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}
