/* Dispatchers: which worker clusters get a copy of a Workload (Kueue's
 * status.nominatedClusterNames). Pure functions; the Incremental round
 * start lives in memory with the caller, as in Kueue (a restart starts a
 * fresh round). */
#ifndef MKUEUE_RC_DISPATCHERS_H
#define MKUEUE_RC_DISPATCHERS_H

#include <jansson.h>

#include "config.h"

struct rc_nomination {
    json_t *clusters; /* the nominated clusters (new reference) */
    int new_round;    /* Incremental: a new round starts now */
    long requeue_ms;  /* look again after this long (-1: not needed) */
    char error[128];  /* e.g. "no more workers to nominate" ("" when fine) */
};

/* config_clusters: the MultiKueueConfig's clusters in config order;
 * connected[i] for each; current: the Workload's nominatedClusterNames (may
 * be NULL). AllAtOnce: every connected cluster, sorted by name. Incremental:
 * while the round (started at round_start_ms, 0 = none) lasts, the current
 * list; then the current list plus the next `step` clusters by name,
 * connected or not, as Kueue's incremental dispatcher. External: the
 * current list as written by the external controller, restricted to
 * clusters of the config. Returns 0, -1 on oom. */
int rc_nominate(enum rc_dispatcher d, const json_t *config_clusters, const int *connected,
                const json_t *current, int step, long round_ms, long long round_start_ms,
                long long now_ms, struct rc_nomination *out);
void rc_nomination_clear(struct rc_nomination *n);

/* 1 when the two string lists hold the same names in the same order (NULL
 * and [] are equal). */
int rc_names_equal(const json_t *a, const json_t *b);
/* 1 when the list holds the name. */
int rc_names_has(const json_t *list, const char *name);

#endif
