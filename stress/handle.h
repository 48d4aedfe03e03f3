/* SPDX-License-Identifier: MIT */
/*
 * handle.c: handles taken, checked, released, forged and kept after
 * release. Rank 3: calls life.c, rcu.c and the leaves check.c and mode.c.
 */
#ifndef LFP_STRESS_HANDLE_H
#define LFP_STRESS_HANDLE_H

#include <stdbool.h>

#include "stress.h"

struct stress_life;

bool stress_handle_take(struct stress_life *l, struct stress_held *h,
			const char *op);
bool stress_handle_check(struct stress_life *l, const struct stress_held *h,
			 const char *op);
int stress_handle_free(struct stress_life *l, lfp_handle h, bool cached);
void stress_handle_bury(struct stress_life *l, const struct stress_held *h);
void stress_handle_show(struct stress_life *l, struct stress_held *h);
void stress_handle_probe(struct stress_life *l);

#endif /* LFP_STRESS_HANDLE_H */
