#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "review.h"

void wh_config_usage(FILE *f)
{
    fprintf(
        f,
        "usage: mkueue-webhook [flags]\n"
        "\n"
        "Admission webhook of mkueue: defaults managedBy (or the pod gate) for jobs of\n"
        "MultiKueue queues and checks their queue preconditions on the manager and on\n"
        "the workers, from in-memory caches.\n"
        "\n"
        "  --kubeconfig PATH          kubeconfig of the manager (trusted); default in-cluster\n"
        "  --context NAME             context of --kubeconfig; default current-context\n"
        "  --namespace NS             mkueue's namespace (kubeconfig Secrets); default "
        "mkueue-system\n"
        "  --kubeconfig-dir DIR       folder Path-type MultiKueueCluster kubeconfigs must be\n"
        "                             under; default /etc/multikueue/kubeconfigs, \"\" "
        "refuses them\n"
        "  --cert-dir DIR             serving tls.crt and tls.key; default\n"
        "                             /tmp/k8s-webhook-server/serving-certs (reloaded when "
        "they change)\n"
        "  --tls-cert FILE            serving certificate (overrides --cert-dir)\n"
        "  --tls-key FILE             serving key (overrides --cert-dir)\n"
        "  --bind-address ADDR        HTTPS address; default 0.0.0.0\n"
        "  --port N                   HTTPS port; default 9443\n"
        "  --metrics-bind-address A   /metrics, /healthz, /readyz address; default 0.0.0.0\n"
        "  --metrics-port N           plain-HTTP port of those; default 8080\n"
        "  --health-bind-address A    address of the probe listener; default 0.0.0.0\n"
        "  --health-port N            /healthz and /readyz on their own listener too, which\n"
        "                             load on the other ports cannot starve; default 0 (none)\n"
        "  --threads N                server threads; default 2\n"
        "  --max-connections N        open connections at most; default 256\n"
        "  --max-connections-per-ip N from one address at most; default 64\n"
        "  --idle-timeout S           a connection must send a request line within S seconds\n"
        "                             of accept or of its last answer; default 30\n"
        "  --request-timeout S        headers, body and answer of a request within S seconds\n"
        "                             of its request line, however slowly it trickles; "
        "default 15\n"
        "  --max-body BYTES           AdmissionReview size cap (413 above); default 3145728\n"
        "  --max-decoded-bytes BYTES  decoded size of one review, estimated before decoding\n"
        "                             (400 above); default 25165824\n"
        "  --max-inflight-bytes BYTES bodies and decoded reviews of all requests at once\n"
        "                             (429 above); default 50331648, at least --max-body +\n"
        "                             --max-decoded-bytes\n"
        "  --log-level L              error|warn|info|debug|trace; default info\n" WH_CERTMGR_USAGE
        "  --help, --version\n");
}

static int parse_uint(const char *v, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (!v || !*v || *v == '-')
        return -1;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || n > max)
        return -1;
    *out = n;
    return 0;
}

