#include "budget.h"

void wh_budget_init(struct wh_budget *b, size_t cap)
{
    atomic_init(&b->used, 0);
    b->cap = cap;
}

int wh_budget_take(struct wh_budget *b, size_t n)
{
    size_t cur = atomic_load(&b->used);
    do {
        if (b->cap && (n > b->cap || cur > b->cap - n))
            return -1;
    } while (!atomic_compare_exchange_weak(&b->used, &cur, cur + n));
    return 0;
}

void wh_budget_give(struct wh_budget *b, size_t n)
{
    atomic_fetch_sub(&b->used, n);
}

size_t wh_budget_used(struct wh_budget *b)
{
    return atomic_load(&b->used);
}
