/* Whether the manager's API server keeps a kind's managedBy field.
 *
 * batch/v1 Job has spec.managedBy only since Kubernetes 1.30 (older
 * servers drop it silently). Read once at start from /openapi/v2:
 * io.k8s.api.batch.v1.JobSpec.properties.managedBy. Without it, a Job is
 * ours when its queue resolves to a MultiKueue AdmissionCheck (the
 * "queue fallback"). Custom resources keep the field whatever their schema
 * says about it only when it is declared or preserved; kinds other than
 * Job are assumed to keep it. */
#ifndef MKUEUE_RC_SCHEMA_H
#define MKUEUE_RC_SCHEMA_H

#include <jansson.h>

#include "kinds/kinds.h"
#include "kube_client.h"

/* Decides from an OpenAPI v2 document (borrowed). 1 = kept, 0 = dropped. */
int rc_schema_keeps_managed_by(const json_t *openapi, const struct mk_kind *k);

/* Fetches /openapi/v2 once (NULL with the error logged when unavailable:
 * then every kind counts as keeping managedBy). New reference. */
json_t *rc_schema_fetch(struct kc_client *c);

/* Whether the manager serves the kind's resource (API discovery of its
 * group/version): 1 yes, 0 no (its CRD is not installed), -1 unknown (the
 * discovery call failed; the caller should not drop the kind then). */
int rc_kind_served(struct kc_client *c, const struct mk_kind *k);

#endif
