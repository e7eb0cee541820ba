#include "errf.h"

#include <stdarg.h>
#include <stdio.h>

const char *mk_err_name(int rc)
{
    static const char *const names[] = {"ok",      "failed",   "inval",     "nomem", "toobig",
                                        "full",    "decode",   "transport", "http",  "stopped",
                                        "refused", "conflict", "io"};
    if (rc > 0 || -rc >= (int)(sizeof(names) / sizeof(names[0])))
        return "unknown";
    return names[-rc];
}

int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}
