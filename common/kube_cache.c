#include "kube_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "strmap.h"

struct kcache {
    pthread_rwlock_t lock;
    struct smap *objs; /* key -> json_t * (one reference held) */
    struct kcache_handlers handlers[KCACHE_MAX_HANDLERS];
    int nhandlers;
    int synced;
    json_t *(*transform)(json_t *obj, void *ud);
    void *transform_ud;
    size_t max_objects; /* 0 = no cap */
};

/* A change recorded under the lock and delivered after it is released. */
enum ev_kind { EV_ADD, EV_UPDATE, EV_DELETE };
struct ev {
    enum ev_kind kind;
    char *key;
    json_t *old; /* references held by the event */
    json_t *obj;
};

struct evlist {
    struct ev *v;
    size_t len, alloc;
    int oom;
};

struct kcache *kcache_new(void)
{
    struct kcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->objs = smap_new();
    if (!c->objs || pthread_rwlock_init(&c->lock, NULL) != 0) {
        smap_free(c->objs, NULL);
        free(c);
        return NULL;
    }
    return c;
}

void kcache_set_transform(struct kcache *c, json_t *(*fn)(json_t *obj, void *ud), void *ud)
{
    c->transform = fn;
    c->transform_ud = ud;
}

void kcache_set_max_objects(struct kcache *c, size_t max)
{
    c->max_objects = max;
}

size_t kcache_max_objects(struct kcache *c)
{
    return c->max_objects;
}

/* Takes obj; returns the object to store (a new reference). */
static json_t *transformed(struct kcache *c, json_t *obj)
{
    if (!c->transform || !obj)
        return obj;
    json_t *t = c->transform(json_incref(obj), c->transform_ud);
    if (!t)
        return obj;
    json_decref(obj);
    return t;
}

static void decref_val(void *v)
{
    json_decref(v);
}

void kcache_free(struct kcache *c)
{
    if (!c)
        return;
    smap_free(c->objs, decref_val);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

int kcache_add_handlers(struct kcache *c, const struct kcache_handlers *h)
{
    if (c->nhandlers >= KCACHE_MAX_HANDLERS)
        return -1;
    c->handlers[c->nhandlers++] = *h;
    return 0;
}

static int make_key(const char *ns, const char *name, char *out, size_t outlen)
{
    if (!name || !*name)
        return -1;
    int n =
        ns && *ns ? snprintf(out, outlen, "%s/%s", ns, name) : snprintf(out, outlen, "%s", name);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

const char *kcache_rec_tail(const json_t *obj, unsigned n, size_t *len)
{
    const char *s = json_string_value(obj);
    size_t size = json_string_length(obj), off = 0;
    if (!s)
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        const char *nul = memchr(s + off, '\0', size - off);
        if (!nul)
            return NULL;
        off = (size_t)(nul - s) + 1;
    }
    *len = size - off;
    return s + off;
}

const char *kcache_rec_field(const json_t *obj, unsigned i)
{
    size_t left = 0;
    const char *p = kcache_rec_tail(obj, i, &left);
    /* the field must end inside the record */
    return p && left && *p && memchr(p, '\0', left) ? p : NULL;
}

/* Metadata field f ("name", "namespace", "resourceVersion") of an object,
 * or field rec of a record. */
static const char *md_field(const json_t *obj, const char *f, unsigned rec)
{
    if (json_is_string(obj))
        return kcache_rec_field(obj, rec);
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), f));
}

int kcache_key(json_t *obj, char *out, size_t outlen)
{
    return make_key(md_field(obj, "namespace", KCACHE_REC_NAMESPACE),
                    md_field(obj, "name", KCACHE_REC_NAME), out, outlen);
}

static const char *resource_version(json_t *obj)
{
    return md_field(obj, "resourceVersion", KCACHE_REC_RV);
}

/* ---- readers -------------------------------------------------------------- */

json_t *kcache_get(struct kcache *c, const char *key)
{
    pthread_rwlock_rdlock(&c->lock);
    json_t *o = json_incref(smap_get(c->objs, key));
    pthread_rwlock_unlock(&c->lock);
    return o;
}

json_t *kcache_get_nsname(struct kcache *c, const char *ns, const char *name)
{
    char key[KCACHE_KEY_MAX];
    if (make_key(ns, name, key, sizeof(key)) != 0)
        return NULL;
    return kcache_get(c, key);
}

struct foreach_ctx {
    const char *ns;
    size_t nslen;
    int (*fn)(const char *key, json_t *obj, void *ud);
    void *ud;
};

