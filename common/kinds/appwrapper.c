/* workload.codeflare.dev/v1beta2 AppWrapper: one pod set per pod set of each
 * component, named "<appwrapper>-<n>" in order, as Kueue's AppWrapper
 * PodSets() builds them from the AppWrapper library (pkg/utils, v1.2.0):
 *
 *  - a component's pod sets are its declared spec.components[i].podSets, or,
 *    when it declares none, the ones the library infers for known kinds
 *    (InferPodSets: batch Job, JobSet, PyTorchJob, RayCluster, RayJob, Pod,
 *    Deployment, StatefulSet);
 *  - a pod set's template is not the component's template as written but
 *    the subset the library copies, with the API server's defaults filled in
 *    (GetPodTemplateSpec). Kueue on a worker compares the prebuilt
 *    Workload's containers with exactly that, so any other field left in
 *    (env, ports, ...) makes the remote Workload Finished/OutOfSync. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "errf.h"
#include "kinds/adapters.h"
#include "kinds/kinds.h"
#include "kinds/podset.h"
#include "quantity.h"

/* The library's getValueAtPath: "template" then ".key" or "[index]" steps,
 * from the component's template (which "template" names). Borrowed, or NULL. */
static json_t *aw_at(const json_t *tmpl, const char *path)
{
    if (!path || strncmp(path, "template", 8) != 0)
        return NULL;
    const char *p = path + 8;
    const json_t *cur = tmpl;
    while (*p && cur) {
        if (*p == '[') {
            char *end;
            long idx = strtol(p + 1, &end, 10);
            if (end == p + 1 || *end != ']' || !json_is_array(cur) || idx < 0)
                return NULL;
            cur = json_array_get(cur, (size_t)idx);
            p = end + 1;
        } else if (*p == '.') {
            p++;
            size_t n = strcspn(p, ".[");
            char key[256];
            if (n == 0 || n >= sizeof(key) || !json_is_object(cur))
                return NULL;
            memcpy(key, p, n);
            key[n] = '\0';
            cur = json_object_get(cur, key);
            p += n;
        } else {
            return NULL;
        }
    }
    return (json_t *)cur;
}

/* The library's inferReplicas: 1 when the field is absent from an existing
 * parent; -1 when the parent is missing or the value is not an integer. */
