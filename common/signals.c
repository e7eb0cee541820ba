#include "signals.h"

#include <errno.h>
#include <pthread.h>

int sigs_block_stop(sigset_t *stop)
{
    sigemptyset(stop);
    sigaddset(stop, SIGTERM);
    sigaddset(stop, SIGINT);
    int rc = pthread_sigmask(SIG_BLOCK, stop, NULL);
    if (rc != 0)
        return -rc;
    return signal(SIGPIPE, SIG_IGN) == SIG_ERR ? MK_ERR_IO : 0;
}
