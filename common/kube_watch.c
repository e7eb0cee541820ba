#include "errf.h"
#include "clock.h"
#include "jsonx.h"
#include "kube_watch.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

/* ==== decoder ============================================================== */

static const char *const type_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

int kw_decode_line(const char *line, size_t len, int max_depth, struct kw_event *ev, json_t **out,
                   char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = NULL;
    int rc = MK_ERR_DECODE;
    *out = NULL;
    memset(ev, 0, sizeof(*ev));
    if (max_depth <= 0)
        max_depth = KW_DEFAULT_MAX_DEPTH;
    /* nesting refused before the decoder sees it, by jsonx's pre-scan */
    if (jx_scan_depth(line, len, max_depth) > max_depth) {
        errf(err, errlen, 0, "watch event nested deeper than %d", max_depth);
        goto out;
    }
    root = jx_loadb(line, len, 0, &kc_unread, &jerr);
    if (!root) {
        errf(err, errlen, 0, "watch event is not JSON: %s at column %d", jerr.text, jerr.column);
        goto out;
    }
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *obj = json_object_get(root, "object");
    if (!json_is_object(root) || !type) {
        errf(err, errlen, 0, "watch event without a string \"type\"");
        goto out;
    }
    if (!json_is_object(obj)) {
        errf(err, errlen, 0, "watch event %.32s without an \"object\"", type);
        goto out;
    }
    size_t t;
    for (t = 0; t < sizeof(type_names) / sizeof(type_names[0]); t++)
        if (strcmp(type, type_names[t]) == 0)
            break;
    if (t == sizeof(type_names) / sizeof(type_names[0])) {
        errf(err, errlen, 0, "unknown watch event type \"%.32s\"", type);
        goto out;
    }
    ev->type = (enum kw_event_type)t;
    ev->object = obj;
    ev->reason = "";
    ev->message = "";
    if (ev->type == KW_ERROR) {
        json_t *code = json_object_get(obj, "code");
        const char *reason = json_string_value(json_object_get(obj, "reason"));
        const char *message = json_string_value(json_object_get(obj, "message"));
        ev->code = json_is_integer(code) ? (long)json_integer_value(code) : 0;
        if (reason)
            ev->reason = reason;
        if (message)
            ev->message = message;
    } else if (!json_is_object(json_object_get(obj, "metadata"))) {
        errf(err, errlen, 0, "watch event %s: object without metadata", type);
        goto out;
    }
    *out = root;
    root = NULL;
    rc = 0;
out:
    json_decref(root);
    if (rc != 0)
        memset(ev, 0, sizeof(*ev));
    return rc;
}

void kw_decoder_init(struct kw_decoder *d, size_t max_line, int max_depth)
{
    memset(d, 0, sizeof(*d));
    d->max_line = max_line ? max_line : KW_DEFAULT_MAX_LINE;
    d->max_depth = max_depth > 0 ? max_depth : KW_DEFAULT_MAX_DEPTH;
    buf_init(&d->line, d->max_line);
}

/* Empties the line buffer, giving back the memory of an unusually long line. */
static void line_clear(struct kw_decoder *d)
{
    if (d->line.alloc > 256 * 1024) {
        buf_free(&d->line);
        buf_init(&d->line, d->max_line);
    } else {
        buf_reset(&d->line);
    }
}

static int fail(struct kw_decoder *d, int code)
{
    d->failed = code;
    line_clear(d);
    return code;
}

/* Decodes one complete line (without its newline) and hands it to cb. */
static int emit_line(struct kw_decoder *d, const char *s, size_t len, kw_event_fn cb, void *ud)
{
    if (len > 0 && s[len - 1] == '\r')
        len--;
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    if (i == len)
        return 0; /* blank lines are keep-alives at most */
    struct kw_event ev;
    json_t *root;
    if (kw_decode_line(s, len, d->max_depth, &ev, &root, d->err, sizeof(d->err)) != 0)
        return fail(d, MK_ERR_DECODE);
    int rc = cb(&ev, ud);
    json_decref(root);
    return rc > 0 ? rc : 0;
}

