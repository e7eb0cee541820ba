/* Checks the reconciler's fuzz targets share. Header-only: each target is
 * its own program; nothing here allocates beyond the call. */
#ifndef MKUEUE_FUZZ_SUPPORT_H
#define MKUEUE_FUZZ_SUPPORT_H

#include <jansson.h>

/* 1 when s is text jansson takes as a JSON string (valid UTF-8, no NUL):
 * what every condition, Event and status text must be to be written. */
static inline int fuzz_valid_text(const char *s)
{
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

#endif
