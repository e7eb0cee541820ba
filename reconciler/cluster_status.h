/* The Active condition of MultiKueueClusters, from the state of their
 * connection (mkcs_state): Kueue's reasons Active/Connected, BadKubeConfig,
 * InsecureKubeConfig, ClientConnectionFailed. Also the connected gauge. */
#ifndef MKUEUE_RC_CLUSTER_STATUS_H
#define MKUEUE_RC_CLUSTER_STATUS_H

#include "ctx.h"

int rc_reconcile_cluster(struct rc_ctx *x, const char *name);

#endif