int kw_decoder_feed(struct kw_decoder *d, const char *data, size_t len, kw_event_fn cb, void *ud)
{
    if (d->failed)
        return d->failed;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t seg = nl ? (size_t)(nl - data) : len;
        if (d->line.len + seg > d->max_line) {
            errf(d->err, sizeof(d->err), 0, "watch event longer than %zu bytes", d->max_line);
            return fail(d, MK_ERR_TOOBIG);
        }
        if (!nl) {
            if (buf_append(&d->line, data, seg) != 0) {
                errf(d->err, sizeof(d->err), 0, "out of memory buffering a watch event");
                return fail(d, MK_ERR_NOMEM);
            }
            return 0;
        }
        int rc;
        if (d->line.len == 0) {
            rc = emit_line(d, data, seg, cb, ud); /* whole line in this chunk: no copy */
        } else {
            if (buf_append(&d->line, data, seg) != 0) {
                errf(d->err, sizeof(d->err), 0, "out of memory buffering a watch event");
                return fail(d, MK_ERR_NOMEM);
            }
            rc = emit_line(d, d->line.data, d->line.len, cb, ud);
            line_clear(d);
        }
        if (rc != 0)
            return rc;
        data += seg + 1;
        len -= seg + 1;
    }
    return 0;
}

int kw_decoder_finish(struct kw_decoder *d, kw_event_fn cb, void *ud)
{
    if (d->failed)
        return d->failed;
    if (d->line.len == 0)
        return 0;
    int rc = emit_line(d, d->line.data, d->line.len, cb, ud);
    line_clear(d);
    return rc;
}

const char *kw_decoder_error(const struct kw_decoder *d)
{
    return d->err;
}

void kw_decoder_reset(struct kw_decoder *d)
{
    line_clear(d);
    d->failed = 0;
    d->err[0] = '\0';
}

void kw_decoder_free(struct kw_decoder *d)
{
    buf_free(&d->line);
}

/* ==== backoff ============================================================== */

void kw_backoff_init(struct kw_backoff *b, long initial_ms, long max_ms)
{
    b->initial_ms = initial_ms > 0 ? initial_ms : KW_BACKOFF_INITIAL_MS;
    b->max_ms = max_ms > 0 ? max_ms : KW_BACKOFF_MAX_MS;
    if (b->max_ms < b->initial_ms)
        b->max_ms = b->initial_ms;
    b->cur_ms = b->initial_ms;
}

void kw_backoff_reset(struct kw_backoff *b)
{
    b->cur_ms = b->initial_ms;
}

long kw_backoff_next(struct kw_backoff *b, uint64_t r)
{
    long cur = b->cur_ms;
    long wait = cur / 2 + (long)(r % (uint64_t)(cur - cur / 2 + 1));
    b->cur_ms = cur > b->max_ms / 2 ? b->max_ms : cur * 2;
    return wait;
}

/* ==== informer ============================================================= */

enum watch_end { W_END, W_GONE, W_ERROR, W_STOP };

struct kw_informer {
    struct kc_client *client;
    const struct kc_resource *res;
    struct kcache *cache;
    char *ns, *label_selector, *field_selector, *name;
    long page_size, resync_ms, watch_timeout_s;
    struct kw_backoff backoff; /* informer thread only */

    struct kc_stop stop; /* its threads' and its watch stream's (woken at once) */
    pthread_t thread;
    /* The resyncer's (below): due time and link under its lock; resyncing
     * set by kw_informer_start and cleared by kw_informer_stop. */
    int resyncing;
    long long resync_due_ms;
    struct kw_informer *resync_next;
    pthread_mutex_t lock; /* guards stats and the wakeup condition */
    pthread_cond_t wake;  /* stop, for backoff sleeps */
    /* Serializes cache writes and handler calls of the watch thread and the resyncer. */
    pthread_mutex_t apply_lock;
    struct kw_stats st;
    uint64_t rng;

