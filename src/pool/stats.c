/* SPDX-License-Identifier: MIT */
/*
 * What lfp_stats and its relatives report: the pool's counter shards and
 * its caches' counters, summed, and the gauges derived from them. Above
 * the caches, below the pool's policies (which print it on abort).
 */
#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "pool/bare.h"
#include "tools/debug.h"

static uint64_t pool_sum(const struct lfp_pool *pool, size_t field)
{
	uint64_t sum = lfpi_cache_sum(pool, field, NULL);

	for (unsigned i = 0; i < LFPI_SHARDS; i++) {
		/* Casting away const: loading an atomic writes nothing. */
		_Atomic(uint64_t) *ctr =
			(_Atomic(uint64_t) *)((char *)&pool->shard[i] + field);
		sum += atomic_load_explicit(ctr, memory_order_relaxed);
	}
	return sum;
}

static uint64_t pool_clamp(uint64_t x, uint64_t most)
{
	return x > most ? most : x;
}

void lfp_stats(const struct lfp_pool *pool, struct lfp_stats *out)
{
	uint64_t live, pending;

	if (!pool || !out)
		return;
	memset(out, 0, sizeof(*out));
	/*
	 * Hits are a count of their own (each cache's hot.top), so like every
	 * event count they never read lower than in an earlier call. Read
	 * before allocs, which include them and, read later, can only be
	 * larger: hits <= allocs (the clamp below covers a count read across
	 * a fold it gave up waiting for).
	 */
	out->cache_hits =
		lfpi_cache_sum(pool, offsetof(struct lfpi_counters, cache_hits), NULL);
	/* Frees before allocs: a racing pair can then only overstate live. */
	out->frees = pool_sum(pool, offsetof(struct lfpi_counters, frees));
	out->allocs = pool_sum(pool, offsetof(struct lfpi_counters, allocs));
	if (out->cache_hits > out->allocs)
		out->cache_hits = out->allocs;
	out->failed_allocs =
		pool_sum(pool, offsetof(struct lfpi_counters, failed_allocs));
	out->rejected_frees =
		pool_sum(pool, offsetof(struct lfpi_counters, rejected_frees));
	out->cas_retries =
		pool_sum(pool, offsetof(struct lfpi_counters, cas_retries));
	out->refills = pool_sum(pool, offsetof(struct lfpi_counters, refills));
	out->flushes = pool_sum(pool, offsetof(struct lfpi_counters, flushes));
	out->steals = pool_sum(pool, offsetof(struct lfpi_counters, steals));
	out->grown = pool_sum(pool, offsetof(struct lfpi_counters, grown));
	out->trimmed_bytes =
		pool_sum(pool, offsetof(struct lfpi_counters, trimmed_bytes));
	out->reclaims = pool_sum(pool, offsetof(struct lfpi_counters, reclaims));
	/* Reclaimed before deferred, as frees before allocs above. */
	pending = pool_sum(pool, offsetof(struct lfpi_counters, reclaimed));
	pending = pool_sum(pool, offsetof(struct lfpi_counters, deferred)) -
		  pending;
	lfpi_cache_sum(pool, 0, &out->cached);
	live = out->allocs - out->frees;
	/* A bare pool's inline calls count nothing: its live slots are
	 * those on no list (bare.c), and allocs and frees count only the
	 * calls that went out of line or through a cache. */
	if (pool->hot.bare)
		live = lfpi_bare_live(pool, out->cached, pending);
	out->capacity = atomic_load_explicit(
		&((struct lfp_pool *)pool)->limit, memory_order_relaxed);
	out->max_capacity = pool->capacity;
	out->live = pool_clamp(live, out->capacity);
	out->cached = pool_clamp(out->cached, out->capacity - out->live);
	out->deferred =
		pool_clamp(pending, out->capacity - out->live - out->cached);
	out->free = out->capacity - out->live - out->cached - out->deferred;
	out->high_water = atomic_load_explicit(
		&((struct lfp_pool *)pool)->bump, memory_order_relaxed);
}

#define POOL_U(x) ((unsigned long long)(x))

int lfp_stats_print(const struct lfp_pool *pool, FILE *f)
{
	char label[LFPI_LABEL_MAX], rate[32] = "-";
	struct lfp_stats st;
	int err = 0;

	if (!pool || !f)
		return -EINVAL;
	lfp_stats(pool, &st);
	if (st.allocs)
		snprintf(rate, sizeof(rate), "%.1f%%",
			 100.0 * (double)st.cache_hits / (double)st.allocs);
	/* OR-ed, so that a negative return from any call stays negative. */
	err |= fprintf(f, "lfpool: %s\n", lfpi_pool_label(pool, label));
	err |= fprintf(f,
		       "  slots   capacity %llu (max %llu), live %llu, "
		       "cached %llu, free %llu, deferred %llu, high water %llu\n",
		       POOL_U(st.capacity), POOL_U(st.max_capacity),
		       POOL_U(st.live), POOL_U(st.cached), POOL_U(st.free),
		       POOL_U(st.deferred), POOL_U(st.high_water));
	err |= fprintf(f,
		       "  calls   allocs %llu, frees %llu, failed allocs %llu, "
		       "rejected frees %llu\n",
		       POOL_U(st.allocs), POOL_U(st.frees),
		       POOL_U(st.failed_allocs), POOL_U(st.rejected_frees));
	err |= fprintf(f,
		       "  caches  hit rate %s (%llu of %llu), refills %llu, "
		       "flushes %llu, steals %llu, CAS retries %llu\n",
		       rate, POOL_U(st.cache_hits), POOL_U(st.allocs),
		       POOL_U(st.refills), POOL_U(st.flushes),
		       POOL_U(st.steals), POOL_U(st.cas_retries));
	err |= fprintf(f,
		       "  size    grown %llu times, trimmed %llu bytes, "
		       "reclaim calls %llu\n",
		       POOL_U(st.grown), POOL_U(st.trimmed_bytes),
		       POOL_U(st.reclaims));
	/* A buffered stream fails only when it is written out. */
	return err < 0 || fflush(f) ? -EIO : 0;
}


void lfp_cache_stats(const struct lfp_cache *cache, struct lfp_stats *out)
{
	if (!cache || !out)
		return;
	lfp_stats(cache->pool, out);
	/* Hits, then frees, then allocs, as in lfp_stats: allocs include
	 * the hits, so read in this order hits <= allocs (the clamp absorbs
	 * a count read across a fold). frees may pass allocs: a worker may
	 * release through this cache what others allocated. */
	out->cache_hits = lfpi_cache_stat(cache, 0);
	out->frees = lfpi_cache_stat(cache, 2);
	out->allocs = lfpi_cache_stat(cache, 1);
	if (out->cache_hits > out->allocs)
		out->cache_hits = out->allocs;
	out->failed_allocs = lfpi_cache_stat(cache, 3);
	out->rejected_frees = lfpi_cache_stat(cache, 4);
	out->cas_retries = lfpi_cache_stat(cache, 5);
	out->refills = lfpi_cache_stat(cache, 6);
	out->flushes = lfpi_cache_stat(cache, 7);
	out->steals = lfpi_cache_stat(cache, 8);
	out->cached = lfpi_cache_n(cache);
}

