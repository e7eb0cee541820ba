/* The RFC 6902 applier on arbitrary [document, operations] pairs: it must
 * either succeed or leave the document untouched, and the builder must
 * reproduce its own result. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    json_t *in = jx_loadb_bounded((const char *)data, size, 1 << 16, 32, err, sizeof(err));
    json_t *doc = json_array_get(in, 0), *ops = json_array_get(in, 1);
    if (!doc || !ops || (!json_is_object(doc) && !json_is_array(doc)))
        goto out;
    json_t *before = json_deep_copy(doc);
    if (jp_apply(doc, ops, err, sizeof(err)) < 0 && !json_equal(doc, before))
        abort();
    json_decref(before);

    /* build changes against the result and check them by applying */
    struct jp *p = jp_new(doc);
    if (p && json_is_object(doc)) {
        const char *key;
        json_t *v;
        int i = 0;
        json_object_foreach(doc, key, v)
        {
            if (i++ % 2)
                jp_remove(p, key, "0");
            else
                jp_set(p, json_incref(v), key, "x/~y", "z");
        }
        json_t *built = jp_ops(p);
        json_t *copy = json_deep_copy(doc);
        if (jp_apply(copy, built, err, sizeof(err)) < 0 || !json_equal(copy, jp_doc(p)))
            abort();
        json_decref(copy);
        json_decref(built);
    }
    jp_free(p);
out:
    json_decref(in);
    return 0;
}
