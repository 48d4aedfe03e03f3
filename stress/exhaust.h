/* SPDX-License-Identifier: MIT */
/*
 * exhaust.c: when running out is allowed, the marks of the modes' pool
 * calls, and LFP_EXHAUST_ABORT turned into a violation. Rank 1: calls only
 * the leaves bound.c, check.c and mode.c.
 */
#ifndef LFP_STRESS_EXHAUST_H
#define LFP_STRESS_EXHAUST_H

#include <stdbool.h>
#include <stdint.h>

struct stress_life;
struct stress_run;

/* A drain under way, for the report of an abort inside it. */
struct stress_drain_note {
	volatile uint64_t round, got, expect, held, capacity;
};

void stress_exhaust_setup(struct stress_run *r);
void stress_call_enter(const char *op, bool alloc);
void stress_call_leave(void);
bool stress_in_call(void);
void stress_alloc_drain(const struct stress_drain_note *n);
void stress_dry(struct stress_life *l, const char *op, uint32_t want,
		uint32_t got);
void stress_check_growth(struct stress_run *r, const char *when);

#endif /* LFP_STRESS_EXHAUST_H */
