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

#include "fileio.h"
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
        if (k->gating != MK_GATE_MANAGED_BY || k->status_sync != MK_STATUS_WHOLE)
            continue;
        char *d = c->integrations[c->nintegrations++];
        size_t n = (size_t)snprintf(d, sizeof(c->integrations[0]), "%s/%s", k->group, k->kind);
        for (size_t j = strlen(k->group) + 1; j < n && j < sizeof(c->integrations[0]); j++)
            d[j] = (char)tolower((unsigned char)d[j]);
    }
    c->qps = 50;
    c->burst = 100;
    c->worker_qps = 50;
    c->worker_burst = 100;
    c->worker_timeout_ms = 15000;
    c->workers = 4;
    c->log_level = LOG_INFO;
    snprintf(c->metrics_addr, sizeof(c->metrics_addr), ":8080");
    snprintf(c->kubeconfig_dir, sizeof(c->kubeconfig_dir), "/etc/multikueue/kubeconfigs");
    c->resync_ms = 5 * 60 * 1000;
    c->probe_interval_ms = 5000;
    c->leader_elect = 1;
    snprintf(c->lease_name, sizeof(c->lease_name), "mkueue-reconciler");
    c->lease_duration_ms = 15000;
    c->renew_deadline_ms = 10000;
    c->retry_period_ms = 2000;
}

int rc_parse_duration(const char *s, long *ms)
{
    if (!s || !*s)
        return -1;
    if (strcmp(s, "0") == 0) {
        *ms = 0;
        return 0;
    }
    double total = 0;
    const char *p = s;
    while (*p) {
        /* digits with an optional fraction; no sign, no exponent */
        const char *q = p;
        while (isdigit((unsigned char)*q) || *q == '.')
            q++;
        if (q == p || q - p > 30)
            return -1;
        char num[32], *end;
        snprintf(num, sizeof(num), "%.*s", (int)(q - p), p);
        errno = 0;
        double v = strtod(num, &end);
        if (errno || *end)
            return -1;
        p = q;
        double unit;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1;
            p += 2;
        } else if (strncmp(p, "us", 2) == 0) {
            unit = 0.001;
            p += 2;
        } else if (*p == 'h') {
            unit = 3600000;
            p++;
        } else if (*p == 'm') {
            unit = 60000;
            p++;
        } else if (*p == 's') {
            unit = 1000;
            p++;
        } else {
            return -1; /* a unit is required, as in Go */
        }
        total += v * unit;
        if (total > (double)LONG_MAX / 2)
            return -1;
    }
    *ms = (long)(total + 0.5);
    return 0;
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
        snprintf(y->err, y->errlen, "YAML: %s at line %zu",
                 y->parser.problem ? y->parser.problem : "parse error",
                 y->parser.problem_mark.line + 1);
        return -1;
    }
    return 0;
}

/* Builds the node that starts with ev (consumed). */
static json_t *yconv_node(struct yconv *y, yaml_event_t *ev, int depth)
{
    if (++y->nodes > MAX_YAML_NODES || depth > MAX_YAML_DEPTH) {
        snprintf(y->err, y->errlen, "YAML: document too large or too deep");
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
            snprintf(y->err, y->errlen, "YAML: scalar is not valid UTF-8");
        return out;
    case YAML_ALIAS_EVENT:
        snprintf(y->err, y->errlen, "YAML: aliases are not supported");
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
                snprintf(y->err, y->errlen, "YAML: mapping keys must be scalars");
                yaml_event_delete(&e);
                goto fail;
            }
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)e.data.scalar.length,
                     (const char *)e.data.scalar.value);
            yaml_event_delete(&e);
            if (json_object_get(out, key)) {
                snprintf(y->err, y->errlen, "YAML: key %s appears twice", key);
                goto fail;
            }
            if (yconv_next(y, &e) < 0)
                goto fail;
            json_t *v = yconv_node(y, &e, depth + 1);
            if (!v || json_object_set_new(out, key, v) < 0)
                goto fail;
        }
    default:
        snprintf(y->err, y->errlen, "YAML: unexpected event");
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
        snprintf(err, errlen, "YAML: out of memory");
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
                snprintf(err, errlen, "YAML: one document expected");
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
        snprintf(err, errlen, "config: the document must be a mapping");
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

enum ktype { K_STR, K_DUR, K_INT, K_DBL, K_BOOL, K_MODE, K_DISPATCHER, K_LEVEL, K_LIST };

