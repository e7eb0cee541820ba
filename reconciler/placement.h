/* Why a dispatched job's pods do not run (issue 13, layer 2: placement).
 * Once a worker admitted a job mkueue dispatched, its pods there are watched
 * (podwatch.h) and summarised here: how many there are and, per reason,
 * how many are held back and why (the scheduler's message of an
 * unschedulable pod; a container's waiting reason, with its image for a
 * pull failure). The manager Workload gets one condition naming the layer,
 * type `Placement` (mkueue's own, docs/multikueue-compat.md 3.14), and the
 * Workload and job get one Warning Event per reason (rate limited by the
 * executor, why.h), never one per pod:
 *   worker-1: 3/4 pods Pending: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.
 *   worker-2: ImagePullBackOff for registry.example/train:v3 (1/1 pods)
 *
 * Pure: pods in, a summary and a plan out; dispatch.c executes the plan.
 * Fixed-size results, no allocation but the plan's condition list. */
#ifndef MKUEUE_RC_PLACEMENT_H
#define MKUEUE_RC_PLACEMENT_H

#include <jansson.h>
#include <stddef.h>

#define RC_PLACE_COND      "Placement"
#define RC_PLACE_OK_REASON "PodsStarted"
/* the condition's reason when the largest group's is none a condition may
 * carry (a worker's pods may report any text; the message keeps it) */
#define RC_PLACE_WAITING_REASON "ContainersWaiting"
#define RC_PLACE_MAX_GROUPS     4   /* reasons told; more are counted as "other" */
#define RC_PLACE_DETAIL_MAX     320 /* a scheduler message or an image, cut */
#define RC_PLACE_MSG_MAX        1024

struct rc_place_group {
    char reason[64];                  /* "Unschedulable", "ImagePullBackOff", ... */
    char detail[RC_PLACE_DETAIL_MAX]; /* the scheduler's message, the image, or "" */
    int pods;
};

struct rc_place_sum {
    int total;                                    /* pods seen */
    int started;                                  /* running or ended */
    struct rc_place_group g[RC_PLACE_MAX_GROUPS]; /* by pods held back, most first */
    size_t n;
    int other; /* held-back pods of reasons past RC_PLACE_MAX_GROUPS */
};

/* Summarises an array of Pods (whole, or cut to metadata and status as
 * podwatch keeps them). A pod is held back when it is unschedulable
 * (PodScheduled=False, reason Unschedulable) or one of its containers waits
 * for another reason than starting (ImagePullBackOff, ErrImagePull,
 * CrashLoopBackOff, CreateContainerConfigError, ...). */
void rc_place_summarise(const json_t *pods, struct rc_place_sum *out);

/* The text of group i: "<cluster>: <n>/<total> pods Pending: <message>" for
 * unschedulable pods, "<cluster>: <Reason> for <image> (<n>/<total> pods)"
 * for pull failures, "<cluster>: <n>/<total> pods <Reason>[: <message>]"
 * otherwise. */
void rc_place_group_msg(const char *cluster, const struct rc_place_sum *s, size_t i, char *out,
                        size_t cap);

struct rc_place_ev {
    char reason[64];
    char message[RC_PLACE_MSG_MAX];
};

struct rc_place_plan {
    /* The Workload's status.conditions with Placement set (new reference),
     * NULL when it already says this or when nothing is to be said (no
     * pod held back and no Placement condition yet: the happy path costs
     * no write). */
    json_t *conds;
    struct rc_place_ev ev[RC_PLACE_MAX_GROUPS]; /* Warning Events, one per reason */
    size_t nev;
};

/* The plan for manager Workload wl whose job runs on cluster. Placement is
 * False (reason: the largest group's, when a condition may carry it;
 * message: every group's text, "; ", cut with " ..." to RC_WHY_MAX)
 * while a pod is held back, True (RC_PLACE_OK_REASON) once none is after it
 * was False. Returns 0, -1 on allocation failure. */
int rc_place_decide(const json_t *wl, const char *cluster, const struct rc_place_sum *s,
                    const char *now, struct rc_place_plan *out);
void rc_place_plan_clear(struct rc_place_plan *p);

/* Pods get this long from the job's dispatch to start before they are
 * watched: most jobs' pods run by then and never cost their worker a watch
 * (a list and a stream per job), while a job held back is told about 10 s
 * later than it could be. */
#define RC_PLACEMENT_DELAY_MS 10000

/* Milliseconds layer 2 still waits for Workload wl (0: watch now): what is
 * left of RC_PLACEMENT_DELAY_MS since its check `check` became Ready (the
 * job got its worker; the manager's clock, as `now`, RFC 3339). 0 too
 * when the check is not Ready or a time cannot be read. */
long rc_place_wait_ms(const json_t *wl, const char *check, const char *now);

/* rc_place_selector's answer for a lone Pod: nothing to watch, the remote
 * job is the one pod to summarise (its own cache keeps it current). */
#define RC_PLACE_ITSELF 1

/* The label selector of the job's pods on the worker, from the remote job:
 * its spec.selector.matchLabels when it has them (Job, StatefulSet,
 * Deployment), else the label its controller puts on its pods (JobSet,
 * TrainJob, Kubeflow jobs, LeaderWorkerSet, AppWrapper, a Pod group by its
 * name; RayCluster by its name, RayJob and RayService by the RayCluster
 * their status names). Returns 0, RC_PLACE_ITSELF for a lone Pod (out
 * untouched), or -1 when the kind's pods cannot be told (yet: a RayJob
 * before its RayCluster is named). */
int rc_place_selector(const char *kind, const json_t *remote_job, char *out, size_t cap);

#endif