static int foreach_one(const char *key, void *val, void *ud)
{
    struct foreach_ctx *fc = ud;
    if (fc->ns && (strncmp(key, fc->ns, fc->nslen) != 0 || key[fc->nslen] != '/'))
        return 0;
    return fc->fn(key, val, fc->ud);
}

void kcache_foreach(struct kcache *c, const char *ns,
                    int (*fn)(const char *key, json_t *obj, void *ud), void *ud)
{
    struct foreach_ctx fc = {ns, ns ? strlen(ns) : 0, fn, ud};
    pthread_rwlock_rdlock(&c->lock);
    smap_foreach(c->objs, foreach_one, &fc);
    pthread_rwlock_unlock(&c->lock);
}

static int list_one(const char *key, json_t *obj, void *ud)
{
    (void)key;
    return json_array_append(ud, obj) != 0;
}

json_t *kcache_list(struct kcache *c, const char *ns)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    pthread_rwlock_rdlock(&c->lock);
    struct foreach_ctx fc = {ns, ns ? strlen(ns) : 0, list_one, arr};
    int rc = smap_foreach(c->objs, foreach_one, &fc);
    pthread_rwlock_unlock(&c->lock);
    if (rc) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

size_t kcache_len(struct kcache *c)
{
    pthread_rwlock_rdlock(&c->lock);
    size_t n = smap_len(c->objs);
    pthread_rwlock_unlock(&c->lock);
    return n;
}

/* ---- writers -------------------------------------------------------------- */

/* Records an event; takes over the references old and obj. */
static void ev_push(struct evlist *l, enum ev_kind kind, const char *key, json_t *old, json_t *obj)
{
    if (l->len == l->alloc) {
        size_t n = l->alloc ? l->alloc * 2 : 16;
        struct ev *v = realloc(l->v, n * sizeof(*v));
        if (!v)
            goto fail;
        l->v = v;
        l->alloc = n;
    }
    char *k = strdup(key);
    if (!k)
        goto fail;
    l->v[l->len++] = (struct ev){kind, k, old, obj};
    return;
fail:
    /* The store is right; only this notification is lost. */
    l->oom = 1;
    json_decref(old);
    json_decref(obj);
}

/* Delivers and frees the events; called with no lock held. */
static void ev_deliver(struct kcache *c, struct evlist *l)
{
    if (l->oom)
        LOG_E("kcache", "out of memory: some cache notifications were dropped");
    for (size_t i = 0; i < l->len; i++) {
        struct ev *e = &l->v[i];
        for (int h = 0; h < c->nhandlers; h++) {
            const struct kcache_handlers *hd = &c->handlers[h];
            if (e->kind == EV_ADD && hd->on_add)
                hd->on_add(e->key, e->obj, hd->ud);
            else if (e->kind == EV_UPDATE && hd->on_update)
                hd->on_update(e->key, e->old, e->obj, hd->ud);
            else if (e->kind == EV_DELETE && hd->on_delete)
                hd->on_delete(e->key, e->obj, hd->ud);
        }
        free(e->key);
        json_decref(e->old);
        json_decref(e->obj);
    }
    free(l->v);
}

int kcache_upsert(struct kcache *c, json_t *obj)
{
    char key[KCACHE_KEY_MAX];
    struct evlist ev = {0};
    void *old = NULL;
    obj = transformed(c, obj);
    if (kcache_key(obj, key, sizeof(key)) != 0) {
        json_decref(obj);
        return -1;
    }
    pthread_rwlock_wrlock(&c->lock);
    int rc;
    if (c->max_objects && smap_len(c->objs) >= c->max_objects && !smap_get(c->objs, key))
        rc = MK_ERR_FULL;
    else if ((rc = smap_put(c->objs, key, obj, &old)) == 0)
        json_incref(obj); /* one for the store, one for the event */
    else
        rc = -1;
    pthread_rwlock_unlock(&c->lock);
    if (rc != 0) {
        json_decref(obj);
        return rc;
    }
    ev_push(&ev, old ? EV_UPDATE : EV_ADD, key, old, obj);
    ev_deliver(c, &ev);
    return 0;
}

