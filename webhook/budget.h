/* A byte budget shared by the server's threads: how much memory requests may
 * hold at once, bodies being received and review trees being decoded
 * together. A request that would go over it is refused at once (429), so
 * the process stays under a memory bound whatever the load, instead of
 * queueing or being OOM-killed.
 *
 * Thread-safe (lock-free); the struct is owned by the caller and must
 * outlive every user. */
#ifndef MKUEUE_WH_BUDGET_H
#define MKUEUE_WH_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>

struct wh_budget {
    _Atomic size_t used;
    size_t cap; /* 0 = unlimited */
};

void wh_budget_init(struct wh_budget *b, size_t cap);
/* Takes n bytes: 0, or -1 (nothing taken) when used + n would exceed cap. */
int wh_budget_take(struct wh_budget *b, size_t n);
/* Gives back n bytes taken before. */
void wh_budget_give(struct wh_budget *b, size_t n);
size_t wh_budget_used(struct wh_budget *b);

#endif
