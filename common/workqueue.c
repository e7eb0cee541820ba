#include "workqueue.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "strmap.h"

/* One per key known to the queue; freed as soon as it is idle (not dirty,
 * not processing, not waiting, no failures counted). */
struct wq_item {
    char *key;
    struct wq_item *qnext, *qprev; /* its lane's links while queued */
    int dirty;                     /* needs processing (queued, or re-queue on done) */
    int first;         /* queued (or queued again by wq_done) in the first lane; cleared when
                          handed out */
    int in_first;      /* queued in the first lane now */
    int delayed_first; /* the delayed add waiting on the heap was a wq_add_first */
    int processing;
    long heap_idx; /* position in the delay heap, -1 when not waiting */
    uint64_t ready_ns;
    uint64_t due_ns;               /* when it last became dirty (the observer's wait) */
    uint64_t start_ns;             /* when it was handed out (while processing) */
    struct wq_item *pnext, *pprev; /* the processing list */
    int failures;
};

struct wq {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct smap *items; /* key -> struct wq_item */
    struct lane {
        struct wq_item *head, *tail;
    } lanes[2];    /* LANE_FIRST, LANE_REST */
    int first_run; /* keys handed out from the first lane since the last of the rest */
    size_t queued;
    struct wq_item **heap; /* min-heap on ready_ns */
    size_t heap_len, heap_alloc;
    struct wq_item *processing; /* keys handed out, not done yet */
    long base_ms, max_ms;
    struct wq_observer obs;
    int shutdown;
};

static double seconds_between(uint64_t from_ns, uint64_t to_ns)
{
    return to_ns > from_ns ? (double)(to_ns - from_ns) / 1e9 : 0.0;
}

struct wq *wq_new(const struct wq_options *opt)
{
    struct wq *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->base_ms = opt && opt->base_delay_ms > 0 ? opt->base_delay_ms : 5;
    q->max_ms = opt && opt->max_delay_ms > 0 ? opt->max_delay_ms : 300000;
    if (q->max_ms < q->base_ms)
        q->max_ms = q->base_ms;
    if (opt && opt->observer)
        q->obs = *opt->observer;
    q->items = smap_new();
    int rc = clk_cond_init(&q->cond);
    if (!q->items || rc != 0) {
        if (rc == 0)
            pthread_cond_destroy(&q->cond);
        smap_free(q->items, NULL);
        free(q);
        return NULL;
    }
    pthread_mutex_init(&q->lock, NULL);
    return q;
}

static void item_free(void *p)
{
    struct wq_item *it = p;
    free(it->key);
    free(it);
}

void wq_free(struct wq *q)
{
    if (!q)
        return;
    smap_free(q->items, item_free);
    free(q->heap);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* ---- items ---------------------------------------------------------------- */

static struct wq_item *item_get(struct wq *q, const char *key, int create)
{
    struct wq_item *it = smap_get(q->items, key);
    if (it || !create)
        return it;
    it = calloc(1, sizeof(*it));
    if (!it)
        return NULL;
    it->key = strdup(key);
    it->heap_idx = -1;
    if (!it->key || smap_put(q->items, key, it, NULL) != 0) {
        item_free(it);
        return NULL;
    }
    return it;
}

static void item_release_if_idle(struct wq *q, struct wq_item *it)
{
    if (it->dirty || it->processing || it->heap_idx >= 0 || it->failures)
        return;
    smap_del(q->items, it->key);
    item_free(it);
}

enum { LANE_FIRST, LANE_REST };

static void fifo_push(struct wq *q, struct wq_item *it)
{
    struct lane *l = &q->lanes[it->first ? LANE_FIRST : LANE_REST];
    it->in_first = it->first;
    it->qnext = NULL;
    it->qprev = l->tail;
    if (l->tail)
        l->tail->qnext = it;
    else
        l->head = it;
    l->tail = it;
    q->queued++;
}

static void fifo_unlink(struct wq *q, struct lane *l, struct wq_item *it)
{
    if (it->qprev)
        it->qprev->qnext = it->qnext;
    else
        l->head = it->qnext;
    if (it->qnext)
        it->qnext->qprev = it->qprev;
    else
        l->tail = it->qprev;
    it->qnext = it->qprev = NULL;
    it->in_first = 0;
    q->queued--;
}

/* The lane of the next key to hand out (one is queued): the first, but
 * the rest after WQ_FIRST_RUN_MAX of the first in a row, so that a long
 * run of urgent keys (a burst of jobs to dispatch) delays the others and
 * never starves them (workqueue.h). */
static struct lane *next_lane(struct wq *q)
{
    struct lane *first = &q->lanes[LANE_FIRST], *rest = &q->lanes[LANE_REST];
    return first->head && (!rest->head || q->first_run < WQ_FIRST_RUN_MAX) ? first : rest;
}

/* The client-go rule: queued iff dirty and not processing. due_ns: when it
 * became due (now, or a delayed add's deadline). */
static void mark_dirty(struct wq *q, struct wq_item *it, uint64_t due_ns, int first)
{
    if (it->dirty) {
        it->first |= first;
        if (first && !it->in_first && !it->processing) { /* queued in the rest: moves ahead */
            fifo_unlink(q, &q->lanes[LANE_REST], it);
            fifo_push(q, it);
        }
        return;
    }
    it->first |= first;
    it->dirty = 1;
    it->due_ns = due_ns;
    if (q->obs.added)
        q->obs.added(q->obs.ud, it->key);
    if (!it->processing) {
        fifo_push(q, it);
        pthread_cond_signal(&q->cond);
    }
}

static void processing_link(struct wq *q, struct wq_item *it)
{
    it->pprev = NULL;
    it->pnext = q->processing;
    if (q->processing)
        q->processing->pprev = it;
    q->processing = it;
}

static void processing_unlink(struct wq *q, struct wq_item *it)
{
    if (it->pprev)
        it->pprev->pnext = it->pnext;
    else
        q->processing = it->pnext;
    if (it->pnext)
        it->pnext->pprev = it->pprev;
    it->pnext = it->pprev = NULL;
}

/* ---- delay heap ----------------------------------------------------------- */

static void heap_set(struct wq *q, size_t i, struct wq_item *it)
{
    q->heap[i] = it;
    it->heap_idx = (long)i;
}

static void heap_up(struct wq *q, size_t i)
{
    struct wq_item *it = q->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (q->heap[parent]->ready_ns <= it->ready_ns)
            break;
        heap_set(q, i, q->heap[parent]);
        i = parent;
    }
    heap_set(q, i, it);
}

