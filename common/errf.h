/* The one way to report an error into a caller's buffer (docs/design.md 3: messages go
 * into a caller-supplied error buffer). */
#ifndef MKUEUE_ERRF_H
#define MKUEUE_ERRF_H

#include <stddef.h>

/* Formats into err (when err and errlen are non-zero, truncating) and
 * returns rc, so a failure path reads `return errf(err, errlen, -EINVAL, ...)`. */
int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