    /* Watch state, owned by the informer thread. */
    struct kw_decoder dec;
    char rv[128];
    enum watch_end end;   /* set by the event callback to end the stream */
    int watch_over_limit; /* the stream ended on a cap (event size, cache full) */
    long watch_events;
    long long watch_ms; /* how long the last watch ran */
    char watch_err[256];
};

static int stopping(struct kw_informer *inf)
{
    return kc_stop_requested(&inf->stop);
}

/* xorshift64*: jitter and watch timeouts need spread, not secrecy. */
static uint64_t rnd(struct kw_informer *inf)
{
    uint64_t x = inf->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    inf->rng = x;
    return x * 2685821657736338717ULL;
}

/* Sleeps up to ms unless stopped; returns non-zero when stopping. */
static int sleep_ms(struct kw_informer *inf, long ms)
{
    long long until = clk_now_ms() + ms;
    pthread_mutex_lock(&inf->lock);
    while (!stopping(inf) && !clk_cond_wait_until(&inf->wake, &inf->lock, until))
        ;
    int s = stopping(inf);
    pthread_mutex_unlock(&inf->lock);
    return s;
}

static void mark_ok(struct kw_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    int was = inf->st.connected;
    inf->st.connected = 1;
    inf->st.disconnected_since_ms = 0;
    inf->st.last_error[0] = '\0';
    inf->st.over_limit = 0;
    pthread_mutex_unlock(&inf->lock);
    if (!was)
        LOG_I("informer", "connected", "resource", inf->name);
}

static void mark_failed_as(struct kw_informer *inf, const char *what, const char *msg,
                           int over_limit)
{
    pthread_mutex_lock(&inf->lock);
    inf->st.over_limit = over_limit;
    if (inf->st.connected || inf->st.disconnected_since_ms == 0)
        inf->st.disconnected_since_ms = clk_now_ms();
    inf->st.connected = 0;
    snprintf(inf->st.last_error, sizeof(inf->st.last_error), "%s: %s", what, msg);
    inf->st.reconnects++;
    pthread_mutex_unlock(&inf->lock);
    LOG_W("informer", "request failed, retrying", "resource", inf->name, "op", what, "error", msg);
}

static void mark_failed(struct kw_informer *inf, const char *what, const char *msg)
{
    mark_failed_as(inf, what, msg, 0);
}

static void status_text(int rc, const struct kc_status *st, char *out, size_t outlen)
{
    if (rc == MK_ERR_HTTP)
        snprintf(out, outlen, "HTTP %ld %s: %s", st->http, st->reason, st->message);
    else
        snprintf(out, outlen, "error %d: %s", rc, st->message[0] ? st->message : "(no detail)");
}

/* Stores a resourceVersion from the server; returns -1 if it is unusable. */
static int set_rv(struct kw_informer *inf, const char *rv)
{
    if (!rv || !*rv)
        return 0; /* keep the previous one */
    size_t n = strlen(rv);
    if (n >= sizeof(inf->rv))
        return -1;
    memcpy(inf->rv, rv, n + 1);
    pthread_mutex_lock(&inf->lock);
    memcpy(inf->st.resource_version, rv, n + 1);
    pthread_mutex_unlock(&inf->lock);
    return 0;
}

