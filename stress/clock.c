/* SPDX-License-Identifier: MIT */
/*
 * The clock of lfpool-stress: the monotonic time in seconds that times
 * the run, its ticks and each worker's end; and waits on a condition
 * variable that give up after a while (idle rounds).
 *
 * A leaf: calls nothing else in the harness.
 */
#include <time.h>

#include "clock.h"

double stress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait on cv for up to ns (lock held). */
void stress_wait_for(pthread_cond_t *cv, pthread_mutex_t *lock, long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ns;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, lock, &ts);
}
