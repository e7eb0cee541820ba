/* Kubernetes resource quantities ("500m", "2", "16Gi", "1e3") as int64
 * milli-units, rounded up like the apiserver's MilliValue(). */
#ifndef MKUEUE_QUANTITY_H
#define MKUEUE_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Parses s into *milli. Returns 0, or -1 on a malformed or out-of-range
 * value (|value| must fit in int64 milli-units). */
int qty_parse(const char *s, int64_t *milli);

/* Formats milli-units canonically enough for messages and status:
 * whole numbers without suffix ("8"), else with "m" ("1500m"). */
void qty_format(int64_t milli, char *out, size_t outlen);

#endif
