/* What a user submits on the manager, through what the reconciler builds
 * from it: the input is decoded as the informers decode a watch line and
 * stands for a job of every kind and for the pods of a pod group. Beside
 * "never a crash" it checks:
 *   - a Workload is built, or an error is said (non-empty, valid UTF-8);
 *   - a built Workload has 1 to MK_MAX_PODSETS pod sets, each named, with a
 *     count >= 0 and a template object, and carries the job's namespace;
 *   - its copy for a worker, as a worker's API server stores it (defaults
 *     and canonical quantities, worker_stores), still holds its spec
 *     (specdiff.h): were it not, the reconciler would delete and re-create
 *     the copy forever;
 *   - the job's copy for a worker has no managedBy and no status. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "jsonx.h"
#include "kinds/kinds.h"
#include "kube_client.h"
#include "log.h"
#include "podrefs.h"
#include "quantity.h"
#include "specdiff.h"
#include "workload_create.h"
#include "fuzz_support.h"

/* Quantities in their canonical form ("1000m" is stored as "1"). */
static void canonical_quantities(json_t *list)
{
    const char *name;
    json_t *q;
    json_object_foreach(list, name, q)
    {
        int64_t milli;
        char out[64];
        if (json_is_string(q) && qty_parse(json_string_value(q), &milli) == 0) {
            qty_format(milli, out, sizeof(out));
            json_string_set(q, out);
        }
    }
}

/* The copy as a worker's API server stores it: its schema's defaults
 * (spec.active, a pod set's count, a port's protocol) and canonical
 * quantities, the ways a stored copy differs from what was sent. */
static void worker_stores(json_t *copy)
{
    json_t *spec = jx_get(copy, "spec");
    if (!json_is_object(spec))
        return;
    if (!json_object_get(spec, "active"))
        json_object_set_new(spec, "active", json_true());
    size_t i, j, k;
    json_t *ps, *c, *port;
    json_array_foreach(json_object_get(spec, "podSets"), i, ps)
    {
        if (json_is_object(ps) && !json_object_get(ps, "count"))
            json_object_set_new(ps, "count", json_integer(1));
        static const char *const lists[] = {"template.spec.containers",
                                            "template.spec.initContainers"};
        for (size_t l = 0; l < 2; l++)
            json_array_foreach(jx_get(ps, lists[l]), j, c)
            {
                canonical_quantities(jx_get(c, "resources.requests"));
                canonical_quantities(jx_get(c, "resources.limits"));
                json_array_foreach(jx_get(c, "ports"), k, port)
                {
                    if (json_is_object(port) && !json_object_get(port, "protocol"))
                        json_object_set_new(port, "protocol", json_string("TCP"));
                }
            }
    }
}

static void check_workload(const json_t *job, const json_t *wl, const char *err)
{
    if (!wl) {
        if (!*err || !fuzz_valid_text(err))
            abort();
        return;
    }
    json_t *sets = jx_get(wl, "spec.podSets");
    size_t n = json_array_size(sets);
    if (n < 1 || n > MK_MAX_PODSETS)
        abort();
    for (size_t i = 0; i < n; i++) {
        json_t *ps = json_array_get(sets, i);
        if (!jx_str(ps, "name") || !json_is_integer(jx_get(ps, "count")) ||
            jx_int(ps, "count", -1) < 0 || !json_is_object(jx_get(ps, "template")))
            abort();
    }
    const char *ns = jx_str(job, "metadata.namespace");
    if (job && ns && strcmp(jx_str(wl, "metadata.namespace"), ns) != 0)
        abort();
    json_t *copy = rc_remote_workload(wl, "multikueue");
    json_t *stored = copy ? json_deep_copy(copy) : NULL; /* the copy shares the spec */
    if (!stored)
        abort();
    worker_stores(stored);
    char path[RC_SPEC_PATH_MAX];
    int prio = 0;
    if (rc_spec_equal(jx_get(wl, "spec"), jx_get(stored, "spec"), &prio, path, sizeof(path)) != 1)
        abort();
    json_decref(stored);
    json_decref(copy);
}

static void check_kind(const struct mk_kind *k, const json_t *job)
{
    char err[512] = "";
    json_t *wl = rc_build_workload(k, job, "team-a", err, sizeof(err));
    check_workload(job, wl, err);
    json_decref(wl);
    json_t *copy = mk_remote_copy(k, job, "multikueue", "job-a-1");
    if (copy && (json_object_get(copy, "status") ||
                 (k->managed_by_path && jx_get(copy, k->managed_by_path))))
        abort();
    json_decref(copy);
    struct mk_refs refs;
    if (mk_pod_refs(k, job, &refs) == 0)
        for (size_t i = 0; i < refs.n; i++)
            if (!refs.v[i].name[0])
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        log_set_level(LOG_ERROR);
        init = 1;
    }
    json_t *v = jx_loadb((const char *)data, size, 0, &kc_unread, NULL);
    if (!v)
        return 0;
    for (size_t i = 0; i < mk_kinds_count(); i++)
        check_kind(mk_kind_at(i), v);
    json_t *pods = json_is_array(v) ? json_incref(v) : json_pack("[O,O]", v, v);
    char err[512] = "";
    json_t *wl = rc_build_group_workload(pods, "team-a", err, sizeof(err));
    check_workload(NULL, wl, err);
    json_decref(wl);
    json_decref(pods);
    json_decref(v);
    return 0;
}
