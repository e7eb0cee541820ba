#include "why.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "dispatchers.h"
#include "jsonx.h"
#include "strmap.h"
#include "wlstatus.h"

#define P_QUOTA   "Waiting for quota on the manager: "
#define P_NONE    "No usable worker: "
#define P_WORKERS "Waiting for a worker to admit it: "
/* Kueue's text of a check reset after an eviction (decide.c rc_retry_patch) */
#define KUEUE_RESET "Reset to Pending after eviction. Previously: "

int rc_why_ours(const char *msg)
{
    return msg && (strncmp(msg, P_QUOTA, strlen(P_QUOTA)) == 0 ||
                   strncmp(msg, P_NONE, strlen(P_NONE)) == 0 ||
                   strncmp(msg, P_WORKERS, strlen(P_WORKERS)) == 0);
}

static int replaceable(const char *cur)
{
    return !cur || !*cur || rc_why_ours(cur) || strncmp(cur, KUEUE_RESET, strlen(KUEUE_RESET)) == 0;
}

enum rc_why_step rc_why_quota(const json_t *wl, const char *cur, char *out, size_t cap)
{
    json_t *qr = rc_cond_find(wl, "QuotaReserved");
    const char *st = jx_str(qr, "status"), *reason = jx_str(qr, "reason");
    const char *msg = jx_str(qr, "message");
    if (!st || strcmp(st, "False") != 0 || !msg || !*msg || !replaceable(cur))
        return RC_WHY_NONE;
    /* the gate has not looked yet; an eviction's text is Kueue's */
    if ((reason && strcmp(reason, "PendingEvaluation") == 0) || strncmp(msg, "Evicted", 7) == 0 ||
        strncmp(msg, "Previously:", 11) == 0)
        return RC_WHY_NONE;
    /* the gate's own "Waiting for quota: " would repeat the prefix */
    static const char gate[] = "Waiting for quota: ";
    if (strncmp(msg, gate, sizeof(gate) - 1) == 0)
        msg += sizeof(gate) - 1;
    buf_cut_fmt(out, cap < RC_WHY_MAX ? cap : RC_WHY_MAX, P_QUOTA "%s", msg);
    return RC_WHY_QUOTA;
}

void rc_why_down(const char *reason, const char *message, char *out, size_t cap)
{
    char m[512];
    buf_cut_fmt(m, sizeof(m), "%s", message ? message : "");
    char *att = strstr(m, "; connection attempts: ");
    if (att)
        *att = '\0';
    if (reason && *reason && *m)
        buf_cut_fmt(out, cap, "%s: %s", reason, m);
    else
        buf_cut_fmt(out, cap, "%s", reason && *reason ? reason : m);
}

/* One cluster's part; *say is set when it explains a wait (a worker's
 * refusal, a failed create), not just something still under way. */
static void part(const struct rc_obs *o, const struct rc_remote *r, char *out, size_t cap, int *say)
{
    if (!r->available) {
        buf_cut_fmt(out, cap, "%s: not connected (%s)", r->cluster,
                    r->down && *r->down ? r->down : "no connection");
        return;
    }
    if (r->create_err && !r->wl) {
        buf_cut_fmt(out, cap, "%s: the copy could not be created: %s", r->cluster, r->create_err);
        *say = 1;
        return;
    }
    if (!r->wl) {
        int nominated = rc_names_has(o->nominated, r->cluster);
        buf_cut_fmt(out, cap, "%s: %s", r->cluster,
                    nominated ? "copy being created" : "not nominated yet");
        return;
    }
    json_t *qr = rc_cond_find(r->wl, "QuotaReserved");
    const char *st = jx_str(qr, "status"), *reason = jx_str(qr, "reason");
    const char *msg = jx_str(qr, "message");
    if (st && strcmp(st, "True") == 0) {
        buf_cut_fmt(out, cap, "%s: quota reserved there, waiting for its admission checks",
                    r->cluster);
    } else if (st && msg && *msg) {
        /* Kueue's own words for its copy */
        buf_cut_fmt(out, cap, "%s: %s (%s)", r->cluster, msg,
                    reason && *reason ? reason : "Pending");
        *say = 1;
    } else {
        buf_cut_fmt(out, cap, "%s: not evaluated by its Kueue yet", r->cluster);
    }
}

