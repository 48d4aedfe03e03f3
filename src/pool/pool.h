/* SPDX-License-Identifier: MIT */
/*
 * The pool layer (pool/, above cache/, below extras/): taking and
 * releasing slots (generations, hooks) and the shared path (pool.c); the
 * out-of-line halves of the inline paths, one way in for each direction
 * (slow.c, above pool.c); the bulk calls (bulk.c, above slow.c). The
 * folder's interface to the layer above it (extras/). Its policies have
 * their own headers, for pool.c and slow.c: exhaustion and growth
 * (grow.h), trim (trim.h), fork (fork.h); lfp_stats is stats.c.
 */
#ifndef LFPOOL_POOL_H
#define LFPOOL_POOL_H

#include "cache/cache.h"
#include "cache/implicit.h"
#include "tools/debug.h"
#include "pool/bare.h"
#include "pool/trim.h"


/*
 * Make live slot idx free: 0, or -EALREADY if it was not live. With
 * `strict` a CAS decides between racing releases of one object, so
 * exactly one wins; without, a load and a store catch every release of a
 * free object except one that races with another release of it.
 *
 * With expect != 0 (a handle's generation; implies strict) only that
 * generation is released: -ESTALE if the slot holds another one, so a
 * stale handle never touches the slot's new owner. Handles and pointers
 * share this one CAS loop.
 *
 * Relaxed: the word only decides which release wins; the object itself
 * reaches its next owner through the stack's or the cache's release and
 * acquire.
 */
static inline int lfpi_mark_free(struct lfp_pool *pool, uint32_t idx,
				 bool strict, uint32_t expect)
{
	_Atomic(uint32_t) *g;
	uint32_t gen;

	/*
	 * Unchecked: a double release is the caller's undefined behaviour,
	 * but a slot a growable pool has not grown into is refused as in a
	 * default pool (its memory is not committed, and growth would hand
	 * it out again). Relaxed: a thread that was handed an object of a
	 * newer segment saw that limit (the bump's acquire, then whatever
	 * passed the object on), so its load cannot read an older one.
	 */
	if (pool->bare)
		return idx < atomic_load_explicit(&pool->limit,
						  memory_order_relaxed) ?
			       0 :
			       -EALREADY;
	g = lfpi_slot_gen(pool, idx);
	gen = atomic_load_explicit(g, memory_order_relaxed);
	if (LFPI_LIKELY(!strict)) {
		if (LFPI_UNLIKELY(!lfpi_gen_is_live(gen)))
			return -EALREADY;
		atomic_store_explicit(g, lfpi_gen_freed(gen), memory_order_relaxed);
		return 0;
	}
	do {
		if (expect && gen != expect)
			return -ESTALE;
		if (!lfpi_gen_is_live(gen))
			return -EALREADY;
	} while (!atomic_compare_exchange_weak_explicit(
		g, &gen, lfpi_gen_freed(gen), memory_order_relaxed,
		memory_order_relaxed));
	return 0;
}

/*
 * A release of slot idx was accepted; the slot is free but still ours.
 * Run on_free once, then let the debug tools poison the object, unless
 * the release is deferred: RCU readers may still read it until the grace
 * period ends (rcu.c poisons it then).
 */
static inline void lfpi_released(struct lfp_pool *pool, uint32_t idx,
				  bool deferred)
{
	if (LFPI_UNLIKELY(pool->on_free))
		pool->on_free(lfpi_obj(pool, idx), pool->hook_arg);
	if (LFPI_UNLIKELY(pool->debug) && !deferred)
		lfpi_debug_free(pool, idx);
}

#define LFPI_REL_STRICT 1u   /* decide racing releases with a CAS */
#define LFPI_REL_DEFERRED 2u /* the slot returns after a grace period */

/*
 * Check obj and mark its slot free. Returns the slot, or LFPI_NIL with
 * *err = -EINVAL, -EFAULT or -EALREADY as documented for lfp_free.
 */
static inline uint32_t lfpi_release_slot(struct lfp_pool *pool, void *obj,
					 int *err, unsigned how)
{
	uint32_t idx;

	if (LFPI_UNLIKELY(!obj)) {
		*err = -EINVAL;
		return LFPI_NIL;
	}
	idx = lfpi_slot_of(pool, obj, err);
	if (LFPI_UNLIKELY(idx == LFPI_NIL) ||
	    LFPI_UNLIKELY(*err = lfpi_mark_free(pool, idx,
						how & LFPI_REL_STRICT, 0))) {
		if (LFPI_UNLIKELY(pool->debug))
			lfpi_debug_rejected(pool, obj, *err);
		return LFPI_NIL;
	}
	lfpi_released(pool, idx, how & LFPI_REL_DEFERRED);
	return idx;
}

