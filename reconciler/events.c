#include "events.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "jsonx.h"
#include "log.h"
#include "wlstatus.h"

/* A ring of built Events: head is the next to post, n how many wait. */
struct rc_events {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t sender;
    struct kc_client *client;
    struct mt_family *dropped;
    json_t *ring[RC_EVENTS_QUEUE_MAX];
    size_t head, n;
    int stop;
};

static void post(struct kc_client *c, json_t *ev)
{
    static const struct kc_resource events = {"", "v1", "events", 1};
    struct kc_status st;
    if (kc_create(c, &events, jx_str(ev, "metadata.namespace"), ev, NULL, &st) < 0)
        LOG_D("events", "event not recorded", "reason", jx_str(ev, "reason"), "error", st.message);
}

static void *send_loop(void *arg)
{
    struct rc_events *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->n && !e->stop)
            pthread_cond_wait(&e->cv, &e->mu);
        if (e->stop)
            break;
        json_t *ev = e->ring[e->head];
        e->ring[e->head] = NULL;
        e->head = (e->head + 1) % RC_EVENTS_QUEUE_MAX;
        e->n--;
        pthread_mutex_unlock(&e->mu);
        post(e->client, ev);
        json_decref(ev);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

struct rc_events *rc_events_new(struct kc_client *c, struct mt_family *dropped)
{
    struct rc_events *e = c ? calloc(1, sizeof(*e)) : NULL;
    if (!e)
        goto fail;
    if (pthread_mutex_init(&e->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&e->cv, NULL) != 0) {
        pthread_mutex_destroy(&e->mu);
        goto fail;
    }
    e->client = c;
    e->dropped = dropped;
    if (pthread_create(&e->sender, NULL, send_loop, e) != 0) {
        pthread_cond_destroy(&e->cv);
        pthread_mutex_destroy(&e->mu);
        goto fail;
    }
    return e;
fail:
    free(e);
    kc_free(c);
    return NULL;
}

void rc_events_free(struct rc_events *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->sender, NULL);
    for (size_t i = 0; i < e->n; i++)
        json_decref(e->ring[(e->head + i) % RC_EVENTS_QUEUE_MAX]);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    kc_free(e->client);
    free(e);
}

size_t rc_events_queued(struct rc_events *e)
{
    pthread_mutex_lock(&e->mu);
    size_t n = e->n;
    pthread_mutex_unlock(&e->mu);
    return n;
}

json_t *rc_event_build(const json_t *obj, const char *type, const char *reason, const char *message,
                       const char *now)
{
    const char *ns = jx_str(obj, "metadata.namespace");
    const char *name = jx_str(obj, "metadata.name");
    if (!name)
        return NULL;
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%.240s.", name);
    return json_pack(
        "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:{s:s},"
        "s:s,s:s,s:i,s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "generateName", prefix, "namespace",
        ns ? ns : "default", "involvedObject", "apiVersion",
        jx_str(obj, "apiVersion") ? jx_str(obj, "apiVersion") : "", "kind",
        jx_str(obj, "kind") ? jx_str(obj, "kind") : "", "namespace", ns ? ns : "", "name", name,
        "uid", jx_str(obj, "metadata.uid") ? jx_str(obj, "metadata.uid") : "", "resourceVersion",
        jx_str(obj, "metadata.resourceVersion") ? jx_str(obj, "metadata.resourceVersion") : "",
        "type", type, "reason", reason, "message", message, "source", "component",
        "mkueue-reconciler", "firstTimestamp", now, "lastTimestamp", now, "count", 1,
        "reportingComponent", "mkueue-reconciler");
}

void rc_event_emit(struct rc_events *e, const json_t *obj, const char *type, const char *reason,
                   const char *message)
{
    if (!e)
        return;
    char now[32];
    rc_now_rfc3339(now);
    json_t *ev = rc_event_build(obj, type, reason, message, now);
    if (!ev)
        return;
    pthread_mutex_lock(&e->mu);
    int full = e->n == RC_EVENTS_QUEUE_MAX;
    if (!full) {
        e->ring[(e->head + e->n) % RC_EVENTS_QUEUE_MAX] = ev;
        e->n++;
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (full) {
        json_decref(ev);
        mt_inc(e->dropped, NULL, 1);
        LOG_D("events", "event dropped: queue full", "reason", reason);
    }
}
