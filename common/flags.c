#include "flags.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "log.h"

const struct fl_flag *fl_find(const struct fl_flag *t, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(t[i].name) == len && strncmp(t[i].name, name, len) == 0)
            return &t[i];
    return NULL;
}

int fl_parse_duration(const char *s, long *ms)
{
    if (!s || !*s)
        return -1;
    if (strcmp(s, "0") == 0) {
        *ms = 0;
        return 0;
    }
    double total = 0;
    const char *p = s;
    while (*p) {
        /* digits with an optional fraction; no sign, no exponent */
        const char *q = p;
        while (isdigit((unsigned char)*q) || *q == '.')
            q++;
        if (q == p || q - p > 30)
            return -1;
        char num[32], *end;
        snprintf(num, sizeof(num), "%.*s", (int)(q - p), p);
        errno = 0;
        double v = strtod(num, &end);
        if (errno || *end)
            return -1;
        p = q;
        double unit;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1;
            p += 2;
        } else if (strncmp(p, "us", 2) == 0) {
            unit = 0.001;
            p += 2;
        } else if (*p == 'h') {
            unit = 3600000;
            p++;
        } else if (*p == 'm') {
            unit = 60000;
            p++;
        } else if (*p == 's') {
            unit = 1000;
            p++;
        } else {
            return -1; /* a unit is required, as in Go */
        }
        total += v * unit;
        if (total > (double)LONG_MAX / 2)
            return -1;
    }
    *ms = (long)(total + 0.5);
    return 0;
}

int fl_log_level(void *field, const char *value)
{
    return log_parse_level(value, field) < 0 ? -1 : 0;
}

static int parse_bool(const char *s, int *out)
{
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "1") || !strcmp(s, "yes"))
        *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "0") || !strcmp(s, "no"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_int(const char *s, long long *out)
{
    char *end;
    if (!isdigit((unsigned char)s[s[0] == '-']))
        return -1; /* no blanks, no '+', no empty value */
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = n;
    return 0;
}

/* Splits csv into the list field (into dst when not NULL). Returns the
 * number of items, or -1 when an item or the count does not fit. */
static int split_list(const struct fl_flag *f, char *dst, const char *csv)
{
    size_t width = f->size / (size_t)f->max;
    int k = 0;
    for (const char *p = csv;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && isspace((unsigned char)*p))
            p++, n--;
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n) {
            if (k == f->max || n >= width)
                return -1;
            if (dst) {
                memcpy(dst + (size_t)k * width, p, n);
                dst[(size_t)k * width + n] = '\0';
            }
            k++;
        }
        if (!e)
            return k;
        p = e + 1;
    }
}

/* Whether the entry's field has the size its type writes. */
static int fits(const struct fl_flag *f)
{
    switch (f->type) {
    case FL_STR:
        return f->size == sizeof(const char *);
    case FL_BUF:
        return f->size > 0;
    case FL_INT:
        return f->size == sizeof(int) || f->size == sizeof(long long);
    case FL_DUR:
        return f->size == sizeof(long);
    case FL_BOOL:
        return f->size == sizeof(int);
    case FL_DBL:
        return f->size == sizeof(double);
    case FL_LIST:
        return f->max > 0 && f->size % (size_t)f->max == 0 && f->size / (size_t)f->max > 1;
    case FL_FUNC:
        return f->set != NULL;
    }
    return 0;
}

