/* Kubeconfig parser on arbitrary input, in both trust modes. Trusted mode
 * may read files named in the input; paths resolve under a folder that does
 * not exist, so only absolute paths can reach real files (read, never run). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int modes[] = {KCFG_UNTRUSTED, KCFG_TRUSTED};
    char err[256];
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        struct kcfg *cfg = NULL;
        int rc = kcfg_parse((const char *)data, size, NULL, modes[i], "/nonexistent-fuzz-base",
                            &cfg, err, sizeof(err));
        if ((rc == 0) != (cfg != NULL) || (rc < 0 && !err[0]))
            abort(); /* a result without a config, or an error without a message */
        if (cfg) {
            if (!cfg->server || strncmp(cfg->server, "https://", 8) != 0)
                abort();
            free(kcfg_bearer_token(cfg));
            kcfg_free(cfg);
        }
    }
    return 0;
}