static void heap_down(struct wq *q, size_t i)
{
    struct wq_item *it = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->heap_len)
            break;
        if (c + 1 < q->heap_len && q->heap[c + 1]->ready_ns < q->heap[c]->ready_ns)
            c++;
        if (q->heap[c]->ready_ns >= it->ready_ns)
            break;
        heap_set(q, i, q->heap[c]);
        i = c;
    }
    heap_set(q, i, it);
}

static int heap_push(struct wq *q, struct wq_item *it)
{
    if (q->heap_len == q->heap_alloc) {
        size_t n = q->heap_alloc ? q->heap_alloc * 2 : 16;
        struct wq_item **h = realloc(q->heap, n * sizeof(*h));
        if (!h)
            return -1;
        q->heap = h;
        q->heap_alloc = n;
    }
    q->heap_len++;
    q->heap[q->heap_len - 1] = it;
    heap_up(q, q->heap_len - 1);
    return 0;
}

static struct wq_item *heap_pop(struct wq *q)
{
    struct wq_item *top = q->heap[0];
    top->heap_idx = -1;
    q->heap_len--;
    if (q->heap_len > 0) {
        q->heap[0] = q->heap[q->heap_len];
        heap_down(q, 0);
    }
    return top;
}

/* Moves every due waiting item to the FIFO. */
static void promote_due(struct wq *q, uint64_t now)
{
    while (q->heap_len > 0 && q->heap[0]->ready_ns <= now) {
        struct wq_item *it = heap_pop(q);
        int first = it->delayed_first;
        it->delayed_first = 0;
        mark_dirty(q, it, it->ready_ns, first);
    }
}

/* ---- public --------------------------------------------------------------- */

int wq_add(struct wq *q, const char *key)
{
    return wq_add_after(q, key, 0);
}

static int add(struct wq *q, const char *key, long delay_ms, int first)
{
    int rc = -1;
    pthread_mutex_lock(&q->lock);
    if (q->shutdown)
        goto out;
    struct wq_item *it = item_get(q, key, 1);
    if (!it)
        goto out;
    if (delay_ms <= 0) {
        mark_dirty(q, it, clk_now_ns(), first);
        rc = 0;
        goto out;
    }
    it->delayed_first |= first;
    uint64_t ready = clk_now_ns() + (uint64_t)delay_ms * 1000000ULL;
    if (it->heap_idx >= 0) {
        if (ready < it->ready_ns) {
            it->ready_ns = ready;
            heap_up(q, (size_t)it->heap_idx);
        }
    } else {
        it->ready_ns = ready;
        if (heap_push(q, it) != 0) {
            item_release_if_idle(q, it);
            goto out;
        }
    }
    /* Timed waiters may now have an earlier deadline to wake for. */
    pthread_cond_broadcast(&q->cond);
    rc = 0;
out:
    pthread_mutex_unlock(&q->lock);
    return rc;
}

int wq_add_after(struct wq *q, const char *key, long delay_ms)
{
    return add(q, key, delay_ms, 0);
}

