/*
 * What a pool does when it runs out: grow, ask the user to reclaim, or
 * abort; and growth, preallocation and trimming.
 *
 * A growable pool is laid out at creation for max_capacity slots: the
 * metadata exists for all of them and the object region is reserved but
 * committed only up to `limit`. Growing commits the next segment (the pool
 * doubles) and raises `limit`, so indices stay stable, objects never move
 * and there is no segment table to reallocate under a reader. The grow
 * path takes a mutex; it runs once per doubling.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

static uintptr_t grow_page_up(uintptr_t x)
{
	size_t page = lfpi_page_size();

	return (x + page - 1) & ~(uintptr_t)(page - 1);
}

/* Make slots [0, want) usable. Caller holds grow_lock. */
static int grow_to(struct lfp_pool *pool, uint32_t want)
{
	uint32_t cur = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	uintptr_t from, to;
	int err;

	if (want <= cur)
		return 0;
	if (want > pool->capacity)
		return -ENOSPC;
	from = grow_page_up((uintptr_t)lfpi_obj(pool, cur));
	to = grow_page_up((uintptr_t)lfpi_obj(pool, 0) + (size_t)want * pool->stride);
	/* Caller memory is the caller's, all of it usable from the start. */
	if (pool->map && to > from &&
	    (err = lfpi_commit((void *)from, to - from)))
		return err;
	/* Release: pairs with the acquire load in lfpi_pool_bump. */
	atomic_store_explicit(&pool->limit, want, memory_order_release);
	atomic_fetch_add_explicit(&lfpi_my_shard(pool)->grown, 1,
				  memory_order_relaxed);
	return 0;
}

/* Double the pool, up to its max_capacity. 0, -ENOSPC or -ENOMEM. */
static int grow_step(struct lfp_pool *pool, uint32_t seen)
{
	uint32_t cur, want;
	int err;

	pthread_mutex_lock(&pool->grow_lock);
	cur = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	if (cur != seen) {
		err = 0; /* another thread grew it meanwhile: try that */
	} else if (cur == pool->capacity) {
		err = -ENOSPC;
	} else {
		want = cur > pool->capacity - cur ? pool->capacity : 2 * cur;
		err = grow_to(pool, want);
	}
	pthread_mutex_unlock(&pool->grow_lock);
	return err;
}

static void grow_abort(struct lfp_pool *pool)
{
	struct lfp_stats st;

	lfp_stats(pool, &st);
	fprintf(stderr,
		"lfpool: pool %p exhausted and its policy is to abort: "
		"capacity %llu, live %llu, cached %llu, deferred %llu, "
		"allocs %llu, frees %llu, failed %llu\n",
		(void *)pool, (unsigned long long)st.capacity,
		(unsigned long long)st.live, (unsigned long long)st.cached,
		(unsigned long long)st.deferred, (unsigned long long)st.allocs,
		(unsigned long long)st.frees,
		(unsigned long long)st.failed_allocs + 1);
	abort();
}

bool lfpi_exhausted(struct lfp_pool *pool, uint32_t *attempt)
{
	uint32_t limit;

	/* Acquire: pairs with the release store that ends lfp_trim, after
	 * which its slots are back on the free list. */
	if (atomic_load_explicit(&pool->trimming, memory_order_acquire)) {
		while (atomic_load_explicit(&pool->trimming,
					    memory_order_acquire))
			sched_yield();
		return true;
	}
	switch (pool->exhaust) {
	case LFP_EXHAUST_GROW:
		limit = atomic_load_explicit(&pool->limit, memory_order_relaxed);
		return grow_step(pool, limit) == 0;
	case LFP_EXHAUST_RECLAIM:
		if (*attempt >= pool->reclaim_tries)
			return false;
		++*attempt;
		atomic_fetch_add_explicit(&lfpi_my_shard(pool)->reclaims, 1,
					  memory_order_relaxed);
		return pool->reclaim(pool, pool->hook_arg) == 0;
	case LFP_EXHAUST_ABORT:
		grow_abort(pool);
	}
	return false;
}

