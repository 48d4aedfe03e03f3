/* SPDX-License-Identifier: MIT */
/*
 * worker.c: the workers' threads, each life's loop, its retirement and
 * successor. Rank 6: calls ops.c, idle.c, life.c and the leaves check.c
 * and clock.c; the main file (rank 7) calls it.
 */
#ifndef LFP_STRESS_WORKER_H
#define LFP_STRESS_WORKER_H

#include <stdint.h>

struct stress_run;
struct stress_worker;

int stress_spawn(struct stress_worker *w);
uint64_t stress_live(const struct stress_run *r);

#endif /* LFP_STRESS_WORKER_H */
