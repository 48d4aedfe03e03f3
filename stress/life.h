/* SPDX-License-Identifier: MIT */
/*
 * life.c: a life, one thread's time in a worker's seat (struct
 * stress_life, in run.h): how it begins and ends, what it shows the
 * supervisor, and its explicit cache. Rank 2: calls rcu.c and the leaves
 * check.c, mode.c and tally.c.
 */
#ifndef LFP_STRESS_LIFE_H
#define LFP_STRESS_LIFE_H

#include <stdint.h>

struct lfp_cache;
struct stress_life;
struct stress_worker;

void stress_life_begin(struct stress_life *l, struct stress_worker *w);
void stress_life_end(struct stress_life *l, uint64_t ops0);
void stress_life_publish(struct stress_life *l);
struct lfp_cache *stress_life_cache(struct stress_life *l);

#endif /* LFP_STRESS_LIFE_H */
