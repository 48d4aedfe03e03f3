/* SPDX-License-Identifier: MIT */
/*
 * clock.c: the run's monotonic clock, and a wait on a condition variable
 * that gives up after a while. Rank 0, a leaf: calls nothing in the
 * harness.
 */
#ifndef LFP_STRESS_CLOCK_H
#define LFP_STRESS_CLOCK_H

#include <pthread.h>

double stress_now(void);
void stress_wait_for(pthread_cond_t *cv, pthread_mutex_t *lock, long ns);

#endif /* LFP_STRESS_CLOCK_H */
