#include "gate_index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

static char MEMBER; /* the value of a member key: only presence counts */

struct gix_queue {
    char *name;
    struct smap *members; /* Workload key -> &MEMBER */
    long last_ms;
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

/* cq's entry, made when missing; NULL on oom. Under g->mu. */
static struct gix_queue *queue_get(struct rc_gix *g, const char *cq)
{
    struct gix_queue *q = smap_get(g->queues, cq);
    if (q)
        return q;
    q = calloc(1, sizeof(*q));
    if (!q || !(q->name = strdup(cq)) || !(q->members = smap_new()) ||
        smap_put(g->queues, cq, q, NULL) < 0) {
        queue_free(q);
        return NULL;
    }
    return q;
}

/* Takes key out of q's members (the queue's entry goes with its last member,
 * when no Workload's cq_of names it any more). */
static void leave(struct rc_gix *g, struct gix_queue *q, const char *key)
{
    smap_del(q->members, key);
    if (smap_len(q->members) == 0)
        queue_free(smap_del(g->queues, q->name));
}

void rc_gix_set(struct rc_gix *g, const char *key, const char *cq)
{
    if (cq && !cq[0])
        cq = NULL;
    pthread_mutex_lock(&g->mu);
    struct gix_queue *was = smap_get(g->cq_of, key);
    if ((!was && !cq) || (was && cq && strcmp(was->name, cq) == 0))
        goto out; /* unchanged: the common case, one lookup */
    if (was) {
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
    }
out:
    pthread_mutex_unlock(&g->mu);
}

struct copy {
    char **keys;
    size_t n;
};

static int copy_key(const char *key, void *val, void *ud)
{
    (void)val;
    struct copy *c = ud;
    if (!(c->keys[c->n] = strdup(key)))
        return 1;
    c->n++;
    return 0;
}

int rc_gix_keys(struct rc_gix *g, const char *cq, char ***keys, size_t *n)
{
    *keys = NULL;
    *n = 0;
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = g->lost ? NULL : smap_get(g->queues, cq);
    size_t len = q ? smap_len(q->members) : 0;
    struct copy c = {len ? calloc(len, sizeof(char *)) : NULL, 0};
    int rc = g->lost || (len && !c.keys) ? -1 : 0;
    if (rc == 0 && len && smap_foreach(q->members, copy_key, &c) != 0)
        rc = -1;
    pthread_mutex_unlock(&g->mu);
    if (rc < 0) {
        rc_gix_keys_free(c.keys, c.n);
        return -1;
    }
    *keys = c.keys;
    *n = c.n;
    return 0;
}

void rc_gix_keys_free(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

long rc_gix_last_ms(struct rc_gix *g, const char *cq)
{
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq);
    long ms = q ? q->last_ms : 0;
    pthread_mutex_unlock(&g->mu);
    return ms;
}

void rc_gix_set_last_ms(struct rc_gix *g, const char *cq, long ms)
{
    pthread_mutex_lock(&g->mu);
    struct gix_queue *q = smap_get(g->queues, cq); /* a queue without Workloads: nothing to time */
    if (q)
        q->last_ms = ms;
    pthread_mutex_unlock(&g->mu);
}

int rc_gix_lost(struct rc_gix *g)
{
    pthread_mutex_lock(&g->mu);
    int lost = g->lost;
    pthread_mutex_unlock(&g->mu);
    return lost;
}
