/* SPDX-License-Identifier: MIT */
/*
 * The out-of-line halves of lfpool.h's inline paths (their declarations
 * are in lfpool/hot.h; the exported calls that are those paths compiled
 * are extras/calls.c). One way in for each direction, and from there
 * calls downward only:
 *
 *   an allocation the cache could not serve: lfpi_cache_alloc_slow. The
 *   cache's operation (lfpi_cache_pop, cache/exchange.c: a magazine from
 *   the depot, else single slots off the free list, else fresh slots);
 *   then, outside it, the pool's lists again (lfpi_pool_take, pool.c),
 *   idle caches (lfpi_cache_steal, cache/steal.c), the waits, growth and
 *   the exhaustion policy (lfpi_exhausted, grow.c).
 *
 *   a release the cache could not take: lfpi_cache_put_slow. The cache's
 *   operation (lfpi_cache_put, cache/exchange.c: the colder magazine to
 *   the depot, or the slot onto the free list while a thief is there).
 *
 * The other halves check a release, or find the thread's cache, and then
 * take one of those two ways: lfpi_cache_free_slow, lfpi_alloc_slow,
 * lfpi_free_slow. None calls back into lfpool.h's inline paths.
 */
#include <errno.h>

#include "base/probes.h"
#include "pool/fork.h"
#include "pool/grow.h"
#include "pool/pool.h"

/*
 * The cache had no slot for an allocation; ctl says why (lfpi_cache_pop).
 * Only here do allocations steal, wait and apply the pool's policy, each
 * outside the cache's operation, and between two looks at the cache.
 * While a steal moved slots that another thread took first, steal again,
 * as the shared path does (pool.c, pool_take_hard) and for the same
 * reason.
 */
static LFPI_NOINLINE void *slow_cache_miss(struct lfp_cache *c, uint32_t ctl)
{
	struct lfp_pool *pool = c->pool;
	uint32_t retries = 0, emptied = 0, idx;
	struct lfpi_want want;
	bool shared = true;

	/* After the cache's refill, not before: the lists it found empty are
	 * looked at again below, and only the looks from here on lead to the
	 * policy. */
	lfpi_want_init(pool, &want);
	for (;;) {
		idx = lfpi_pool_take(pool, &retries);
		while (idx == LFPI_NIL &&
		       lfpi_cache_steal(pool, c, &emptied, &retries))
			idx = lfpi_pool_take(pool, &retries);
		/* Policy hooks run here, outside the cache's operation. */
		if (idx != LFPI_NIL ||
		    (!lfpi_cache_wait_thief(c, ctl) && !lfpi_fork_waited() &&
		     !lfpi_exhausted(pool, &want)))
			break;
		ctl = LFPI_CTL_OUT;
		if ((idx = lfpi_cache_pop(c, &ctl)) != LFPI_NIL) {
			shared = false;
			break;
		}
	}
	lfpi_cache_count(&c->ctr.cas_retries, retries);
	lfpi_cache_count(&c->ctr.steals, emptied);
	if (idx == LFPI_NIL) {
		lfpi_cache_count(&c->ctr.failed_allocs, 1);
		LFPI_PROBE(exhausted, pool, pool->capacity);
		return NULL;
	}
	/* One out of the cache's slots counted itself, as a hit or a miss
	 * (cache/exchange.c); one from the pool, a miss, counts here. */
	if (shared)
		lfpi_cache_count(&c->ctr.allocs, 1);
	return lfpi_hand_out(pool, idx);
}

/*
 * The inline fast path found ctl set, or the cache empty; it entered the
 * operation and left it to us (ctl is what it read). Or a caller out of
 * line comes in with ctl LFPI_CTL_OUT, and the cache enters. The cache
 * finishes the operation, refilling from the depot if it can; the pool
 * takes over if not.
 */
void *lfpi_cache_alloc_slow(struct lfp_cache *c, uint32_t ctl)
{
	uint32_t idx = lfpi_cache_pop(c, &ctl);

	if (LFPI_UNLIKELY(idx == LFPI_NIL))
		return slow_cache_miss(c, ctl);
	return lfpi_hand_out(c->pool, idx); /* counted by the cache */
}

/* The inline fast path found ctl set, or the cache full, with slot idx
 * already marked free; it entered the operation and left it to us. */
int lfpi_cache_put_slow(struct lfp_cache *c, uint32_t idx, uint32_t ctl)
{
	lfpi_cache_put(c, idx, ctl);
	return 0;
}

/* A release the inline fast path could not finish alone: a pointer that
 * is no object's start, a slot that is not live, a pool with checks or
 * hooks. Not entered. */
int lfpi_cache_free_slow(struct lfp_cache *c, void *obj)
{
	int err = 0;
	uint32_t idx;

	if (!c)
		return -EINVAL;
	if ((idx = lfpi_release_checked(c, obj, &err)) == LFPI_NIL)
		return err;
	lfpi_cache_put(c, idx, LFPI_CTL_OUT);
	return 0;
}

/*
 * A bare pool's free list, as lfpi_bare_alloc and lfpi_bare_free work it
 * inline (one CAS, nothing counted), for callers out of line: the
 * families' halves, which come down here rather than back into the
 * inline paths. NULL (false) sends the call on to the shared path: an
 * empty list, there to be refilled, grown or found exhausted; an object
 * that is no start of a slot the pool has grown into, there to be
 * refused.
 */
static void *slow_bare_alloc(struct lfp_pool *pool)
{
	uint32_t retries = 0, idx = lfpi_stack_pop(&pool->free, &retries);

	return idx == LFPI_NIL ? NULL : lfpi_obj(pool, idx);
}

static bool slow_bare_free(struct lfp_pool *pool, void *obj)
{
	int err = 0;
	uint32_t idx = lfpi_slot_of(pool, obj, &err);

	/* Relaxed: as in lfpi_bare_free. */
	if (idx == LFPI_NIL ||
	    idx >= atomic_load_explicit(&pool->limit, memory_order_relaxed))
		return false;
	(void)lfpi_stack_push(&pool->free, idx, idx);
	return true;
}

/* lfp_alloc when neither the cache the thread found last nor its table's
 * entry is this pool's (or the pool has no caches, or is bare): the
 * thread's cache is found or made, or the bare list or the shared path
 * serves. */
void *lfpi_alloc_slow(struct lfp_pool *pool)
{
	struct lfp_cache *c;
	void *obj;

	if (LFPI_UNLIKELY(!pool))
		return NULL;
	if (pool->hot.bare && (obj = slow_bare_alloc(pool)))
		return obj;
	if (LFPI_LIKELY(!(pool->flags & LFP_F_NO_CACHE)) &&
	    LFPI_LIKELY(c = lfpi_cache_implicit(pool)))
		return lfpi_cache_alloc_slow(c, LFPI_CTL_OUT);
	return lfpi_pool_alloc_shared(pool);
}

int lfpi_free_slow(struct lfp_pool *pool, void *obj)
{
	struct lfp_cache *c;

	if (LFPI_UNLIKELY(!pool))
		return -EINVAL;
	if (pool->hot.bare && slow_bare_free(pool, obj))
		return 0;
	if (LFPI_LIKELY(!(pool->flags & LFP_F_NO_CACHE)) &&
	    LFPI_LIKELY(c = lfpi_cache_implicit(pool)))
		return lfpi_cache_free_slow(c, obj);
	return lfpi_pool_free_shared(pool, obj);
}
