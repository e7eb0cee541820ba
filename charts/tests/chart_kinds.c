/* Prints the job-kind registry (common/kinds) as JSON lines, for the chart
 * tests: the chart's kind table and webhook paths must match it. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "kinds/kinds.h"

int main(void)
{
    for (size_t i = 0; i < mk_kinds_count(); i++) {
        const struct mk_kind *k = mk_kind_at(i);
        char mutate[512], validate[512];
        if (mk_webhook_path(k, "mutate", mutate, sizeof(mutate)) != 0 ||
            mk_webhook_path(k, "validate", validate, sizeof(validate)) != 0) {
            fprintf(stderr, "chart_kinds: no webhook path for %s\n", k->kind);
            return 1;
        }
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind", k->kind, "group", k->group,
                              "version", k->version, "resource", k->resource, "mutate", mutate,
                              "validate", validate);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!s) {
            json_decref(o);
            return 1;
        }
        puts(s);
        free(s);
        json_decref(o);
    }
    return 0;
}
