#include "app.h"

#include <string.h>
#include <time.h>

#include "server.h"

int wh_app_admission_route(void *app, const char *path)
{
    (void)app;
    int mutate;
    const struct mk_kind *k;
    return wh_admission_path(path, &mutate, &k) ? WH_ROUTE_POST_JSON : WH_ROUTE_NOT_FOUND;
}

int wh_app_admission_handle(void *app, const char *path, const char *body, size_t len,
                            struct buf *out, const char **ctype)
{
    struct wh_app *a = app;
    return wh_admit(&a->adm, path, body ? body : "", len, out, ctype);
}

int wh_app_ops_route(void *app, const char *path)
{
    (void)app;
    if (strcmp(path, "/metrics") == 0 || strcmp(path, "/healthz") == 0 ||
        strcmp(path, "/readyz") == 0)
        return WH_ROUTE_GET;
    return WH_ROUTE_NOT_FOUND;
}

int wh_app_probe_route(void *app, const char *path)
{
    (void)app;
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0)
        return WH_ROUTE_GET;
    return WH_ROUTE_NOT_FOUND;
}

/* Certificate reloads happen in handshakes: export what happened since. */
static void collect_certs(struct wh_app *a)
{
    if (!a->certs || !a->m)
        return;
    char err[256];
    wh_certs_refresh(a->certs, 0, err, sizeof(err));
    mt_set(a->m->cert_expiry, NULL, difftime(wh_certs_not_after(a->certs), time(NULL)));
    long loads = wh_certs_loads(a->certs), failures = wh_certs_failures(a->certs);
    pthread_mutex_lock(&a->lock);
    const char *const ok[] = {"ok"}, *const bad[] = {"error"};
    mt_inc(a->m->cert_reloads, ok, (double)(loads - a->seen_loads));
    mt_inc(a->m->cert_reloads, bad, (double)(failures - a->seen_failures));
    a->seen_loads = loads;
    a->seen_failures = failures;
    pthread_mutex_unlock(&a->lock);
}

int wh_app_ops_handle(void *app, const char *path, const char *body, size_t len, struct buf *out,
                      const char **ctype)
{
    (void)body, (void)len;
    struct wh_app *a = app;
    *ctype = "text/plain; charset=utf-8";
    if (strcmp(path, "/healthz") == 0) {
        buf_append_str(out, "ok\n");
        return 200;
    }
    int ready = a->ready ? a->ready(a->ud) : 1;
    if (strcmp(path, "/readyz") == 0) {
        buf_append_str(out, ready ? "ok\n" : "caches not synced\n");
        return ready ? 200 : 503;
    }
    if (a->collect && a->m)
        a->collect(a->ud, a->m);
    collect_certs(a);
    *ctype = "text/plain; version=0.0.4; charset=utf-8";
    return mt_render(a->reg, out) == 0 ? 200 : 500;
}
