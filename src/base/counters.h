/* SPDX-License-Identifier: MIT */
/*
 * In base/, below every layer: event counters, sharded. Each thread adds to
 * one shard of a pool's counters (picked once per thread), so counting
 * never makes threads share a cache line; a reader sums the shards.
 */
#ifndef LFPOOL_COUNTERS_H
#define LFPOOL_COUNTERS_H

#include "base/base.h"

struct lfpi_counters {
	alignas(LFPI_CACHELINE) _Atomic(uint64_t) allocs;
	_Atomic(uint64_t) frees;
	_Atomic(uint64_t) failed_allocs;
	_Atomic(uint64_t) rejected_frees;
	_Atomic(uint64_t) cas_retries;
	/* Never written: a cache's hits are counted in its hot.top, and
	 * this offset names them to the readers (cache/exchange.c,
	 * lfpi_cache_value). */
	_Atomic(uint64_t) cache_hits; /* the rest only ever move in caches */
	_Atomic(uint64_t) refills;
	_Atomic(uint64_t) flushes;
	_Atomic(uint64_t) steals;
	_Atomic(uint64_t) deferred;  /* lfp_free_deferred calls accepted */
	_Atomic(uint64_t) reclaimed; /* deferred slots back in the pool */
	_Atomic(uint64_t) grown;
	_Atomic(uint64_t) trimmed_bytes;
	_Atomic(uint64_t) reclaims;
};

#define LFPI_SHARDS 16

static inline void lfpi_counters_init(struct lfpi_counters *c)
{
	atomic_init(&c->allocs, 0);
	atomic_init(&c->frees, 0);
	atomic_init(&c->failed_allocs, 0);
	atomic_init(&c->rejected_frees, 0);
	atomic_init(&c->cas_retries, 0);
	atomic_init(&c->cache_hits, 0);
	atomic_init(&c->refills, 0);
	atomic_init(&c->flushes, 0);
	atomic_init(&c->steals, 0);
	atomic_init(&c->deferred, 0);
	atomic_init(&c->reclaimed, 0);
	atomic_init(&c->grown, 0);
	atomic_init(&c->trimmed_bytes, 0);
	atomic_init(&c->reclaims, 0);
}


/* The calling thread's shard of shards[LFPI_SHARDS], picked on its first
 * call and kept (threads are spread round-robin). */
struct lfpi_counters *lfpi_shard(struct lfpi_counters *shards);

#endif /* LFPOOL_COUNTERS_H */
