#include "gate_index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

static char MEMBER; /* the value of a member or dirty key: only presence counts */

struct gix_queue {
    char *name;
    struct smap *members;  /* Workload key -> &MEMBER */
    struct smap *dirty;    /* Workload key -> &MEMBER, changed since the last pass */
    struct smap *redo;     /* Workload key -> &MEMBER, decided but not written */
    int need_full;         /* the next pass reads every member */
    int settled;           /* `used` stands (rc_gix_settle, cleared by rc_gix_take) */
    long long recount_at;  /* monotonic ms of a full pass for the status; 0: none */
    long long full_at;     /* monotonic ms the last full pass started */
    long fast_ms, full_ms; /* the CPU the last pass of each kind took */
    int busy;              /* a pass taken and not timed yet */
    long long idle_at;     /* monotonic ms the last pass ended; 0: none yet */
    struct rc_res used;
};

struct rc_gix {
    pthread_mutex_t mu;
    struct smap *cq_of;  /* Workload key -> its queue's entry (borrowed from queues) */
    struct smap *queues; /* ClusterQueue -> struct gix_queue * */
    int lost;
};

static void queue_free(void *p)
{
    struct gix_queue *q = p;
    if (q) {
        smap_free(q->members, NULL);
        smap_free(q->dirty, NULL);
        smap_free(q->redo, NULL);
        free(q->name);
    }
    free(q);
}

struct rc_gix *rc_gix_new(void)
{
    struct rc_gix *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->cq_of = smap_new();
    g->queues = smap_new();
    if (!g->cq_of || !g->queues || pthread_mutex_init(&g->mu, NULL) != 0) {
        smap_free(g->cq_of, NULL);
        smap_free(g->queues, NULL);
        free(g);
        return NULL;
    }
    return g;
}

void rc_gix_free(struct rc_gix *g)
{
    if (!g)
        return;
    smap_free(g->cq_of, NULL);
    smap_free(g->queues, queue_free);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* cq's entry, made when missing (its first pass is full); NULL on oom.
 * Under g->mu. */
static struct gix_queue *queue_get(struct rc_gix *g, const char *cq)
{
    struct gix_queue *q = smap_get(g->queues, cq);
    if (q)
        return q;
    q = calloc(1, sizeof(*q));
    if (!q || !(q->name = strdup(cq)) || !(q->members = smap_new()) || !(q->dirty = smap_new()) ||
        !(q->redo = smap_new()) || smap_put(g->queues, cq, q, NULL) < 0) {
        queue_free(q);
        return NULL;
    }
    q->need_full = 1;
    return q;
}

/* key changed in q as ch says: dirty there, or a full pass (also when it
 * cannot be noted). */
static void touch(struct gix_queue *q, const char *key, enum rc_gix_change ch)
{
    if (ch == RC_GIX_SAME)
        return;
    if (ch == RC_GIX_QUOTA || !q->dirty || smap_put(q->dirty, key, &MEMBER, NULL) < 0)
        q->need_full = 1;
}

/* Takes key out of q's members (the queue's entry goes with its last member,
 * when no Workload's cq_of names it any more; its next pass is full). */
static void leave(struct rc_gix *g, struct gix_queue *q, const char *key)
{
    smap_del(q->members, key);
    if (smap_len(q->members) == 0)
        queue_free(smap_del(g->queues, q->name));
}

void rc_gix_note(struct rc_gix *g, const char *key, const char *cq, enum rc_gix_change ch)
{
    if (cq && !cq[0])
        cq = NULL;
    pthread_mutex_lock(&g->mu);
    struct gix_queue *was = smap_get(g->cq_of, key);
    if (was && cq && strcmp(was->name, cq) == 0) {
        touch(was, key, ch); /* the common case: two lookups */
        goto out;
    }
    if (!was && !cq)
        goto out;
    if (ch == RC_GIX_SAME)
        ch = RC_GIX_CHANGED; /* a move: both queues count again */
    if (was) {
        touch(was, key, ch);
        smap_del(g->cq_of, key);
        leave(g, was, key);
    }
    if (!cq)
        goto out;
    struct gix_queue *q = queue_get(g, cq);
    if (!q || smap_put(q->members, key, &MEMBER, NULL) < 0) {
        g->lost = 1; /* a Workload its queue would not see: stop answering */
        goto out;
    }
    if (smap_put(g->cq_of, key, q, NULL) < 0) {
        leave(g, q, key);
        g->lost = 1;
        goto out;
    }
    touch(q, key, ch);
out:
    pthread_mutex_unlock(&g->mu);
}

static int invalidate_one(const char *cq, void *val, void *ud)
{
    (void)cq;
    (void)ud;
    ((struct gix_queue *)val)->need_full = 1;
    return 0;
}

void rc_gix_invalidate(struct rc_gix *g, const char *cq)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    if (!cq) {
        smap_foreach(g->queues, invalidate_one, NULL);
    } else {
        struct gix_queue *q = smap_get(g->queues, cq);
        if (q)
            q->need_full = 1;
    }
    pthread_mutex_unlock(&g->mu);
}

long rc_gix_recount(struct rc_gix *g, const char *cq, long long now_ms, long gap_ms)
{
    long wait = 0;
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    if (q) {
        if (gap_ms < RC_GIX_RECOUNT_SPACING * q->full_ms)
            gap_ms = RC_GIX_RECOUNT_SPACING * q->full_ms;
        long long at = q->full_at + gap_ms > now_ms ? q->full_at + gap_ms : now_ms;
        if (q->recount_at && q->recount_at < at)
            at = q->recount_at; /* asked for sooner already */
        q->recount_at = at;
        wait = (long)(at - now_ms);
    }
    pthread_mutex_unlock(&g->mu);
    return wait;
}

