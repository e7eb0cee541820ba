#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "errf.h"
#include "fileio.h"
#include "flags.h"
#include "jsonx.h"
#include "kinds/kinds.h"

#define MAX_CONFIG_BYTES (1024 * 1024)
#define MAX_YAML_DEPTH   16
#define MAX_YAML_NODES   4096

void rc_config_defaults(struct rc_config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->origin, sizeof(c->origin), "multikueue");
    snprintf(c->namespace, sizeof(c->namespace), "mkueue-system");
    c->mode = RC_MODE_STANDALONE;
    c->gc_interval_ms = 60 * 1000;
    c->worker_lost_timeout_ms = 15 * 60 * 1000;
    c->dispatcher = RC_DISPATCH_ALL_AT_ONCE;
    snprintf(c->dispatcher_name, sizeof(c->dispatcher_name), "%s", RC_DISPATCHER_ALL_AT_ONCE_NAME);
    c->step_size = 3;
    c->round_ms = 5 * 60 * 1000;
    /* every kind the reconciler can dispatch; kinds whose CRD the manager
     * does not serve are dropped at start */
    c->nintegrations = 0;
    for (size_t i = 0; i < mk_kinds_count() && c->nintegrations < RC_MAX_KINDS; i++) {
        const struct mk_kind *k = mk_kind_at(i);
        if (!rc_kind_dispatchable(k))
            continue;
        char *d = c->integrations[c->nintegrations++];
        /* Kueue's framework names: "batch/job", but "pod" and "statefulset"
         * for the core and apps groups */
        int bare = !k->group[0] || strcmp(k->group, "apps") == 0;
        size_t skip = bare ? 0 : strlen(k->group) + 1;
        size_t n = (size_t)snprintf(d, sizeof(c->integrations[0]), "%s%s%s", bare ? "" : k->group,
                                    bare ? "" : "/", k->kind);
        for (size_t j = skip; j < n && j < sizeof(c->integrations[0]); j++)
            d[j] = (char)tolower((unsigned char)d[j]);
    }
    c->qps = 50;
    c->burst = 100;
    c->worker_qps = 50;
    c->worker_burst = 100;
    c->worker_timeout_ms = 15000;
    c->workers = 8;
    c->log_level = LOG_INFO;
    snprintf(c->metrics_addr, sizeof(c->metrics_addr), ":8080");
    snprintf(c->kubeconfig_dir, sizeof(c->kubeconfig_dir), "/etc/multikueue/kubeconfigs");
    c->resync_ms = 5 * 60 * 1000;
    c->probe_interval_ms = 5000;
    c->leader_elect = 1;
    c->data_aware = 1;
    snprintf(c->lease_name, sizeof(c->lease_name), "mkueue-reconciler");
    c->lease_duration_ms = 15000;
    c->renew_deadline_ms = 10000;
    c->retry_period_ms = 2000;
}

int rc_parse_duration(const char *s, long *ms)
{
    return fl_parse_duration(s, ms);
}

/* ---- YAML to JSON (all scalars as strings) -------------------------------- */

struct yconv {
    yaml_parser_t parser;
    int nodes;
    char *err;
    size_t errlen;
};

static json_t *yconv_node(struct yconv *y, yaml_event_t *ev, int depth);

static int yconv_next(struct yconv *y, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&y->parser, ev)) {
        return errf(y->err, y->errlen, MK_ERR_INVAL, "YAML: %s at line %zu",
                    y->parser.problem ? y->parser.problem : "parse error",
                    y->parser.problem_mark.line + 1);
    }
    return 0;
}