static long long aw_infer_replicas(const json_t *tmpl, const char *path)
{
    const char *dot = strrchr(path, '.');
    char parent[256];
    if (!dot || (size_t)(dot - path) >= sizeof(parent))
        return -1;
    memcpy(parent, path, (size_t)(dot - path));
    parent[dot - path] = '\0';
    json_t *obj = aw_at(tmpl, parent);
    if (!json_is_object(obj))
        return -1;
    json_t *v = json_object_get(obj, dot + 1);
    if (!v || json_is_null(v))
        return 1;
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The library's GetReplicas for Job counts: the integer, or `def`. */
static long long aw_int_or(const json_t *tmpl, const char *path, long long def)
{
    json_t *v = aw_at(tmpl, path);
    return json_is_integer(v) ? json_integer_value(v) : def;
}

static int aw_infer_add(json_t *out, const char *path, long long replicas)
{
    return json_array_append_new(
        out, json_pack("{s:s,s:I}", "path", path, "replicas", (json_int_t)replicas));
}

/* pods of a Job spec at `prefix` ("template.spec"): min(parallelism or 1,
 * completions when set) */
static long long aw_job_pods(const json_t *tmpl, const char *prefix)
{
    char p[256];
    snprintf(p, sizeof(p), "%s.parallelism", prefix);
    long long n = aw_int_or(tmpl, p, 1);
    snprintf(p, sizeof(p), "%s.completions", prefix);
    long long c = aw_int_or(tmpl, p, n);
    return c < n ? c : n;
}

static int aw_infer_ray(const json_t *tmpl, const char *prefix, json_t *out)
{
    char p[256], r[256];
    snprintf(p, sizeof(p), "%sheadGroupSpec.template", prefix);
    if (aw_infer_add(out, p, 1) < 0)
        return -1;
    snprintf(p, sizeof(p), "%sworkerGroupSpecs", prefix);
    json_t *workers = aw_at(tmpl, p);
    for (size_t i = 0; i < json_array_size(workers); i++) {
        snprintf(p, sizeof(p), "%sworkerGroupSpecs[%zu].template", prefix, i);
        if (!aw_at(tmpl, p))
            continue;
        snprintf(r, sizeof(r), "%sworkerGroupSpecs[%zu].replicas", prefix, i);
        long long n = aw_infer_replicas(tmpl, r);
        if (n < 0 || aw_infer_add(out, p, n) < 0)
            return -1;
    }
    return 0;
}

/* The library's InferPodSets: new array of {path, replicas}, empty for other
 * kinds; NULL on a malformed replica count. */
static json_t *aw_infer(const json_t *tmpl)
{
    const char *av = jx_str(tmpl, "apiVersion"), *kind = jx_str(tmpl, "kind");
    json_t *out = json_array();
    if (!out || !av || !kind)
        return out;
    int rc = 0;
    if (strcmp(av, "batch/v1") == 0 && strcmp(kind, "Job") == 0) {
        rc = aw_infer_add(out, "template.spec.template", aw_job_pods(tmpl, "template.spec"));
    } else if (strcmp(av, "jobset.x-k8s.io/v1alpha2") == 0 && strcmp(kind, "JobSet") == 0) {
        json_t *jobs = aw_at(tmpl, "template.spec.replicatedJobs");
        for (size_t i = 0; rc == 0 && i < json_array_size(jobs); i++) {
            char p[128], js[128];
            snprintf(p, sizeof(p), "template.spec.replicatedJobs[%zu].template", i);
            if (!aw_at(tmpl, p))
                continue;
            snprintf(js, sizeof(js), "template.spec.replicatedJobs[%zu].template.spec", i);
            long long pods = aw_job_pods(tmpl, js);
            snprintf(p, sizeof(p), "template.spec.replicatedJobs[%zu].replicas", i);
            long long replicas = aw_int_or(tmpl, p, 1);
            snprintf(p, sizeof(p), "template.spec.replicatedJobs[%zu].template.spec.template", i);
            rc = aw_infer_add(out, p, replicas * pods);
        }
    } else if (strcmp(av, "kubeflow.org/v1") == 0 && strcmp(kind, "PyTorchJob") == 0) {
        const char *types[] = {"Master", "Worker"};
        for (size_t i = 0; rc == 0 && i < 2; i++) {
            char p[128], r[128];
            snprintf(p, sizeof(p), "template.spec.pytorchReplicaSpecs.%s.template", types[i]);
            if (!aw_at(tmpl, p))
                continue;
            snprintf(r, sizeof(r), "template.spec.pytorchReplicaSpecs.%s.replicas", types[i]);
            long long n = aw_infer_replicas(tmpl, r);
            rc = n < 0 ? -1 : aw_infer_add(out, p, n);
        }
    } else if (strcmp(av, "ray.io/v1") == 0 && strcmp(kind, "RayCluster") == 0) {
        rc = aw_infer_ray(tmpl, "template.spec.", out);
    } else if (strcmp(av, "ray.io/v1") == 0 && strcmp(kind, "RayJob") == 0) {
        rc = aw_infer_ray(tmpl, "template.spec.rayClusterSpec.", out);
    } else if (strcmp(av, "v1") == 0 && strcmp(kind, "Pod") == 0) {
        rc = aw_infer_add(out, "template", 1);
    } else if (strcmp(av, "apps/v1") == 0 &&
               (strcmp(kind, "Deployment") == 0 || strcmp(kind, "StatefulSet") == 0)) {
        if (aw_at(tmpl, "template.spec.template")) {
            long long n = aw_infer_replicas(tmpl, "template.spec.replicas");
            rc = n < 0 ? -1 : aw_infer_add(out, "template.spec.template", n);
        }
    }
    if (rc < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* 1 when the quantity string is exact at milli precision as written, so
 * that resource.Quantity.RoundUp(-3) leaves it as it is. */
static int qty_exact_milli(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    size_t frac = 0;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)p[frac]))
            frac++;
        p += frac;
    }
    if (*p == '\0')
        return frac <= 3;
    if (strcmp(p, "m") == 0)
        return frac == 0;
    if (strcmp(p, "k") == 0)
        return frac <= 6;
    if (strlen(p) == 1 && strchr("MGTPE", *p))
        return 1;
    if (strlen(p) == 2 && p[1] == 'i' && strchr("KMGTPE", *p))
        return frac == 0;
    return 0; /* n, u, exponents: reformat from milli-units */
}

