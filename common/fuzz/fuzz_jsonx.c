/* Bounded JSON loading and path access on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

/* Values in a decoded tree: what the pre-scan must have counted. */
static size_t tree_values(json_t *j)
{
    size_t n = 1, i;
    const char *k;
    json_t *v;
    if (json_is_object(j)) {
        json_object_foreach(j, k, v) n += tree_values(v);
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v) n += tree_values(v);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    json_t *j = jx_loadb_bounded((const char *)data, size, 1 << 16, 32, err, sizeof(err));
    if (!j) {
        if (err[0] == '\0')
            abort(); /* every refusal says why */
        return 0;
    }
    if (jx_scan_depth((const char *)data, size, 1000) > 32)
        abort();
    struct jx_scan sc;
    jx_scan((const char *)data, size, &sc);
    if (sc.depth > 32 || jx_scan_values(&sc) != tree_values(j) || jx_scan_cost(&sc) < size)
        abort(); /* the pre-scan counts what jansson built */
    static const char *const paths[] = {"metadata.labels[kueue.x-k8s.io/queue-name]", "0", "a.0.b",
                                        "[a.b][c]", "spec.x"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        jx_get(j, paths[i]);
        if (jx_set_new_str(j, paths[i], "v") == 0 && !jx_str(j, paths[i]))
            abort(); /* what was set reads back */
        jx_del(j, paths[i]);
    }
    json_decref(j);
    return 0;
}
