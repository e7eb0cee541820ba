#include "quantity.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define QTY_MAX_LEN 64

struct suffix {
    const char *name;
    int base;  /* 2 or 10 */
    int power; /* exponent of base */
};

static const struct suffix suffixes[] = {
    {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
    {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},  {"M", 10, 6},  {"G", 10, 9},
    {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"", 10, 0},
};

/* Multiplies *v by m, failing on overflow. */
static int mul_checked(__int128 *v, __int128 m)
{
    const __int128 limit = (__int128)INT64_MAX * 1000000000;
    if (m != 0 && (*v > limit / m))
        return -1;
    *v *= m;
    return 0;
}

int qty_parse(const char *s, int64_t *milli)
{
    if (!s || !*s || strlen(s) > QTY_MAX_LEN)
        return -1;
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    /* mantissa as an integer plus the count of fractional digits */
    __int128 mant = 0;
    int frac = 0, digits = 0, seen_dot = 0;
    for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
        if (*p == '.') {
            if (seen_dot)
                return -1;
            seen_dot = 1;
            continue;
        }
        if (++digits > 30)
            return -1;
        mant = mant * 10 + (*p - '0');
        frac += seen_dot;
    }
    if (digits == 0)
        return -1;
    int base = 10, power = 0;
    if ((*p == 'e' || *p == 'E') && p[1] != '\0' && p[1] != 'i') {
        int sign = 1, e = 0;
        p++;
        if (*p == '+' || *p == '-')
            sign = *p++ == '-' ? -1 : 1;
        if (!(*p >= '0' && *p <= '9'))
            return -1;
        for (; *p >= '0' && *p <= '9'; p++) {
            e = e * 10 + (*p - '0');
            if (e > 40)
                return -1;
        }
        if (*p)
            return -1;
        power = sign * e;
    } else {
        const struct suffix *sf = NULL;
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
            if (strcmp(p, suffixes[i].name) == 0) {
                sf = &suffixes[i];
                break;
            }
        }
        if (!sf)
            return -1;
        base = sf->base;
        power = sf->power;
    }
    /* value = mant * 10^-frac * base^power, in milli-units: times 1000 */
    __int128 v = mant;
    if (base == 2) {
        if (mul_checked(&v, (__int128)1 << power) < 0)
            return -1;
        power = 0;
    }
    int exp10 = power + 3 - frac;
    for (; exp10 > 0; exp10--)
        if (mul_checked(&v, 10) < 0)
            return -1;
    for (; exp10 < 0; exp10++)
        v = (v + 9) / 10; /* round up, like MilliValue() */
    if (v > INT64_MAX)
        return -1;
    *milli = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

void qty_format(int64_t milli, char *out, size_t outlen)
{
    if (milli % 1000 == 0)
        snprintf(out, outlen, "%" PRId64, milli / 1000);
    else
        snprintf(out, outlen, "%" PRId64 "m", milli);
}
