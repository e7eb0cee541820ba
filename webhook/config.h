/* Command-line flags of mkueue-webhook. */
#ifndef MKUEUE_WH_CONFIG_H
#define MKUEUE_WH_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "certmgr.h"
#include "kinds/kinds.h"
#include "log.h"

#define WH_MAX_EXTERNAL 8

struct wh_config {
    /* strings point into argv or are static defaults */
    const char *kubeconfig; /* NULL = in-cluster */
    const char *context;
    const char *ns;
    const char *cert_dir;
    const char *tls_cert; /* NULL = <cert_dir>/tls.crt */
    const char *tls_key;  /* NULL = <cert_dir>/tls.key */
    const char *bind;
    int port;
    const char *metrics_bind;
    int metrics_port;
    const char *health_bind;
    int health_port;            /* 0 = probes on the metrics port only */
    const char *kubeconfig_dir; /* NULL = Path kubeconfigs refused */
    unsigned threads;
    unsigned max_connections;
    unsigned max_per_ip;
    unsigned idle_timeout_s;
    unsigned request_timeout_s;
    size_t max_body;
    size_t max_decoded;  /* one review decoded (estimate) */
    size_t max_inflight; /* all bodies and decoded reviews at once */
    enum log_level log_level;
    /* external kinds handled (--external-frameworks, kinds.h's syntax); main
     * registers them */
    char external[WH_MAX_EXTERNAL][MK_EXTERNAL_SPEC_MAX];
    int nexternal;
    /* self-managed certificates (--cert-secret ...); namespace and cert_dir
     * are filled from --namespace and --cert-dir */
    struct wh_certmgr_opts certmgr;
    const char *cert_sans;
    /* resolved serving certificate and key paths */
    char cert_path[4096];
    char key_path[4096];
};

/* Parses argv ("--flag value" or "--flag=value"). Returns 0 to run, 1 when
 * --help or --version was printed to out (exit 0), -1 with err (exit 2). */
int wh_config_parse(int argc, char **argv, struct wh_config *c, FILE *out, char *err,
                    size_t errlen);
void wh_config_usage(FILE *f);

#endif
