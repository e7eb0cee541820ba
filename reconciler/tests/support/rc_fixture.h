/* The observation the decision tests start from (decide.h, why.h): one
 * manager Workload with the MultiKueue check "mk", its local batch/v1 Job
 * "a" (ours, managedBy kept, not suspended), two available workers of the
 * config ("worker-1", "worker-2"), both nominated, standalone mode. */
#ifndef MKUEUE_RC_TEST_FIXTURE_H
#define MKUEUE_RC_TEST_FIXTURE_H

#include <jansson.h>

#include "decide.h"

#define RCF_NOW "2024-01-01T01:00:00Z"

struct rc_fixture {
    struct rc_obs o;
    struct rc_remote r[2];
    json_t *nominated;
    struct rc_plan plan;
};

/* The local Job "a" in namespace "ns" (new reference). */
json_t *rcf_local_job(int suspended);
/* Fills f around wl (taken: freed by rcf_teardown, as are o.job and each
 * r[i].wl and r[i].job the test sets). */
void rcf_setup(struct rc_fixture *f, json_t *wl);
void rcf_teardown(struct rc_fixture *f);

#endif