/* Builds the node that starts with ev (consumed). */
static json_t *yconv_node(struct yconv *y, yaml_event_t *ev, int depth)
{
    if (++y->nodes > MAX_YAML_NODES || depth > MAX_YAML_DEPTH) {
        errf(y->err, y->errlen, MK_ERR_INVAL, "YAML: document too large or too deep");
        yaml_event_delete(ev);
        return NULL;
    }
    json_t *out = NULL;
    yaml_event_t e;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        out = json_stringn((const char *)ev->data.scalar.value, ev->data.scalar.length);
        yaml_event_delete(ev);
        if (!out)
            errf(y->err, y->errlen, MK_ERR_INVAL, "YAML: scalar is not valid UTF-8");
        return out;
    case YAML_ALIAS_EVENT:
        errf(y->err, y->errlen, MK_ERR_INVAL, "YAML: aliases are not supported");
        yaml_event_delete(ev);
        return NULL;
    case YAML_SEQUENCE_START_EVENT:
        yaml_event_delete(ev);
        out = json_array();
        for (;;) {
            if (yconv_next(y, &e) < 0)
                goto fail;
            if (e.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&e);
                return out;
            }
            json_t *v = yconv_node(y, &e, depth + 1);
            if (!v || json_array_append_new(out, v) < 0)
                goto fail;
        }
    case YAML_MAPPING_START_EVENT:
        yaml_event_delete(ev);
        out = json_object();
        for (;;) {
            if (yconv_next(y, &e) < 0)
                goto fail;
            if (e.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&e);
                return out;
            }
            if (e.type != YAML_SCALAR_EVENT) {
                errf(y->err, y->errlen, MK_ERR_INVAL, "YAML: mapping keys must be scalars");
                yaml_event_delete(&e);
                goto fail;
            }
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)e.data.scalar.length,
                     (const char *)e.data.scalar.value);
            yaml_event_delete(&e);
            if (json_object_get(out, key)) {
                errf(y->err, y->errlen, MK_ERR_INVAL, "YAML: key %s appears twice", key);
                goto fail;
            }
            if (yconv_next(y, &e) < 0)
                goto fail;
            json_t *v = yconv_node(y, &e, depth + 1);
            if (!v || json_object_set_new(out, key, v) < 0)
                goto fail;
        }
    default:
        errf(y->err, y->errlen, MK_ERR_INVAL, "YAML: unexpected event");
        yaml_event_delete(ev);
        return NULL;
    }
fail:
    json_decref(out);
    return NULL;
}

