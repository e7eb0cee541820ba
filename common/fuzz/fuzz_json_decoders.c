/* Differential: whatever yajl's decoder (json_yajl.h) accepts, jansson must
 * accept as the same tree: equal values, the same types, the same key order
 * (compared as compact text) — with and without JSON_REJECT_DUPLICATES, and
 * with members pruned: then the tree is jansson's with jy_prune applied,
 * and the one thing yajl may accept that jansson refuses is a duplicate key
 * inside a pruned member (json_yajl.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_yajl.h"
#include "jsonx.h"

/* Short keys the fuzzer finds, in every shape a path takes. */
static const struct jy_path paths[] = {
    {{"a"}},
    {{"b", "c"}},
    {{"d", JY_EACH, "e"}},
    {{"f", JY_EACH}},
};
static const struct jy_prune prune = JY_PRUNE_OF(paths);

static void same_text_or_abort(const json_t *a, const json_t *b)
{
    if (!json_equal(a, b))
        abort();
    struct buf x, y;
    buf_init(&x, BUF_CAP_JSON_TEXT);
    buf_init(&y, BUF_CAP_JSON_TEXT);
    if (jx_dump(a, JSON_COMPACT, &x) != 0 || jx_dump(b, JSON_COMPACT, &y) != 0 || x.len != y.len ||
        memcmp(x.data, y.data, x.len) != 0)
        abort();
    buf_free(&x);
    buf_free(&y);
}

static void same_or_abort(const char *data, size_t size, size_t flags, const struct jy_prune *pr)
{
    json_t *fast = jy_decode(data, size, flags, pr);
    json_t *ref = json_loadb(data, size, flags, NULL);
    jy_prune(ref, pr);
    /* a duplicate inside a pruned member: jansson refuses it only with the flag */
    json_t *lax = !ref && pr && fast ? json_loadb(data, size, 0, NULL) : NULL;
    jy_prune(lax, pr);
    if (fast) {
        if (!ref && !lax)
            abort(); /* yajl accepted what jansson refuses */
        same_text_or_abort(fast, ref ? ref : lax);
    }
    /* jx_loadb gives jansson's verdict either way (but that duplicate) */
    json_t *either = jx_loadb(data, size, flags, pr, NULL);
    if (either && !ref && !lax)
        abort();
    if (!either && ref)
        abort();
    if (either)
        same_text_or_abort(either, ref ? ref : lax);
    json_decref(either);
    json_decref(lax);
    json_decref(fast);
    json_decref(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int p = 0; p < 2; p++) {
        same_or_abort((const char *)data, size, 0, p ? &prune : NULL);
        same_or_abort((const char *)data, size, JSON_REJECT_DUPLICATES, p ? &prune : NULL);
    }
    return 0;
}
