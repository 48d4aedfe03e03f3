/* SPDX-License-Identifier: MIT */
/*
 * trim.c: the thread that calls lfp_trim while the workers allocate.
 * Rank 2: calls exhaust.c and the leaves check.c and mode.c.
 */
#ifndef LFP_STRESS_TRIM_H
#define LFP_STRESS_TRIM_H

struct stress_run;

int stress_trim_start(struct stress_run *r);
void stress_trim_join(struct stress_run *r);

#endif /* LFP_STRESS_TRIM_H */
