/* SPDX-License-Identifier: MIT */
/*
 * drain.c: the drain of an idle round and the judgment of what it got.
 * Rank 3: calls life.c, exhaust.c and the leaves check.c, mode.c and
 * clock.c; only idle.c calls it.
 */
#ifndef LFP_STRESS_DRAIN_H
#define LFP_STRESS_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "exhaust.h"
#include "lfpool.h"

struct stress_life;

/* The ways the drainer allocates, and releases again. */
enum stress_way {
	STRESS_WAY_ALLOC,
	STRESS_WAY_CACHE,
	STRESS_WAY_BULK,
	STRESS_NWAYS
};

/* The state of a drain, for its messages. */
struct stress_drain {
	struct stress_life *l;
	struct stress_drain_note note;
	struct lfp_stats before;
	enum stress_way way;
	uint32_t policy;
};

void stress_drain_begin(struct stress_drain *dr, struct stress_life *l,
			uint32_t round);
bool stress_drain_grab(struct stress_drain *dr);
bool stress_drain_empty(struct stress_drain *dr);
void stress_drain_give_back(struct stress_drain *dr);

#endif /* LFP_STRESS_DRAIN_H */
