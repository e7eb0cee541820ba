/* Why a manager Workload is Pending (issue 13, layer 1: admission): the
 * MultiKueue check's message and the "Pending" Events on the Workload and
 * its job say in one sentence which step it waits on and why: quota on the
 * manager, no usable worker (each one and why), or what each worker's Kueue
 * says of its copy. Kueue's MultiKueue controller writes nothing while
 * Pending, so these texts are mkueue's; where Kueue has a text for a state
 * (Ready, Retry, the reset after eviction) that text is kept.
 *
 * The message builders are pure functions of the observation (decide.h).
 * struct rc_why is the little memory around them: the last failed create of
 * a copy per Workload and cluster (the plan stops there, so the next
 * observation could not see it otherwise), and the Events' rate limit.
 * Both are fixed tables: bounded, no allocation after rc_why_new; a slot
 * collision forgets an older entry (at worst one more Event, or one create
 * error not shown until the next failure).
 *
 * Thread-safety: the builders are reentrant; struct rc_why has its own
 * mutex, never held across I/O. */
#ifndef MKUEUE_RC_WHY_H
#define MKUEUE_RC_WHY_H

#include <jansson.h>
#include <stddef.h>

#include "decide.h"

/* Cap of one message (an Event's note limit, as Kueue truncates), and of
 * what one worker's part of it may take. */
#define RC_WHY_MAX       1024
#define RC_WHY_ENTRY_MAX 360
#define RC_WHY_ERR_MAX   256 /* a remembered create error */
#define RC_WHY_ERR_SLOTS 256
#define RC_WHY_EV_SLOTS  4096
/* At most one Event per Workload and step in this period; a change of step
 * (quota -> no usable worker -> workers' answers) is told at once. */
#define RC_WHY_EVENT_PERIOD_MS (5L * 60 * 1000)
/* The Events' reason (Kueue's scheduler uses it for its own Pending events). */
#define RC_WHY_REASON "Pending"

/* What a message is about, the rate limit's key with the Workload. */
enum rc_why_step {
    RC_WHY_NONE = 0,
    RC_WHY_QUOTA,     /* waiting for quota on the manager */
    RC_WHY_NO_WORKER, /* no usable worker */
    RC_WHY_WORKERS,   /* copies made, no worker admits them yet */
    RC_WHY_PLACE,     /* layer 2 (placement.h): pods held back on the worker */
    RC_WHY_DATA,      /* data-aware dispatch: workers lacking what the job references */
};

/* The waiting-for-manager-quota message, when the Workload holds no quota
 * and its QuotaReserved=False says why (not just "not evaluated yet", not an
 * eviction): "Waiting for quota on the manager: <its message>". cur is the
 * check's current message: only an empty one, one of ours or Kueue's reset
 * text is replaced. Returns RC_WHY_QUOTA with out set, or RC_WHY_NONE. */
enum rc_why_step rc_why_quota(const json_t *wl, const char *cur, char *out, size_t cap);

/* The message of a Workload that holds quota and is being dispatched (step
 * 10 of decide.c), one part per cluster of the config:
 *   "No usable worker: worker-1: not connected (InsecureKubeConfig: ...); worker-2: ..."
 *   "Waiting for a worker to admit it: worker-1: couldn't assign flavors ... (Pending); ..."
 * Returns the step, or RC_WHY_NONE when there is nothing to say yet (copies
 * being made or not yet looked at by the workers' Kueue) and cur is not one
 * of ours: the happy path costs no write. */
enum rc_why_step rc_why_dispatch(const struct rc_obs *o, const char *cur, char *out, size_t cap);

/* Whether msg is one of the messages above (so a later state may replace it). */
int rc_why_ours(const char *msg);

/* Why a worker is unusable, from its MultiKueueCluster Active reason and
 * message: "<reason>: <message>" without the attempt count, which changes
 * on every retry (a write per attempt otherwise). */
void rc_why_down(const char *reason, const char *message, char *out, size_t cap);

struct rc_why;
/* New memory (rc_why_free it), NULL on oom. */
struct rc_why *rc_why_new(void);
void rc_why_free(struct rc_why *w);
/* Notes the failed create of the copy of Workload `key` on cluster (err
 * borrowed, copied), or that it succeeded (err NULL). */
void rc_why_create_result(struct rc_why *w, const char *key, const char *cluster, const char *err);
/* The last create error of that copy into out; 1 when there is one, else 0. */
int rc_why_create_error(struct rc_why *w, const char *key, const char *cluster, char *out,
                        size_t cap);
/* Whether an Event for Workload key at step may go out now (monotonic ms);
 * when it may, it is counted as sent. Pure on the table: tests pass the time. */
int rc_why_event_allow(struct rc_why *w, const char *key, enum rc_why_step step, long long now_ms);
/* The same for layer 2's Events (placement.h): at most one per Workload key
 * and tag ("<cluster>/<reason>") in the period, whatever else was told. */
int rc_why_event_allow_tag(struct rc_why *w, const char *key, const char *tag, long long now_ms);

#endif
