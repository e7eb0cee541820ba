#include "placement.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "jsonx.h"
#include "kinds/kinds.h"
#include "why.h"
#include "wlstatus.h"

/* Waiting reasons of a container that is only starting: not held back. */
static int starting(const char *reason)
{
    return !reason || !*reason || strcmp(reason, "ContainerCreating") == 0 ||
           strcmp(reason, "PodInitializing") == 0;
}

/* A reason a condition may carry (metav1.Condition's schema, which the API
 * server enforces): a letter, then letters, digits, '_', ',' or ':', not
 * ending in ',' or ':', at most 1024 bytes. A kubelet's reasons are; a
 * worker's pods may say anything. */
static int cond_reason(const char *r)
{
    size_t n = strlen(r);
    if (n == 0 || n > 1024 || !isalpha((unsigned char)r[0]) || r[n - 1] == ',' || r[n - 1] == ':')
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)r[i]) && !strchr("_,:", r[i]))
            return 0;
    return 1;
}

/* The reasons a kubelet gives for an image it cannot pull. */
static int pull_reason(const char *r)
{
    return strcmp(r, "ImagePullBackOff") == 0 || strcmp(r, "ErrImagePull") == 0 ||
           strcmp(r, "InvalidImageName") == 0 || strcmp(r, "ErrImageNeverPull") == 0;
}

static void count(struct rc_place_sum *s, const char *reason, const char *detail)
{
    /* compared as kept: two pods of one long scheduler message are one group */
    char r[sizeof(s->g[0].reason)], d[sizeof(s->g[0].detail)];
    buf_cut_fmt(r, sizeof(r), "%s", reason);
    buf_cut_fmt(d, sizeof(d), "%s", detail);
    size_t i;
    for (i = 0; i < s->n; i++)
        if (strcmp(s->g[i].reason, r) == 0 && strcmp(s->g[i].detail, d) == 0)
            break;
    if (i == s->n) {
        if (s->n == RC_PLACE_MAX_GROUPS) {
            s->other++;
            return;
        }
        memcpy(s->g[i].reason, r, sizeof(r));
        memcpy(s->g[i].detail, d, sizeof(d));
        s->n++;
    }
    s->g[i].pods++;
    /* keep the largest group first (stable: ties keep their first-seen order) */
    while (i > 0 && s->g[i].pods > s->g[i - 1].pods) {
        struct rc_place_group t = s->g[i - 1];
        s->g[i - 1] = s->g[i];
        s->g[i] = t;
        i--;
    }
}

/* The first container of the pod waiting for a reason that holds it back. */
static const json_t *held_container(const json_t *pod)
{
    static const char *const lists[] = {"status.initContainerStatuses", "status.containerStatuses"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(jx_get(pod, lists[l]), i, c)
        {
            if (!starting(jx_str(c, "state.waiting.reason")))
                return c;
        }
    }
    return NULL;
}

void rc_place_summarise(const json_t *pods, struct rc_place_sum *out)
{
    memset(out, 0, sizeof(*out));
    size_t i;
    json_t *pod;
    json_array_foreach(pods, i, pod)
    {
        out->total++;
        const char *phase = jx_str(pod, "status.phase");
        if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
            out->started++;
            continue;
        }
        const json_t *c = held_container(pod);
        if (c) {
            const char *reason = jx_str(c, "state.waiting.reason");
            const char *image = jx_str(c, "image");
            const char *msg = jx_str(c, "state.waiting.message");
            count(out, reason, pull_reason(reason) ? (image ? image : "") : (msg ? msg : ""));
            continue;
        }
        json_t *ps = rc_cond_find(pod, "PodScheduled");
        const char *st = jx_str(ps, "status"), *why = jx_str(ps, "reason");
        if (st && strcmp(st, "False") == 0 && why && strcmp(why, "Unschedulable") == 0) {
            const char *m = jx_str(ps, "message");
            count(out, "Unschedulable", m ? m : "");
            continue;
        }
        if (phase && strcmp(phase, "Running") == 0)
            out->started++;
    }
}

void rc_place_group_msg(const char *cluster, const struct rc_place_sum *s, size_t i, char *out,
                        size_t cap)
{
    const struct rc_place_group *g = &s->g[i];
    if (strcmp(g->reason, "Unschedulable") == 0)
        buf_cut_fmt(out, cap, "%s: %d/%d pods Pending: %s", cluster, g->pods, s->total,
                    *g->detail ? g->detail : "unschedulable");
    else if (pull_reason(g->reason))
        buf_cut_fmt(out, cap, "%s: %s for %s (%d/%d pods)", cluster, g->reason, g->detail, g->pods,
                    s->total);
    else
        buf_cut_fmt(out, cap, "%s: %d/%d pods %s%s%s", cluster, g->pods, s->total, g->reason,
                    *g->detail ? ": " : "", g->detail);
}

