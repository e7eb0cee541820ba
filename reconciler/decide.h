/* The MultiKueue workload reconciler's decisions (docs/multikueue-compat.md 3.2;
 * the numbered steps in reconciler/README.md "The dispatch", cited in decide.c),
 * as a pure function: an observation of one manager Workload, its job and
 * its remote copies goes in; an ordered plan of actions comes out. The
 * executor (dispatch.c) performs them in order (rc_act_run says which still
 * run after a failure: the actions of the other clusters do, no manager
 * action does but an independent one after a worker's), so every plan is
 * safe to cut short at any step and past the failed part of one cluster (a
 * restart converges). An action of one cluster never depends on an action
 * of another.
 *
 * One deviation from Kueue for crash safety: the winning cluster is written
 * to status.clusterName BEFORE the remote job is created, and a remote job
 * is only ever created on status.clusterName. A reconciler killed at any
 * instant therefore can never create jobs on two workers. */
#ifndef MKUEUE_RC_DECIDE_H
#define MKUEUE_RC_DECIDE_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "kinds/kinds.h"

#define RC_MAX_CLUSTERS 20 /* MultiKueueConfig.spec.clusters maxItems */
/* step 7 adds up to two actions per cluster, the winner or step 10 one more */
#define RC_MAX_ACTS (RC_MAX_CLUSTERS * 3 + 16)
/* reason of the events of data-aware dispatch (step 10) */
#define RC_REASON_DATA "MissingReferences"
/* Kueue's pod-group condition: pods missing from their roles */
#define RC_COND_REPLACEMENT "WaitingForReplacementPods"
/* reason of the Warning event: a re-created copy still differs */
#define RC_REASON_DRIFT "RemoteSpecDiffers"

struct rc_remote {
    const char *cluster;
    int in_config;     /* listed in the MultiKueueConfig (0: only status.clusterName names it) */
    int available;     /* a connected, reachable client exists */
    long long lost_ms; /* unavailable: since the loss was first seen (monotonic), 0 = just now */
    json_t *wl;        /* remote Workload with our origin (borrowed) or NULL */
    json_t *job;       /* remote job with our origin (borrowed) or NULL */
    /* 1 when our delete of that wl / job was answered and the worker's
     * watch has not shown it yet (echo.h rc_echo_deleted): not deleted again */
    int wl_deleted, job_deleted;
    /* The UID of this cluster's copy that was removed once because its spec
     * differed ("" when it had none), NULL when none was (borrowed). A copy
     * that still differs and has another UID is the re-created one: the
     * difference is reported, never answered by another delete. */
    const char *drift_uid;
    const char *down;       /* unavailable: why, for messages (why.h rc_why_down; borrowed) */
    const char *create_err; /* the last failed create of the copy here (borrowed) or NULL */
    /* Data-aware dispatch (issue 13): how many of the objects the job's pod
     * templates reference (podrefs.h) this worker lacks, 0 when it has them
     * all or cannot tell; lacks_what names them ("PVC ns/data, ..."). */
    int lacks;
    const char *lacks_what;
};

struct rc_obs {
    json_t *wl;                 /* the manager Workload (borrowed), required */
    const char *check;          /* the MultiKueue check's name, NULL when none */
    const struct mk_kind *kind; /* the owner's adapter, NULL when none */
    const char *owner_gvk;      /* "<group>/<version>, Kind=<Kind>" for messages, NULL = no owner */
    json_t *job;                /* the local job (borrowed) or NULL */
    int job_gone;               /* the owner job is confirmed deleted */
    int managed;                /* the job is ours (managedBy, or queue fallback) */
    int managed_by_honoured;    /* the manager's schema has the kind's managedBy */
    /* A pod group's Workload: how many pods its roles lack (kinds/podgroup.h
     * mk_pod_group_absent); -1 when not a group or not known. */
    long long group_absent;
    struct rc_remote *remotes; /* the config's clusters, and status.clusterName's */
    size_t nremotes;
    /* The check's MultiKueueConfig (or the check's parameters) could not be
     * read: the group is unknown and, as in Kueue, nothing is decided on it. */
    int group_unknown;
    json_t *nominated;          /* the dispatcher's choice (borrowed; NULL = none) */
    int dispatcher_writes;      /* AllAtOnce/Incremental write nominatedClusterNames */
    long dispatcher_requeue_ms; /* -1 = none */
    enum rc_mode mode;
    long worker_lost_timeout_ms;
    long resync_ms;
    const char *now; /* RFC 3339, for lastTransitionTime */
    /* Say why a Pending Workload waits (why.h) in the check's message and
     * Events; off, the plans are as before (the step tests). */
    int explain;
    /* Step 10 nominates only workers having every object the job references
     * while one of the dispatcher's choice does (rc_remote.lacks). */
    int data_aware;
};

