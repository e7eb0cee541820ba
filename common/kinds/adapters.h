/* The built-in job-kind adapters: each file of kinds/ defines the
 * descriptors declared here, and registry.c lists them in its table (the
 * registry's order). Descriptors are constant and live for the process;
 * code outside kinds/ looks kinds up through kinds.h, tests may name one. */
#ifndef MKUEUE_KINDS_ADAPTERS_H
#define MKUEUE_KINDS_ADAPTERS_H

#include "kinds/kinds.h"

extern const struct mk_kind mk_kind_job;             /* job.c */
extern const struct mk_kind mk_kind_pod;             /* pod.c */
extern const struct mk_kind mk_kind_deployment;      /* pod.c */
extern const struct mk_kind mk_kind_statefulset;     /* statefulset.c */
extern const struct mk_kind mk_kind_jobset;          /* jobset.c */
extern const struct mk_kind mk_kind_pytorchjob;      /* kubeflow.c */
extern const struct mk_kind mk_kind_tfjob;           /* kubeflow.c */
extern const struct mk_kind mk_kind_xgboostjob;      /* kubeflow.c */
extern const struct mk_kind mk_kind_paddlejob;       /* kubeflow.c */
extern const struct mk_kind mk_kind_jaxjob;          /* kubeflow.c */
extern const struct mk_kind mk_kind_mpijob;          /* kubeflow.c */
extern const struct mk_kind mk_kind_trainjob;        /* trainjob.c */
extern const struct mk_kind mk_kind_rayjob;          /* ray.c */
extern const struct mk_kind mk_kind_raycluster;      /* ray.c */
extern const struct mk_kind mk_kind_rayservice;      /* ray.c */
extern const struct mk_kind mk_kind_appwrapper;      /* appwrapper.c */
extern const struct mk_kind mk_kind_leaderworkerset; /* lws.c */

/* The pod sets of an external kind (pod_template_path, count_path), for
 * mk_pod_sets; external.c. */
int mk_external_pod_sets(const struct mk_kind *k, const json_t *job, json_t *out, char *err,
                         size_t errlen);

#endif
