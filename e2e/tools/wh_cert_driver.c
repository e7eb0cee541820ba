/* A stand-in for mkueue-webhook's certificate path, for e2e tests until the
 * real webhook wires webhook/certmgr in: takes the same certificate flags,
 * runs wh_certmgr_ensure at start-up and the rotation thread, and serves
 * HTTPS admission requests (allowing everything) with the files it keeps.
 * A certificate change swaps the libmicrohttpd daemon over the same listen
 * socket (MHD_quiesce_daemon), so no connection attempt is refused.
 * Each admission request is logged as a JSON line with its path. */
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "certmgr.h"
#include "fileio.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"

#define MAX_BODY (1 << 20)

static volatile sig_atomic_t stop;
static volatile int changed;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void on_change(void *ud)
{
    (void)ud;
    __atomic_store_n(&changed, 1, __ATOMIC_RELEASE);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(body ? strlen(body) : 0, body, MHD_RESPMEM_MUST_FREE);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **con_cls)
{
    (void)cls, (void)version;
    struct buf *b = *con_cls;
    if (!b) {
        if (!(b = calloc(1, sizeof(*b))))
            return MHD_NO;
        buf_init(b, MAX_BODY);
        *con_cls = b;
        return MHD_YES;
    }
    if (*data_size) {
        if (buf_append(b, data, *data_size) != 0)
            return MHD_NO;
        *data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "POST") != 0)
        return reply(conn, 405, NULL);
    json_t *review = json_loadb(b->data ? b->data : "", b->len, 0, NULL);
    const char *uid = json_string_value(json_object_get(json_object_get(review, "request"), "uid"));
    char *out = NULL;
    if (uid) {
        json_t *resp = json_pack("{s:s, s:s, s:{s:s, s:b}}", "apiVersion", "admission.k8s.io/v1",
                                 "kind", "AdmissionReview", "response", "uid", uid, "allowed", 1);
        out = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
        json_decref(resp);
    }
    json_decref(review);
    LOG_I("driver", "admission request", "path", url, "uid", uid);
    return out ? reply(conn, 200, out) : reply(conn, 400, NULL);
}

static void done(void *cls, struct MHD_Connection *conn, void **con_cls,
                 enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    struct buf *b = *con_cls;
    if (b) {
        buf_free(b);
        free(b);
    }
}

static struct MHD_Daemon *serve(const char *dir, int port, MHD_socket sock, char **pem)
{
    char path[4096];
    char *crt = NULL, *key = NULL;
    snprintf(path, sizeof(path), "%s/tls.crt", dir);
    if (fio_read_file(path, 1 << 20, &crt, NULL) != 0)
        return NULL;
    snprintf(path, sizeof(path), "%s/tls.key", dir);
    if (fio_read_file(path, 1 << 20, &key, NULL) != 0) {
        free(crt);
        return NULL;
    }
    unsigned flags =
        MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC;
    struct MHD_Daemon *d;
    if (sock == MHD_INVALID_SOCKET)
        d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, NULL,
                             MHD_OPTION_HTTPS_MEM_CERT, crt, MHD_OPTION_HTTPS_MEM_KEY, key,
                             MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
    else
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_HTTPS_MEM_CERT, crt,
                             MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                             MHD_OPTION_LISTEN_SOCKET, sock, MHD_OPTION_END);
    /* MHD keeps pointers to the PEM strings: they live as long as the daemon */
    pem[0] = crt;
    pem[1] = key;
    return d;
}

int main(int argc, char **argv)
{
    const char *kubeconfig = NULL, *sans = NULL;
    int port = 0;
    struct wh_certmgr_opts o = {0};
    char err[512] = "";
    for (int i = 1; i < argc; i++) {
        /* "--name=value" or "--name value" */
        char name[64];
        const char *eq = strchr(argv[i], '='), *val;
        size_t n = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
        if (n >= sizeof(name) || strncmp(argv[i], "--", 2) != 0) {
            fprintf(stderr, "wh-cert-driver: bad argument %s\n", argv[i]);
            return 2;
        }
        memcpy(name, argv[i], n);
        name[n] = '\0';
        val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : "");
        int r = wh_certmgr_flag(&o, &sans, name, val, err, sizeof(err));
        if (r < 0) {
            fprintf(stderr, "wh-cert-driver: %s\n", err);
            return 2;
        }
        if (r == 1)
            continue;
        if (strcmp(name, "--kubeconfig") == 0)
            kubeconfig = val;
        else if (strcmp(name, "--namespace") == 0)
            o.namespace = val;
        else if (strcmp(name, "--cert-dir") == 0)
            o.cert_dir = val;
        else if (strcmp(name, "--port") == 0)
            port = atoi(val);
        else {
            fprintf(stderr, "wh-cert-driver: unknown flag %s\n", name);
            return 2;
        }
    }
    if (!kubeconfig || !port || !o.namespace || !o.cert_dir || !o.secret_name) {
        fprintf(stderr, "wh-cert-driver: --kubeconfig --port --namespace --cert-dir "
                        "--cert-secret are required\n");
        return 2;
    }
    char **dns = NULL, **ips = NULL;
    struct kcfg *cfg = NULL;
    struct kc_client *kc = NULL;
    struct wh_certmgr *m = NULL;
    struct MHD_Daemon *d = NULL;
    char *pem[2] = {NULL, NULL};
    int rc = 1;
    if (wh_certmgr_split_sans(sans, &dns, &ips) != 0)
        goto out;
    o.dns = (const char *const *)dns;
    o.ips = (const char *const *)ips;
    if (kcfg_load_file(kubeconfig, NULL, KCFG_TRUSTED, &cfg, err, sizeof(err)) != 0 ||
        !(kc = kc_new(cfg, NULL, err, sizeof(err)))) {
        LOG_E("driver", "kubeconfig", "error", err);
        goto out;
    }
    if (wh_certmgr_ensure(kc, &o, err, sizeof(err)) != 0) {
        LOG_E("driver", "certificates", "error", err);
        goto out;
    }
    if (!(d = serve(o.cert_dir, port, MHD_INVALID_SOCKET, pem))) {
        LOG_E("driver", "cannot serve");
        goto out;
    }
    if (!(m = wh_certmgr_start(kc, &o, on_change, NULL, err, sizeof(err))))
        goto out;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    LOG_I("driver", "serving");
    while (!stop) {
        usleep(100 * 1000);
        if (!__atomic_exchange_n(&changed, 0, __ATOMIC_ACQ_REL))
            continue;
        /* the new daemon takes over the listen socket before the old one stops */
        MHD_socket sock = MHD_quiesce_daemon(d);
        char *npem[2] = {NULL, NULL};
        struct MHD_Daemon *nd =
            sock == MHD_INVALID_SOCKET ? NULL : serve(o.cert_dir, 0, sock, npem);
        if (!nd) {
            LOG_E("driver", "reload failed");
            free(npem[0]);
            free(npem[1]);
            goto out;
        }
        MHD_stop_daemon(d);
        free(pem[0]);
        free(pem[1]);
        d = nd;
        pem[0] = npem[0];
        pem[1] = npem[1];
        LOG_I("driver", "certificate reloaded");
    }
    rc = 0;
out:
    wh_certmgr_stop(m);
    if (d)
        MHD_stop_daemon(d);
    free(pem[0]);
    free(pem[1]);
    kc_free(kc);
    kcfg_free(cfg);
    wh_certmgr_free_sans(dns, ips);
    return rc;
}
