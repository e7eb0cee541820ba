/* Kubeflow training jobs: PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob
 * (kubeflow.org/v1) and MPIJob (kubeflow.org/v2beta1). One pod set per
 * replica type, lower-cased, in the operator's order. */
#include "jsonx.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"

#define KUBEFLOW_KIND(sym, kind_, resource_, field, version_, native, prebuilt, ...)               \
    static int sym##_pod_sets(const json_t *job, json_t *out, char *err, size_t errlen)            \
    {                                                                                              \
        static const char *const order[] = {__VA_ARGS__, NULL};                                    \
        return mk_podsets_from_replica_specs(jx_get(job, "spec." field), order, out,               \
                                             "spec." field, err, errlen);                          \
    }                                                                                              \
    const struct mk_kind mk_kind_##sym = {                                                         \
        .kind = kind_,                                                                             \
        .group = "kubeflow.org",                                                                   \
        .version = version_,                                                                       \
        .resource = resource_,                                                                     \
        .gating = MK_GATE_MANAGED_BY,                                                              \
        .managed_by_path = "spec.runPolicy.managedBy",                                             \
        .native_controller = native,                                                               \
        .suspend_path = "spec.runPolicy.suspend",                                                  \
        .ttl_paths = ttl,                                                                          \
        .prebuilt_allowed = prebuilt,                                                              \
        .status_sync = MK_STATUS_WHOLE,                                                            \
        .priority_class_path = "spec.runPolicy.schedulingPolicy.priorityClass",                    \
        .pod_sets = sym##_pod_sets,                                                                \
    };

static const char *const ttl[] = {"spec.runPolicy.ttlSecondsAfterFinished", NULL};

#define TRAINING_OPERATOR "kubeflow.org/training-operator"
KUBEFLOW_KIND(pytorchjob, "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", "v1",
              TRAINING_OPERATOR, 1, "Master", "Worker")
KUBEFLOW_KIND(tfjob, "TFJob", "tfjobs", "tfReplicaSpecs", "v1", TRAINING_OPERATOR, 1, "Chief",
              "Master", "PS", "Worker", "Evaluator")
KUBEFLOW_KIND(xgboostjob, "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", "v1", TRAINING_OPERATOR,
              1, "Master", "Worker")
KUBEFLOW_KIND(paddlejob, "PaddleJob", "paddlejobs", "paddleReplicaSpecs", "v1", TRAINING_OPERATOR,
              1, "Master", "Worker")
/* Kueue's webhook omits JAXJob from the prebuilt-workload allow-list (see
 * the reference, section 9): we copy it like the others. */
KUBEFLOW_KIND(jaxjob, "JAXJob", "jaxjobs", "jaxReplicaSpecs", "v1", TRAINING_OPERATOR, 1, "Worker")
KUBEFLOW_KIND(mpijob, "MPIJob", "mpijobs", "mpiReplicaSpecs", "v2beta1",
              "kubeflow.org/mpi-operator", 1, "Launcher", "Worker")
