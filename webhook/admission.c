/* What mutation and validation share (admission.h): the sync state of the
 * manager caches, the queue label, the Pod admission gate, the DNS-1123
 * check and the denial of a labelled job while the caches have not synced. */
#include <string.h>

#include "admission.h"
#include "jsonx.h"

int wh_ctx_synced(const struct wh_ctx *c)
{
    return kcache_synced(c->q.localqueues) && kcache_synced(c->q.clusterqueues) &&
           kcache_synced(c->q.admissionchecks) && kcache_synced(c->q.configs) &&
           kcache_synced(c->q.clusters);
}

void wh_deny_not_synced(struct wh_verdict *v)
{
    v->code = 503;
    wh_verdict_deny(v, "not_synced",
                    "mkueue-webhook is starting and its caches are not synced yet; retry in a "
                    "few seconds");
}

const char *wh_queue_label(const json_t *obj)
{
    return json_string_value(jx_getv(obj, "metadata", "labels", MK_QUEUE_LABEL));
}

static int alnum(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

int wh_dns1123_subdomain(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';
        if (alnum(ch))
            continue;
        if (edge || (ch != '-' && ch != '.'))
            return 0;
    }
    return 1;
}
