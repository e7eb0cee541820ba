/* The Active condition of AdmissionChecks whose controller is
 * kueue.x-k8s.io/multikueue, with Kueue's reasons and messages
 * (docs/multikueue-compat.md 1.5). */
#ifndef MKUEUE_RC_ADMISSIONCHECK_H
#define MKUEUE_RC_ADMISSIONCHECK_H

#include <jansson.h>

#include "ctx.h"

struct rc_ac_state {
    const char *status; /* "True" / "False" */
    char reason[32];    /* Active, SomeActiveClusters, NoUsableClusters, BadConfig */
    char message[1024];
};

/* Pure: the state from the check, its config (NULL = not found) and the
 * MultiKueueClusters cache (cluster name -> object). */
void rc_ac_compute(const json_t *ac, const json_t *config, struct kcache *mkclusters,
                   struct rc_ac_state *out);

/* Writes the condition when status, reason or message changed. */
int rc_reconcile_admission_check(struct rc_ctx *x, const char *name);

#endif
