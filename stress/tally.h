/* SPDX-License-Identifier: MIT */
/*
 * tally.c: a worker's counts (struct stress_tally, in run.h), summed over
 * its lives and over the run's workers. Rank 0, a leaf: calls nothing in
 * the harness.
 */
#ifndef LFP_STRESS_TALLY_H
#define LFP_STRESS_TALLY_H

struct stress_tally;

void stress_tally_add(struct stress_tally *to, const struct stress_tally *from);

#endif /* LFP_STRESS_TALLY_H */