int wh_config_parse(int argc, char **argv, struct wh_config *c, FILE *out, char *err, size_t errlen)
{
    *c = (struct wh_config){
        .ns = "mkueue-system",
        .cert_dir = "/tmp/k8s-webhook-server/serving-certs",
        .bind = "0.0.0.0",
        .port = 9443,
        .metrics_bind = "0.0.0.0",
        .metrics_port = 8080,
        .health_bind = "0.0.0.0",
        .kubeconfig_dir = "/etc/multikueue/kubeconfigs",
        .threads = 2,
        .max_connections = 256,
        .max_per_ip = 64,
        .idle_timeout_s = 30,
        .request_timeout_s = 15,
        .max_body = WH_MAX_BODY,
        .max_decoded = WH_MAX_DECODED,
        .max_inflight = WH_MAX_INFLIGHT,
        .log_level = LOG_INFO,
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            wh_config_usage(out);
            return 1;
        }
        if (strcmp(a, "--version") == 0) {
            fprintf(out, "mkueue-webhook %s\n", MKUEUE_VERSION);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument %s", a);
            return -1;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        const char *val;
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        if (n >= sizeof(name)) {
            snprintf(err, errlen, "unknown flag %.64s", a);
            return -1;
        }
        memcpy(name, a, n);
        name[n] = '\0';
        const char *cv = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        int cr = cv ? wh_certmgr_flag(&c->certmgr, &c->cert_sans, name, cv, err, errlen) : 0;
        if (cr < 0)
            return -1;
        if (cr == 1) {
            i += eq ? 0 : 1;
            continue;
        }
        static const char *const known[] = {
            "--kubeconfig",
            "--context",
            "--namespace",
            "--kubeconfig-dir",
            "--cert-dir",
            "--tls-cert",
            "--tls-key",
            "--bind-address",
            "--metrics-bind-address",
            "--log-level",
            "--port",
            "--metrics-port",
            "--threads",
            "--max-connections",
            "--idle-timeout",
            "--request-timeout",
            "--max-body",
            "--health-bind-address",
            "--health-port",
            "--max-connections-per-ip",
            "--max-decoded-bytes",
            "--max-inflight-bytes",
        };
        size_t f;
        for (f = 0; f < sizeof(known) / sizeof(known[0]); f++)
            if (strcmp(name, known[f]) == 0)
                break;
        if (f == sizeof(known) / sizeof(known[0])) {
            snprintf(err, errlen, "unknown flag %s", name);
            return -1;
        }
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            snprintf(err, errlen, "flag %s needs a value", name);
            return -1;
        }
        unsigned long long u = 0;
        const char **str = NULL;
        if (strcmp(name, "--kubeconfig") == 0)
            str = &c->kubeconfig;
        else if (strcmp(name, "--context") == 0)
            str = &c->context;
        else if (strcmp(name, "--namespace") == 0)
            str = &c->ns;
        else if (strcmp(name, "--kubeconfig-dir") == 0)
            str = &c->kubeconfig_dir;
        else if (strcmp(name, "--cert-dir") == 0)
            str = &c->cert_dir;
        else if (strcmp(name, "--tls-cert") == 0)
            str = &c->tls_cert;
        else if (strcmp(name, "--tls-key") == 0)
            str = &c->tls_key;
        else if (strcmp(name, "--bind-address") == 0)
            str = &c->bind;
        else if (strcmp(name, "--metrics-bind-address") == 0)
            str = &c->metrics_bind;
        else if (strcmp(name, "--health-bind-address") == 0)
            str = &c->health_bind;
        if (str) {
            *str = val;
            continue;
        }
        if (strcmp(name, "--log-level") == 0) {
            if (log_parse_level(val, &c->log_level) < 0) {
                snprintf(err, errlen, "--log-level: unknown level %.32s", val);
                return -1;
            }
            continue;
        }
        struct {
            const char *flag;
            unsigned long long min, max;
        } nums[] = {
            {"--port", 0, 65535},
            {"--metrics-port", 0, 65535},
            {"--threads", 1, 64},
            {"--max-connections", 1, 100000},
            {"--idle-timeout", 1, 3600},
            {"--request-timeout", 1, 3600},
            {"--max-body", 1024, 64ull * 1024 * 1024},
            {"--health-port", 0, 65535},
            {"--max-connections-per-ip", 1, 100000},
            {"--max-decoded-bytes", 64ull * 1024, 1024ull * 1024 * 1024},
            {"--max-inflight-bytes", 64ull * 1024, 4096ull * 1024 * 1024},
        };
        size_t k;
        for (k = 0; k < sizeof(nums) / sizeof(nums[0]); k++)
            if (strcmp(name, nums[k].flag) == 0)
                break;
        if (k == sizeof(nums) / sizeof(nums[0])) {
            snprintf(err, errlen, "unknown flag %s", name);
            return -1;
        }
        if (parse_uint(val, nums[k].max, &u) < 0 || u < nums[k].min) {
            snprintf(err, errlen, "%s: expected an integer from %llu to %llu, got %.32s", name,
                     nums[k].min, nums[k].max, val);
            return -1;
        }
        switch (k) {
        case 0:
            c->port = (int)u;
            break;
        case 1:
            c->metrics_port = (int)u;
            break;
        case 2:
            c->threads = (unsigned)u;
            break;
        case 3:
            c->max_connections = (unsigned)u;
            break;
        case 4:
            c->idle_timeout_s = (unsigned)u;
            break;
        case 5:
            c->request_timeout_s = (unsigned)u;
            break;
        case 6:
            c->max_body = (size_t)u;
            break;
        case 7:
            c->health_port = (int)u;
            break;
        case 8:
            c->max_per_ip = (unsigned)u;
            break;
        case 9:
            c->max_decoded = (size_t)u;
            break;
        default:
            c->max_inflight = (size_t)u;
            break;
        }
    }
    c->certmgr.namespace = c->ns;
    c->certmgr.cert_dir = c->cert_dir;
    if (c->certmgr.secret_name && (c->tls_cert || c->tls_key)) {
        snprintf(err, errlen, "--cert-secret writes --cert-dir: drop --tls-cert and --tls-key");
        return -1;
    }
    /* the largest review must fit the budget with its body */
    if (c->max_inflight < c->max_body + c->max_decoded) {
        snprintf(err, errlen,
                 "--max-inflight-bytes %zu is less than --max-body + --max-decoded-bytes (%zu)",
                 c->max_inflight, c->max_body + c->max_decoded);
        return -1;
    }
    if (c->kubeconfig_dir && !*c->kubeconfig_dir)
        c->kubeconfig_dir = NULL;
    if (!*c->ns) {
        snprintf(err, errlen, "--namespace must not be empty");
        return -1;
    }
    int w1 = c->tls_cert ? snprintf(c->cert_path, sizeof(c->cert_path), "%s", c->tls_cert)
                         : snprintf(c->cert_path, sizeof(c->cert_path), "%s/tls.crt", c->cert_dir);
    int w2 = c->tls_key ? snprintf(c->key_path, sizeof(c->key_path), "%s", c->tls_key)
                        : snprintf(c->key_path, sizeof(c->key_path), "%s/tls.key", c->cert_dir);
    if (w1 < 0 || w2 < 0 || (size_t)w1 >= sizeof(c->cert_path) ||
        (size_t)w2 >= sizeof(c->key_path)) {
        snprintf(err, errlen, "certificate path too long");
        return -1;
    }
    return 0;
}
