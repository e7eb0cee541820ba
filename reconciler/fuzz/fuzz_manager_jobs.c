/* What a user submits on the manager, through what the reconciler builds
 * from it: the input is decoded as the informers decode a watch line and
 * stands for a job of every kind and for the pods of a pod group. Beside
 * "never a crash" it checks:
 *   - a Workload is built, or an error is said (non-empty, valid UTF-8);
 *   - a built Workload has 1 to MK_MAX_PODSETS pod sets, each named, with a
 *     count >= 0 and a template object, and carries the job's namespace;
 *   - its copy for a worker holds its spec (specdiff.h): were it not, the
 *     reconciler would delete and re-create the copy forever;
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
#include "specdiff.h"
#include "workload_create.h"

static int valid_text(const char *s)
{
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

static void check_workload(const json_t *job, const json_t *wl, const char *err)
{
    if (!wl) {
        if (!*err || !valid_text(err))
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
    if (!copy)
        abort();
    char path[RC_SPEC_PATH_MAX];
    int prio = 0;
    if (rc_spec_equal(jx_get(wl, "spec"), jx_get(copy, "spec"), &prio, path, sizeof(path)) != 1)
        abort();
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