/* The library's defaultResourceList: each quantity rounded up to milli. */
static json_t *aw_resource_list(const json_t *rl)
{
    json_t *out = json_deep_copy(rl);
    const char *key;
    json_t *v;
    json_object_foreach(out, key, v)
    {
        int64_t milli;
        if (!json_is_string(v) || qty_exact_milli(json_string_value(v)) ||
            qty_parse(json_string_value(v), &milli) < 0)
            continue;
        char buf[64];
        qty_format(milli, buf, sizeof(buf));
        json_string_set(v, buf);
    }
    return out;
}

/* docker reference's tag, "latest" when neither tag nor digest is given, ""
 * when the reference does not parse (Go: dockerref.ParseNormalizedNamed),
 * approximated: an empty name or upper case in the repository path. */
static const char *image_tag(const char *image, char *buf, size_t buflen)
{
    if (!image || !*image)
        return "";
    const char *at = strchr(image, '@');
    size_t n = at ? (size_t)(at - image) : strlen(image);
    const char *slash = memchr(image, '/', n);
    const char *path = image;
    if (slash) {
        size_t dl = (size_t)(slash - image);
        int domain = memchr(image, '.', dl) || memchr(image, ':', dl) ||
                     (dl == 9 && strncmp(image, "localhost", 9) == 0);
        for (size_t i = 0; i < dl && !domain; i++)
            domain = isupper((unsigned char)image[i]);
        if (domain)
            path = slash + 1;
    }
    const char *colon = NULL;
    for (const char *c = path; c < image + n; c++) {
        if (*c == ':')
            colon = c;
        else if (*c == '/')
            colon = NULL;
    }
    const char *name_end = colon ? colon : image + n;
    if (name_end == path)
        return "";
    for (const char *c = path; c < name_end; c++)
        if (isupper((unsigned char)*c))
            return "";
    if (colon) {
        snprintf(buf, buflen, "%.*s", (int)(image + n - colon - 1), colon + 1);
        return buf;
    }
    return at ? "" : "latest";
}

static int set_copy(json_t *dst, const char *key, const json_t *src)
{
    json_t *v = json_object_get(src, key);
    return v && !json_is_null(v) ? json_object_set(dst, key, v) : 0;
}

static int set_or(json_t *dst, const char *key, const json_t *src, const char *def)
{
    const char *v = jx_str(src, key);
    return json_object_set_new(dst, key, json_string(v && *v ? v : def));
}

/* The library's copyContainers. */
static json_t *aw_containers(const json_t *src)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(src, i, c)
    {
        json_t *d = json_object();
        json_t *res = json_object();
        if (!d || !res || json_array_append_new(out, d) < 0) {
            json_decref(d);
            json_decref(res);
            json_decref(out);
            return NULL;
        }
        set_copy(d, "name", c);
        set_copy(d, "image", c);
        set_copy(d, "command", c);
        set_copy(d, "args", c);
        const char *lists[] = {"requests", "limits"};
        for (size_t l = 0; l < 2; l++) {
            json_t *rl = jx_getv(c, "resources", lists[l]);
            if (json_is_object(rl))
                json_object_set_new(res, lists[l], aw_resource_list(rl));
        }
        json_object_set_new(d, "resources", res);
        set_or(d, "terminationMessagePath", c, "/dev/termination-log");
        set_or(d, "terminationMessagePolicy", c, "File");
        const char *pull = jx_str(c, "imagePullPolicy");
        char tag[128];
        if (!pull || !*pull)
            pull = strcmp(image_tag(jx_str(c, "image"), tag, sizeof(tag)), "latest") == 0
                       ? "Always"
                       : "IfNotPresent";
        json_object_set_new(d, "imagePullPolicy", json_string(pull));
        set_copy(d, "securityContext", c);
    }
    return out;
}

static json_t *string_map(const json_t *m)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        if (json_is_string(v))
            json_object_set(out, k, v);
    }
    return out;
}

/* The library's GetPodTemplateSpec: new reference, or NULL when `pts` has
 * no spec object. */
