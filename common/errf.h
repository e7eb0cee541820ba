/* The one status convention and the one way to report an error into a
 * caller's buffer (docs/design.md 3). A function returns 0 (MK_OK) or one of
 * the negative MK_ERR_* codes below, whichever module it is in; the message
 * goes into the caller's `char *err, size_t errlen` through errf(), or to the
 * logger. No module has codes of its own and none returns a negated errno: a system
 * call's errno goes into the message (strerror) and the code is MK_ERR_IO.
 * Stateless and thread-safe. */
#ifndef MKUEUE_ERRF_H
#define MKUEUE_ERRF_H

#include <stddef.h>

enum mk_err {
    MK_OK = 0,
    MK_ERR = -1,           /* failed; the message says why, no caller tells causes apart */
    MK_ERR_INVAL = -2,     /* bad argument, or input that does not parse or validate */
    MK_ERR_NOMEM = -3,     /* an allocation failed */
    MK_ERR_TOOBIG = -4,    /* input larger than its named cap (BUF_CAP_*, *_MAX_*) */
    MK_ERR_FULL = -5,      /* a table or cache at its cap refused a new entry */
    MK_ERR_DECODE = -6,    /* data from a peer (apiserver, watch stream) not what was expected */
    MK_ERR_TRANSPORT = -7, /* connect/TLS/timeout/reset */
    MK_ERR_HTTP = -8,      /* the server answered non-2xx (the status says which) */
    MK_ERR_STOPPED = -9,   /* ended by a stop flag */
    MK_ERR_REFUSED = -10,  /* refused by policy (a write not allowed, an insecure setting) */
    MK_ERR_CONFLICT = -11, /* the object kept changing under us; retry later */
    MK_ERR_IO = -12,       /* a system call failed; errno is in the message */
};

/* A short name of an MK_ERR_* code ("nomem", "http", ...), for logs; static
 * storage. */
const char *mk_err_name(int rc);

/* Formats into err (when err and errlen are non-zero, truncating) and
 * returns rc, so a failure path reads `return errf(err, errlen, MK_ERR_INVAL, ...)`. */
int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