long rc_gix_recount_pending(struct rc_gix *g, const char *cq, long long now_ms)
{
    long wait = -1;
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    if (q && q->recount_at)
        wait = q->recount_at > now_ms ? (long)(q->recount_at - now_ms) : 0;
    pthread_mutex_unlock(&g->mu);
    return wait;
}

struct copy {
    char **keys;
    size_t n;
    const struct smap *skip; /* keys copied already, or NULL */
};

static int copy_key(const char *key, void *val, void *ud)
{
    (void)val;
    struct copy *c = ud;
    if (c->skip && smap_get(c->skip, key))
        return 0;
    if (!(c->keys[c->n] = strdup(key)))
        return 1;
    c->n++;
    return 0;
}

/* The keys of m, then those of also (NULL: none) not in m, into *keys
 * (*nalso of them from also); 0 or -1 on oom. */
static int copy_keys(const struct smap *m, const struct smap *also, char ***keys, size_t *n,
                     size_t *nalso)
{
    size_t len = smap_len(m) + (also ? smap_len(also) : 0);
    struct copy c = {len ? calloc(len, sizeof(char *)) : NULL, 0, NULL};
    if ((len && !c.keys) || (len && smap_foreach(m, copy_key, &c) != 0))
        goto fail;
    size_t first = c.n;
    c.skip = m;
    if (also && smap_foreach(also, copy_key, &c) != 0)
        goto fail;
    *keys = c.keys;
    *n = c.n;
    *nalso = c.n - first;
    return 0;
fail:
    rc_gix_keys_free(c.keys, c.n);
    return -1;
}

/* A new empty set for *m (the old freed); 0, or -1 on oom (*m kept). */
static int renew(struct smap **m)
{
    struct smap *fresh = smap_new();
    if (!fresh)
        return -1;
    smap_free(*m, NULL);
    *m = fresh;
    return 0;
}

/* Whether q's pass at monotonic at_ms reads only what changed: its plan is
 * settled, nothing asked for a full pass, and no status recount is due. */
static int fast_at(const struct gix_queue *q, long long at_ms)
{
    return q->settled && !q->need_full && !(q->recount_at && at_ms >= q->recount_at);
}

enum rc_gix_pass rc_gix_take(struct rc_gix *g, const char *cq, long long now_ms, char ***keys,
                             size_t *n, size_t *nredo, struct rc_res *used)
{
    *keys = NULL;
    *n = *nredo = 0;
    enum rc_gix_pass pass = RC_GIX_FULL;
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    if (g->lost) {
        pass = RC_GIX_LOST;
    } else if (q) {
        pass = fast_at(q, now_ms) ? RC_GIX_FAST : RC_GIX_FULL;
        int rc = pass == RC_GIX_FAST ? copy_keys(q->dirty, q->redo, keys, n, nredo)
                                     : copy_keys(q->members, NULL, keys, n, nredo);
        if (rc < 0)
            pass = RC_GIX_LOST; /* this pass walks the cache: a full one */
        if (pass == RC_GIX_FAST) {
            *used = q->used;
        } else {
            q->need_full = 0;
            q->recount_at = 0;
            q->full_at = now_ms;
        }
        /* read by this pass: noted afresh from here; nowhere to note
         * changes: every pass walks the cache */
        if (renew(&q->dirty) < 0 || renew(&q->redo) < 0)
            g->lost = 1;
        q->settled = 0;
        q->busy = 1;
    }
    pthread_mutex_unlock(&g->mu);
    return pass;
}

void rc_gix_keys_free(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

void rc_gix_redo(struct rc_gix *g, const char *cq, const char *key)
{
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    if (q && smap_get(q->members, key) && smap_put(q->redo, key, &MEMBER, NULL) < 0)
        q->need_full = 1; /* a full pass reads it */
    pthread_mutex_unlock(&g->mu);
}

void rc_gix_skip(struct rc_gix *g, const char *cq)
{
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    if (q) { /* (a set not renewed for lack of memory is read again: harmless) */
        renew(&q->dirty);
        renew(&q->redo);
        q->need_full = 1;
        q->settled = 0;
    }
    pthread_mutex_unlock(&g->mu);
}

void rc_gix_settle(struct rc_gix *g, const char *cq, const struct rc_res *used)
{
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    if (q) {
        q->used = *used;
        q->settled = 1;
    }
    pthread_mutex_unlock(&g->mu);
}

void rc_gix_timed(struct rc_gix *g, const char *cq, enum rc_gix_pass pass, long ms,
                  long long end_ms)
{
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq); /* a queue without Workloads: nothing to time */
    if (q && pass == RC_GIX_FAST)
        q->fast_ms = ms;
    else if (q)
        q->full_ms = ms;
    if (q) {
        q->busy = 0;
        q->idle_at = end_ms;
    }
    pthread_mutex_unlock(&g->mu);
}

static long window_of(long pass_ms)
{
    return pass_ms * 2 > RC_GIX_WINDOW_MIN_MS ? pass_ms * 2 : RC_GIX_WINDOW_MIN_MS;
}

long rc_gix_window_ms(struct rc_gix *g, const char *cq, long long now_ms)
{
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    long ms = RC_GIX_WINDOW_MIN_MS;
    if (q) /* the kind of pass it will be once the fast window has passed */
        ms = window_of(fast_at(q, now_ms + window_of(q->fast_ms)) ? q->fast_ms : q->full_ms);
    if (q && !q->busy && q->idle_at) { /* what is left of it since the last pass ended */
        long long idle = now_ms - q->idle_at;
        ms = idle >= ms ? 0 : ms - (long)idle;
    }
    pthread_mutex_unlock(&g->mu);
    return ms;
}
