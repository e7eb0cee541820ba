#include "config.h"

#include <string.h>

#include "errf.h"
#include "flags.h"
#include "review.h"

#define W(m) FL_F(struct wh_config, m)
static const struct fl_flag flags[] = {
    {"kubeconfig", FL_STR, W(kubeconfig), .arg = "PATH",
     .help = "kubeconfig of the manager (trusted); default in-cluster"},
    {"context", FL_STR, W(context), .arg = "NAME",
     .help = "context of --kubeconfig; default current-context"},
    {"namespace", FL_STR, W(ns), .arg = "NS",
     .help = "mkueue's namespace (kubeconfig Secrets); default mkueue-system"},
    {"kubeconfig-dir", FL_STR, W(kubeconfig_dir), .arg = "DIR",
     .help = "folder Path-type MultiKueueCluster kubeconfigs must be\n"
             "under; default /etc/multikueue/kubeconfigs, \"\" refuses them"},
    {"cert-dir", FL_STR, W(cert_dir), .arg = "DIR",
     .help = "serving tls.crt and tls.key; default\n"
             "/tmp/k8s-webhook-server/serving-certs (reloaded when they change)"},
    {"tls-cert", FL_STR, W(tls_cert), .arg = "FILE",
     .help = "serving certificate (overrides --cert-dir)"},
    {"tls-key", FL_STR, W(tls_key), .arg = "FILE", .help = "serving key (overrides --cert-dir)"},
    {"bind-address", FL_STR, W(bind), .arg = "ADDR", .help = "HTTPS address; default 0.0.0.0"},
    {"port", FL_INT, W(port), .min = 0, .max = 65535, .arg = "N",
     .help = "HTTPS port; default 9443"},
    {"metrics-bind-address", FL_STR, W(metrics_bind), .arg = "A",
     .help = "/metrics, /healthz, /readyz address; default 0.0.0.0"},
    {"metrics-port", FL_INT, W(metrics_port), .min = 0, .max = 65535, .arg = "N",
     .help = "plain-HTTP port of those; default 8080"},
    {"health-bind-address", FL_STR, W(health_bind), .arg = "A",
     .help = "address of the probe listener; default 0.0.0.0"},
    {"health-port", FL_INT, W(health_port), .min = 0, .max = 65535, .arg = "N",
     .help = "/healthz and /readyz on their own listener too, which\n"
             "load on the other ports cannot starve; default 0 (none)"},
    {"threads", FL_INT, W(threads), .min = 1, .max = 64, .arg = "N",
     .help = "server threads; default 2"},
    {"max-connections", FL_INT, W(max_connections), .min = 1, .max = 100000, .arg = "N",
     .help = "open connections at most; default 256"},
    {"max-connections-per-ip", FL_INT, W(max_per_ip), .min = 1, .max = 100000, .arg = "N",
     .help = "from one address at most; default 64"},
    {"idle-timeout", FL_INT, W(idle_timeout_s), .min = 1, .max = 3600, .arg = "S",
     .help = "a connection must send a request line within S seconds\n"
             "of accept or of its last answer; default 30"},
    {"request-timeout", FL_INT, W(request_timeout_s), .min = 1, .max = 3600, .arg = "S",
     .help = "headers, body and answer of a request within S seconds\n"
             "of its request line, however slowly it trickles; default 15"},
    {"max-body", FL_INT, W(max_body), .min = 1024, .max = 64ll << 20, .arg = "BYTES",
     .help = "AdmissionReview size cap (413 above); default 3145728"},
    {"max-decoded-bytes", FL_INT, W(max_decoded), .min = 64ll << 10, .max = 1ll << 30,
     .arg = "BYTES",
     .help = "decoded size of one review, estimated before decoding\n"
             "(400 above); default 25165824"},
    {"max-inflight-bytes", FL_INT, W(max_inflight), .min = 64ll << 10, .max = 4ll << 30,
     .arg = "BYTES",
     .help = "bodies and decoded reviews of all requests at once\n"
             "(429 above); default 50331648, at least --max-body +\n"
             "--max-decoded-bytes"},
    {"log-level", FL_FUNC, W(log_level), .set = fl_log_level, .arg = "L",
     .help = "error|warn|info|debug|trace; default info"},
    {"external-frameworks", FL_LIST, W(external), .max = WH_MAX_EXTERNAL,
     .aux = offsetof(struct wh_config, nexternal), .arg = "LIST",
     .help = "external kinds handled, comma-separated:\n"
             "Kind.version.group[;resource=R][;podTemplatePath=P][;countPath=C]"},
    WH_CERTMGR_FLAGS(struct wh_config, certmgr, cert_sans),
};
#undef W

void wh_config_usage(FILE *f)
{
    fprintf(f, "usage: mkueue-webhook [flags]\n"
               "\n"
               "Admission webhook of mkueue: defaults managedBy (or the pod gate) for jobs of\n"
               "MultiKueue queues and checks their queue preconditions on the manager and on\n"
               "the workers, from in-memory caches.\n"
               "\n");
    fl_usage(f, flags, sizeof(flags) / sizeof(flags[0]));
    fprintf(f, "  --help, --version\n");
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
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            wh_config_usage(out);
            return 1;
        }
        if (strcmp(argv[i], "--version") == 0) {
            fprintf(out, "mkueue-webhook %s\n", MKUEUE_VERSION);
            return 1;
        }
    }
    if (fl_parse(flags, sizeof(flags) / sizeof(flags[0]), c, argc, argv, err, errlen) < 0)
        return MK_ERR_INVAL;
    for (int i = 0; i < c->nexternal; i++)
        if (mk_external_check(c->external[i], err, errlen) < 0)
            return MK_ERR_INVAL;
    c->certmgr.namespace = c->ns;
    c->certmgr.cert_dir = c->cert_dir;
    if (c->certmgr.secret_name && (c->tls_cert || c->tls_key))
        return errf(err, errlen, MK_ERR_INVAL,
                    "--cert-secret writes --cert-dir: drop --tls-cert and --tls-key");
    /* the largest review must fit the budget with its body */
    if (c->max_inflight < c->max_body + c->max_decoded)
        return errf(err, errlen, MK_ERR_INVAL,
                    "--max-inflight-bytes %zu is less than --max-body + --max-decoded-bytes (%zu)",
                    c->max_inflight, c->max_body + c->max_decoded);
    if (c->kubeconfig_dir && !*c->kubeconfig_dir)
        c->kubeconfig_dir = NULL;
    if (!*c->ns)
        return errf(err, errlen, MK_ERR_INVAL, "--namespace must not be empty");
    int w1 = c->tls_cert ? snprintf(c->cert_path, sizeof(c->cert_path), "%s", c->tls_cert)
                         : snprintf(c->cert_path, sizeof(c->cert_path), "%s/tls.crt", c->cert_dir);
    int w2 = c->tls_key ? snprintf(c->key_path, sizeof(c->key_path), "%s", c->tls_key)
                        : snprintf(c->key_path, sizeof(c->key_path), "%s/tls.key", c->cert_dir);
    if (w1 < 0 || w2 < 0 || (size_t)w1 >= sizeof(c->cert_path) || (size_t)w2 >= sizeof(c->key_path))
        return errf(err, errlen, MK_ERR_INVAL, "certificate path too long");
    return 0;
}
