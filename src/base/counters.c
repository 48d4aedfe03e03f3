/* SPDX-License-Identifier: MIT */
/*
 * Event counters, sharded: each thread adds to one shard of a pool's
 * counters, picked once per thread, so counting never makes threads share
 * a cache line. A leaf: calls nothing of lfpool's.
 */
#include "base/counters.h"

/* Threads are spread over the counter shards in the order they first count. */
static _Atomic(uint32_t) counters_next_shard;
static LFPI_TLS uint32_t counters_shard_plus1;

struct lfpi_counters *lfpi_shard(struct lfpi_counters *shards)
{
	uint32_t s = counters_shard_plus1;

	if (LFPI_UNLIKELY(!s)) {
		/* Relaxed: only spreads threads; any value is correct. */
		s = atomic_fetch_add_explicit(&counters_next_shard, 1,
					      memory_order_relaxed) %
			    LFPI_SHARDS + 1;
		counters_shard_plus1 = s;
	}
	return &shards[s - 1];
}