int kcache_remove(struct kcache *c, json_t *obj)
{
    char key[KCACHE_KEY_MAX];
    struct evlist ev = {0};
    if (kcache_key(obj, key, sizeof(key)) != 0)
        return -1;
    pthread_rwlock_wrlock(&c->lock);
    json_t *old = smap_del(c->objs, key);
    pthread_rwlock_unlock(&c->lock);
    if (!old)
        return 0;
    json_decref(old);
    ev_push(&ev, EV_DELETE, key, NULL, transformed(c, json_incref(obj)));
    ev_deliver(c, &ev);
    return 1;
}

struct vanish_ctx {
    struct smap *fresh;
    struct evlist *ev;
};

static int note_vanished(const char *key, void *val, void *ud)
{
    struct vanish_ctx *vc = ud;
    if (!smap_get(vc->fresh, key))
        ev_push(vc->ev, EV_DELETE, key, NULL, json_incref(val));
    return 0;
}

static int replace(struct kcache *c, json_t *items, int prepared)
{
    struct evlist ev = {0};
    struct smap *fresh = smap_new(), *stale = NULL;
    size_t i;
    json_t *obj, *mine = NULL;
    int rc = -1;
    if (!fresh || !json_is_array(items))
        goto out;
    if (c->max_objects && json_array_size(items) > c->max_objects) {
        rc = MK_ERR_FULL;
        goto out;
    }
    if (c->transform && !prepared) {
        mine = json_array();
        if (!mine)
            goto out;
        json_array_foreach(items, i, obj)
        {
            if (json_array_append_new(mine, transformed(c, json_incref(obj))) != 0)
                goto out;
        }
        items = mine;
    }
    /* Built apart from the lock: the list can be large. */
    json_array_foreach(items, i, obj)
    {
        char key[KCACHE_KEY_MAX];
        if (kcache_key(obj, key, sizeof(key)) != 0) {
            LOG_W("kcache", "skipping a listed object without a name");
            continue;
        }
        void *dup = NULL;
        if (smap_put(fresh, key, json_incref(obj), &dup) != 0) {
            json_decref(obj);
            goto out;
        }
        json_decref(dup); /* a duplicate key: the later item wins */
    }
    pthread_rwlock_wrlock(&c->lock);
    stale = c->objs;
    c->objs = fresh;
    fresh = NULL;
    pthread_rwlock_unlock(&c->lock);
    /* A whole list: synced before its events are delivered, so a reader a
     * handler wakes sees the cache it was woken for (else an event that
     * only the initial list carries is lost to a "not synced yet"). */
    kcache_set_synced(c, 1);

    /* Only this thread writes, so the maps can be compared unlocked. */
    json_array_foreach(items, i, obj)
    {
        char key[KCACHE_KEY_MAX];
        if (kcache_key(obj, key, sizeof(key)) != 0 || smap_get(c->objs, key) != obj)
            continue; /* skipped, or a duplicate superseded later */
        json_t *old = smap_get(stale, key);
        if (!old) {
            ev_push(&ev, EV_ADD, key, NULL, json_incref(obj));
        } else {
            const char *rv_old = resource_version(old), *rv_new = resource_version(obj);
            if (!rv_old || !rv_new || strcmp(rv_old, rv_new) != 0)
                ev_push(&ev, EV_UPDATE, key, json_incref(old), json_incref(obj));
        }
    }
    struct vanish_ctx vc = {c->objs, &ev};
    smap_foreach(stale, note_vanished, &vc);
    rc = 0;
out:
    smap_free(fresh, decref_val);
    smap_free(stale, decref_val);
    json_decref(mine);
    ev_deliver(c, &ev);
    return rc;
}

json_t *kcache_transform(struct kcache *c, json_t *obj)
{
    return transformed(c, obj);
}

int kcache_replace(struct kcache *c, json_t *items)
{
    return replace(c, items, 0);
}

int kcache_replace_prepared(struct kcache *c, json_t *items)
{
    return replace(c, items, 1);
}

static int collect_resync(const char *key, void *val, void *ud)
{
    ev_push(ud, EV_UPDATE, key, json_incref(val), json_incref(val));
    return 0;
}

void kcache_resync(struct kcache *c)
{
    struct evlist ev = {0};
    pthread_rwlock_rdlock(&c->lock);
    smap_foreach(c->objs, collect_resync, &ev);
    pthread_rwlock_unlock(&c->lock);
    ev_deliver(c, &ev);
}

void kcache_set_synced(struct kcache *c, int synced)
{
    __atomic_store_n(&c->synced, synced, __ATOMIC_RELEASE);
}

int kcache_synced(struct kcache *c)
{
    return __atomic_load_n(&c->synced, __ATOMIC_ACQUIRE);
}
