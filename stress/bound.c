/* SPDX-License-Identifier: MIT */
/*
 * The bound: how many slots the threads of a run can hold and park at
 * most, all told. A run whose pool has more slots than that cannot run
 * dry (exhaust.c), and the command line is checked against it
 * (validate.c).
 *
 * What a thread can keep from the others, at most:
 * - the objects it holds, --hold, counting those it is allocating or
 *   releasing right now (the harness has let go of an object before the
 *   release call gives its slot back);
 * - a cache's worth per cache it owns: its implicit cache unless the pool
 *   is LFP_F_NO_CACHE, its explicit cache with explicit. A thief that is
 *   emptying a cache holds that cache's slots, no more;
 * - with any cache in the pool, one more cache's worth: a magazine it
 *   took from the depot (magazines are at most half a cache) and is
 *   copying into its cache, or taking one slot out of and pushing back.
 * The drainer of idle rounds parks its own caches' worth between rounds;
 * the trimmer and the supervisor keep nothing.
 *
 * A leaf: calls nothing else in the harness.
 */
#include "bound.h"

/* Caches a thread of this run owns: implicit unless pool, explicit. */
uint32_t stress_bound_caches(const struct stress_opts *o)
{
	if (!STRESS_HAVE_CACHES)
		return 0;
	return (uint32_t)!o->weight[STRESS_POOL] +
	       (uint32_t)(o->weight[STRESS_EXPLICIT] != 0);
}

/* Slots the threads of this run can hold and park at most, all told. */
uint64_t stress_bound(const struct stress_opts *o)
{
	uint64_t k = o->cache_size, caches = stress_bound_caches(o);
	uint64_t worker = o->hold + (caches ? (caches + 1) * k : 0);
	uint64_t drainer = 0;

	if (o->weight[STRESS_IDLING])
		drainer = stress_bound_caches(o) * k;
	return o->threads * worker + drainer;
}
