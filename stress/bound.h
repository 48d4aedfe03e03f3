/* SPDX-License-Identifier: MIT */
/*
 * bound.c: how many slots the threads of a run can hold and park at
 * most. Rank 0, a leaf: calls nothing in the harness.
 */
#ifndef LFP_STRESS_BOUND_H
#define LFP_STRESS_BOUND_H

#include <stdint.h>

#include "stress.h"

uint64_t stress_bound(const struct stress_opts *o);
uint32_t stress_bound_caches(const struct stress_opts *o);

#endif /* LFP_STRESS_BOUND_H */
