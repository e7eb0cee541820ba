#include "echo.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jsonx.h"
#include "strmap.h"

/* Every this many notes, entries past RC_ECHO_MAX_MS are dropped: a
 * finished job's last write is never looked at again. */
#define ECHO_SWEEP_EVERY 1024

struct written {
    uint64_t hash; /* of the patch's canonical text */
    long long rv;
    long long at_ms;
    json_t *answer; /* owned; NULL once taken or when none was kept */
};

static void written_free(void *p)
{
    struct written *w = p;
    if (w)
        json_decref(w->answer);
    free(w);
}

struct rc_echo {
    pthread_mutex_t mu;
    struct smap *m; /* key -> struct written * */
    unsigned notes;
};

struct rc_echo *rc_echo_new(void)
{
    struct rc_echo *e = calloc(1, sizeof(*e));
    if (!e || !(e->m = smap_new())) {
        free(e);
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    return e;
}

void rc_echo_free(struct rc_echo *e)
{
    if (!e)
        return;
    smap_free(e->m, written_free);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* 0 when the text cannot be made (out of memory): such a patch never matches. */
static uint64_t patch_hash(const json_t *patch)
{
    struct buf text;
    buf_init(&text, BUF_CAP_JSON_TEXT);
    uint64_t h =
        jx_dump(patch, JSON_COMPACT | JSON_SORT_KEYS, &text) == 0 ? smap_hash(text.data) : 0;
    buf_free(&text);
    return h;
}

long long rc_rv_number(const char *rv)
{
    return rv ? strtoll(rv, NULL, 10) : 0;
}

int rc_echo_pending(struct rc_echo *e, const char *key, const json_t *patch, const char *cached_rv,
                    long long now_ms)
{
    uint64_t h = patch_hash(patch);
    pthread_mutex_lock(&e->mu);
    const struct written *w = smap_get(e->m, key);
    int pending = w && h && w->hash == h && rc_rv_number(cached_rv) < w->rv &&
                  now_ms - w->at_ms <= RC_ECHO_MAX_MS;
    pthread_mutex_unlock(&e->mu);
    return pending;
}

#define ECHO_SWEEP_BATCH 256 /* keys collected per pass of a sweep */

struct sweep {
    long long now_ms;
    char *keys[ECHO_SWEEP_BATCH];
    size_t n;
};

static int collect_stale(const char *key, void *val, void *ud)
{
    struct sweep *s = ud;
    const struct written *w = val;
    if (s->now_ms - w->at_ms <= RC_ECHO_MAX_MS)
        return 0;
    if (!(s->keys[s->n] = strdup(key)))
        return 1; /* out of memory: the rest waits for the next sweep */
    return ++s->n == ECHO_SWEEP_BATCH;
}

/* Drops the entries past RC_ECHO_MAX_MS (under mu). */
static void sweep(struct rc_echo *e, long long now_ms)
{
    struct sweep s = {.now_ms = now_ms};
    do {
        s.n = 0;
        smap_foreach(e->m, collect_stale, &s);
        for (size_t i = 0; i < s.n; i++) {
            written_free(smap_del(e->m, s.keys[i]));
            free(s.keys[i]);
        }
    } while (s.n == ECHO_SWEEP_BATCH);
}

/* Keeps w (owned) under key; w NULL, or no memory to keep it, forgets
 * key: a note lost only costs a repeated call. Sweeps now and then. */
static void remember(struct rc_echo *e, const char *key, struct written *w, long long now_ms)
{
    void *old = NULL;
    pthread_mutex_lock(&e->mu);
    if (!w || smap_put(e->m, key, w, &old) < 0) {
        old = smap_del(e->m, key);
        written_free(w);
    }
    if (++e->notes % ECHO_SWEEP_EVERY == 0)
        sweep(e, now_ms);
    pthread_mutex_unlock(&e->mu);
    written_free(old);
}

void rc_echo_note_answer(struct rc_echo *e, const char *key, const json_t *patch, const char *rv,
                         json_t *answer, long long now_ms)
{
    uint64_t h = rv ? patch_hash(patch) : 0;
    struct written *w = h ? malloc(sizeof(*w)) : NULL;
    if (w)
        *w = (struct written){h, rc_rv_number(rv), now_ms, json_incref(answer)};
    remember(e, key, w, now_ms);
}

void rc_echo_note(struct rc_echo *e, const char *key, const json_t *patch, const char *rv,
                  long long now_ms)
{
    rc_echo_note_answer(e, key, patch, rv, NULL, now_ms);
}

json_t *rc_echo_take_answer(struct rc_echo *e, const char *key, const char *cached_rv,
                            long long now_ms)
{
    json_t *answer = NULL;
    pthread_mutex_lock(&e->mu);
    struct written *w = smap_get(e->m, key);
    if (w) {
        answer = w->answer;
        w->answer = NULL;
        if (rc_rv_number(cached_rv) >= w->rv || now_ms - w->at_ms > RC_ECHO_MAX_MS) {
            json_decref(answer); /* the cache shows it, or it is too old to trust */
            answer = NULL;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return answer;
}

size_t rc_echo_len(struct rc_echo *e)
{
    pthread_mutex_lock(&e->mu);
    size_t n = smap_len(e->m);
    pthread_mutex_unlock(&e->mu);
    return n;
}

long long rc_echo_written_ms(struct rc_echo *e, const char *key)
{
    pthread_mutex_lock(&e->mu);
    const struct written *w = smap_get(e->m, key);
    long long at = w ? w->at_ms : 0;
    pthread_mutex_unlock(&e->mu);
    return at;
}

/* A deleted UID's key: apart from the objects' keys, which hold a '/' */
#define DELETED_KEY_MAX 80
static int deleted_key(const char *uid, char out[DELETED_KEY_MAX])
{
    return uid && *uid && (size_t)snprintf(out, DELETED_KEY_MAX, "uid:%s", uid) < DELETED_KEY_MAX;
}

void rc_echo_note_deleted(struct rc_echo *e, const char *uid, long long now_ms)
{
    char k[DELETED_KEY_MAX];
    if (!deleted_key(uid, k))
        return; /* not noted: a repeated delete, as before */
    struct written *w = malloc(sizeof(*w));
    if (w)
        *w = (struct written){0, 0, now_ms, NULL};
    remember(e, k, w, now_ms);
}

int rc_echo_deleted(struct rc_echo *e, const char *uid, long long now_ms)
{
    char k[DELETED_KEY_MAX];
    if (!deleted_key(uid, k))
        return 0;
    pthread_mutex_lock(&e->mu);
    const struct written *w = smap_get(e->m, k);
    int deleted = w && now_ms - w->at_ms <= RC_ECHO_MAX_MS;
    pthread_mutex_unlock(&e->mu);
    return deleted;
}

int rc_echo_behind(struct rc_echo *e, const char *key, const char *cached_rv, long long now_ms)
{
    pthread_mutex_lock(&e->mu);
    const struct written *w = smap_get(e->m, key);
    int behind = w && rc_rv_number(cached_rv) < w->rv && now_ms - w->at_ms <= RC_ECHO_MAX_MS;
    pthread_mutex_unlock(&e->mu);
    return behind;
}