struct key {
    const char *file; /* dotted key in the file */
    const char *flag; /* flag name without "--" */
    enum ktype type;
    size_t off;
    size_t size; /* K_STR: buffer size */
    const char *help;
};

#define F(m) offsetof(struct rc_config, m), sizeof(((struct rc_config *)0)->m)
static const struct key keys[] = {
    {"origin", "origin", K_STR, F(origin), "value of label kueue.x-k8s.io/multikueue-origin"},
    {"namespace", "namespace", K_STR, F(namespace),
     "namespace of kubeconfig Secrets and the Lease"},
    {"mode", "mode", K_MODE, F(mode), "standalone (default) or with-kueue"},
    {"gcInterval", "gc-interval", K_DUR, F(gc_interval_ms),
     "remote garbage collection period (0 = off)"},
    {"workerLostTimeout", "worker-lost-timeout", K_DUR, F(worker_lost_timeout_ms),
     "how long a workload on a lost worker keeps running before re-dispatch"},
    {"dispatcher", "dispatcher", K_DISPATCHER, F(dispatcher), "AllAtOnce, Incremental or External"},
    {"incrementalDispatcher.stepSize", "incremental-step-size", K_INT, F(step_size),
     "Incremental: clusters added per round"},
    {"incrementalDispatcher.roundTimeout", "incremental-round", K_DUR, F(round_ms),
     "Incremental: length of a round"},
    {"integrations", "integrations", K_LIST, F(integrations),
     "job kinds, e.g. batch/job,jobset.x-k8s.io/jobset"},
    {"clientConnection.qps", "qps", K_DBL, F(qps), "manager API queries per second"},
    {"clientConnection.burst", "burst", K_INT, F(burst), "manager API burst"},
    {"workerConnection.qps", "worker-qps", K_DBL, F(worker_qps),
     "per-worker API queries per second"},
    {"workerConnection.burst", "worker-burst", K_INT, F(worker_burst), "per-worker API burst"},
    {"workerConnection.timeout", "worker-timeout", K_DUR, F(worker_timeout_ms),
     "per-request timeout towards workers (also bounds the reachability probe)"},
    {"workers", "workers", K_INT, F(workers), "reconcile threads"},
    {"logLevel", "log-level", K_LEVEL, F(log_level), "error, warn, info, debug or trace"},
    {"metricsAddress", "metrics-addr", K_STR, F(metrics_addr),
     "host:port of /metrics, /healthz, /readyz (0 = off)"},
    {"kubeconfig", "kubeconfig", K_STR, F(kubeconfig), "manager kubeconfig (default: in-cluster)"},
    {"kubeconfigDir", "kubeconfig-dir", K_STR, F(kubeconfig_dir),
     "allowed folder of Path-type kubeconfigs"},
    {"resyncPeriod", "resync-period", K_DUR, F(resync_ms),
     "informer resync and periodic reconcile"},
    {"probeInterval", "probe-interval", K_DUR, F(probe_interval_ms),
     "reachability probe of connected workers (0 = off)"},
    {"leaderElection.leaderElect", "leader-elect", K_BOOL, F(leader_elect),
     "elect a leader with a Lease"},
    {"leaderElection.leaseName", "lease-name", K_STR, F(lease_name), "name of the Lease"},
    {"leaderElection.leaseDuration", "lease-duration", K_DUR, F(lease_duration_ms),
     "lease duration"},
    {"leaderElection.renewDeadline", "renew-deadline", K_DUR, F(renew_deadline_ms),
     "renew deadline"},
    {"leaderElection.retryPeriod", "retry-period", K_DUR, F(retry_period_ms), "retry period"},
    {"leaderElection.identity", "identity", K_STR, F(identity),
     "holder identity (default hostname_random)"},
};
#undef F
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static int parse_bool(const char *s, int *out)
{
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "1") || !strcmp(s, "yes"))
        *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "0") || !strcmp(s, "no"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int set_dispatcher(struct rc_config *c, const char *v)
{
    if (!*v)
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

static int add_integrations(struct rc_config *c, const char *csv)
{
    c->nintegrations = 0;
    const char *p = csv;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && isspace((unsigned char)*p))
            p++, n--;
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n) {
            if (c->nintegrations == RC_MAX_KINDS || n >= sizeof(c->integrations[0]))
                return -1;
            snprintf(c->integrations[c->nintegrations++], sizeof(c->integrations[0]), "%.*s",
                     (int)n, p);
        }
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static int set_key(struct rc_config *c, const struct key *k, const char *v, char *err,
                   size_t errlen)
{
    char *field = (char *)c + k->off;
    char *end;
    switch (k->type) {
    case K_STR:
        if (strlen(v) >= k->size)
            goto bad;
        snprintf(field, k->size, "%s", v);
        return 0;
    case K_DUR:
        if (rc_parse_duration(v, (long *)field) < 0)
            goto bad;
        return 0;
    case K_INT: {
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || !*v || *end || n < 0 || n > INT_MAX)
            goto bad;
        *(int *)field = (int)n;
        return 0;
    }
    case K_DBL: {
        errno = 0;
        double d = strtod(v, &end);
        if (errno || !*v || *end)
            goto bad;
        memcpy(field, &d, sizeof(d)); /* field is a double member */
        return 0;
    }
    case K_BOOL:
        if (parse_bool(v, (int *)field) < 0)
            goto bad;
        return 0;
    case K_MODE:
        if (!strcmp(v, "standalone"))
            c->mode = RC_MODE_STANDALONE;
        else if (!strcmp(v, "with-kueue"))
            c->mode = RC_MODE_WITH_KUEUE;
        else
            goto bad;
        return 0;
    case K_DISPATCHER:
        if (set_dispatcher(c, v) < 0)
            goto bad;
        return 0;
    case K_LEVEL:
        if (log_parse_level(v, &c->log_level) < 0)
            goto bad;
        return 0;
    case K_LIST:
        if (add_integrations(c, v) < 0)
            goto bad;
        return 0;
    }
bad:
    snprintf(err, errlen, "%s: invalid value \"%s\"", k->file, v);
    return -1;
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
        const struct key *k = NULL;
        for (size_t i = 0; i < NKEYS; i++)
            if (!strcmp(keys[i].file, path))
                k = &keys[i];
        if (json_is_object(v) && !k) {
            if (apply_object(c, v, path, err, errlen) < 0)
                return -1;
            continue;
        }
        if (!k) {
            snprintf(err, errlen, "config: unknown key %s", path);
            return -1;
        }
        if (k->type == K_LIST && json_is_array(v)) {
            char csv[RC_MAX_KINDS * 130] = "";
            size_t i;
            json_t *item;
            json_array_foreach(v, i, item)
            {
                if (!json_is_string(item) || i >= RC_MAX_KINDS) {
                    snprintf(err, errlen, "%s: a list of at most %d names expected", path,
                             RC_MAX_KINDS);
                    return -1;
                }
                if (strchr(json_string_value(item), ','))
                    goto badlist;
                strncat(csv, i ? "," : "", sizeof(csv) - strlen(csv) - 1);
                strncat(csv, json_string_value(item), sizeof(csv) - strlen(csv) - 1);
            }
            if (set_key(c, k, csv, err, errlen) < 0)
                return -1;
            continue;
        badlist:
            snprintf(err, errlen, "%s: names cannot contain ','", path);
            return -1;
        }
        if (!json_is_string(v)) {
            snprintf(err, errlen, "config: %s must be a scalar", path);
            return -1;
        }
        if (set_key(c, k, json_string_value(v), err, errlen) < 0)
            return -1;
    }
    return 0;
}

