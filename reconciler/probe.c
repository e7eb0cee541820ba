#include "probe.h"
#include "buf.h"
#include "errf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

struct target {
    long long since; /* 0 = reachable */
    int in_flight;
    char err[512];
};

struct rc_probe {
    struct rc_ctx *x;
    long interval_ms;
    void (*on_change)(const char *cluster, void *ud);
    void *ud;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct smap *targets; /* cluster -> struct target */
    int stop;
    int running; /* probe threads alive */
};

struct one {
    struct rc_probe *p;
    char cluster[256];
};

static void *probe_one(void *arg)
{
    struct one *o = arg;
    struct rc_probe *p = o->p;
    long long t0 = clk_now_ms();
    struct mkcs_conn *c = mkcs_get(p->x->clusters, o->cluster);
    int ok = -1;
    struct kc_status st = {0};
    if (c && mkcs_conn_connected(c))
        ok = kc_request(mkcs_conn_client(c), "GET", "/version", NULL, NULL, NULL, 0, NULL, &st);
    else
        ok = 1; /* not connected: the informers already say so */
    mkcs_put(c);
    int changed = 0;
    pthread_mutex_lock(&p->mu);
    struct target *t = smap_get(p->targets, o->cluster);
    if (t) {
        t->in_flight = 0;
        if (ok == 0 || ok == 1) {
            changed = t->since != 0;
            t->since = 0;
        } else if (!t->since) {
            t->since = t0 > 0 ? t0 : 1;
            buf_cut_fmt(t->err, sizeof(t->err), "%s", st.message);
            changed = 1;
        }
    }
    p->running--;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (changed) {
        if (ok < 0)
            LOG_W("probe", "worker unreachable", "cluster", o->cluster, "error", st.message);
        else
            LOG_I("probe", "worker reachable again", "cluster", o->cluster);
        if (p->on_change)
            p->on_change(o->cluster, p->ud);
    }
    free(o);
    return NULL;
}

static void *run(void *arg)
{
    struct rc_probe *p = arg;
    for (;;) {
        json_t *names = mkcs_names(p->x->clusters);
        size_t i;
        json_t *n;
        json_array_foreach(names, i, n)
        {
            const char *name = json_string_value(n);
            pthread_mutex_lock(&p->mu);
            struct target *t = smap_get(p->targets, name);
            if (!t) {
                t = calloc(1, sizeof(*t));
                if (t && smap_put(p->targets, name, t, NULL) < 0) {
                    free(t);
                    t = NULL;
                }
            }
            struct one *o = t && !t->in_flight && !p->stop ? calloc(1, sizeof(*o)) : NULL;
            pthread_t th;
            if (o) {
                o->p = p;
                snprintf(o->cluster, sizeof(o->cluster), "%s", name);
                t->in_flight = 1;
                p->running++;
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                if (pthread_create(&th, &attr, probe_one, o) != 0) {
                    t->in_flight = 0;
                    p->running--;
                    free(o);
                }
                pthread_attr_destroy(&attr);
            }
            pthread_mutex_unlock(&p->mu);
        }
        json_decref(names);
        long long until = clk_now_ms() + p->interval_ms;
        pthread_mutex_lock(&p->mu);
        while (!p->stop && !clk_cond_wait_until(&p->cv, &p->mu, until))
            ;
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
    }
    return NULL;
}

struct rc_probe *rc_probe_start(struct rc_ctx *x, long interval_ms,
                                void (*on_change)(const char *cluster, void *ud), void *ud)
{
    struct rc_probe *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->x = x;
    p->interval_ms = interval_ms > 0 ? interval_ms : 5000;
    p->on_change = on_change;
    p->ud = ud;
    p->targets = smap_new();
    pthread_mutex_init(&p->mu, NULL);
    int cv_rc = clk_cond_init(&p->cv);
    if (!p->targets || cv_rc < 0 || pthread_create(&p->thread, NULL, run, p) != 0) {
        smap_free(p->targets, free);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return NULL;
    }
    return p;
}

void rc_probe_stop(struct rc_probe *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    /* detached probes end within the client's request timeout */
    pthread_mutex_lock(&p->mu);
    while (p->running > 0)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    smap_free(p->targets, free);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

long long rc_probe_unreachable_since(struct rc_probe *p, const char *cluster, char *err,
                                     size_t errlen)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&p->mu);
    struct target *t = smap_get(p->targets, cluster);
    long long since = t ? t->since : 0;
    if (since && err)
        errf(err, errlen, MK_ERR_INVAL, "%s", t->err);
    pthread_mutex_unlock(&p->mu);
    return since;
}