enum rc_why_step rc_why_dispatch(const struct rc_obs *o, const char *cur, char *out, size_t cap)
{
    char all[RC_WHY_MAX];
    size_t len = 0, usable = 0, listed = 0;
    int say = 0;
    for (size_t i = 0; i < o->nremotes; i++)
        usable += o->remotes[i].in_config && o->remotes[i].available;
    all[0] = '\0';
    buf_cut_appendf(all, sizeof(all), &len, "%s", usable ? P_WORKERS : P_NONE);
    for (size_t i = 0; i < o->nremotes; i++) {
        const struct rc_remote *r = &o->remotes[i];
        if (!r->in_config)
            continue;
        char one[RC_WHY_ENTRY_MAX];
        part(o, r, one, sizeof(one), &say);
        buf_cut_appendf(all, sizeof(all), &len, "%s%s", listed++ ? "; " : "", one);
    }
    if (!listed)
        buf_cut_appendf(all, sizeof(all), &len, "the MultiKueueConfig lists no clusters");
    if (!usable)
        say = 1;
    if (!say && !rc_why_ours(cur))
        return RC_WHY_NONE;
    buf_cut_fmt(out, cap, "%s", all);
    return usable ? RC_WHY_WORKERS : RC_WHY_NO_WORKER;
}

/* ---- memory ------------------------------------------------------------------ */

struct err_slot {
    uint64_t h; /* of key and cluster; 0 = free */
    char err[RC_WHY_ERR_MAX];
};

struct ev_slot {
    uint64_t h; /* of the key; 0 = free */
    long long at_ms;
    int step;
};

struct rc_why {
    pthread_mutex_t mu;
    struct err_slot errs[RC_WHY_ERR_SLOTS];
    struct ev_slot evs[RC_WHY_EV_SLOTS];
};

struct rc_why *rc_why_new(void)
{
    struct rc_why *w = calloc(1, sizeof(*w));
    if (w)
        pthread_mutex_init(&w->mu, NULL);
    return w;
}

void rc_why_free(struct rc_why *w)
{
    if (!w)
        return;
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static uint64_t hash2(const char *a, const char *b)
{
    char k[600];
    snprintf(k, sizeof(k), "%s\n%s", a ? a : "", b ? b : "");
    uint64_t h = smap_hash(k);
    return h ? h : 1;
}

void rc_why_create_result(struct rc_why *w, const char *key, const char *cluster, const char *err)
{
    if (!w)
        return;
    uint64_t h = hash2(key, cluster);
    struct err_slot *s = &w->errs[h % RC_WHY_ERR_SLOTS];
    pthread_mutex_lock(&w->mu);
    if (err) {
        s->h = h;
        buf_cut_fmt(s->err, sizeof(s->err), "%s", err);
    } else if (s->h == h) {
        s->h = 0;
    }
    pthread_mutex_unlock(&w->mu);
}

int rc_why_create_error(struct rc_why *w, const char *key, const char *cluster, char *out,
                        size_t cap)
{
    if (!w)
        return 0;
    uint64_t h = hash2(key, cluster);
    struct err_slot *s = &w->errs[h % RC_WHY_ERR_SLOTS];
    int found = 0;
    pthread_mutex_lock(&w->mu);
    if (s->h == h) {
        buf_cut_fmt(out, cap, "%s", s->err);
        found = 1;
    }
    pthread_mutex_unlock(&w->mu);
    return found;
}

static int allow(struct rc_why *w, uint64_t h, int step, long long now_ms)
{
    if (!w)
        return 1;
    struct ev_slot *s = &w->evs[h % RC_WHY_EV_SLOTS];
    int ok;
    pthread_mutex_lock(&w->mu);
    ok = s->h != h || s->step != step || now_ms - s->at_ms >= RC_WHY_EVENT_PERIOD_MS;
    if (ok) {
        s->h = h;
        s->step = step;
        s->at_ms = now_ms;
    }
    pthread_mutex_unlock(&w->mu);
    return ok;
}

int rc_why_event_allow(struct rc_why *w, const char *key, enum rc_why_step step, long long now_ms)
{
    return allow(w, hash2(key, ""), (int)step, now_ms);
}

int rc_why_event_allow_tag(struct rc_why *w, const char *key, const char *tag, long long now_ms)
{
    return allow(w, hash2(key, tag && *tag ? tag : "-"), RC_WHY_PLACE, now_ms);
}
