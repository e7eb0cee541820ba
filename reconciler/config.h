/* mkueue-reconciler settings: defaults, a YAML config file (libyaml) and
 * command-line flags, in that order of precedence (flags win).
 *
 * File keys (camelCase like Kueue's Configuration; unknown keys are errors):
 *   origin, namespace, mode (standalone|with-kueue), gcInterval,
 *   workerLostTimeout, dispatcher (AllAtOnce|Incremental|External or Kueue's
 *   dispatcher names), incrementalDispatcher.{stepSize, roundTimeout},
 *   integrations [batch/job, jobset.x-k8s.io/jobset, ...],
 *   externalFrameworks [Kind.version.group or {name, resource, podTemplatePath,
 *   countPath}, ...] (Kueue's multiKueue.externalFrameworks; kinds.h),
 *   clientConnection.{qps, burst}, workerConnection.{qps, burst, timeout},
 *   workers, logLevel, metricsAddress, kubeconfig, kubeconfigDir,
 *   resyncPeriod, probeInterval, dataAwareDispatch,
 *   leaderElection.{leaderElect, leaseName, leaseDuration,
 *   renewDeadline, retryPeriod, identity}.
 * Durations are Go-style: "90s", "1m30s", "500ms", "15m", "1h", "0". */
#ifndef MKUEUE_RC_CONFIG_H
#define MKUEUE_RC_CONFIG_H

#include <stddef.h>

#include "kinds/kinds.h"
#include "log.h"

#define RC_MAX_KINDS    32 /* dispatched kinds: built-in and external */
#define RC_MAX_EXTERNAL 8

enum rc_mode { RC_MODE_STANDALONE = 0, RC_MODE_WITH_KUEUE = 1 };
enum rc_dispatcher { RC_DISPATCH_ALL_AT_ONCE = 0, RC_DISPATCH_INCREMENTAL, RC_DISPATCH_EXTERNAL };

#define RC_DISPATCHER_ALL_AT_ONCE_NAME "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
#define RC_DISPATCHER_INCREMENTAL_NAME "kueue.x-k8s.io/multikueue-dispatcher-incremental"

struct rc_config {
    char origin[64];
    char namespace[64];
    enum rc_mode mode;
    long gc_interval_ms;         /* 0 disables the garbage collector */
    long worker_lost_timeout_ms; /* default 15 min */
    enum rc_dispatcher dispatcher;
    char dispatcher_name[256];            /* as given (External: the external controller's name) */
    int step_size;                        /* Incremental: clusters added per round, default 3 */
    long round_ms;                        /* Incremental: round length, default 5 min */
    char integrations[RC_MAX_KINDS][128]; /* Kueue framework names, e.g. "batch/job" */
    int nintegrations;
    /* external kinds, mk_kinds_add_external's syntax ("Kind.version.group[;key=value]...") */
    char external[RC_MAX_EXTERNAL][MK_EXTERNAL_SPEC_MAX];
    int nexternal;
    double qps; /* manager client */
    int burst;
    double worker_qps; /* each worker client */
    int worker_burst;
    long worker_timeout_ms; /* per request to a worker */
    int workers;            /* reconcile threads */
#define RC_WORKERS_MAX 64
/* The jobs' lane's threads (ctx.h job_queue), beside `workers`: half as
 * many, at least one (a job's reconcile is mostly one create of its
 * Workload, waiting for the manager's write budget). */
#define RC_JOB_THREADS(workers) (((workers) + 1) / 2)
#define RC_MAX_THREADS          (RC_WORKERS_MAX + RC_JOB_THREADS(RC_WORKERS_MAX))
    enum log_level log_level;
    char metrics_addr[128];    /* "host:port", ":port"; "" or "0" disables */
    char kubeconfig[1024];     /* manager kubeconfig; "" = in-cluster */
    char kubeconfig_dir[1024]; /* allowed folder of Path-type kubeconfigs; "" refuses them */
    long resync_ms;            /* informer resync and periodic requeue */
    long probe_interval_ms;    /* reachability probe of workers, 0 = off */
    int leader_elect;
    int data_aware; /* dataAwareDispatch (default on): decide.c step 10 */
    /* shortWorkloadNames (default off): Workload names of at most 63
     * characters, Kueue's ShortWorkloadNames feature gate (kinds.h) */
    int short_workload_names;
    char lease_name[64];
    long lease_duration_ms, renew_deadline_ms, retry_period_ms;
    char identity[128]; /* "" = hostname_<random> */
    char config_file[1024];
};

void rc_config_defaults(struct rc_config *c);

/* Parses a Go-style duration ("1h2m3s", "250ms", "0") into milliseconds.
 * Returns 0, or -1 on a malformed, negative or overflowing value. */
int rc_parse_duration(const char *s, long *ms);

/* Applies a YAML document (a mapping) to c. Returns 0, or -1 with a message
 * naming the key. */
int rc_config_apply_yaml(struct rc_config *c, const char *yaml, size_t len, char *err,
                         size_t errlen);
/* Reads the file (at most 1 MiB) and applies it. */
int rc_config_load_file(struct rc_config *c, const char *path, char *err, size_t errlen);

/* Parses argv (flags "--name=value" or "--name value"). A --config FILE is
 * loaded first, then the other flags are applied over it. Returns 0, 1 when
 * --help or --version was handled (printed to stdout), or -1 with err. */
int rc_config_from_args(struct rc_config *c, int argc, char **argv, char *err, size_t errlen);

/* Cross-field checks (origin is a label value, step size >= 1, workers
 * 1..64, renewDeadline < leaseDuration, known integrations...). */
int rc_config_validate(const struct rc_config *c, char *err, size_t errlen);

/* The usage text of the flags. */
void rc_config_usage(void *file);

/* The adapter of a Kueue framework name ("batch/job", "pod"; case-insensitive
 * kind), or NULL with a reason (unknown, or a pod-based kind the reconciler
 * does not dispatch yet). */
struct mk_kind;
const struct mk_kind *rc_integration_kind(const char *name, char *why, size_t whylen);

/* 1 when the reconciler dispatches this kind: the managedBy kinds with whole
 * status sync, and single Pods. */
int rc_kind_dispatchable(const struct mk_kind *k);

#endif