enum rc_act_type {
    RC_ACT_WL_STATUS,     /* merge-patch the manager Workload's status (patch) */
    RC_ACT_REMOVE_REMOTE, /* delete remote job (Background) then remote Workload */
    RC_ACT_CREATE_REMOTE_WL,
    RC_ACT_CREATE_REMOTE_JOB,
    RC_ACT_SYNC_JOB_STATUS,   /* remote job status -> local job status (value 1: read fresh) */
    RC_ACT_REMOTE_PRIORITY,   /* update the remote Workload's priority in place */
    RC_ACT_DEACTIVATE_REMOTE, /* DeactivationTarget on the remote Workload (message) */
    RC_ACT_REMOVE_FINALIZER,  /* our finalizer off the manager Workload */
    RC_ACT_DELETE_WL,         /* delete the manager Workload (its job is gone) */
    RC_ACT_LOCAL_SUSPEND,     /* set the local job's suspend flag to `value` */
    RC_ACT_EVENT,             /* an Event on the manager Workload; value != 0: a why.h
                               * step, rate limited, also on the job (RC_WHY_DATA:
                               * apart from the others, why.h's tag "data") */
    RC_ACT_COUNT_ADMITTED,    /* multikueue_workloads_admitted_total{cluster} */
    RC_ACT_DRIFT_MARK,        /* value 1: the copy (its UID) was removed for drift (message:
                               * the differing field); 0: forget that */
    RC_ACT_LOCAL_JOB_STATUS,  /* merge-patch the local job's status (patch) */
    RC_ACT_WL_DEACTIVATE,     /* spec.active=false on the manager Workload (standalone) */
};

struct rc_act {
    enum rc_act_type type;
    int cluster;   /* index into obs->remotes, -1 when not about a cluster */
    json_t *patch; /* RC_ACT_WL_STATUS, RC_ACT_LOCAL_JOB_STATUS: the merge patch (owned) */
    int value;
    int independent; /* a manager action needing no worker's action before it: see rc_act_run */
    char etype[16];  /* RC_ACT_EVENT: Normal / Warning */
    char reason[64];
    char message[1024];
};

struct rc_plan {
    struct rc_act acts[RC_MAX_ACTS];
    size_t n;
    long requeue_ms; /* -1 = no timed requeue */
    char step[64];   /* which branch decided, for logs and tests */
};

/* The cluster an action belongs to (index into obs->remotes), or -1 for a
 * manager action. A cluster's actions talk to that worker, or depend only
 * on its earlier actions (the final status sync, the drift mark); every
 * other action, even one counted per cluster, is the manager's. */
int rc_act_scope(const struct rc_act *a);

/* What failed so far while the executor runs a plan (zeroed before the
 * first action). */
struct rc_run_state {
    int any_failed;                                    /* some action failed */
    int manager_failed;                                /* a manager action failed */
    unsigned char cluster_failed[RC_MAX_CLUSTERS * 2]; /* an action of cluster i failed */
};

/* What the executor does with the next action, given what failed before it
 * in the plan. A manager action may depend on anything before it: it runs
 * only when nothing failed, else the plan stops there; an independent one
 * runs unless a manager action failed. Every action may
 * depend on the manager actions before it (a copy is removed only once the
 * Workload's Finished is written): after a failed manager action the plan
 * stops. A cluster's action runs unless its own cluster failed: one hung or
 * failing worker does not keep the other clusters' steps from running. */
enum rc_run { RC_RUN, RC_SKIP, RC_STOP };
enum rc_run rc_act_run(const struct rc_act *a, const struct rc_run_state *s);
/* Records that action a failed. */
void rc_run_failed(struct rc_run_state *s, const struct rc_act *a);

/* Fills plan (which the caller then frees with rc_plan_clear). */
void rc_decide(const struct rc_obs *o, struct rc_plan *plan);
void rc_plan_clear(struct rc_plan *plan);

/* Number of actions of a type (for tests and logs), and the first one. */
size_t rc_plan_count(const struct rc_plan *p, enum rc_act_type t);
const struct rc_act *rc_plan_find(const struct rc_plan *p, enum rc_act_type t);
const char *rc_act_name(enum rc_act_type t);

/* The status patch that evicts for a Retry in standalone mode (we are
 * Kueue there), or just sets the check to Retry in with-kueue mode. New
 * reference. */
json_t *rc_retry_patch(const struct rc_obs *o, const char *msg);

#endif
