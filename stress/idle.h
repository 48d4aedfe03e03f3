/* SPDX-License-Identifier: MIT */
/*
 * idle.c: idle rounds, workers parked holding caches while worker 0
 * drains the pool. Rank 4: calls drain.c, exhaust.c and the leaves mode.c
 * and clock.c.
 */
#ifndef LFP_STRESS_IDLE_H
#define LFP_STRESS_IDLE_H

struct stress_life;
struct stress_run;

int stress_idle_setup(struct stress_run *r);
void stress_idle_step(struct stress_life *l);
void stress_idle_retire(struct stress_life *l);
void stress_idle_teardown(struct stress_run *r);

#endif /* LFP_STRESS_IDLE_H */