static json_t *aw_pod_template(const json_t *pts)
{
    const json_t *src = json_object_get(pts, "spec");
    if (!json_is_object(src))
        return NULL;
    json_t *meta = json_object(), *spec = json_object();
    json_t *dst = json_pack("{s:o,s:o}", "metadata", meta, "spec", spec);
    if (!dst)
        return NULL;
    const char *mkeys[] = {"labels", "annotations"};
    for (size_t i = 0; i < 2; i++) {
        json_t *m = jx_getv(pts, "metadata", mkeys[i]);
        if (json_is_object(m))
            json_object_set_new(meta, mkeys[i], string_map(m));
    }
    json_t *init = json_object_get(src, "initContainers");
    if (json_array_size(init) > 0)
        json_object_set_new(spec, "initContainers", aw_containers(init));
    json_t *containers = aw_containers(json_object_get(src, "containers"));
    if (!containers) {
        json_decref(dst);
        return NULL;
    }
    json_object_set_new(spec, "containers", containers);
    set_or(spec, "restartPolicy", src, "Always");
    /* As the library does: 30 when unset, and not copied when set. */
    if (!json_is_integer(json_object_get(src, "terminationGracePeriodSeconds")))
        json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(30));
    set_or(spec, "dnsPolicy", src, "ClusterFirst");
    set_copy(spec, "nodeSelector", src);
    set_copy(spec, "nodeName", src);
    json_t *sc = json_object_get(src, "securityContext");
    json_object_set_new(spec, "securityContext",
                        json_is_object(sc) ? json_deep_copy(sc) : json_object());
    set_copy(spec, "affinity", src);
    set_or(spec, "schedulerName", src, "default-scheduler");
    set_copy(spec, "tolerations", src);
    set_copy(spec, "priorityClassName", src);
    set_or(spec, "preemptionPolicy", src, "PreemptLowerPriority");
    json_t *overhead = json_object_get(src, "overhead");
    if (json_is_object(overhead))
        json_object_set_new(spec, "overhead", aw_resource_list(overhead));
    set_copy(spec, "topologySpreadConstraints", src);
    return dst;
}

static int pod_sets(const json_t *aw, json_t *out, char *err, size_t errlen)
{
    const char *name = jx_str(aw, "metadata.name");
    size_t i, j, n = 0;
    json_t *comp, *ps;
    json_array_foreach(jx_get(aw, "spec.components"), i, comp)
    {
        json_t *ctmpl = json_object_get(comp, "template");
        json_t *declared = json_object_get(comp, "podSets");
        json_t *sets = json_array_size(declared) > 0 ? json_incref(declared) : aw_infer(ctmpl);
        if (!sets) {
            return errf(err, errlen, MK_ERR_INVAL,
                        "spec.components[%zu].template: a replica count is not an integer", i);
        }
        json_array_foreach(sets, j, ps)
        {
            char psname[64];
            long long replicas = mk_count_at(ps, "replicas", 1);
            json_t *tmpl = aw_pod_template(aw_at(ctmpl, jx_str(ps, "path")));
            if (!tmpl) {
                json_decref(sets);
                return errf(err, errlen, MK_ERR_INVAL,
                            "spec.components[%zu].podSets[%zu].path does not name a pod "
                            "template with a spec in the component",
                            i, j);
            }
            snprintf(psname, sizeof(psname), "%.50s-%zu", name ? name : "appwrapper", n++);
            int rc = mk_podset_add(out, psname, replicas, tmpl, err, errlen);
            json_decref(tmpl); /* mk_podset_add took its own reference */
            if (rc < 0) {
                json_decref(sets);
                return rc;
            }
        }
        json_decref(sets);
    }
    if (n == 0) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "spec.components declares no podSets and none can be inferred");
    }
    return 0;
}

const struct mk_kind mk_kind_appwrapper = {
    .kind = "AppWrapper",
    .group = "workload.codeflare.dev",
    .version = "v1beta2",
    .resource = "appwrappers",
    .gating = MK_GATE_MANAGED_BY,
    .managed_by_path = "spec.managedBy",
    .native_controller = "workload.codeflare.dev/appwrapper-controller",
    .suspend_path = "spec.suspend",
    .prebuilt_allowed = 1,
    .status_sync = MK_STATUS_WHOLE,
    .pod_sets = pod_sets,
};