static const char *meta_rv(json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

struct list_acc {
    struct kcache *cache;
    size_t max_objects; /* the cache's cap, 0 = none */
    json_t *items;      /* transformed items of the pages so far */
    json_t *rv;         /* resourceVersion of the last page (one reference) */
};

/* Compacts each page's items as it arrives, so a large first list never
 * holds more than one page as full trees. */
static int list_page(json_t *page, void *ud)
{
    struct list_acc *la = ud;
    size_t i;
    json_t *obj;
    if (la->max_objects &&
        json_array_size(la->items) + json_array_size(json_object_get(page, "items")) >
            la->max_objects)
        return MK_ERR_FULL; /* stop before holding more than the cache may */
    json_array_foreach(json_object_get(page, "items"), i, obj)
    {
        if (json_array_append_new(la->items, kcache_transform(la->cache, json_incref(obj))) != 0)
            return MK_ERR_NOMEM;
    }
    json_array_clear(json_object_get(page, "items"));
    json_decref(la->rv);
    la->rv = json_incref(json_object_get(json_object_get(page, "metadata"), "resourceVersion"));
    return MK_OK;
}

static int do_list(struct kw_informer *inf)
{
    struct kc_status st;
    struct list_acc la = {inf->cache, kcache_max_objects(inf->cache), json_array(), NULL};
    char msg[700];
    int rc = MK_ERR_NOMEM;
    if (!la.items) {
        mark_failed(inf, "list", "out of memory");
        goto out;
    }
    rc = kc_list_pages(inf->client, inf->res, inf->ns, inf->label_selector, inf->field_selector,
                       inf->page_size, list_page, &la, &st);
    if (rc == MK_ERR_FULL) {
        snprintf(msg, sizeof(msg), "more than %zu objects", la.max_objects);
        mark_failed_as(inf, "list", msg, 1);
        goto out;
    }
    if (rc != MK_OK) {
        status_text(rc, &st, msg, sizeof(msg));
        mark_failed_as(inf, "list", msg, rc == MK_ERR_TOOBIG);
        goto out;
    }
    const char *rv = json_string_value(la.rv);
    if (!rv || !*rv || set_rv(inf, rv) != 0) {
        rc = MK_ERR_DECODE;
        mark_failed(inf, "list", "list without items or a usable resourceVersion");
        goto out;
    }
    pthread_mutex_lock(&inf->apply_lock);
    rc = kcache_replace_prepared(inf->cache, la.items);
    pthread_mutex_unlock(&inf->apply_lock);
    if (rc == MK_ERR_FULL) {
        snprintf(msg, sizeof(msg), "more than %zu objects", la.max_objects);
        mark_failed_as(inf, "list", msg, 1);
        goto out;
    }
    if (rc != 0) {
        rc = MK_ERR_NOMEM;
        mark_failed(inf, "list", "out of memory applying the list");
        goto out;
    }
    mark_ok(inf); /* the replace marked the cache synced */
    pthread_mutex_lock(&inf->lock);
    inf->st.synced = 1;
    inf->st.relists++;
    pthread_mutex_unlock(&inf->lock);
    LOG_D("informer", "listed", "resource", inf->name, "resourceVersion", inf->rv);
out:
    json_decref(la.items);
    json_decref(la.rv);
    return rc;
}

static int on_event(const struct kw_event *ev, void *ud)
{
    struct kw_informer *inf = ud;
    if (ev->type == KW_ERROR) {
        inf->end = ev->code == 410 ? W_GONE : W_ERROR;
        snprintf(inf->watch_err, sizeof(inf->watch_err), "ERROR event %ld %s: %s", ev->code,
                 ev->reason, ev->message);
        return 1;
    }
    if (set_rv(inf, meta_rv(ev->object)) != 0) {
        inf->end = W_ERROR;
        snprintf(inf->watch_err, sizeof(inf->watch_err), "resourceVersion too long");
        return 1;
    }
    if (ev->type != KW_BOOKMARK) {
        int rc;
        pthread_mutex_lock(&inf->apply_lock);
        if (ev->type == KW_DELETED)
            rc = kcache_remove(inf->cache, ev->object);
        else
            rc = kcache_upsert(inf->cache, json_incref(ev->object));
        pthread_mutex_unlock(&inf->apply_lock);
        if (rc == MK_ERR_FULL) {
            inf->end = W_ERROR;
            inf->watch_over_limit = 1;
            snprintf(inf->watch_err, sizeof(inf->watch_err), "more than %zu objects",
                     kcache_max_objects(inf->cache));
            return 1;
        }
        if (rc < 0)
            LOG_W("informer", "skipping a watch event without a usable name", "resource",
                  inf->name);
    }
    inf->watch_events++;
    pthread_mutex_lock(&inf->lock);
    inf->st.events++;
    pthread_mutex_unlock(&inf->lock);
    return 0;
}

static int on_data(const char *data, size_t len, void *ud)
{
    struct kw_informer *inf = ud;
    if (!kw_informer_connected(inf))
        mark_ok(inf); /* the server answers again */
    int rc = kw_decoder_feed(&inf->dec, data, len, on_event, inf);
    if (rc < 0) {
        inf->end = W_ERROR;
        inf->watch_over_limit = rc == MK_ERR_TOOBIG;
        snprintf(inf->watch_err, sizeof(inf->watch_err), "%s", kw_decoder_error(&inf->dec));
    }
    return rc != 0;
}

static char *watch_query(struct kw_informer *inf, long timeout_s)
{
    struct buf q;
    char *rv = kc_escape(inf->rv), *ls = NULL, *fs = NULL;
    buf_init(&q, BUF_CAP_URL);
    if (!rv)
        goto out;
    buf_printf(&q, "watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%ld", rv,
               timeout_s);
    if (inf->label_selector) {
        ls = kc_escape(inf->label_selector);
        buf_printf(&q, "&labelSelector=%s", ls ? ls : "");
    }
    if (inf->field_selector) {
        fs = kc_escape(inf->field_selector);
        buf_printf(&q, "&fieldSelector=%s", fs ? fs : "");
    }
out:
    free(rv);
    free(ls);
    free(fs);
    if (!rv || (inf->label_selector && !ls) || (inf->field_selector && !fs) || !buf_ok(&q)) {
        buf_free(&q);
        return NULL;
    }
    return buf_steal(&q);
}

static enum watch_end do_watch(struct kw_informer *inf)
{
    struct kc_status st;
    char msg[700];
    long timeout_s = inf->watch_timeout_s;
    if (timeout_s <= 0)
        timeout_s = 300 + (long)(rnd(inf) % 301);
    char *path = kc_path(inf->res, inf->ns, NULL, NULL);
    char *query = watch_query(inf, timeout_s);
    enum watch_end end = W_ERROR;
    if (!path || !query) {
        mark_failed(inf, "watch", "cannot build the watch request");
        goto out;
    }
    kw_decoder_reset(&inf->dec);
    inf->end = W_END;
    inf->watch_over_limit = 0;
    inf->watch_events = 0;
    inf->watch_err[0] = '\0';
    pthread_mutex_lock(&inf->lock);
    inf->st.watches++;
    pthread_mutex_unlock(&inf->lock);
    long long started = clk_now_ms();
    inf->watch_ms = 0;
    /* The client's own bound sits past the server's so the server ends it. */
    int rc = kc_stream(inf->client, path, query, timeout_s + 30, &inf->stop, on_data, inf, &st);
    inf->watch_ms = clk_now_ms() - started;
    if (stopping(inf)) {
        end = W_STOP;
    } else if (inf->end != W_END) {
        end = inf->end;
        if (end == W_ERROR)
            mark_failed_as(inf, "watch", inf->watch_err, inf->watch_over_limit);
        else
            LOG_I("informer", "watch expired, relisting", "resource", inf->name, "detail",
                  inf->watch_err);
    } else if (rc == MK_ERR_HTTP && kc_is_gone(&st)) {
        end = W_GONE;
        LOG_I("informer", "watch expired (410), relisting", "resource", inf->name);
    } else if (rc != MK_OK) {
        status_text(rc, &st, msg, sizeof(msg));
        mark_failed(inf, "watch", msg);
    } else if (inf->watch_events == 0 && inf->watch_ms < 1000) {
        /* Ending at once without a word is no healthy watch: back off. */
        mark_failed(inf, "watch", "stream closed immediately");
    } else {
        mark_ok(inf);
        end = W_END;
    }
out:
    free(path);
    free(query);
    return end;
}

static void *informer_main(void *arg)
{
    struct kw_informer *inf = arg;
    int need_list = 1;
    LOG_I("informer", "starting", "resource", inf->name, "namespace", inf->ns);
    while (!stopping(inf)) {
        /* After 410 or any failure, list again (as client-go's reflector
         * does): a list proves the server is back and catches missed events.
         * A watch that simply ended resumes from the last resourceVersion.
         * Relists and retries wait the backoff; only a watch that lasted
         * resets it, so a server that fails or expires every watch at once
         * is not hammered (a successful list alone proves little). */
        if (need_list) {
            if (do_list(inf) == MK_OK) {
                need_list = 0;
                continue;
            }
        } else {
            enum watch_end end = do_watch(inf);
            if (end == W_STOP)
                break;
            if (inf->watch_ms >= KW_BACKOFF_RESET_MS)
                kw_backoff_reset(&inf->backoff);
            if (end == W_END)
                continue;
            need_list = 1;
        }
        if (sleep_ms(inf, kw_backoff_next(&inf->backoff, rnd(inf))))
            break;
    }
    LOG_I("informer", "stopped", "resource", inf->name);
    return NULL;
}

/* ---- periodic resync: one thread for every informer of the process ----
 * A resync comes every few minutes. A thread per informer sleeping between
 * them was half the reconciler's threads (one informer per watch, about 32
 * per worker). The resyncer keeps the informers that resync in a list,
 * each with its next time, and resyncs the due ones one after another. Its
 * thread starts with the first such informer and lasts as long as the
 * process. */
static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* an informer added or removed, a resync done */
    int running;              /* its thread started */
    struct kw_informer *head; /* informers that resync */
    struct kw_informer *busy; /* the one being resynced (outside the lock) */
} resyncer = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void *resyncer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&resyncer.lock);
    for (;;) {
        long long now = clk_now_ms();
        struct kw_informer *due = NULL; /* the most overdue, or the next */
        for (struct kw_informer *i = resyncer.head; i; i = i->resync_next)
            if (!due || i->resync_due_ms < due->resync_due_ms)
                due = i;
        if (!due || due->resync_due_ms > now) {
            clk_cond_wait_until(&resyncer.wake, &resyncer.lock,
                                due ? due->resync_due_ms : now + 60 * 1000);
            continue;
        }
        due->resync_due_ms = now + due->resync_ms;
        resyncer.busy = due; /* kw_informer_stop waits for it */
        pthread_mutex_unlock(&resyncer.lock);
        if (kcache_synced(due->cache)) {
            pthread_mutex_lock(&due->apply_lock);
            kcache_resync(due->cache);
            pthread_mutex_unlock(&due->apply_lock);
        }
        pthread_mutex_lock(&resyncer.lock);
        resyncer.busy = NULL;
        pthread_cond_broadcast(&resyncer.wake);
    }
    return NULL;
}