/* The document as JSON (scalars as strings; an empty document is {}). */
static json_t *yaml_to_json(const char *yaml, size_t len, char *err, size_t errlen)
{
    struct yconv y = {.err = err, .errlen = errlen};
    json_t *root = NULL;
    yaml_event_t ev;
    if (!yaml_parser_initialize(&y.parser)) {
        errf(err, errlen, MK_ERR_NOMEM, "YAML: out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)yaml, len);
    for (;;) {
        if (yconv_next(&y, &ev) < 0)
            goto fail;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (ev.type == YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            if (root) {
                errf(err, errlen, MK_ERR_INVAL, "YAML: one document expected");
                goto fail;
            }
            if (yconv_next(&y, &ev) < 0)
                goto fail;
            if (ev.type == YAML_DOCUMENT_END_EVENT) {
                yaml_event_delete(&ev);
                root = json_object();
                continue;
            }
            root = yconv_node(&y, &ev, 0);
            if (!root)
                goto fail;
            continue;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&y.parser);
    if (!root)
        root = json_object();
    if (json_is_string(root) && json_string_length(root) == 0) {
        json_decref(root);
        root = json_object();
    }
    if (!json_is_object(root)) {
        errf(err, errlen, MK_ERR_INVAL, "config: the document must be a mapping");
        json_decref(root);
        return NULL;
    }
    return root;
fail:
    yaml_parser_delete(&y.parser);
    json_decref(root);
    return NULL;
}

/* ---- setting one key ------------------------------------------------------ */

static int set_mode(void *field, const char *v)
{
    enum rc_mode *m = field;
    if (!strcmp(v, "standalone"))
        *m = RC_MODE_STANDALONE;
    else if (!strcmp(v, "with-kueue"))
        *m = RC_MODE_WITH_KUEUE;
    else
        return -1;
    return 0;
}

/* field: the whole struct rc_config (the kind and the name as given) */
static int set_dispatcher(void *field, const char *v)
{
    struct rc_config *c = field;
    if (!*v || strlen(v) >= sizeof(c->dispatcher_name))
        return -1;
    if (!strcmp(v, "AllAtOnce") || !strcmp(v, RC_DISPATCHER_ALL_AT_ONCE_NAME)) {
        c->dispatcher = RC_DISPATCH_ALL_AT_ONCE;
        v = RC_DISPATCHER_ALL_AT_ONCE_NAME;
    } else if (!strcmp(v, "Incremental") || !strcmp(v, RC_DISPATCHER_INCREMENTAL_NAME)) {
        c->dispatcher = RC_DISPATCH_INCREMENTAL;
        v = RC_DISPATCHER_INCREMENTAL_NAME;
    } else {
        c->dispatcher = RC_DISPATCH_EXTERNAL; /* as Kueue: any other name */
    }
    snprintf(c->dispatcher_name, sizeof(c->dispatcher_name), "%s", v);
    return 0;
}

/* Flags; .key is the dotted key of the same setting in the config file. */
#define R(m)  FL_F(struct rc_config, m)
#define COUNT 0, INT_MAX /* FL_INT .min, .max: a count */
static const struct fl_flag keys[] = {
    {"config", FL_BUF, R(config_file), .arg = "FILE", .help = "YAML config file (keys in README)"},
    {"origin", FL_BUF, R(origin), .help = "value of label kueue.x-k8s.io/multikueue-origin",
     .key = "origin"},
    {"namespace", FL_BUF, R(namespace), .help = "namespace of kubeconfig Secrets and the Lease",
     .key = "namespace"},
    {"mode", FL_FUNC, R(mode), .set = set_mode, .help = "standalone (default) or with-kueue",
     .key = "mode"},
    {"gc-interval", FL_DUR, R(gc_interval_ms), .help = "remote garbage collection period (0 = off)",
     .key = "gcInterval"},
    {"worker-lost-timeout", FL_DUR, R(worker_lost_timeout_ms),
     .help = "how long a workload on a lost worker keeps running before re-dispatch",
     .key = "workerLostTimeout"},
    {"dispatcher", FL_FUNC, 0, sizeof(struct rc_config), .set = set_dispatcher,
     .help = "AllAtOnce, Incremental or External", .key = "dispatcher"},
    {"incremental-step-size", FL_INT, R(step_size), COUNT,
     .help = "Incremental: clusters added per round", .key = "incrementalDispatcher.stepSize"},
    {"incremental-round", FL_DUR, R(round_ms), .help = "Incremental: length of a round",
     .key = "incrementalDispatcher.roundTimeout"},
    {"integrations", FL_LIST, R(integrations), .max = RC_MAX_KINDS,
     .aux = offsetof(struct rc_config, nintegrations),
     .help = "job kinds, e.g. batch/job,jobset.x-k8s.io/jobset", .key = "integrations"},
    {"external-frameworks", FL_LIST, R(external), .max = RC_MAX_EXTERNAL,
     .aux = offsetof(struct rc_config, nexternal), .arg = "LIST",
     .help = "external kinds: Kind.version.group[;resource=R][;podTemplatePath=P][;countPath=C]",
     .key = "externalFrameworks"},
    {"qps", FL_DBL, R(qps), .help = "manager API queries per second",
     .key = "clientConnection.qps"},
    {"burst", FL_INT, R(burst), COUNT, .help = "manager API burst",
     .key = "clientConnection.burst"},
    {"worker-qps", FL_DBL, R(worker_qps), .help = "per-worker API queries per second",
     .key = "workerConnection.qps"},
    {"worker-burst", FL_INT, R(worker_burst), COUNT, .help = "per-worker API burst",
     .key = "workerConnection.burst"},
    {"worker-timeout", FL_DUR, R(worker_timeout_ms),
     .help = "per-request timeout towards workers (also bounds the reachability probe)",
     .key = "workerConnection.timeout"},
    {"workers", FL_INT, R(workers), COUNT,
     .help = "reconcile threads (and half as many for jobs' keys, their own lane)",
     .key = "workers"},
    {"log-level", FL_FUNC, R(log_level), .set = fl_log_level,
     .help = "error, warn, info, debug or trace", .key = "logLevel"},
    {"metrics-addr", FL_BUF, R(metrics_addr),
     .help = "host:port of /metrics, /healthz, /readyz (0 = off)", .key = "metricsAddress"},
    {"kubeconfig", FL_BUF, R(kubeconfig), .help = "manager kubeconfig (default: in-cluster)",
     .key = "kubeconfig"},
    {"kubeconfig-dir", FL_BUF, R(kubeconfig_dir), .help = "allowed folder of Path-type kubeconfigs",
     .key = "kubeconfigDir"},
    {"resync-period", FL_DUR, R(resync_ms), .help = "informer resync and periodic reconcile",
     .key = "resyncPeriod"},
    {"probe-interval", FL_DUR, R(probe_interval_ms),
     .help = "reachability probe of connected workers (0 = off)", .key = "probeInterval"},
    {"data-aware-dispatch", FL_BOOL, R(data_aware),
     .help = "copies go only to workers having the PVCs, ConfigMaps, Secrets and "
             "ServiceAccount the job references, while one has them all",
     .key = "dataAwareDispatch"},
    {"short-workload-names", FL_BOOL, R(short_workload_names),
     .help = "Workload names of at most 63 characters, as Kueue's ShortWorkloadNames feature "
             "gate (with-kueue: as the manager's Kueue names them)",
     .key = "shortWorkloadNames"},
    {"leader-elect", FL_BOOL, R(leader_elect), .help = "elect a leader with a Lease",
     .key = "leaderElection.leaderElect"},
    {"lease-name", FL_BUF, R(lease_name), .help = "name of the Lease",
     .key = "leaderElection.leaseName"},
    {"lease-duration", FL_DUR, R(lease_duration_ms), .help = "lease duration",
     .key = "leaderElection.leaseDuration"},
    {"renew-deadline", FL_DUR, R(renew_deadline_ms), .help = "renew deadline",
     .key = "leaderElection.renewDeadline"},
    {"retry-period", FL_DUR, R(retry_period_ms), .help = "retry period",
     .key = "leaderElection.retryPeriod"},
    {"identity", FL_BUF, R(identity), .help = "holder identity (default hostname_random)",
     .key = "leaderElection.identity"},
};
#undef COUNT
#undef R
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* A file key's value, the error naming the key. */
static int set_key(struct rc_config *c, const struct fl_flag *k, const char *v, char *err,
                   size_t errlen)
{
    char why[256];
    if (fl_set(k, c, v, why, sizeof(why)) < 0)
        return errf(err, errlen, MK_ERR_INVAL, "%s: %s", k->key, why);
    return 0;
}

/* An externalFrameworks item given as Kueue's mapping ({name: Kind.version.group})
 * with mkueue's keys, as the flag's string; NULL when malformed. */
static const char *external_item(const json_t *item, char *out, size_t outlen)
{
    static const char *const opt[] = {"resource", "podTemplatePath", "countPath"};
    const char *name = jx_str(item, "name");
    if (!name || json_object_size(item) > 4)
        return NULL;
    size_t w = (size_t)snprintf(out, outlen, "%s", name), used = 1;
    for (size_t i = 0; i < 3 && w < outlen; i++) {
        const char *v = jx_str(item, opt[i]);
        if (v) {
            w += (size_t)snprintf(out + w, outlen - w, ";%s=%s", opt[i], v);
            used++;
        }
    }
    return w < outlen && used == json_object_size(item) ? out : NULL;
}

/* A YAML list for an FL_LIST key: strings (or externalFrameworks mappings),
 * joined with commas for fl_set. */
static int apply_list(struct rc_config *c, const struct fl_flag *k, const json_t *v, char *err,
                      size_t errlen)
{
    char csv[RC_MAX_EXTERNAL * MK_EXTERNAL_SPEC_MAX + RC_MAX_KINDS * 130] = "";
    char one[MK_EXTERNAL_SPEC_MAX];
    size_t i, w = 0;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        const char *s = json_is_string(item) ? json_string_value(item) : NULL;
        if (!s && json_is_object(item) && k->aux == offsetof(struct rc_config, nexternal))
            s = external_item(item, one, sizeof(one));
        if (!s || i >= (size_t)k->max) {
            return errf(err, errlen, MK_ERR_INVAL, "%s: a list of at most %lld names expected",
                        k->key, k->max);
        }
        if (strchr(s, ','))
            return errf(err, errlen, MK_ERR_INVAL, "%s: names cannot contain ','", k->key);
        w += (size_t)snprintf(csv + w, sizeof(csv) - w, "%s%s", i ? "," : "", s);
        if (w >= sizeof(csv))
            return errf(err, errlen, MK_ERR_INVAL, "%s: the list is too long", k->key);
    }
    return set_key(c, k, csv, err, errlen);
}

static int apply_object(struct rc_config *c, json_t *obj, const char *prefix, char *err,
                        size_t errlen)
{
    const char *name;
    json_t *v;
    json_object_foreach(obj, name, v)
    {
        char path[256];
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", name);
        const struct fl_flag *k = NULL;
        for (size_t i = 0; i < NKEYS; i++)
            if (keys[i].key && !strcmp(keys[i].key, path))
                k = &keys[i];
        if (json_is_object(v) && !k) {
            if (apply_object(c, v, path, err, errlen) < 0)
                return MK_ERR_INVAL;
            continue;
        }
        if (!k) {
            return errf(err, errlen, MK_ERR_INVAL, "config: unknown key %s", path);
        }
        if (k->type == FL_LIST && json_is_array(v)) {
            if (apply_list(c, k, v, err, errlen) < 0)
                return MK_ERR_INVAL;
            continue;
        }
        if (!json_is_string(v)) {
            return errf(err, errlen, MK_ERR_INVAL, "config: %s must be a scalar", path);
        }
        if (set_key(c, k, json_string_value(v), err, errlen) < 0)
            return MK_ERR_INVAL;
    }
    return 0;
}

int rc_config_apply_yaml(struct rc_config *c, const char *yaml, size_t len, char *err,
                         size_t errlen)
{
    if (len > MAX_CONFIG_BYTES) {
        return errf(err, errlen, MK_ERR_INVAL, "config: larger than %d bytes", MAX_CONFIG_BYTES);
    }
    json_t *doc = yaml_to_json(yaml, len, err, errlen);
    if (!doc)
        return MK_ERR_INVAL;
    int rc = apply_object(c, doc, "", err, errlen);
    json_decref(doc);
    return rc;
}

int rc_config_load_file(struct rc_config *c, const char *path, char *err, size_t errlen)
{
    char *data = NULL;
    size_t len = 0;
    int rc = fio_read_file(path, MAX_CONFIG_BYTES, &data, &len);
    if (rc < 0) {
        return errf(err, errlen, rc, "config %s: %s", path, fio_strerror(rc));
    }
    rc = rc_config_apply_yaml(c, data, len, err, errlen);
    free(data);
    return rc;
}

void rc_config_usage(void *file)
{
    FILE *f = file;
    fprintf(f, "usage: mkueue-reconciler [--config FILE] [flags]\n\nflags (override the file; "
               "[its key]):\n");
    fl_usage(f, keys, NKEYS);
    fprintf(f, "  %-26s %s\n", "--help", "this text");
    fprintf(f, "  %-26s %s\n", "--version", "print the version");
}

int rc_config_from_args(struct rc_config *c, int argc, char **argv, char *err, size_t errlen)
{
    /* the config file first, so flags override it wherever they stand */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            rc_config_usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("mkueue-reconciler %s\n", MKUEUE_VERSION);
            return 1;
        }
        const char *file = NULL;
        if (!strncmp(a, "--config=", 9))
            file = a + 9;
        else if (!strcmp(a, "--config") && i + 1 < argc)
            file = argv[++i];
        else if (!strcmp(a, "--config")) {
            return errf(err, errlen, MK_ERR_INVAL, "--config needs a value");
        }
        if (file) {
            snprintf(c->config_file, sizeof(c->config_file), "%s", file);
            if (rc_config_load_file(c, file, err, errlen) < 0)
                return MK_ERR_INVAL;
        }
    }
    return fl_parse(keys, NKEYS, c, argc, argv, err, errlen);
}

