/*
 * The clock of lfpool-stress: the monotonic time in seconds that times
 * the run, its ticks and each worker's end.
 *
 * A leaf: calls nothing else in the harness.
 */
#include <time.h>

#include "stress.h"

double stress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