static void resyncer_init(void)
{
    pthread_t t;
    if (clk_cond_init(&resyncer.wake) != 0)
        return;
    resyncer.running = pthread_create(&t, NULL, resyncer_main, NULL) == 0;
    if (resyncer.running) {
        pthread_setname_np(t, "kw-resync"); /* top -H, and its unit test */
        pthread_detach(t);
    }
}

/* Adds inf to the resyncer; 0, or -1 when its thread could not start. */
static int resyncer_add(struct kw_informer *inf)
{
    pthread_once(&resyncer.once, resyncer_init);
    if (!resyncer.running)
        return -1;
    pthread_mutex_lock(&resyncer.lock);
    inf->resync_due_ms = clk_now_ms() + inf->resync_ms;
    inf->resync_next = resyncer.head;
    resyncer.head = inf;
    inf->resyncing = 1;
    pthread_cond_broadcast(&resyncer.wake);
    pthread_mutex_unlock(&resyncer.lock);
    return 0;
}

/* Removes inf; on return no resync of it runs or will run. */
static void resyncer_remove(struct kw_informer *inf)
{
    if (!inf->resyncing)
        return;
    pthread_mutex_lock(&resyncer.lock);
    for (struct kw_informer **p = &resyncer.head; *p; p = &(*p)->resync_next) {
        if (*p == inf) {
            *p = inf->resync_next;
            break;
        }
    }
    while (resyncer.busy == inf)
        pthread_cond_wait(&resyncer.wake, &resyncer.lock); /* broadcast when it ends */
    inf->resyncing = 0;
    pthread_mutex_unlock(&resyncer.lock);
}

