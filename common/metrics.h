/* Thread-safe Prometheus registry: counters, gauges and histograms with a
 * fixed set of label names per family, rendered in the text exposition
 * format 0.0.4.
 *
 * A series is created on first use of a tuple of label values. Each family
 * holds at most a bounded number of series (MT_DEFAULT_SERIES_LIMIT); a new
 * tuple beyond it is dropped and counted in
 * mkueue_metrics_series_dropped_total{family="<name>"}.
 *
 * Every update function takes a NULL family and then does nothing (returns
 * -1), so a failed registration never needs a check at each call site.
 * `values` must hold as many strings as the family has label names (it may
 * be NULL for a family without labels); a NULL value counts as "". */
#ifndef MKUEUE_METRICS_H
#define MKUEUE_METRICS_H

#include <stddef.h>

#include "buf.h"

#define MT_MAX_LABELS           8
#define MT_MAX_BUCKETS          64
#define MT_DEFAULT_SERIES_LIMIT 10000

enum mt_type { MT_COUNTER, MT_GAUGE, MT_HISTOGRAM };

struct mt_registry;
struct mt_family;

/* Prometheus' default latency buckets in seconds (.005 .. 10). */
#define MT_LATENCY_BUCKETS_N 11
extern const double mt_latency_buckets[MT_LATENCY_BUCKETS_N];

/* A new registry (free with mt_registry_free), NULL on oom. It already
 * holds mkueue_metrics_series_dropped_total. */
struct mt_registry *mt_registry_new(void);
/* Frees the registry and every family; their pointers become invalid. */
void mt_registry_free(struct mt_registry *reg);
/* Changes the per-family series limit (for tests; call before use). */
void mt_registry_set_series_limit(struct mt_registry *reg, size_t limit);

/* Registers a family; the registry owns it (and copies of name, help,
 * labels and buckets). `labels` is a NULL-terminated array of label names
 * or NULL for none. Returns NULL when the metric or a label name is invalid
 * (names match [a-zA-Z_:][a-zA-Z0-9_:]*, labels [a-zA-Z_][a-zA-Z0-9_]* and
 * not "__..."; histograms reserve "le"), on more than MT_MAX_LABELS labels
 * or a repeated label, on oom, and when the name is registered with another
 * type, label list or bucket list; the same registration again returns the
 * existing family (its first help text stays). A family without labels starts with its one series
 * at 0. */
struct mt_family *mt_counter(struct mt_registry *reg, const char *name, const char *help,
                             const char *const labels[]);
struct mt_family *mt_gauge(struct mt_registry *reg, const char *name, const char *help,
                           const char *const labels[]);
/* `buckets` are upper bounds, finite and strictly increasing (at most
 * MT_MAX_BUCKETS; +Inf is implicit). NULL/0 means mt_latency_buckets. */
struct mt_family *mt_histogram(struct mt_registry *reg, const char *name, const char *help,
                               const char *const labels[], const double *buckets, size_t n);

/* A table of families for mt_register: each is registered into *out. */
struct mt_def {
    struct mt_family **out;
    enum mt_type type;
    const char *name;
    const char *help;
    const char *const *labels; /* NULL-terminated, or NULL for none */
    const double *buckets;     /* MT_HISTOGRAM: as mt_histogram's */
    size_t nbuckets;
};
/* Registers every family of defs[0..n). Returns 0, or -1 when one failed
 * (its *out is NULL; the others are registered). */
int mt_register(struct mt_registry *reg, const struct mt_def *defs, size_t n);

/* Counter += delta (delta >= 0). Returns 0, or -1 on wrong type, bad delta,
 * or a dropped series. */
int mt_inc(struct mt_family *fam, const char *const values[], double delta);
/* Gauge = v, gauge += delta (any sign). Returns as mt_inc. */
int mt_set(struct mt_family *fam, const char *const values[], double v);
int mt_add(struct mt_family *fam, const char *const values[], double delta);
/* Histogram observation. Returns as mt_inc. */
int mt_observe(struct mt_family *fam, const char *const values[], double v);

/* Reads a series without creating it: the value of a counter or gauge, the
 * observation count of a histogram. Returns 0, or -1 when absent. */
int mt_value(struct mt_family *fam, const char *const values[], double *out);

/* Appends the whole registry in text format 0.0.4 to `out`: families in
 * registration order (those with labels but no series yet are skipped),
 * series sorted by label values. Returns 0, or -1 when `out` overflowed or
 * on oom. */
int mt_render(struct mt_registry *reg, struct buf *out);

/* Formats a sample value the way Prometheus does ("+Inf", "-Inf", "NaN",
 * integers without exponent, otherwise the shortest round-trip form). */
void mt_format_value(double v, char *out, size_t outlen);

#endif