/* A label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends. */
static int is_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
            return 0;
    return 1;
}

int rc_config_validate(const struct rc_config *c, char *err, size_t errlen)
{
    if (!is_label_value(c->origin)) {
        return errf(err, errlen, MK_ERR_INVAL, "origin \"%s\" is not a valid label value",
                    c->origin);
    }
    if (!*c->namespace) {
        return errf(err, errlen, MK_ERR_INVAL, "namespace must not be empty");
    }
    if (c->step_size < 1) {
        return errf(err, errlen, MK_ERR_INVAL, "incrementalDispatcher.stepSize must be at least 1");
    }
    if (c->round_ms < 1000) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "incrementalDispatcher.roundTimeout must be at least 1s");
    }
    if (c->workers < 1 || c->workers > RC_WORKERS_MAX) {
        return errf(err, errlen, MK_ERR_INVAL, "workers must be between 1 and %d", RC_WORKERS_MAX);
    }
    if (c->qps <= 0 || c->worker_qps <= 0 || c->burst < 1 || c->worker_burst < 1) {
        return errf(err, errlen, MK_ERR_INVAL, "qps and burst must be positive");
    }
    if (c->worker_timeout_ms < 500) {
        return errf(err, errlen, MK_ERR_INVAL, "workerConnection.timeout must be at least 500ms");
    }
    if (c->resync_ms < 1000) {
        return errf(err, errlen, MK_ERR_INVAL, "resyncPeriod must be at least 1s");
    }
    if (c->leader_elect &&
        (c->retry_period_ms <= 0 || c->renew_deadline_ms <= c->retry_period_ms ||
         c->lease_duration_ms <= c->renew_deadline_ms || c->lease_duration_ms < 1000)) {
        return errf(err, errlen, MK_ERR_INVAL,
                    "leaderElection: need retryPeriod < renewDeadline < leaseDuration (>= 1s)");
    }
    if (c->nintegrations == 0) {
        return errf(err, errlen, MK_ERR_INVAL, "integrations: at least one job kind is needed");
    }
    for (int i = 0; i < c->nintegrations; i++) {
        char why[256];
        if (!rc_integration_kind(c->integrations[i], why, sizeof(why))) {
            return errf(err, errlen, MK_ERR_INVAL, "integrations: %s", why);
        }
    }
    for (int i = 0; i < c->nexternal; i++) {
        char why[512];
        if (mk_external_check(c->external[i], why, sizeof(why)) < 0)
            return errf(err, errlen, MK_ERR_INVAL, "externalFrameworks: %s", why);
    }
    return 0;
}

