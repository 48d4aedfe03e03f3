/* SPDX-License-Identifier: MIT */
/*
 * The bulk calls: lfp_cache_alloc_bulk and lfp_cache_free_bulk move a run
 * of slots through a cache in one operation each (lfpi_cache_pop_run,
 * lfpi_cache_put_run), with the checks and the hand-out outside it;
 * lfp_alloc_bulk and lfp_free_bulk go through the thread's implicit
 * cache, or the shared path one object at a time. What a run cannot
 * take (hooks that may call back in, a thief's request, an exhausted
 * cache) goes the single way, with its stealing, waits and policy.
 * Above slow.c: calls it, pool.c and the caches.
 */
#include "pool/pool.h"

/* Slots objs[0..k) (indices), just taken through cache c of a pool
 * without quirks: make them live and turn them into pointers, as the
 * inline path does (the cache's words in locals, read once). */
static void bulk_hand_out_run(const struct lfp_cache *c, void **objs,
			      size_t k)
{
	char *base = c->hot.objs;
	size_t stride = c->hot.stride;
	_Atomic(uint32_t) *gen = c->hot.gen; /* NULL: an unchecked pool */

	if (!gen) {
		for (size_t i = 0; i < k; i++)
			objs[i] = base + (uintptr_t)objs[i] * stride;
		return;
	}
	for (size_t i = 0; i < k; i++) {
		size_t idx = (uintptr_t)objs[i];
		_Atomic(uint32_t) *g = &gen[2 * idx];

		/* Relaxed: as in lfpi_mark_live. */
		atomic_store_explicit(
			g, atomic_load_explicit(g, memory_order_relaxed) + 1,
			memory_order_relaxed);
		objs[i] = base + idx * stride;
	}
}

/* The slot of obj if it is a live object of a pool without quirks,
 * marked free now; else LFPI_NIL (the caller takes the checked path).
 * The exact division of the inline release (lfpool.h). */
static uint32_t bulk_release_plain(struct lfp_cache *c, void *obj)
{
	const struct lfpi_cache_hot *h = &c->hot;
	uint64_t q = ((uint64_t)((uintptr_t)obj - (uintptr_t)h->objs)) * h->inv;
	uint64_t idx = q >> h->shift | q << ((64 - h->shift) & 63);
	_Atomic(uint32_t) *g;
	uint32_t gen;

	if (idx >= h->nslots)
		return idx < h->bslots ? (uint32_t)idx : LFPI_NIL;
	g = &h->gen[2 * (size_t)idx];
	gen = atomic_load_explicit(g, memory_order_relaxed);
	if (!(gen & 1))
		return LFPI_NIL;
	/* Relaxed: as in lfpi_mark_free. */
	atomic_store_explicit(g, gen + 1, memory_order_relaxed);
	return (uint32_t)idx;
}

size_t lfp_cache_alloc_bulk(struct lfp_cache *cache, void **objs, size_t n)
{
	size_t got = 0, k;
	void *obj;

	if (!cache || !objs)
		return 0;
	/*
	 * A pool whose hooks may call back in (ctor, on_alloc) takes the
	 * single path: slots popped in a run and not yet handed out are free
	 * and in no list, so a hook that allocates would find them gone.
	 */
	while (got < n && !cache->pool->ctor && !cache->pool->on_alloc &&
	       (k = lfpi_cache_pop_run(cache, objs + got, n - got))) {
		/* Outside the operation, as single allocations do. */
		if (LFPI_LIKELY(!cache->quirks))
			bulk_hand_out_run(cache, objs + got, k);
		else
			for (size_t i = got; i < got + k; i++)
				objs[i] = lfpi_hand_out(
					cache->pool, (uint32_t)(uintptr_t)objs[i]);
		got += k;
	}
	/* The rest, if any, the way single allocations go: stealing,
	 * waiting, the exhaustion policy. */
	while (got < n && (obj = lfpi_cache_alloc_slow(cache, LFPI_CTL_OUT)))
		objs[got++] = obj;
	return got;
}

#define BULK_RUN 64

size_t lfp_cache_free_bulk(struct lfp_cache *cache, void *const *objs,
			   size_t n)
{
	uint32_t run[BULK_RUN], k = 0, idx;
	size_t done = 0;
	int err;

	if (!cache || !objs)
		return 0;
	/* With on_free, one by one: the slots released earlier in a run
	 * would be free and in no list while a later hook runs. */
	if (cache->pool->on_free) {
		for (size_t i = 0; i < n; i++)
			done += lfpi_cache_free_slow(cache, objs[i]) == 0;
		return done;
	}
	for (size_t i = 0; i < n; i++) {
		/* The checks of lfp_cache_free, outside the operation: the
		 * plain pool's short way first. */
		if (LFPI_UNLIKELY((idx = bulk_release_plain(cache, objs[i])) ==
				  LFPI_NIL) &&
		    (idx = lfpi_release_checked(cache, objs[i], &err)) ==
			    LFPI_NIL)
			continue;
		run[k++] = idx;
		if (k == BULK_RUN) {
			lfpi_cache_put_run(cache, run, k);
			done += k;
			k = 0;
		}
	}
	if (k)
		lfpi_cache_put_run(cache, run, k);
	return done + k;
}

size_t lfp_alloc_bulk(struct lfp_pool *pool, void **objs, size_t n)
{
	struct lfp_cache *c;
	size_t i;
	void *obj;

	if (!pool || !objs)
		return 0;
	if (!(pool->flags & LFP_F_NO_CACHE) && (c = lfpi_cache_implicit(pool)))
		return lfp_cache_alloc_bulk(c, objs, n);
	for (i = 0; i < n && (obj = lfpi_pool_alloc_shared(pool)); i++)
		objs[i] = obj;
	return i;
}

size_t lfp_free_bulk(struct lfp_pool *pool, void *const *objs, size_t n)
{
	struct lfp_cache *c;
	size_t done = 0;

	if (!pool || !objs)
		return 0;
	if (!(pool->flags & LFP_F_NO_CACHE) && (c = lfpi_cache_implicit(pool)))
		return lfp_cache_free_bulk(c, objs, n);
	for (size_t i = 0; i < n; i++)
		done += lfpi_pool_free_shared(pool, objs[i]) == 0;
	return done;
}
