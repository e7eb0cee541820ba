#include "events.h"

#include <stdio.h>

#include "jsonx.h"
#include "log.h"
#include "wlstatus.h"

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

void rc_event_emit(struct kc_client *c, const json_t *obj, const char *type, const char *reason,
                   const char *message)
{
    char now[32];
    rc_now_rfc3339(now);
    json_t *ev = rc_event_build(obj, type, reason, message, now);
    if (!ev)
        return;
    static const struct kc_resource events = {"", "v1", "events", 1};
    struct kc_status st;
    if (kc_create(c, &events, jx_str(ev, "metadata.namespace"), ev, NULL, &st) < 0)
        LOG_D("events", "event not recorded", "reason", reason, "error", st.message);
    json_decref(ev);
}
