/* Whether the manager's API server keeps a kind's managedBy field.
 *
 * batch/v1 Job has spec.managedBy only since Kubernetes 1.30 (older
 * servers drop it silently). Read once at start from the OpenAPI v3
 * document of the one group needed (RC_OPENAPI_PATH; /openapi/v2 holds every
 * group and CRD, megabytes parsed whole) under a size cap:
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

#define RC_OPENAPI_PATH "/openapi/v3/apis/batch/v1"
/* The batch/v1 document is about 450 KiB (Kubernetes 1.37; /openapi/v2 is
 * 7.6 MiB); past this cap it is not read at all. */
#define RC_OPENAPI_MAX_BYTES (4 * 1024 * 1024)
#define RC_OPENAPI_MAX_DEPTH 64

/* Decides from an OpenAPI document (borrowed; v3 components.schemas or v2
 * definitions). 1 = kept, 0 = dropped. */
int rc_schema_keeps_managed_by(const json_t *openapi, const struct mk_kind *k);

/* Parses the body read from RC_OPENAPI_PATH: `truncated` says more than
 * RC_OPENAPI_MAX_BYTES arrived (refused). New reference, or NULL with err. */
json_t *rc_schema_parse(const char *body, size_t len, int truncated, char *err, size_t errlen);

/* Reads RC_OPENAPI_PATH once, streaming into a buffer of at most
 * RC_OPENAPI_MAX_BYTES (NULL with the error logged when unavailable or too
 * large: then every kind counts as keeping managedBy). New reference. */
json_t *rc_schema_fetch(struct kc_client *c);

/* Whether the manager serves the kind's resource (API discovery of its
 * group/version): 1 yes, 0 no (its CRD is not installed), -1 unknown (the
 * discovery call failed; the caller should not drop the kind then). */
int rc_kind_served(struct kc_client *c, const struct mk_kind *k);

#endif
