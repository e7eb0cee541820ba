/* What a job's pod templates reference that must exist on the worker it
 * runs on (issue 13): PersistentVolumeClaims, ConfigMaps, Secrets
 * (imagePullSecrets included) and ServiceAccounts. The webhook's preflight
 * warns about those a worker lacks; the reconciler's data-aware dispatch
 * prefers the workers that have them all. Both watch the workers' objects
 * of these kinds as PartialObjectMetadata, names only (mk_ref_keep_name),
 * never a Secret's data.
 *
 * Pure functions; struct mk_refs is a fixed-size value (no allocation). */
#ifndef MKUEUE_PODREFS_H
#define MKUEUE_PODREFS_H

#include <jansson.h>
#include <stddef.h>

#include "clusters.h"
#include "kinds/kinds.h"
#include "kube_client.h"

enum mk_ref_kind {
    MK_REF_PVC,
    MK_REF_CONFIGMAP,
    MK_REF_SECRET,
    MK_REF_SERVICEACCOUNT,
    MK_REF_KINDS
};

#define MK_REFS_MAX 64 /* distinct references looked at; more are not */

struct mk_ref {
    enum mk_ref_kind kind;
    char name[254]; /* a DNS subdomain at most */
};

struct mk_refs {
    struct mk_ref v[MK_REFS_MAX];
    size_t n;
    int truncated; /* more than MK_REFS_MAX */
};

/* The objects the pod templates of job (kind k's pod sets) need on a worker,
 * each once: PersistentVolumeClaims of volumes, ConfigMaps and Secrets of
 * volumes, projected volumes, envFrom and env (not those marked optional),
 * imagePullSecrets, and a serviceAccountName other than "default" (which
 * every namespace has). Returns 0, -1 when the pod sets cannot be read. */
int mk_pod_refs(const struct mk_kind *k, const json_t *job, struct mk_refs *out);
/* "PVC", "ConfigMap", "Secret", "ServiceAccount". */
const char *mk_ref_kind_name(enum mk_ref_kind kind);
/* The resource of that kind (core v1, namespaced). */
struct kc_resource mk_ref_resource(enum mk_ref_kind kind);
/* kcache transform of a watch of such objects: namespace, name and
 * resourceVersion kept, nothing else (takes obj's reference). */
json_t *mk_ref_keep_name(json_t *obj, void *ud);
/* Fills out[0..MK_REF_KINDS-1], in mk_ref_kind order, with the workers'
 * watches of these objects: metadata only (optional watches: a worker that
 * refuses them stays connected), names kept. */
void mk_ref_watches(struct mkcs_watch out[MK_REF_KINDS]);
/* Whether the object is in such a watch's cache: 1 yes, 0 no, -1 cannot
 * tell (no cache, or not synced). */
int mk_ref_present(struct kcache *cache, const char *ns, const char *name);

#endif
