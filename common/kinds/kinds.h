/* Job-kind adapters: one entry per kind, shared by the webhook and the
 * reconciler. A kind says where its managedBy and suspend flags live, how its
 * Workload's pod sets are computed, and how its remote copy differs from the
 * generic one. A new kind is one new file plus its descriptor's line in
 * kinds/adapters.h and in registry.c's table. */
#ifndef MKUEUE_KINDS_H
#define MKUEUE_KINDS_H

#include <jansson.h>
#include <stddef.h>

#include "kube_client.h"

#define MK_MANAGED_BY            "kueue.x-k8s.io/multikueue"
#define MK_QUEUE_LABEL           "kueue.x-k8s.io/queue-name"
#define MK_ORIGIN_LABEL          "kueue.x-k8s.io/multikueue-origin"
#define MK_ORIGIN_UID_ANNOTATION "kueue.x-k8s.io/multikueue-origin-uid"
#define MK_PREBUILT              "kueue.x-k8s.io/prebuilt-workload-name"
#define MK_MANAGED_LABEL         "kueue.x-k8s.io/managed"
#define MK_ADMISSION_GATE        "kueue.x-k8s.io/admission"
#define MK_POD_SUSPENDING_PARENT "kueue.x-k8s.io/pod-suspending-parent"
#define MK_POD_GROUP_LABEL       "kueue.x-k8s.io/pod-group-name"
#define MK_MAX_PODSETS           8 /* Kueue v1beta2: spec.podSets maxItems */
/* a job of several Workloads (LeaderWorkerSet): each one's index, and its owner */
#define MK_COMPONENT_INDEX  "kueue.x-k8s.io/component-workload-index"
#define MK_JOB_OWNER_GVK    "kueue.x-k8s.io/job-owner-gvk"
#define MK_JOB_OWNER_NAME   "kueue.x-k8s.io/job-owner-name"
#define MK_LWS_MAX_REPLICAS 1000 /* Workloads one LeaderWorkerSet may make */

/* How the manager keeps a job of this kind from running locally. */
enum mk_gating {
    MK_GATE_MANAGED_BY,   /* the kind's managedBy field (Job, JobSet, Kubeflow, Ray, ...) */
    MK_GATE_POD,          /* scheduling gate on the Pod itself */
    MK_GATE_POD_TEMPLATE, /* marks on the pod template; its pods are gated (Deployment, STS, LWS) */
};

enum mk_status_sync {
    MK_STATUS_WHOLE, /* the local .status is replaced by the remote .status */
    MK_STATUS_NONE,  /* never copied (StatefulSet, LeaderWorkerSet) */
};

struct mk_kind {
    const char *kind;     /* "Job" */
    const char *group;    /* "batch"; "" for the core group */
    const char *version;  /* "v1" */
    const char *resource; /* "jobs" */
    enum mk_gating gating;
    const char *managed_by_path;   /* jsonx path of managedBy, NULL when the kind has none */
    const char *native_controller; /* managedBy value meaning "the kind's own controller" */
    const char *suspend_path;      /* jsonx path of the suspend flag, NULL when none */
    /* Fields by which a worker would delete its copy by itself (invariant 3):
     * stripped from remote copies. NULL-terminated, may be NULL. */
    const char *const *ttl_paths;
    int prebuilt_allowed; /* may carry kueue.x-k8s.io/prebuilt-workload-name */
    enum mk_status_sync status_sync;
    /* jsonx path of the kind's own priority class, read before its pod
     * templates' (Kueue's JobWithPriorityClass: Kubeflow's and MPIJob's
     * runPolicy.schedulingPolicy.priorityClass); NULL when none */
    const char *priority_class_path;
    /* Appends the Workload's pod sets ({name, count, template[, minCount]}) to
     * the array `out`. Returns 0, or -1 with a message naming the field. */
    int (*pod_sets)(const json_t *job, json_t *out, char *err, size_t errlen);
    /* Kind-specific edits of a remote copy, after the generic ones; may be NULL. */
    void (*edit_remote)(json_t *copy, const json_t *job);
    /* Spec fields forwarded to the worker's copy when edited on the manager
     * after dispatch (RayService spec.serveConfigV2, as Kueue's remote spec
     * sync). NULL-terminated, may be NULL. */
    const char *const *spec_sync_paths;
    int external; /* configured (externalFrameworks), Kueue's generic adapter */
    /* External kinds (pod_sets NULL): one pod set `main`, the pod template at
     * pod_template_path, count at count_path (1 when NULL or absent). */
    const char *pod_template_path;
    const char *count_path;
};

/* ---- registry ------------------------------------------------------------- */

size_t mk_kinds_count(void);
const struct mk_kind *mk_kind_at(size_t i);
/* Lookups; NULL when unknown. apiVersion is "group/version" or "v1". */
const struct mk_kind *mk_kind_by_gvk(const char *api_version, const char *kind);
const struct mk_kind *mk_kind_by_resource(const char *group, const char *version,
                                          const char *resource);