int wq_add_first(struct wq *q, const char *key, long delay_ms)
{
    return add(q, key, delay_ms, 1);
}

static long backoff_ms(const struct wq *q, int failures)
{
    long d = q->base_ms;
    for (int i = 0; i < failures && d < q->max_ms; i++)
        d = d > q->max_ms / 2 ? q->max_ms : d * 2;
    return d < q->max_ms ? d : q->max_ms;
}

long wq_add_rate_limited(struct wq *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct wq_item *it = q->shutdown ? NULL : item_get(q, key, 1);
    long delay = -1;
    if (it) {
        delay = backoff_ms(q, it->failures);
        it->failures++;
        if (q->obs.retried)
            q->obs.retried(q->obs.ud, key);
    }
    pthread_mutex_unlock(&q->lock);
    if (delay < 0 || wq_add_after(q, key, delay) != 0)
        return -1;
    return delay;
}

void wq_forget(struct wq *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct wq_item *it = item_get(q, key, 0);
    if (it) {
        it->failures = 0;
        item_release_if_idle(q, it);
    }
    pthread_mutex_unlock(&q->lock);
}

int wq_num_requeues(struct wq *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct wq_item *it = item_get(q, key, 0);
    int n = it ? it->failures : 0;
    pthread_mutex_unlock(&q->lock);
    return n;
}

int wq_get_timeout(struct wq *q, char **key, long timeout_ms)
{
    int rc;
    uint64_t give_up =
        timeout_ms >= 0 ? clk_now_ns() + (uint64_t)timeout_ms * 1000000ULL : UINT64_MAX;
    *key = NULL;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->shutdown) {
            rc = -1;
            goto out;
        }
        uint64_t now = clk_now_ns();
        promote_due(q, now);
        if (q->queued)
            break;
        if (now >= give_up) {
            rc = 1;
            goto out;
        }
        uint64_t wake = give_up;
        if (q->heap_len > 0 && q->heap[0]->ready_ns < wake)
            wake = q->heap[0]->ready_ns;
        if (wake == UINT64_MAX) {
            pthread_cond_wait(&q->cond, &q->lock);
        } else {
            /* rounded up: waking early would only spin */
            clk_cond_wait_until(&q->cond, &q->lock, (long long)((wake + 999999) / 1000000));
        }
    }
    struct lane *l = next_lane(q);
    char *copy = strdup(l->head->key);
    if (!copy) {
        rc = -1;
        goto out;
    }
    struct wq_item *it = l->head;
    fifo_unlink(q, l, it);
    if (l == &q->lanes[LANE_REST])
        q->first_run = 0;
    else if (q->first_run < WQ_FIRST_RUN_MAX) /* capped: a long run alone never overflows */
        q->first_run++;
    it->dirty = 0;
    it->first = 0;
    it->processing = 1;
    it->start_ns = clk_now_ns();
    processing_link(q, it);
    if (q->obs.started)
        q->obs.started(q->obs.ud, it->key, seconds_between(it->due_ns, it->start_ns));
    *key = copy;
    rc = 0;
out:
    pthread_mutex_unlock(&q->lock);
    return rc;
}

int wq_get(struct wq *q, char **key)
{
    return wq_get_timeout(q, key, -1);
}

int wq_done(struct wq *q, const char *key)
{
    int rc = -1;
    pthread_mutex_lock(&q->lock);
    struct wq_item *it = item_get(q, key, 0);
    if (it && it->processing) {
        it->processing = 0;
        processing_unlink(q, it);
        if (q->obs.finished)
            q->obs.finished(q->obs.ud, it->key, seconds_between(it->start_ns, clk_now_ns()));
        if (it->dirty && !q->shutdown) {
            fifo_push(q, it);
            pthread_cond_signal(&q->cond);
        }
        item_release_if_idle(q, it);
        rc = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

void wq_foreach_processing(struct wq *q, void (*fn)(void *ud, const char *key, double s), void *ud)
{
    pthread_mutex_lock(&q->lock);
    uint64_t now = clk_now_ns();
    for (struct wq_item *it = q->processing; it; it = it->pnext)
        fn(ud, it->key, seconds_between(it->start_ns, now));
    pthread_mutex_unlock(&q->lock);
}

size_t wq_len(struct wq *q)
{
    pthread_mutex_lock(&q->lock);
    promote_due(q, clk_now_ns());
    size_t n = q->queued;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void wq_shutdown(struct wq *q)
{
    pthread_mutex_lock(&q->lock);
    q->shutdown = 1;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

int wq_shutting_down(struct wq *q)
{
    pthread_mutex_lock(&q->lock);
    int s = q->shutdown;
    pthread_mutex_unlock(&q->lock);
    return s;
}
