/* TEMPORARY stub until h-config merges */
#include "kube_config.h"

#include <stdlib.h>
#include <string.h>

char *kcfg_bearer_token(struct kcfg *cfg)
{
    pthread_mutex_lock(&cfg->lock);
    char *t = cfg->token ? strdup(cfg->token) : NULL;
    pthread_mutex_unlock(&cfg->lock);
    return t;
}

void kcfg_free(struct kcfg *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->context);
    free(cfg->ca_pem);
    free(cfg->cert_pem);
    free(cfg->key_pem);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->tls_server_name);
    free(cfg->file_token);
    pthread_mutex_destroy(&cfg->lock);
    free(cfg);
}