int lfp_reserve(struct lfp_pool *pool, uint32_t n)
{
	uintptr_t from, to;
	int err;

	if (!pool || n > pool->capacity)
		return -EINVAL;
	pthread_mutex_lock(&pool->grow_lock);
	err = grow_to(pool, n);
	pthread_mutex_unlock(&pool->grow_lock);
	if (err || !pool->map || !n)
		return err;
	/*
	 * Fault the pages in now rather than on the allocation path. Best
	 * effort: MADV_POPULATE_WRITE (Linux 5.14) changes no byte, so live
	 * objects on these pages are safe; older kernels just skip it.
	 */
	from = (uintptr_t)lfpi_obj(pool, 0) & ~(uintptr_t)(lfpi_page_size() - 1);
	to = grow_page_up((uintptr_t)lfpi_obj(pool, 0) + (size_t)n * pool->stride);
#ifdef MADV_POPULATE_WRITE
	(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#endif
	return 0;
}

static bool grow_bit(const uint64_t *bits, uint32_t i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

/*
 * Give back the whole pages inside each run of idle slots marked in bits.
 * Nothing at or past the bump index is given back: those pages were never
 * touched, and another thread may be taking a fresh slot there and
 * writing it right now (on the page that holds the boundary, too).
 * Returns the bytes given back.
 */
static size_t grow_madvise_idle(struct lfp_pool *pool, const uint64_t *bits,
				uint32_t bump)
{
	uintptr_t page_mask = ~(uintptr_t)(lfpi_page_size() - 1);
	uintptr_t from, to;
	size_t bytes = 0;
	uint32_t a, b;

	for (a = 0;; a = b + 1) {
		while (a < bump && !grow_bit(bits, a))
			a++;
		if (a >= bump)
			break;
		for (b = a; b < bump && grow_bit(bits, b); b++)
			;
		from = grow_page_up((uintptr_t)lfpi_obj(pool, a));
		to = (uintptr_t)lfpi_obj(pool, b) & page_mask;
		if (to > from && madvise((void *)from, to - from, MADV_DONTNEED) == 0)
			bytes += to - from;
	}
	return bytes;
}

/* Mark every slot of the chains starting at `chain` (linked by
 * batch_next) in bits. */
static void grow_mark_chains(struct lfp_pool *pool, uint32_t chain,
			     uint64_t *bits)
{
	for (; chain != LFPI_NIL;
	     chain = atomic_load_explicit(&pool->slots[chain].batch_next,
					  memory_order_relaxed))
		for (uint32_t i = chain; i != LFPI_NIL;
		     i = atomic_load_explicit(&pool->slots[i].next,
					      memory_order_relaxed))
			bits[i / 64] |= UINT64_C(1) << (i % 64);
}

static void grow_push_chains(struct lfp_pool *pool, uint32_t chain)
{
	uint32_t below;

	for (; chain != LFPI_NIL; chain = below) {
		below = atomic_load_explicit(&pool->slots[chain].batch_next,
					     memory_order_relaxed);
		lfpi_stack_push(&pool->free, pool->slots, chain,
				pool->slots[chain].tail);
	}
}

size_t lfp_trim(struct lfp_pool *pool)
{
	uint32_t limit, bump, chains;
	size_t bytes = 0;
	uint64_t *bits;

	if (!pool || !pool->map)
		return 0;
	pthread_mutex_lock(&pool->grow_lock);
	limit = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	bits = calloc(limit / 64 + 1, sizeof(*bits));
	if (bits) {
		/* Relaxed: published by the release in lfpi_stack_pop_all. */
		atomic_store_explicit(&pool->trimming, 1, memory_order_relaxed);
		chains = lfpi_stack_pop_all(&pool->free);
		grow_mark_chains(pool, chains, bits);
		bump = atomic_load_explicit(&pool->bump, memory_order_relaxed);
		bytes = grow_madvise_idle(pool, bits, bump);
		if (bytes) /* Relaxed: read by the debug fill check, which
			    * runs after the slot came back through the stack. */
			atomic_store_explicit(&pool->trimmed, 1,
					      memory_order_relaxed);
		grow_push_chains(pool, chains);
		/* Release: pairs with the acquire in lfpi_exhausted; the
		 * chains are back before a waiting allocation retries. */
		atomic_store_explicit(&pool->trimming, 0, memory_order_release);
		free(bits);
	}
	pthread_mutex_unlock(&pool->grow_lock);
	atomic_fetch_add_explicit(&lfpi_my_shard(pool)->trimmed_bytes, bytes,
				  memory_order_relaxed);
	return bytes;
}
