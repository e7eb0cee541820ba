/* Keyed work queue in the manner of client-go's rate-limited workqueue.
 *
 * A key is queued at most once, in one of two lanes: wq_add_first's ahead
 * of the others. A key being processed (between wq_get and
 * wq_done) is never handed to a second worker: adding it meanwhile marks it
 * dirty and it is queued again by wq_done. Delayed adds and per-key
 * exponential backoff (base * 2^failures, capped) sit on a min-heap that
 * getters drain on the monotonic clock. All functions are thread-safe.
 *
 * An optional observer sees what client-go's workqueue metrics count: a key
 * becoming due (an add, or a delayed add whose time came), the time it then
 * waited for a worker, the time that worker took, and a backoff retry. */
#ifndef MKUEUE_WORKQUEUE_H
#define MKUEUE_WORKQUEUE_H

#include <stddef.h>

/* Called with the queue's lock held: they must not call back into the
 * queue. Any of them may be NULL. */
struct wq_observer {
    void (*added)(void *ud, const char *key);                   /* became due */
    void (*started)(void *ud, const char *key, double wait_s);  /* handed out */
    void (*finished)(void *ud, const char *key, double work_s); /* wq_done */
    void (*retried)(void *ud, const char *key);                 /* wq_add_rate_limited */
    void *ud;
};

struct wq_options {
    long base_delay_ms;                 /* first backoff, default 5 */
    long max_delay_ms;                  /* backoff cap, default 300000 (5 min) */
    const struct wq_observer *observer; /* copied; NULL for none */
};

struct wq;

/* opt may be NULL for defaults. Returns NULL on allocation failure. */
struct wq *wq_new(const struct wq_options *opt);
/* Frees the queue and every pending key. No thread may still use it. */
void wq_free(struct wq *q);

/* Queues key (copied) unless it is already queued. Returns 0, or -1 after
 * shutdown or on allocation failure. */
int wq_add(struct wq *q, const char *key);
/* Queues key once delay_ms has passed (at once when delay_ms <= 0). A key
 * already waiting keeps the earlier of the two deadlines. */
int wq_add_after(struct wq *q, const char *key, long delay_ms);
/* As wq_add_after, for a key that should not wait behind the others: once
 * due it is handed out before every key queued by the other adds (a key
 * already queued by them moves ahead; one being processed goes ahead when
 * wq_done queues it again), in the order of these adds. After
 * WQ_FIRST_RUN_MAX such keys in a row one of the others is handed out, if
 * any waits: urgent work delays the rest, never starves it. One: while
 * both lanes wait they alternate, so an urgent key waits for at most one
 * other, and the rest keeps half the threads (with 4 in a row, a burst of
 * 100 jobs at 10/s kept the finished jobs' status copies waiting seconds). */
#define WQ_FIRST_RUN_MAX 1
int wq_add_first(struct wq *q, const char *key, long delay_ms);
/* Queues key after its backoff and counts one more failure for it. Returns
 * the delay applied in ms, or -1 like wq_add. */
long wq_add_rate_limited(struct wq *q, const char *key);
/* Resets the failure count of key (call after a successful processing). */
void wq_forget(struct wq *q, const char *key);
/* Failures counted for key since the last wq_forget. */
int wq_num_requeues(struct wq *q, const char *key);

/* Blocks until a key is ready, then returns 0 with *key a malloc'd copy the
 * caller owns: it must call wq_done(q, *key) and free it. Returns -1 once the
 * queue is shut down (keys still queued are not handed out). */
int wq_get(struct wq *q, char **key);
/* Like wq_get but waits at most timeout_ms (< 0 = forever); returns 1 when
 * nothing became ready in time. */
int wq_get_timeout(struct wq *q, char **key, long timeout_ms);
/* Ends the processing of key; queues it again if it was added meanwhile.
 * Returns 0, or -1 when key was not being processed. */
int wq_done(struct wq *q, const char *key);

/* Calls fn (under the queue's lock: it must not call back into the queue)
 * for every key being processed, with the seconds since it was handed out. */
void wq_foreach_processing(struct wq *q, void (*fn)(void *ud, const char *key, double s), void *ud);

/* Keys ready to be handed out (delayed ones count once due). */
size_t wq_len(struct wq *q);
/* Wakes every getter; later wq_get calls and adds fail. */
void wq_shutdown(struct wq *q);
int wq_shutting_down(struct wq *q);

#endif
