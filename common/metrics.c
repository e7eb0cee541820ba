#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double mt_latency_buckets[MT_LATENCY_BUCKETS_N] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                         0.5,   1,    2.5,   5,    10};

#define DROPPED_NAME "mkueue_metrics_series_dropped_total"

struct series {
    struct series *next; /* hash chain */
    uint64_t hash;
    const char *vals[MT_MAX_LABELS]; /* into key */
    const char *key;                 /* the values, each NUL-terminated, back to back */
    size_t keylen;
    double value;      /* counter or gauge value; histogram sum */
    uint64_t count;    /* histogram observations */
    uint64_t *buckets; /* histogram: per-bucket (not cumulative) counts */
};

struct mt_family {
    struct mt_family *next; /* registration order */
    struct mt_registry *reg;
    enum mt_type type;
    char *name, *help;
    size_t nlabels;
    char *labels[MT_MAX_LABELS];
    double *bounds; /* histogram upper bounds, +Inf implicit */
    size_t nbounds;
    pthread_mutex_t lock; /* guards the table and every series value */
    struct series **table;
    size_t tsize, nseries;
};

struct mt_registry {
    pthread_mutex_t lock; /* guards the family list */
    struct mt_family *head, *tail;
    size_t limit;
    struct mt_family *dropped;
};

/* ---- series table ------------------------------------------------------ */

static const char *val(const char *const values[], size_t i)
{
    return values && values[i] ? values[i] : "";
}

static uint64_t hash_values(const char *const values[], size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, NUL after each value */
    for (size_t i = 0; i < n; i++) {
        for (const unsigned char *p = (const unsigned char *)val(values, i);; p++) {
            h = (h ^ *p) * 1099511628211ULL;
            if (!*p)
                break;
        }
    }
    return h;
}

static struct series *lookup(const struct mt_family *f, const char *const values[], uint64_t h)
{
    for (struct series *s = f->table[h & (f->tsize - 1)]; s; s = s->next) {
        if (s->hash != h)
            continue;
        size_t i = 0;
        while (i < f->nlabels && strcmp(s->vals[i], val(values, i)) == 0)
            i++;
        if (i == f->nlabels)
            return s;
    }
    return NULL;
}

static void grow(struct mt_family *f)
{
    size_t nsize = f->tsize * 2;
    struct series **nt = calloc(nsize, sizeof(*nt));
    if (!nt)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < f->tsize; i++) {
        struct series *s = f->table[i];
        while (s) {
            struct series *next = s->next;
            s->next = nt[s->hash & (nsize - 1)];
            nt[s->hash & (nsize - 1)] = s;
            s = next;
        }
    }
    free(f->table);
    f->table = nt;
    f->tsize = nsize;
}

/* One allocation: the struct, then the bucket counts, then the key. */
static struct series *new_series(struct mt_family *f, const char *const values[], uint64_t h)
{
    size_t keylen = 0;
    for (size_t i = 0; i < f->nlabels; i++)
        keylen += strlen(val(values, i)) + 1;
    size_t nb = f->type == MT_HISTOGRAM ? f->nbounds : 0;
    struct series *s = calloc(1, sizeof(*s) + nb * sizeof(uint64_t) + keylen + 1);
    if (!s)
        return NULL;
    s->buckets = (uint64_t *)(s + 1);
    char *key = (char *)(s->buckets + nb);
    s->key = key;
    s->keylen = keylen;
    s->hash = h;
    for (size_t i = 0; i < f->nlabels; i++) {
        size_t len = strlen(val(values, i)) + 1;
        memcpy(key, val(values, i), len);
        s->vals[i] = key;
        key += len;
    }
    return s;
}

/* Finds or creates the series under f->lock; NULL when absent and not
 * created (limit reached, oom, or create == 0). */
static struct series *get_series(struct mt_family *f, const char *const values[], int create,
                                 int *dropped)
{
    uint64_t h = hash_values(values, f->nlabels);
    struct series *s = lookup(f, values, h);
    if (s || !create)
        return s;
    if (f->nseries >= __atomic_load_n(&f->reg->limit, __ATOMIC_RELAXED)) {
        *dropped = 1;
        return NULL;
    }
    s = new_series(f, values, h);
    if (!s)
        return NULL;
    s->next = f->table[h & (f->tsize - 1)];
    f->table[h & (f->tsize - 1)] = s;
    if (++f->nseries > f->tsize)
        grow(f);
    return s;
}