static char *dup_or_null(const char *s, int *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *oom = 1;
    return d;
}

static void informer_free(struct kw_informer *inf)
{
    kw_decoder_free(&inf->dec);
    pthread_cond_destroy(&inf->wake);
    pthread_mutex_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->apply_lock);
    kc_stop_destroy(&inf->stop);
    free(inf->ns);
    free(inf->label_selector);
    free(inf->field_selector);
    free(inf->name);
    free(inf);
}

struct kw_informer *kw_informer_start(struct kc_client *client, const struct kc_resource *res,
                                      const char *ns, const char *label_selector,
                                      struct kcache *cache, const struct kw_options *opt)
{
    static const struct kw_options defaults;
    struct kw_informer *inf = calloc(1, sizeof(*inf));
    if (!inf) {
        LOG_E("informer", "out of memory", "resource", res->resource);
        return NULL;
    }
    if (!opt)
        opt = &defaults;
    int oom = 0;
    inf->client = client;
    inf->res = res;
    inf->cache = cache;
    inf->ns = dup_or_null(ns, &oom);
    inf->label_selector = dup_or_null(label_selector, &oom);
    inf->field_selector = dup_or_null(opt->field_selector, &oom);
    inf->name = dup_or_null(opt->name ? opt->name : res->resource, &oom);
    inf->page_size = opt->page_size;
    inf->resync_ms = opt->resync_period_ms == 0 ? 5 * 60 * 1000 : opt->resync_period_ms;
    kw_backoff_init(&inf->backoff, opt->backoff_initial_ms, opt->backoff_max_ms);
    inf->watch_timeout_s = opt->watch_timeout_s;
    inf->rng = ((uint64_t)clk_now_ms() << 20) ^ (uint64_t)(uintptr_t)inf ^ 0x9E3779B97F4A7C15ULL;
    inf->st.disconnected_since_ms = clk_now_ms();
    kw_decoder_init(&inf->dec, opt->max_line, opt->max_depth);
    pthread_mutex_init(&inf->lock, NULL);
    pthread_mutex_init(&inf->apply_lock, NULL);
    kc_stop_init(&inf->stop);
    if (clk_cond_init(&inf->wake) < 0)
        oom = 1;
    if (oom || pthread_create(&inf->thread, NULL, informer_main, inf) != 0) {
        LOG_E("informer", "cannot start", "resource", res->resource);
        informer_free(inf);
        return NULL;
    }
    if (inf->resync_ms > 0 && resyncer_add(inf) < 0)
        LOG_W("informer", "cannot start the resync thread; no periodic resync", "resource",
              inf->name);
    return inf;
}

void kw_informer_stop(struct kw_informer *inf)
{
    if (!inf)
        return;
    kc_stop_request(&inf->stop);
    /* under the lock: a sleeper between its check and its wait holds it */
    pthread_mutex_lock(&inf->lock);
    pthread_cond_broadcast(&inf->wake);
    pthread_mutex_unlock(&inf->lock);
    resyncer_remove(inf);
    pthread_join(inf->thread, NULL);
    informer_free(inf);
}

int kw_informer_synced(struct kw_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    int s = inf->st.synced;
    pthread_mutex_unlock(&inf->lock);
    return s;
}

int kw_informer_connected(struct kw_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    int c = inf->st.connected;
    pthread_mutex_unlock(&inf->lock);
    return c;
}

void kw_informer_stats(struct kw_informer *inf, struct kw_stats *out)
{
    pthread_mutex_lock(&inf->lock);
    *out = inf->st;
    pthread_mutex_unlock(&inf->lock);
}
