/* Differential: whatever yajl's decoder (json_yajl.h) accepts, jansson must
 * accept as the same tree: equal values, the same types, the same key order
 * (compared as compact text) — with and without JSON_REJECT_DUPLICATES. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_yajl.h"
#include "jsonx.h"

static void same_or_abort(const char *data, size_t size, size_t flags)
{
    json_t *fast = jy_decode(data, size, flags);
    json_t *ref = json_loadb(data, size, flags, NULL);
    if (fast) {
        if (!ref || !json_equal(fast, ref))
            abort(); /* yajl accepted what jansson refuses, or decoded it differently */
        struct buf a, b;
        buf_init(&a, BUF_CAP_JSON_TEXT);
        buf_init(&b, BUF_CAP_JSON_TEXT);
        if (jx_dump(fast, JSON_COMPACT, &a) != 0 || jx_dump(ref, JSON_COMPACT, &b) != 0 ||
            a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
            abort();
        buf_free(&a);
        buf_free(&b);
    }
    /* jx_loadb gives jansson's verdict either way */
    json_t *either = jx_loadb(data, size, flags, NULL);
    if (!either != !ref || (either && !json_equal(either, ref)))
        abort();
    json_decref(either);
    json_decref(fast);
    json_decref(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    same_or_abort((const char *)data, size, 0);
    same_or_abort((const char *)data, size, JSON_REJECT_DUPLICATES);
    return 0;
}
