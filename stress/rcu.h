/* SPDX-License-Identifier: MIT */
/*
 * rcu.c: RCU readers (the deferred mode) and each life's registration
 * with liburcu. Rank 1: calls only the leaf check.c.
 */
#ifndef LFP_STRESS_RCU_H
#define LFP_STRESS_RCU_H

#include <stdbool.h>

struct stress_life;

void stress_rcu_begin(struct stress_life *l);
void stress_rcu_end(struct stress_life *l);
void stress_rcu_read(struct stress_life *l);
bool stress_rcu_room(struct stress_life *l, unsigned sixteenths);
void stress_rcu_spend(struct stress_life *l);
bool stress_rcu_wait(struct stress_life *l);

#endif /* LFP_STRESS_RCU_H */
