/* Watch streams and informers.
 *
 * The decoder splits a Kubernetes watch stream (newline-delimited JSON
 * events, untrusted input arriving in arbitrary chunks) into events, with a
 * bounded line size and JSON depth.
 *
 * The informer keeps a kcache in step with one resource on one API server:
 * list, then watch from the list's resourceVersion; bookmarks advance the
 * resourceVersion; a 410 Gone (HTTP or ERROR event) relists; a stream that
 * ends re-watches; errors and relists wait a capped, jittered exponential
 * backoff (kw_backoff, as client-go's reflector) that a watch which lasted
 * resets; an optional periodic resync re-delivers every object. */
#ifndef MKUEUE_KUBE_WATCH_H
#define MKUEUE_KUBE_WATCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "kube_cache.h"
#include "kube_client.h"

#define KW_DEFAULT_MAX_LINE  (16u * 1024 * 1024)
#define KW_DEFAULT_MAX_DEPTH 128

/* ---- decoder -------------------------------------------------------------- */

enum kw_event_type { KW_ADDED, KW_MODIFIED, KW_DELETED, KW_BOOKMARK, KW_ERROR };

struct kw_event {
    enum kw_event_type type;
    /* The event's object (for KW_ERROR the Status), borrowed for the callback:
     * json_incref to keep it. */
    json_t *object;
    long code;           /* KW_ERROR: Status.code (410 = Gone: relist), else 0 */
    const char *reason;  /* KW_ERROR: Status.reason, "" when absent */
    const char *message; /* KW_ERROR: Status.message, "" when absent */
};

/* Returns 0 to go on, or a positive value to stop: kw_decoder_feed then
 * returns it and the rest of that chunk is dropped. */
typedef int (*kw_event_fn)(const struct kw_event *ev, void *ud);

/* Errors are errf.h's MK_ERR_DECODE, MK_ERR_TOOBIG (a line or depth over its
 * limit) and MK_ERR_NOMEM; after one, the decoder refuses input until reset. */

struct kw_decoder {
    struct buf line; /* the incomplete last line */
    size_t max_line;
    int max_depth;
    int failed; /* sticky error code, 0 when fine */
    char err[256];
};

/* max_line 0 = KW_DEFAULT_MAX_LINE, max_depth 0 = KW_DEFAULT_MAX_DEPTH. */
void kw_decoder_init(struct kw_decoder *d, size_t max_line, int max_depth);
/* Feeds a chunk (any split); calls cb for each complete event in order.
 * Returns 0, a KW_ERR_* code (see kw_decoder_error), or cb's positive value. */
int kw_decoder_feed(struct kw_decoder *d, const char *data, size_t len, kw_event_fn cb, void *ud);
/* At stream end: decodes a last line that had no newline. Same returns. */
int kw_decoder_finish(struct kw_decoder *d, kw_event_fn cb, void *ud);
/* Message of the last error ("" when none). */
const char *kw_decoder_error(const struct kw_decoder *d);
/* Forgets buffered bytes and any error, for a new stream. */
void kw_decoder_reset(struct kw_decoder *d);
void kw_decoder_free(struct kw_decoder *d);

/* Decodes one event line (no newline). On success returns 0 and *out is a new
 * reference to the parsed line that ev points into. For tests and tools. */
int kw_decode_line(const char *line, size_t len, int max_depth, struct kw_event *ev, json_t **out,
                   char *err, size_t errlen);

/* ---- backoff --------------------------------------------------------------- */

/* Defaults of the informer's backoff, as client-go's reflector: under a
 * second first, doubling up to 30 s; a watch that ran KW_BACKOFF_RESET_MS
 * resets it. So a server that answers every watch with 410 Gone (or fails
 * every list) gets a few relists a minute, not a dozen a second. */
#define KW_BACKOFF_INITIAL_MS 800L
#define KW_BACKOFF_MAX_MS     30000L
#define KW_BACKOFF_RESET_MS   30000L

struct kw_backoff {
    long initial_ms, max_ms;
    long cur_ms; /* the upper bound of the next wait */
};

/* initial_ms/max_ms <= 0 take the defaults; max below initial is raised. */
void kw_backoff_init(struct kw_backoff *b, long initial_ms, long max_ms);
/* Back to the first step (after a watch that lasted). */
void kw_backoff_reset(struct kw_backoff *b);
/* The wait before the next attempt, uniform in [cur/2, cur] picked by r
 * (any random number: jitter keeps informers from retrying in step); then
 * cur doubles, capped at max. Pure apart from *b. */
long kw_backoff_next(struct kw_backoff *b, uint64_t r);

/* ---- informer ------------------------------------------------------------- */

struct kw_options {
    const char *name;           /* for logs (copied); default the resource plural */
    const char *field_selector; /* copied; NULL = none */
    long page_size;             /* list page size, 0 = 500 */
    long resync_period_ms;      /* 0 = 5 min, < 0 = no periodic resync */
    long backoff_initial_ms;    /* 0 = KW_BACKOFF_INITIAL_MS */
    long backoff_max_ms;        /* 0 = KW_BACKOFF_MAX_MS */
    long watch_timeout_s;       /* timeoutSeconds asked of the server, 0 = random 300..600 */
    size_t max_line;            /* watch event cap, 0 = KW_DEFAULT_MAX_LINE */
    int max_depth;              /* 0 = KW_DEFAULT_MAX_DEPTH */
};

struct kw_stats {
    int connected; /* the last list or watch reached the server fine */
    int synced;    /* the first list has been applied */
    /* Monotonic ms (CLOCK_MONOTONIC) since when it is not connected (the
     * informer's start if it never was); 0 while connected. */
    long long disconnected_since_ms;
    long relists;               /* successful lists, the first one included */
    long watches;               /* watch requests made */
    long reconnects;            /* retries after an error (each one backed off) */
    long events;                /* watch events applied */
    char resource_version[128]; /* the last seen */
    char last_error[256];       /* "" when the last attempt succeeded */
    /* The last failure was the server breaking a cap: a list page over the
     * client's max_body, a watch event over max_line, or more objects than
     * the cache's kcache_set_max_objects. */
    int over_limit;
};

struct kw_informer;

/* Starts the informer's thread. client, res and cache are borrowed and must
 * outlive the informer; ns (NULL = all namespaces), label_selector (NULL =
 * none) and opt's strings are copied; opt may be NULL. The informer is the
 * cache's only writer; its handlers run on the informer's thread, or for a
 * periodic resync on the process's one resync thread (shared by every
 * informer, started with the first that resyncs, never stopped), one call at
 * a time, and must not call kw_informer_stop. Returns NULL (and logs) when the
 * thread cannot start. */
struct kw_informer *kw_informer_start(struct kc_client *client, const struct kc_resource *res,
                                      const char *ns, const char *label_selector,
                                      struct kcache *cache, const struct kw_options *opt);
/* Stops the informer (promptly: the stop wakes the stream and the backoff
 * wait; a list in flight is not interrupted, it ends within the client's
 * request timeout; a resync of it under way is waited for), joins its thread
 * and frees it. The cache keeps its content. NULL is a no-op. */
void kw_informer_stop(struct kw_informer *inf);

int kw_informer_synced(struct kw_informer *inf);
int kw_informer_connected(struct kw_informer *inf);
/* A consistent snapshot of the informer's state. */
void kw_informer_stats(struct kw_informer *inf, struct kw_stats *out);

#endif
