/* A reconciler context for the quota gate's pass (gate.h) and a Workload's
 * reconcile up to its plan (dispatch.h), without watches: the test fills
 * the manager caches itself (rcg_put, rcg_put_workload, the latter also
 * noting the Workload in the gate index as the Workload informer's
 * handlers do in main.c), and the manager client talks to a scripted HTTPS
 * server (test_https.h) on 127.0.0.1 that records every request and
 * answers a PATCH as the API server does: a cached Workload with the patch
 * merged in, else the name, the status the patch sent; at a new
 * resourceVersion (what kc_patch's `out` reads). Made: standalone mode's
 * gate index, the work queue, echo, metrics, the in-memory maps, the
 * default config, the batch/v1 Jobs' cache (x.jobs[0]) and an empty
 * MultiKueueConfig cache (so a reserved Workload's reconcile plans
 * "group-unknown", with no worker). Not made: an Events recorder
 * (rc_event_emit skips NULL, and the writes stay the server's only
 * requests), worker clusters.
 *
 * Ownership: the fixture owns everything it made until rcg_teardown, and
 * must not move meanwhile (the client and the server's handler point into
 * it); the put functions steal their object. One test thread drives it; the
 * server's threads only read the request, the counter and the Workloads'
 * cache (read-locked). */
#ifndef MKUEUE_RC_TEST_GATE_FIXTURE_H
#define MKUEUE_RC_TEST_GATE_FIXTURE_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "ctx.h"
#include "gate_index.h"
#include "kube_config.h"
#include "tests/support/test_https.h"

#define RCG_WORKLOAD_PREFIX "/apis/kueue.x-k8s.io/v1beta2/namespaces/" /* + ns/workloads/... */

struct rcg_fixture {
    struct rc_ctx x;
    struct rc_config cfg; /* the defaults: standalone mode */
    struct th_server *api;
    struct kcfg kcfg; /* the manager's, pointing at api */
    int rv;           /* the server's last resourceVersion (atomic) */
    int delay_ms;     /* each answer waits this long (set before the pass) */
};

/* Starts the server and fills f (zeroed first). 0, or an MK_ERR_* code
 * (whatever was made is freed by rcg_teardown all the same). */
int rcg_setup(struct rcg_fixture *f);
/* Stops the server and frees the context; f may be half set up. */
void rcg_teardown(struct rcg_fixture *f);

/* Stores obj (steals) in cache c, as a watch event would, without its
 * handlers' side effects. 0 or MK_ERR_INVAL (no key). */
int rcg_put(struct kcache *c, json_t *obj);
/* Stores Workload wl (steals; packed as the informer packs it) and notes it
 * in the gate index under its ClusterQueue (ctx.h rc_cq_of: so its
 * LocalQueue must be cached first) as change ch. 0 or MK_ERR_INVAL. */
int rcg_put_workload(struct rcg_fixture *f, json_t *wl, enum rc_gix_change ch);

/* Requests recorded with that method whose path is `path`, from the
 * i-th on (0: all). */
int rcg_count(struct rcg_fixture *f, const char *method, const char *path, int from);
/* The last request with that method and path (borrowed), or NULL. */
const struct th_request *rcg_last(struct rcg_fixture *f, const char *method, const char *path);

/* The keys of the work queue ready now, sorted and joined by ',' into out
 * ("" when none); each is taken and done, so the queue is left without
 * them (delayed keys stay). Returns out. */
const char *rcg_drain_ready(struct rcg_fixture *f, char *out, size_t outlen);

#endif
