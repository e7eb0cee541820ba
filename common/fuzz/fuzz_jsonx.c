/* Bounded JSON loading and path access on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

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