const struct mk_kind *mk_kind_of(const json_t *obj); /* by apiVersion and kind */

/* Appends a kind to the registry (after the built-in ones); k lives for
 * the process. Returns 0, or -1 when its group/version/kind or resource is
 * taken or the registry is full. Thread-safe against readers. */
int mk_kinds_register(const struct mk_kind *k);

/* ---- external kinds (external.c) ------------------------------------------ */

/* An external framework (Kueue's multiKueue.externalFrameworks) as mkueue
 * configures it: "Kind.version.group", optionally followed by
 * ";resource=<plural>" (default: lower-case kind + "s"),
 * ";podTemplatePath=<jsonx path>" (default spec.template) and
 * ";countPath=<jsonx path>" (default: one pod). No commas (flags list them
 * comma-separated). */
#define MK_EXTERNAL_SPEC_MAX 512
/* Checks a spec without registering it. Returns 0, or MK_ERR_INVAL with err. */
int mk_external_check(const char *spec, char *err, size_t errlen);
/* Parses and registers it: managedBy at spec.managedBy, no suspend flag,
 * whole status sync, the prebuilt-workload label, pod sets as above.
 * Returns 0, or MK_ERR_INVAL / MK_ERR_NOMEM with err (a name taken by a
 * built-in or earlier kind is refused, as Kueue refuses duplicates). */
int mk_kinds_add_external(const char *spec, char *err, size_t errlen);

/* Kueue's webhook paths: "/mutate-batch-v1-job", "/validate--v1-pod". */
int mk_webhook_path(const struct mk_kind *k, const char *verb, char *out, size_t outlen);
/* Parses such a path; *mutate is 1 for mutate-, 0 for validate-. */
const struct mk_kind *mk_kind_by_webhook_path(const char *path, int *mutate);

/* kc_resource view of a kind. */
struct kc_resource mk_kind_resource(const struct mk_kind *k);
/* "group/version" or "version" for the core group, into out. */
void mk_api_version(const struct mk_kind *k, char *out, size_t outlen);

/* ---- behaviour shared by all kinds ----------------------------------------- */

/* The job's managedBy value (borrowed) or NULL when unset or the kind has none. */
const char *mk_managed_by(const struct mk_kind *k, const json_t *job);
/* 1 when the job is ours: managedBy equals kueue.x-k8s.io/multikueue. */
int mk_is_managed(const struct mk_kind *k, const json_t *job);

/* Workload name per Kueue: lower(kind)-name truncated to 247, "-", and the
 * first 5 hex digits of sha1(kind\ngroup\nname\nuid). Returns 0 or -1.
 * With short names on, the prefix is truncated to 57 instead, so that the
 * name (at most 63) fits a label value: Kueue's ShortWorkloadNames feature
 * gate. mk_set_short_workload_names is called once, before any thread
 * starts (a process-wide setting, as Kueue's feature gates). */
#define MK_LABEL_VALUE_MAX 63 /* Kubernetes' cap on a label value */
int mk_workload_name(const char *kind, const char *group, const char *name, const char *uid,
                     char *out, size_t outlen);
void mk_set_short_workload_names(int on);
/* 1 when a Workload name fits the prebuilt-workload-name label, 0 when a
 * copy names it in the annotation instead (mk_remote_copy). */
int mk_prebuilt_fits_label(const char *workload_name);

/* A LeaderWorkerSet's replicas (spec.replicas, default 1), -1 when not an
 * integer in 0..MK_LWS_MAX_REPLICAS; and the Workload name of replica
 * `index` (Kueue's: mk_workload_name of "<name>-<index>"). Returns 0 or -1. */
long long mk_lws_replicas(const json_t *lws);
int mk_lws_workload_name(const json_t *lws, long long index, char *out, size_t outlen);

/* The Workload pod sets of a job (new array), or NULL with err. Checks the
 * count of pod sets and that each has a name and a non-negative count.
 * Each template is a deep copy, the caller's to edit or keep. */
json_t *mk_pod_sets(const struct mk_kind *k, const json_t *job, char *err, size_t errlen);

/* The same pod sets whose templates are shared with job (one more reference,
 * no copy): to read, never to edit, e.g. what the pods refer to (the
 * webhook's preflight, where copying a template per review cost more than
 * reading it). */
json_t *mk_pod_sets_shared(const struct mk_kind *k, const json_t *job, char *err, size_t errlen);

/* The object to create on a worker: metadata reduced to name, namespace,
 * labels and annotations; origin label; prebuilt-workload-name label (as
 * Kueue reads it, when the kind allows it); managedBy removed; self-cleanup fields removed;
 * status dropped; then the kind's own edits. New reference or NULL on oom. */
json_t *mk_remote_copy(const struct mk_kind *k, const json_t *job, const char *origin,
                       const char *workload_name);

#endif
