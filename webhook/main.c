/* mkueue-webhook: wires flags, caches, certificate and the two servers, then
 * waits for SIGTERM/SIGINT and shuts down in order (admission first). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "config.h"
#include "kinds/kinds.h"
#include "log.h"
#include "signals.h"
#include "server.h"
#include "certmgr.h"
#include "kube_client.h"
#include "kube_config.h"
#include "state.h"
#include "reqmem.h"

static int state_ready(void *ud)
{
    return wh_state_ready(ud);
}

static void state_collect(void *ud, struct wh_metrics *m)
{
    wh_state_collect(ud, m);
}

int main(int argc, char **argv)
{
    wh_reqmem_install(); /* a review's JSON in its server thread's block */
    struct wh_config cfg;
    char err[512];
    int rc = wh_config_parse(argc, argv, &cfg, stdout, err, sizeof(err));
    if (rc != 0) {
        if (rc < 0) {
            fprintf(stderr, "mkueue-webhook: %s\n", err);
            wh_config_usage(stderr);
        }
        return rc < 0 ? 2 : 0;
    }
    log_set_level(cfg.log_level);
    for (int i = 0; i < cfg.nexternal; i++) {
        if (mk_kinds_add_external(cfg.external[i], err, sizeof(err)) < 0) {
            fprintf(stderr, "mkueue-webhook: --external-frameworks: %s\n", err);
            return 2;
        }
    }

    /* Signals go to sigwait below, never to server or informer threads. */
    sigset_t sigs;
    sigs_block_stop(&sigs);

    int exit_code = 1;
    struct wh_metrics m;
    struct wh_app app;
    memset(&app, 0, sizeof(app));
    pthread_mutex_init(&app.lock, NULL);
    struct wh_certs *certs = NULL;
    struct kcfg *cm_cfg = NULL;
    struct kc_client *cm_client = NULL;
    struct wh_certmgr *cm = NULL;
    char **sans_dns = NULL, **sans_ips = NULL;
    struct wh_state *state = NULL;
    struct wh_server *adm = NULL, *ops = NULL, *probes = NULL;
    struct mt_registry *reg = mt_registry_new();
    if (!reg || wh_metrics_register(reg, &m) < 0) {
        LOG_E("main", "cannot set up metrics");
        goto out;
    }
    if (cfg.certmgr.secret_name) {
        /* self-managed: the files exist (Secret read or created) before loading them */
        if (wh_certmgr_split_sans(cfg.cert_sans, &sans_dns, &sans_ips) != 0)
            goto out;
        cfg.certmgr.dns = (const char *const *)sans_dns;
        cfg.certmgr.ips = (const char *const *)sans_ips;
        int r = cfg.kubeconfig ? kcfg_load_file(cfg.kubeconfig, cfg.context, KCFG_TRUSTED, &cm_cfg,
                                                err, sizeof(err))
                               : kcfg_in_cluster(NULL, &cm_cfg, err, sizeof(err));
        if (r != 0 || !(cm_client = kc_new(cm_cfg, NULL, err, sizeof(err)))) {
            LOG_E("main", "cannot connect to the manager", "error", err);
            goto out;
        }
        if (wh_certmgr_ensure(cm_client, &cfg.certmgr, err, sizeof(err)) != 0)
            LOG_W("main", "certificates not fully set up; retrying in the background", "error",
                  err);
    }
    certs = wh_certs_new(cfg.cert_path, cfg.key_path, 1000, err, sizeof(err));
    if (!certs) {
        LOG_E("main", "cannot load the serving certificate", "error", err);
        goto out;
    }
    struct wh_state_opts so = {
        .kubeconfig = cfg.kubeconfig,
        .context = cfg.context,
        .ns = cfg.ns,
        .kubeconfig_dir = cfg.kubeconfig_dir,
    };
    state = wh_state_start(&so, err, sizeof(err));
    if (!state) {
        LOG_E("main", "cannot connect to the manager", "error", err);
        goto out;
    }
    /* memory held for requests: bodies (server) and decoded reviews (admitter) */
    static struct wh_budget budget;
    wh_budget_init(&budget, cfg.max_inflight);
    app.adm = (struct wh_admitter){wh_state_ctx(state), &m,     cfg.max_body, cfg.ns,
                                   cfg.max_decoded,     &budget};
    app.reg = reg;
    app.m = &m;
    app.certs = certs;
    app.ready = state_ready;
    app.collect = state_collect;
    app.ud = state;
    app.seen_loads = 0;

    struct wh_server_opts ao = {
        .name = "admission",
        .bind = cfg.bind,
        .port = cfg.port,
        .certs = certs,
        .threads = cfg.threads,
        .max_connections = cfg.max_connections,
        .max_per_ip = cfg.max_per_ip,
        .budget = &budget,
        .timeout_s = cfg.idle_timeout_s,
        .request_timeout_s = cfg.request_timeout_s,
        .max_body = cfg.max_body,
        .route = wh_app_admission_route,
        .handle = wh_app_admission_handle,
        .ud = &app,
        .in_flight = m.in_flight,
        .bad = m.bad,
    };
    adm = wh_server_start(&ao, err, sizeof(err));
    if (!adm) {
        LOG_E("main", "cannot start the admission server", "error", err);
        goto out;
    }
    /* The plain servers: metrics, and the kubelet's probes apart (health
     * port 0 = none) so that load on the other ports cannot starve them. */
    const struct {
        const char *name, *bind, *fail;
        int port;
        unsigned max_connections, max_per_ip, timeout_s;
        size_t max_body; /* 0 = the default */
        int (*route)(void *ud, const char *path);
        struct wh_server **srv;
    } plain[] = {
        {"metrics", cfg.metrics_bind, "cannot start the metrics server", cfg.metrics_port, 64, 16,
         10, 0, wh_app_ops_route, &ops},
        {"probes", cfg.health_bind, "cannot start the probe server", cfg.health_port, 32, 8, 5,
         1024, wh_app_probe_route, &probes},
    };
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        if (plain[i].srv == &probes && !cfg.health_port)
            continue;
        struct wh_server_opts so = {
            .name = plain[i].name,
            .bind = plain[i].bind,
            .port = plain[i].port,
            .threads = 1,
            .max_connections = plain[i].max_connections,
            .max_per_ip = plain[i].max_per_ip,
            .timeout_s = plain[i].timeout_s,
            .request_timeout_s = plain[i].timeout_s,
            .max_body = plain[i].max_body,
            .route = plain[i].route,
            .handle = wh_app_ops_handle,
            .ud = &app,
        };
        if (!(*plain[i].srv = wh_server_start(&so, err, sizeof(err)))) {
            LOG_E("main", plain[i].fail, "error", err);
            goto out;
        }
    }
    /* rotation: wh_certs picks the new files up at the next handshake */
    if (cm_client &&
        !(cm = wh_certmgr_start(cm_client, &cfg.certmgr, NULL, NULL, err, sizeof(err)))) {
        LOG_E("main", "cannot start the certificate manager", "error", err);
        goto out;
    }
    char port[16], mport[16], hport[16];
    snprintf(port, sizeof(port), "%d", wh_server_port(adm));
    snprintf(mport, sizeof(mport), "%d", wh_server_port(ops));
    snprintf(hport, sizeof(hport), "%d", probes ? wh_server_port(probes) : 0);
    LOG_I("main", "serving", "version", MKUEUE_VERSION, "address", cfg.bind, "port", port,
          "metricsAddress", cfg.metrics_bind, "metricsPort", mport, "healthPort", hport,
          "namespace", cfg.ns, "cert", cfg.cert_path);

    int sig = 0;
    sigwait(&sigs, &sig);
    LOG_I("main", "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    exit_code = 0;
out:
    wh_server_stop(adm); /* no new admission first; then the rest */
    wh_server_stop(ops);
    wh_server_stop(probes);
    wh_certmgr_stop(cm);
    wh_state_stop(state);
    wh_certs_free(certs);
    kc_free(cm_client);
    kcfg_free(cm_cfg);
    wh_certmgr_free_sans(sans_dns, sans_ips);
    mt_registry_free(reg);
    pthread_mutex_destroy(&app.lock);
    LOG_I("main", "stopped");
    return exit_code;
}
