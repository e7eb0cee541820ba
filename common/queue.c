#include "queue.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"

json_t *mkq_cluster_queue_checks(const json_t *cq)
{
    json_t *out = json_array();
    if (!out)
        return NULL;
    size_t i;
    json_t *v;
    json_array_foreach(jx_get(cq, "spec.admissionChecksStrategy.admissionChecks"), i, v)
    {
        const char *name = jx_str(v, "name");
        if (name)
            json_array_append_new(out, json_string(name));
    }
    json_array_foreach(jx_get(cq, "spec.admissionChecks"), i, v)
    {
        if (json_is_string(v))
            json_array_append(out, v);
    }
    return out;
}

int mkq_is_multikueue_check(const json_t *ac)
{
    const char *c = jx_str(ac, "spec.controllerName");
    return c && strcmp(c, MKQ_CONTROLLER) == 0;
}

int mkq_kubeconfig_source(const json_t *mkc, const char **type, const char **location)
{
    json_t *kc = jx_get(mkc, "spec.clusterSource.kubeConfig");
    if (!kc)
        kc = jx_get(mkc, "spec.kubeConfig");
    *location = jx_str(kc, "location");
    *type = jx_str(kc, "locationType");
    if (!*type)
        *type = "Secret";
    return *location ? 0 : -1;
}

void mkq_resolution_clear(struct mkq_resolution *r)
{
    json_decref(r->clusters);
    memset(r, 0, sizeof(*r));
}

/* Fills r->clusters from the check's MultiKueueConfig, or r->config_error. */
static void resolve_config(const struct mkq_caches *c, const json_t *ac, struct mkq_resolution *r)
{
    const char *group = jx_str(ac, "spec.parameters.apiGroup");
    const char *kind = jx_str(ac, "spec.parameters.kind");
    const char *name = jx_str(ac, "spec.parameters.name");
    if (!jx_get(ac, "spec.parameters")) {
        snprintf(r->config_error, sizeof(r->config_error), "missing parameters reference");
        return;
    }
    if (!name || !*name) {
        snprintf(r->config_error, sizeof(r->config_error), "empty name: bad parameters reference");
        return;
    }
    if (!group || strcmp(group, "kueue.x-k8s.io") != 0) {
        snprintf(r->config_error, sizeof(r->config_error),
                 "wrong group \"%s\", expecting \"kueue.x-k8s.io\": bad parameters reference",
                 group ? group : "");
        return;
    }
    if (!kind || strcmp(kind, "MultiKueueConfig") != 0) {
        snprintf(r->config_error, sizeof(r->config_error),
                 "wrong kind \"%s\", expecting \"MultiKueueConfig\": bad parameters reference",
                 kind ? kind : "");
        return;
    }
    snprintf(r->config, sizeof(r->config), "%s", name);
    json_t *cfg = kcache_get(c->configs, name);
    if (!cfg) {
        snprintf(r->config_error, sizeof(r->config_error),
                 "MultiKueueConfig.kueue.x-k8s.io \"%s\" not found", name);
        return;
    }
    json_t *clusters = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(jx_get(cfg, "spec.clusters"), i, v)
    {
        if (json_is_string(v) && clusters)
            json_array_append(clusters, v);
    }
    r->clusters = clusters;
    json_decref(cfg);
}

int mkq_resolve(const struct mkq_caches *c, const char *ns, const char *localqueue,
                struct mkq_resolution *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof(*out));
    json_t *lq = kcache_get_nsname(c->localqueues, ns, localqueue);
    if (!lq) {
        snprintf(msg, msglen, "LocalQueue %s does not exist in namespace %s", localqueue, ns);
        return MKQ_NO_LOCALQUEUE;
    }
    const char *cqname = jx_str(lq, "spec.clusterQueue");
    json_t *cq = cqname ? kcache_get(c->clusterqueues, cqname) : NULL;
    if (!cq) {
        snprintf(msg, msglen, "LocalQueue %s/%s points to ClusterQueue %s, which does not exist",
                 ns, localqueue, cqname ? cqname : "(none)");
        json_decref(lq);
        return MKQ_NO_CLUSTERQUEUE;
    }
    snprintf(out->cluster_queue, sizeof(out->cluster_queue), "%s", cqname);
    json_decref(lq);

    int rc = MKQ_LOCAL;
    json_t *checks = mkq_cluster_queue_checks(cq);
    size_t i;
    json_t *v;
    json_array_foreach(checks, i, v)
    {
        json_t *ac = kcache_get(c->admissionchecks, json_string_value(v));
        if (ac && mkq_is_multikueue_check(ac)) {
            snprintf(out->admission_check, sizeof(out->admission_check), "%s",
                     json_string_value(v));
            resolve_config(c, ac, out);
            json_decref(ac);
            rc = MKQ_MULTIKUEUE;
            break;
        }
        json_decref(ac);
    }
    json_decref(checks);
    json_decref(cq);
    return rc;
}
