/* Process signals of both binaries: SIGTERM and SIGINT are blocked in every
 * thread and taken by sigwait() in main only; SIGPIPE is ignored (a peer
 * that closes a connection is an error return, not a death). Call before
 * the first thread starts; not thread-safe. */
#ifndef MKUEUE_SIGNALS_H
#define MKUEUE_SIGNALS_H

#include <signal.h>

#include "errf.h"

/* Blocks SIGTERM and SIGINT (threads created after inherit the mask) and
 * ignores SIGPIPE. *stop gets the blocked set, for sigwait(). Returns 0, or
 * a negative errno. */
int sigs_block_stop(sigset_t *stop);

#endif