int fl_set(const struct fl_flag *f, void *cfg, const char *v, char *err, size_t errlen)
{
    char *field = (char *)cfg + f->off;
    if (!fits(f))
        return errf(err, errlen, MK_ERR_INVAL, "bad flag table entry %s", f->name);
    if (!v)
        return errf(err, errlen, MK_ERR_INVAL, "a value is required");
    size_t len = strlen(v);
    long long n;
    switch (f->type) {
    case FL_STR:
    case FL_BUF:
        if (len < (size_t)f->min)
            return errf(err, errlen, MK_ERR_INVAL, "must not be empty, got \"%.64s\"", v);
        if (f->type == FL_STR) {
            memcpy(field, &v, sizeof(v));
            return 0;
        }
        if (len >= f->size)
            return errf(err, errlen, MK_ERR_INVAL, "longer than %zu bytes, got \"%.64s...\"",
                        f->size - 1, v);
        memcpy(field, v, len + 1);
        return 0;
    case FL_INT: {
        long long lo = f->size == sizeof(int) ? INT_MIN : LLONG_MIN;
        long long hi = f->size == sizeof(int) ? INT_MAX : LLONG_MAX;
        if (f->max > f->min)
            lo = f->min, hi = f->max;
        if (parse_int(v, &n) < 0 || n < lo || n > hi)
            return errf(err, errlen, MK_ERR_INVAL,
                        "expected an integer from %lld to %lld, got \"%.64s\"", lo, hi, v);
        if (f->size == sizeof(int)) {
            int i = (int)n;
            memcpy(field, &i, sizeof(i));
        } else {
            memcpy(field, &n, sizeof(n)); /* long, size_t: 64-bit */
        }
        return 0;
    }
    case FL_DUR: {
        long ms;
        if (fl_parse_duration(v, &ms) < 0)
            return errf(err, errlen, MK_ERR_INVAL,
                        "expected a duration such as 90s or 1m30s, got \"%.64s\"", v);
        if (f->max > f->min && (ms < f->min || ms > f->max))
            return errf(err, errlen, MK_ERR_INVAL, "expected from %lldms to %lldms, got \"%.64s\"",
                        f->min, f->max, v);
        memcpy(field, &ms, sizeof(ms));
        return 0;
    }
    case FL_BOOL: {
        int b;
        if (parse_bool(v, &b) < 0)
            return errf(err, errlen, MK_ERR_INVAL, "expected true or false, got \"%.64s\"", v);
        memcpy(field, &b, sizeof(b));
        return 0;
    }
    case FL_DBL: {
        char *end;
        errno = 0;
        double d = *v ? strtod(v, &end) : 0;
        if (!*v || errno || *end || !isfinite(d))
            return errf(err, errlen, MK_ERR_INVAL, "expected a number, got \"%.64s\"", v);
        memcpy(field, &d, sizeof(d));
        return 0;
    }
    case FL_LIST: {
        int k = split_list(f, NULL, v); /* checked first: the field is unchanged on error */
        if (k < 0)
            return errf(err, errlen, MK_ERR_INVAL,
                        "at most %lld items of fewer than %zu bytes, got \"%.64s\"", f->max,
                        f->size / (size_t)f->max, v);
        split_list(f, field, v);
        memcpy((char *)cfg + f->aux, &k, sizeof(k));
        return 0;
    }
    case FL_FUNC:
        if (f->set(field, v) < 0)
            return errf(err, errlen, MK_ERR_INVAL, "invalid value \"%.64s\"", v);
        return 0;
    }
    return errf(err, errlen, MK_ERR_INVAL, "bad flag table entry %s", f->name);
}

int fl_parse(const struct fl_flag *t, size_t n, void *cfg, int argc, char **argv, char *err,
             size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            return errf(err, errlen, MK_ERR_INVAL, "unexpected argument %.64s", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const char *v = eq ? eq + 1 : NULL;
        const struct fl_flag *f = fl_find(t, n, name, len);
        if (!f && !eq && strncmp(name, "no-", 3) == 0) {
            f = fl_find(t, n, name + 3, len - 3);
            if (f && f->type != FL_BOOL)
                f = NULL;
            v = "false";
        }
        if (!f)
            return errf(err, errlen, MK_ERR_INVAL, "unknown flag --%.*s",
                        (int)(len > 64 ? 64 : len), name);
        if (!v) {
            if (f->type == FL_BOOL && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0))
                v = "true";
            else if (i + 1 < argc)
                v = argv[++i];
            else
                return errf(err, errlen, MK_ERR_INVAL, "--%s needs a value", f->name);
        }
        char why[256];
        if (fl_set(f, cfg, v, why, sizeof(why)) < 0)
            return errf(err, errlen, MK_ERR_INVAL, "--%s: %s", f->name, why);
    }
    return 0;
}

void fl_usage(FILE *out, const struct fl_flag *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char head[64];
        snprintf(head, sizeof(head), "--%s%s%s", t[i].name, t[i].arg ? " " : "",
                 t[i].arg ? t[i].arg : "");
        const char *h = t[i].help ? t[i].help : "";
        fprintf(out, "  %-26s ", head);
        for (;;) {
            size_t l = strcspn(h, "\n");
            fprintf(out, "%.*s", (int)l, h);
            if (!h[l])
                break;
            fprintf(out, "\n%29s", "");
            h += l + 1;
        }
        if (t[i].key)
            fprintf(out, " [%s]", t[i].key);
        fputc('\n', out);
    }
}
