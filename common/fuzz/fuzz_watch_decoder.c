/* libFuzzer target: the watch stream decoder on arbitrary bytes, fed in
 * chunks whose sizes come from the input itself, with a small line limit so
 * over-long lines are reached too. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kube_watch.h"

static int touch(const struct kw_event *ev, void *ud)
{
    size_t *n = ud;
    /* Read what the informer would read. */
    json_t *md = json_object_get(ev->object, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    *n += (name ? strlen(name) : 0) + (rv ? strlen(rv) : 0) + strlen(ev->reason) +
          strlen(ev->message) + (size_t)ev->type;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned chunk = (unsigned)data[0] % 64 + 1;
    data++;
    size--;
    struct kw_decoder d;
    size_t n = 0;
    kw_decoder_init(&d, 4096, 32);
    while (size > 0) {
        size_t len = size < chunk ? size : chunk;
        if (kw_decoder_feed(&d, (const char *)data, len, touch, &n) < 0)
            kw_decoder_reset(&d); /* as the informer does for a new stream */
        data += len;
        size -= len;
        chunk = chunk * 7 % 61 + 1;
    }
    kw_decoder_finish(&d, touch, &n);
    kw_decoder_free(&d);
    return 0;
}