int rc_config_apply_yaml(struct rc_config *c, const char *yaml, size_t len, char *err,
                         size_t errlen)
{
    if (len > MAX_CONFIG_BYTES) {
        snprintf(err, errlen, "config: larger than %d bytes", MAX_CONFIG_BYTES);
        return -1;
    }
    json_t *doc = yaml_to_json(yaml, len, err, errlen);
    if (!doc)
        return -1;
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
        snprintf(err, errlen, "config %s: %s", path, strerror(-rc));
        return -1;
    }
    rc = rc_config_apply_yaml(c, data, len, err, errlen);
    free(data);
    return rc;
}

void rc_config_usage(void *file)
{
    FILE *f = file;
    fprintf(f, "usage: mkueue-reconciler [--config FILE] [flags]\n\nflags (override the file):\n");
    fprintf(f, "  --%-24s %s\n", "config FILE", "YAML config file (keys in README)");
    for (size_t i = 0; i < NKEYS; i++)
        fprintf(f, "  --%-24s %s [%s]\n", keys[i].flag, keys[i].help, keys[i].file);
    fprintf(f, "  --%-24s %s\n", "help", "this text");
    fprintf(f, "  --%-24s %s\n", "version", "print the version");
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
            snprintf(err, errlen, "--config needs a value");
            return -1;
        }
        if (file) {
            snprintf(c->config_file, sizeof(c->config_file), "%s", file);
            if (rc_config_load_file(c, file, err, errlen) < 0)
                return -1;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument %s", a);
            return -1;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        if (n == 6 && !strncmp(name, "config", 6)) {
            if (!eq)
                i++;
            continue;
        }
        const struct key *k = NULL;
        for (size_t j = 0; j < NKEYS; j++)
            if (strlen(keys[j].flag) == n && !strncmp(keys[j].flag, name, n))
                k = &keys[j];
        if (!k) {
            snprintf(err, errlen, "unknown flag --%.*s", (int)n, name);
            return -1;
        }
        const char *v;
        if (eq)
            v = eq + 1;
        else if (k->type == K_BOOL && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)))
            v = "true";
        else if (i + 1 < argc)
            v = argv[++i];
        else {
            snprintf(err, errlen, "--%s needs a value", k->flag);
            return -1;
        }
        if (set_key(c, k, v, err, errlen) < 0) {
            snprintf(err, errlen, "--%s: invalid value \"%s\"", k->flag, v);
            return -1;
        }
    }
    return 0;
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
        snprintf(err, errlen, "origin \"%s\" is not a valid label value", c->origin);
        return -1;
    }
    if (!*c->namespace) {
        snprintf(err, errlen, "namespace must not be empty");
        return -1;
    }
    if (c->step_size < 1) {
        snprintf(err, errlen, "incrementalDispatcher.stepSize must be at least 1");
        return -1;
    }
    if (c->round_ms < 1000) {
        snprintf(err, errlen, "incrementalDispatcher.roundTimeout must be at least 1s");
        return -1;
    }
    if (c->workers < 1 || c->workers > 64) {
        snprintf(err, errlen, "workers must be between 1 and 64");
        return -1;
    }
    if (c->qps <= 0 || c->worker_qps <= 0 || c->burst < 1 || c->worker_burst < 1) {
        snprintf(err, errlen, "qps and burst must be positive");
        return -1;
    }
    if (c->worker_timeout_ms < 500) {
        snprintf(err, errlen, "workerConnection.timeout must be at least 500ms");
        return -1;
    }
    if (c->resync_ms < 1000) {
        snprintf(err, errlen, "resyncPeriod must be at least 1s");
        return -1;
    }
    if (c->leader_elect &&
        (c->retry_period_ms <= 0 || c->renew_deadline_ms <= c->retry_period_ms ||
         c->lease_duration_ms <= c->renew_deadline_ms || c->lease_duration_ms < 1000)) {
        snprintf(err, errlen,
                 "leaderElection: need retryPeriod < renewDeadline < leaseDuration (>= 1s)");
        return -1;
    }
    if (c->nintegrations == 0) {
        snprintf(err, errlen, "integrations: at least one job kind is needed");
        return -1;
    }
    for (int i = 0; i < c->nintegrations; i++) {
        char why[256];
        if (!rc_integration_kind(c->integrations[i], why, sizeof(why))) {
            snprintf(err, errlen, "integrations: %s", why);
            return -1;
        }
    }
    return 0;
}

const struct mk_kind *rc_integration_kind(const char *name, char *why, size_t whylen)
{
    const char *slash = strchr(name, '/');
    if (!slash || slash == name || !slash[1]) {
        snprintf(why, whylen, "\"%s\" is not <group>/<kind> (e.g. batch/job)", name);
        return NULL;
    }
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        if (strlen(k->group) != (size_t)(slash - name) || strncmp(k->group, name, slash - name))
            continue;
        if (strcasecmp(k->kind, slash + 1) != 0)
            continue;
        if (k->gating != MK_GATE_MANAGED_BY || k->status_sync != MK_STATUS_WHOLE) {
            snprintf(why, whylen, "%s is not supported by the reconciler yet (pod-based kind)",
                     name);
            return NULL;
        }
        return k;
    }
    snprintf(why, whylen, "unknown job kind %s", name);
    return NULL;
}