int rc_place_decide(const json_t *wl, const char *cluster, const struct rc_place_sum *s,
                    const char *now, struct rc_place_plan *out)
{
    memset(out, 0, sizeof(*out));
    json_t *cur = rc_cond_find(wl, RC_PLACE_COND);
    const char *status, *reason;
    char msg[RC_WHY_MAX];
    if (s->n > 0) {
        size_t len = 0;
        msg[0] = '\0';
        for (size_t i = 0; i < s->n; i++) {
            struct rc_place_ev *e = &out->ev[out->nev++];
            buf_cut_fmt(e->reason, sizeof(e->reason), "%s", s->g[i].reason);
            rc_place_group_msg(cluster, s, i, e->message, sizeof(e->message));
            buf_cut_appendf(msg, sizeof(msg), &len, "%s%s", i ? "; " : "", e->message);
        }
        if (s->other)
            buf_cut_appendf(msg, sizeof(msg), &len, "; %s: %d more pods held back", cluster,
                            s->other);
        status = "False";
        reason = cond_reason(s->g[0].reason) ? s->g[0].reason : RC_PLACE_WAITING_REASON;
    } else {
        const char *cs = jx_str(cur, "status");
        if (!cs || strcmp(cs, "False") != 0) /* nothing said yet, or said already */
            return 0;
        snprintf(msg, sizeof(msg), "%s: no pod is held back (%d/%d running or ended)", cluster,
                 s->started, s->total);
        status = "True";
        reason = RC_PLACE_OK_REASON;
    }
    const char *cs = jx_str(cur, "status"), *cr = jx_str(cur, "reason");
    const char *cm = jx_str(cur, "message");
    if (cs && cr && cm && strcmp(cs, status) == 0 && strcmp(cr, reason) == 0 &&
        strcmp(cm, msg) == 0)
        return 0;
    out->conds =
        rc_conds_with(jx_get(wl, "status.conditions"), RC_PLACE_COND, status, reason, msg, now);
    return out->conds ? 0 : -1;
}

void rc_place_plan_clear(struct rc_place_plan *p)
{
    json_decref(p->conds);
    p->conds = NULL;
    p->nev = 0;
}

/* The label each kind's controller puts on its pods, and where its value
 * is in the remote job: its name, or (Ray's) the RayCluster it made. */
static const struct {
    const char *kind, *label, *value;
} pod_labels[] = {
    {"JobSet", "jobset.sigs.k8s.io/jobset-name", "metadata.name"},
    {"TrainJob", "jobset.sigs.k8s.io/jobset-name", "metadata.name"}, /* its JobSet's name */
    {"PyTorchJob", "training.kubeflow.org/job-name", "metadata.name"},
    {"TFJob", "training.kubeflow.org/job-name", "metadata.name"},
    {"XGBoostJob", "training.kubeflow.org/job-name", "metadata.name"},
    {"PaddleJob", "training.kubeflow.org/job-name", "metadata.name"},
    {"JAXJob", "training.kubeflow.org/job-name", "metadata.name"},
    {"MPIJob", "training.kubeflow.org/job-name", "metadata.name"},
    {"LeaderWorkerSet", "leaderworkerset.sigs.k8s.io/name", "metadata.name"},
    {"RayCluster", "ray.io/cluster", "metadata.name"},
    {"RayJob", "ray.io/cluster", "status.rayClusterName"},
    {"RayService", "ray.io/cluster", "status.activeServiceStatus.rayClusterName"},
    {"RayService", "ray.io/cluster", "status.pendingServiceStatus.rayClusterName"},
    {"AppWrapper", "workload.codeflare.dev/appwrapper", "metadata.name"},
    {"Pod", MK_POD_GROUP_LABEL, "metadata.labels[" MK_POD_GROUP_LABEL "]"}, /* a group */
};

int rc_place_selector(const char *kind, const json_t *remote_job, char *out, size_t cap)
{
    json_t *ml = jx_get(remote_job, "spec.selector.matchLabels");
    size_t len = 0;
    if (json_is_object(ml) && json_object_size(ml) > 0) {
        const char *k;
        json_t *v;
        json_object_foreach(ml, k, v)
        {
            if (!json_is_string(v) || len >= cap)
                return -1;
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", len ? "," : "", k,
                                    json_string_value(v));
        }
        return len < cap ? 0 : -1;
    }
    if (!kind)
        return -1;
    for (size_t i = 0; i < sizeof(pod_labels) / sizeof(pod_labels[0]); i++) {
        const char *value = jx_str(remote_job, pod_labels[i].value);
        if (strcmp(kind, pod_labels[i].kind) != 0 || !value || !*value)
            continue;
        int n = snprintf(out, cap, "%s=%s", pod_labels[i].label, value);
        return n > 0 && (size_t)n < cap ? 0 : -1;
    }
    /* a lone Pod (no group label): the remote job is the pod itself */
    if (strcmp(kind, "Pod") == 0 && jx_str(remote_job, "metadata.name"))
        return RC_PLACE_ITSELF;
    return -1;
}

long rc_place_wait_ms(const json_t *wl, const char *check, const char *now)
{
    const json_t *c = check ? rc_check_find(wl, check) : NULL;
    const char *st = jx_str(c, "state");
    long long since = rc_parse_time_ms(jx_str(c, "lastTransitionTime"));
    long long at = rc_parse_time_ms(now);
    if (!st || strcmp(st, "Ready") != 0 || since < 0 || at < 0)
        return 0;
    long long left = since + RC_PLACEMENT_DELAY_MS - at;
    return left > 0 ? (long)(left < RC_PLACEMENT_DELAY_MS ? left : RC_PLACEMENT_DELAY_MS) : 0;
}