/* Runs one update under the family lock; counts dropped series outside it. */
static int update(struct mt_family *f, enum mt_type type, const char *const values[], double v,
                  int add)
{
    if (!f || f->type != type || (f->nlabels && !values))
        return -1;
    int dropped = 0;
    pthread_mutex_lock(&f->lock);
    struct series *s = get_series(f, values, 1, &dropped);
    if (s && type == MT_HISTOGRAM) {
        size_t i = 0;
        while (i < f->nbounds && !(v <= f->bounds[i]))
            i++;
        if (i < f->nbounds)
            s->buckets[i]++;
        s->count++;
        s->value += v;
    } else if (s) {
        s->value = add ? s->value + v : v;
    }
    pthread_mutex_unlock(&f->lock);
    if (dropped && f != f->reg->dropped) {
        const char *name[] = {f->name};
        update(f->reg->dropped, MT_COUNTER, name, 1, 1);
    }
    return s ? 0 : -1;
}

int mt_inc(struct mt_family *fam, const char *const values[], double delta)
{
    if (!(delta >= 0)) /* also refuses NaN */
        return -1;
    return update(fam, MT_COUNTER, values, delta, 1);
}

int mt_set(struct mt_family *fam, const char *const values[], double v)
{
    return update(fam, MT_GAUGE, values, v, 0);
}

int mt_add(struct mt_family *fam, const char *const values[], double delta)
{
    return update(fam, MT_GAUGE, values, delta, 1);
}

int mt_observe(struct mt_family *fam, const char *const values[], double v)
{
    return update(fam, MT_HISTOGRAM, values, v, 1);
}

int mt_value(struct mt_family *fam, const char *const values[], double *out)
{
    if (!fam || (fam->nlabels && !values))
        return -1;
    pthread_mutex_lock(&fam->lock);
    const struct series *s = get_series(fam, values, 0, NULL);
    if (s)
        *out = fam->type == MT_HISTOGRAM ? (double)s->count : s->value;
    pthread_mutex_unlock(&fam->lock);
    return s ? 0 : -1;
}

/* ---- registration ------------------------------------------------------ */

static int valid_name(const char *s, int colon)
{
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++) {
        int alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                    (colon && *p == ':');
        if (!alpha && (p == s || *p < '0' || *p > '9'))
            return 0;
    }
    return 1;
}