int rc_kind_dispatchable(const struct mk_kind *k)
{
    if (k->gating == MK_GATE_MANAGED_BY)
        return k->status_sync == MK_STATUS_WHOLE;
    /* Pods (alone or in groups; a Deployment's pods are Pods), the
     * StatefulSet as a whole, the LeaderWorkerSet one Workload per replica */
    return k->gating == MK_GATE_POD || strcmp(k->kind, "StatefulSet") == 0 ||
           strcmp(k->kind, "LeaderWorkerSet") == 0;
}

const struct mk_kind *rc_integration_kind(const char *name, char *why, size_t whylen)
{
    const char *slash = strchr(name, '/');
    if (slash && (slash == name || !slash[1])) {
        snprintf(why, whylen, "\"%s\" is not <group>/<kind> (e.g. batch/job)", name);
        return NULL;
    }
    /* Kueue names the core and apps kinds without their group: "pod",
     * "deployment", "statefulset" */
    size_t glen = slash ? (size_t)(slash - name) : 0;
    const char *kname = slash ? slash + 1 : name;
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        if (slash ? strlen(k->group) != glen || strncmp(k->group, name, glen)
                  : strcmp(k->group, "") != 0 && strcmp(k->group, "apps") != 0)
            continue;
        if (strcasecmp(k->kind, kname) != 0)
            continue;
        if (!rc_kind_dispatchable(k)) {
            snprintf(why, whylen, "%s is not supported by the reconciler yet (pod-based kind)",
                     name);
            return NULL;
        }
        return k;
    }
    if (!slash) {
        snprintf(why, whylen, "\"%s\" is not <group>/<kind> (e.g. batch/job) or pod", name);
        return NULL;
    }
    snprintf(why, whylen, "unknown job kind %s", name);
    return NULL;
}
