/* SPDX-License-Identifier: MIT */
/*
 * ops.c: one operation of a worker's life. Rank 5: calls idle.c,
 * handle.c, rcu.c, exhaust.c, life.c and the leaves check.c and mode.c;
 * worker.c calls it.
 */
#ifndef LFP_STRESS_OPS_H
#define LFP_STRESS_OPS_H

#include <stdbool.h>

struct stress_life;

void stress_op_step(struct stress_life *l);
void stress_op_receive(struct stress_life *l);
bool stress_op_has_mail(struct stress_life *l);
void stress_op_drop_all(struct stress_life *l);
void stress_op_let_go(struct stress_life *l, bool give);

#endif /* LFP_STRESS_OPS_H */