static void family_free(struct mt_family *f)
{
    if (!f)
        return;
    for (size_t i = 0; f->table && i < f->tsize; i++) {
        struct series *s = f->table[i];
        while (s) {
            struct series *next = s->next;
            free(s);
            s = next;
        }
    }
    free(f->table);
    for (size_t i = 0; i < f->nlabels; i++)
        free(f->labels[i]);
    free(f->bounds);
    free(f->name);
    free(f->help);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static int same_shape(const struct mt_family *f, enum mt_type type, const char *const labels[],
                      size_t nlabels, const double *bounds, size_t nbounds)
{
    if (f->type != type || f->nlabels != nlabels || f->nbounds != nbounds)
        return 0;
    for (size_t i = 0; i < nlabels; i++)
        if (strcmp(f->labels[i], labels[i]) != 0)
            return 0;
    return nbounds == 0 || memcmp(f->bounds, bounds, nbounds * sizeof(double)) == 0;
}

static struct mt_family *family_new(struct mt_registry *reg, enum mt_type type, const char *name,
                                    const char *help, const char *const labels[], size_t nlabels,
                                    const double *bounds, size_t nbounds)
{
    struct mt_family *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    pthread_mutex_init(&f->lock, NULL);
    f->reg = reg;
    f->type = type;
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    f->tsize = 16;
    f->table = calloc(f->tsize, sizeof(*f->table));
    f->nbounds = nbounds;
    f->bounds = nbounds ? malloc(nbounds * sizeof(double)) : NULL;
    int ok = f->name && f->help && f->table && (!nbounds || f->bounds);
    for (size_t i = 0; ok && i < nlabels; i++) {
        f->labels[i] = strdup(labels[i]);
        ok = f->labels[i] != NULL;
        f->nlabels = i + 1;
    }
    if (nbounds && f->bounds)
        memcpy(f->bounds, bounds, nbounds * sizeof(double));
    /* without labels the one series exists from the start, at 0 */
    int dropped = 0;
    if (ok && nlabels == 0)
        ok = get_series(f, NULL, 1, &dropped) != NULL;
    if (!ok) {
        family_free(f);
        return NULL;
    }
    return f;
}

static struct mt_family *reg_family(struct mt_registry *reg, enum mt_type type, const char *name,
                                    const char *help, const char *const labels[],
                                    const double *bounds, size_t nbounds)
{
    size_t nlabels = 0;
    if (!reg || !valid_name(name, 1))
        return NULL;
    for (; labels && labels[nlabels]; nlabels++) {
        const char *l = labels[nlabels];
        if (nlabels == MT_MAX_LABELS || !valid_name(l, 0) || strncmp(l, "__", 2) == 0 ||
            (type == MT_HISTOGRAM && strcmp(l, "le") == 0))
            return NULL;
        for (size_t j = 0; j < nlabels; j++)
            if (strcmp(labels[j], l) == 0)
                return NULL;
    }
    if (nbounds && isinf(bounds[nbounds - 1]) && bounds[nbounds - 1] > 0)
        nbounds--; /* +Inf is implicit */
    if (nbounds > MT_MAX_BUCKETS)
        return NULL;
    for (size_t i = 0; i < nbounds; i++)
        if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
            return NULL;

    pthread_mutex_lock(&reg->lock);
    struct mt_family *f = reg->head;
    while (f && strcmp(f->name, name) != 0)
        f = f->next;
    if (f) {
        if (!same_shape(f, type, labels, nlabels, bounds, nbounds))
            f = NULL;
    } else if ((f = family_new(reg, type, name, help, labels, nlabels, bounds, nbounds))) {
        if (reg->tail)
            reg->tail->next = f;
        else
            reg->head = f;
        reg->tail = f;
    }
    pthread_mutex_unlock(&reg->lock);
    return f;
}

struct mt_family *mt_counter(struct mt_registry *reg, const char *name, const char *help,
                             const char *const labels[])
{
    return reg_family(reg, MT_COUNTER, name, help, labels, NULL, 0);
}

struct mt_family *mt_gauge(struct mt_registry *reg, const char *name, const char *help,
                           const char *const labels[])
{
    return reg_family(reg, MT_GAUGE, name, help, labels, NULL, 0);
}

struct mt_family *mt_histogram(struct mt_registry *reg, const char *name, const char *help,
                               const char *const labels[], const double *buckets, size_t n)
{
    if (!buckets || n == 0) {
        buckets = mt_latency_buckets;
        n = MT_LATENCY_BUCKETS_N;
    }
    return reg_family(reg, MT_HISTOGRAM, name, help, labels, buckets, n);
}

int mt_register(struct mt_registry *reg, const struct mt_def *defs, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mt_def *d = &defs[i];
        if (d->type == MT_HISTOGRAM)
            *d->out = mt_histogram(reg, d->name, d->help, d->labels, d->buckets, d->nbuckets);
        else
            *d->out = reg_family(reg, d->type, d->name, d->help, d->labels, NULL, 0);
        if (!*d->out)
            rc = -1;
    }
    return rc;
}

struct mt_registry *mt_registry_new(void)
{
    struct mt_registry *reg = calloc(1, sizeof(*reg));
    if (!reg)
        return NULL;
    pthread_mutex_init(&reg->lock, NULL);
    reg->limit = MT_DEFAULT_SERIES_LIMIT;
    static const char *const labels[] = {"family", NULL};
    reg->dropped =
        mt_counter(reg, DROPPED_NAME,
                   "Series not created because their family reached its series limit.", labels);
    if (!reg->dropped) {
        mt_registry_free(reg);
        return NULL;
    }
    return reg;
}

void mt_registry_free(struct mt_registry *reg)
{
    if (!reg)
        return;
    struct mt_family *f = reg->head;
    while (f) {
        struct mt_family *next = f->next;
        family_free(f);
        f = next;
    }
    pthread_mutex_destroy(&reg->lock);
    free(reg);
}

void mt_registry_set_series_limit(struct mt_registry *reg, size_t limit)
{
    if (reg)
        __atomic_store_n(&reg->limit, limit, __ATOMIC_RELAXED);
}

/* ---- rendering --------------------------------------------------------- */