/* pool.c (continued): the shared path that caches fall back on, and
 * what the slow paths (slow.c) and the bulk calls (bulk.c) share. */

/* Take one slot from the free list, the depot or the fresh ones, or
 * LFPI_NIL. */
uint32_t lfpi_pool_take(struct lfp_pool *pool, uint32_t *retries);
/*
 * Give slot idx, just marked free, back to the pool the way lfp_free does
 * (through the thread's cache unless LFP_F_NO_CACHE); or, if err < 0,
 * count a refused release. Returns err.
 */
int lfpi_finish_release(struct lfp_pool *pool, uint32_t idx, int err);
/* lfp_alloc and lfp_free without a cache (LFP_F_NO_CACHE, or no cache
 * could be made): the shared free list, counted in the pool's shards. */
void *lfpi_pool_alloc_shared(struct lfp_pool *pool);
int lfpi_pool_free_shared(struct lfp_pool *pool, void *obj);
/*
 * The checks of lfp_cache_free for a release through cache c: the slot
 * of obj, marked free, or LFPI_NIL with *err set (-EINVAL, -EFAULT,
 * -EALREADY; or, in a strict pool, what lfpi_release_slot says) and the
 * refusal counted.
 */
uint32_t lfpi_release_checked(struct lfp_cache *c, void *obj, int *err);
/* Make slot idx live (its generation odd): the caller owns the slot.
 * Returns the generation it had (0: never used; 1 always in an unchecked
 * pool, which has neither a ctor nor debug tools to ask). */
static inline uint32_t lfpi_mark_live(struct lfp_pool *pool, uint32_t idx)
{
	_Atomic(uint32_t) *g;
	uint32_t gen;

	if (pool->bare)
		return 1;
	g = lfpi_slot_gen(pool, idx);
	/*
	 * A load and a store suffice: nobody else may change a free slot we
	 * hold. Relaxed: the release that made it even happens-before our
	 * taking it (through the stack or a cache), so we read that value.
	 */
	gen = atomic_load_explicit(g, memory_order_relaxed);

	atomic_store_explicit(g, gen + 1, memory_order_relaxed);
	return gen;
}

/*
 * Hand slot idx, just taken, to the caller: make it live, let the debug
 * tools see it, construct it if it was never used (or trimmed since), run
 * on_alloc. Always called after the caller left its cache's operation, so
 * the hooks may call back into the pool, through the same cache too.
 */
static inline void *lfpi_hand_out(struct lfp_pool *pool, uint32_t idx)
{
	void *obj = lfpi_obj(pool, idx);
	uint32_t gen = lfpi_mark_live(pool, idx);

	if (LFPI_UNLIKELY(pool->debug))
		lfpi_debug_alloc(pool, idx, gen == 0);
	/* The mark is cleared whenever ctor runs, so it runs once. */
	if (LFPI_UNLIKELY(pool->ctor) &&
	    (lfpi_trim_reborn(pool, idx) || gen == 0))
		pool->ctor(obj, pool->hook_arg);
	if (LFPI_UNLIKELY(pool->on_alloc))
		pool->on_alloc(obj, pool->hook_arg);
	return obj;
}

/* The same, out of line, for caches of pools with quirks. */
void *lfpi_hand_out_quirky(struct lfp_pool *pool, uint32_t idx);
uint32_t lfpi_release_quirky(struct lfp_pool *pool, void *obj, int *err);

/*
 * lfp_create, with the pool's memory at where (page-aligned) in a
 * reservation of the caller's (lfpi_reserve) that has room bytes for it,
 * committed there as the pool needs it: the pool borrows the range and
 * leaves it mapped when it is destroyed, for the caller to unmap whole
 * (families, extras/family.c). With where NULL, exactly lfp_create.
 * lfpi_pool_map_len sets *len to the bytes such a pool needs, or returns
 * lfp_create's error for cfg, with *fault (if fault is not NULL) naming the
 * field at fault, if one is, as lfp_config_fault would.
 */
int lfpi_create_at(const struct lfp_config *cfg, void *where, size_t room,
		   struct lfp_pool **out);
int lfpi_pool_map_len(const struct lfp_config *cfg, size_t *len,
		      const char **fault);

#endif /* LFPOOL_POOL_H */
