#include "dispatchers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rc_names_has(const json_t *list, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return 1;
    }
    return 0;
}

int rc_names_equal(const json_t *a, const json_t *b)
{
    size_t na = json_array_size(a), nb = json_array_size(b);
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++) {
        const char *x = json_string_value(json_array_get(a, i));
        const char *y = json_string_value(json_array_get(b, i));
        if (!x || !y || strcmp(x, y) != 0)
            return 0;
    }
    return 1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* The config's clusters sorted by name; only connected ones when
 * `connected` is given. */
static json_t *sorted_names(const json_t *clusters, const int *connected)
{
    size_t n = json_array_size(clusters), k = 0;
    json_t **v = calloc(n ? n : 1, sizeof(*v));
    json_t *out = json_array();
    if (!v || !out)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(clusters, i);
        if (json_is_string(c) && (!connected || connected[i]))
            v[k++] = c;
    }
    qsort(v, k, sizeof(*v), by_name);
    for (size_t i = 0; i < k; i++)
        if (json_array_append(out, v[i]) < 0)
            goto fail;
    free(v);
    return out;
fail:
    free(v);
    json_decref(out);
    return NULL;
}

/* current ∩ config, in current's order */
static json_t *known_only(const json_t *current, const json_t *clusters)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(current, i, v)
    {
        if (out && json_is_string(v) && rc_names_has(clusters, json_string_value(v)) &&
            !rc_names_has(out, json_string_value(v)))
            json_array_append(out, v);
    }
    return out;
}

int rc_nominate(enum rc_dispatcher d, const json_t *clusters, const int *connected,
                const json_t *current, int step, long round_ms, long long round_start_ms,
                long long now_ms, struct rc_nomination *out)
{
    memset(out, 0, sizeof(*out));
    out->requeue_ms = -1;
    switch (d) {
    case RC_DISPATCH_ALL_AT_ONCE:
        out->clusters = sorted_names(clusters, connected);
        break;
    case RC_DISPATCH_EXTERNAL:
        out->clusters = known_only(current, clusters);
        break;
    case RC_DISPATCH_INCREMENTAL:
        out->clusters = known_only(current, clusters);
        if (!out->clusters)
            break;
        if (round_start_ms > 0 && now_ms - round_start_ms < round_ms) {
            out->requeue_ms = (long)(round_ms - (now_ms - round_start_ms));
            break;
        }
        /* as Kueue: the next clusters by name, connected or not (a copy is
         * only created on a connected one; the round then runs its course) */
        json_t *order = sorted_names(clusters, NULL);
        if (!order) {
            rc_nomination_clear(out);
            break;
        }
        int added = 0;
        for (size_t i = 0; i < json_array_size(order) && added < step; i++) {
            json_t *c = json_array_get(order, i);
            if (rc_names_has(out->clusters, json_string_value(c)))
                continue;
            if (json_array_append(out->clusters, c) < 0) {
                rc_nomination_clear(out);
                break;
            }
            added++;
        }
        json_decref(order);
        if (!out->clusters)
            break;
        if (added == 0) {
            snprintf(out->error, sizeof(out->error), "no more workers to nominate");
            out->requeue_ms = round_ms;
        } else {
            out->new_round = 1;
            out->requeue_ms = round_ms;
        }
        break;
    }
    return out->clusters ? 0 : -1;
}

void rc_nomination_clear(struct rc_nomination *n)
{
    json_decref(n->clusters);
    n->clusters = NULL;
}