void mt_format_value(double v, char *out, size_t outlen)
{
    if (isnan(v))
        snprintf(out, outlen, "NaN");
    else if (isinf(v))
        snprintf(out, outlen, v > 0 ? "+Inf" : "-Inf");
    else if (v == 0)
        snprintf(out, outlen, "0");                          /* also -0 */
    else if (v == floor(v) && fabs(v) <= 9007199254740992.0) /* exact integers: 2^53 */
        snprintf(out, outlen, "%.0f", v);
    else
        for (int prec = 1; prec <= 17; prec++) { /* the shortest form that reads back */
            snprintf(out, outlen, "%.*g", prec, v);
            if (strtod(out, NULL) == v)
                break;
        }
}

static void put_escaped(struct buf *b, const char *s, int quote)
{
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\'             ? "\\\\"
                          : *s == '\n'           ? "\\n"
                          : (quote && *s == '"') ? "\\\""
                                                 : NULL;
        if (esc) {
            buf_append(b, run, (size_t)(s - run));
            buf_append_str(b, esc);
            run = s + 1;
        }
    }
    buf_append_str(b, run);
}

static void put_value(struct buf *b, double v)
{
    char num[64];
    mt_format_value(v, num, sizeof(num));
    buf_append_str(b, num);
}

/* name{l1="v1",...,le="x"} value */
static void put_sample(struct buf *b, const struct mt_family *f, const char *suffix,
                       const struct series *s, const char *le, double v)
{
    buf_append_str(b, f->name);
    buf_append_str(b, suffix);
    if (f->nlabels || le) {
        buf_append_str(b, "{");
        for (size_t i = 0; i < f->nlabels; i++) {
            buf_printf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
            put_escaped(b, s->vals[i], 1);
            buf_append_str(b, "\"");
        }
        if (le)
            buf_printf(b, "%sle=\"%s\"", f->nlabels ? "," : "", le);
        buf_append_str(b, "}");
    }
    buf_append_str(b, " ");
    put_value(b, v);
    buf_append_str(b, "\n");
}

static int cmp_series(const void *a, const void *b)
{
    const struct series *x = *(const struct series *const *)a;
    const struct series *y = *(const struct series *const *)b;
    /* NUL-separated keys compare byte-wise in label-tuple order */
    int c = memcmp(x->key, y->key, x->keylen < y->keylen ? x->keylen : y->keylen);
    return c ? c : (x->keylen > y->keylen) - (x->keylen < y->keylen);
}

static int render_family(struct mt_family *f, struct buf *out)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    struct series **all = f->nseries ? malloc(f->nseries * sizeof(*all)) : NULL;
    if (f->nseries && !all) {
        rc = -1;
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < f->tsize; i++)
        for (struct series *s = f->table[i]; s; s = s->next)
            all[n++] = s;
    if (n == 0)
        goto out;
    qsort(all, n, sizeof(*all), cmp_series);
    buf_printf(out, "# HELP %s ", f->name);
    put_escaped(out, f->help, 0);
    buf_printf(out, "\n# TYPE %s %s\n", f->name, types[f->type]);
    for (size_t i = 0; i < n; i++) {
        const struct series *s = all[i];
        if (f->type != MT_HISTOGRAM) {
            put_sample(out, f, "", s, NULL, s->value);
            continue;
        }
        uint64_t cum = 0;
        for (size_t j = 0; j < f->nbounds; j++) {
            char le[64];
            mt_format_value(f->bounds[j], le, sizeof(le));
            cum += s->buckets[j];
            put_sample(out, f, "_bucket", s, le, (double)cum);
        }
        put_sample(out, f, "_bucket", s, "+Inf", (double)s->count);
        put_sample(out, f, "_sum", s, NULL, s->value);
        put_sample(out, f, "_count", s, NULL, (double)s->count);
    }
out:
    pthread_mutex_unlock(&f->lock);
    free(all);
    return rc;
}

int mt_render(struct mt_registry *reg, struct buf *out)
{
    int rc = 0;
    if (!reg)
        return -1;
    pthread_mutex_lock(&reg->lock);
    for (struct mt_family *f = reg->head; f && rc == 0; f = f->next)
        rc = render_family(f, out);
    pthread_mutex_unlock(&reg->lock);
    return rc == 0 && buf_ok(out) ? 0 : -1;
}
