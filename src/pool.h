/*
 * Layer 5 of 5 (slab, stack, depot, cache, pool): the pool's policies.
 * Taking and releasing slots (generations, hooks), the shared path,
 * exhaustion, growth, trim and statistics (pool.c, grow.c, trim.c,
 * stats.c); and the entry points of the leaves above it that pool.c
 * calls at create and destroy (fork.c, rcu.c).
 */
#ifndef LFPOOL_POOL_H
#define LFPOOL_POOL_H

#include "cache.h"
#include "debug.h"


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
	_Atomic uint32_t *g = &pool->slots[idx].gen;
	uint32_t gen = atomic_load_explicit(g, memory_order_relaxed);

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

/* pool.c (continued): the shared path that caches fall back on. */

/* Take one slot from the free list, the depot or the fresh ones, or
 * LFPI_NIL. */
uint32_t lfpi_pool_take(struct lfp_pool *pool, uint32_t *retries);
/*
 * Give slot idx, just marked free, back to the pool the way lfp_free does
 * (through the thread's cache unless LFP_F_NO_CACHE); or, if err < 0,
 * count a refused release. Returns err.
 */
int lfpi_finish_release(struct lfp_pool *pool, uint32_t idx, int err);
/* Make slot idx live (its generation odd): the caller owns the slot.
 * Returns the generation it had (0: never used). */
static inline uint32_t lfpi_mark_live(struct lfp_pool *pool, uint32_t idx)
{
	_Atomic uint32_t *g = &pool->slots[idx].gen;
	/*
	 * A load and a store suffice: nobody else may change a free slot we
	 * hold. Relaxed: the release that made it even happens-before our
	 * taking it (through the stack or a cache), so we read that value.
	 */
	uint32_t gen = atomic_load_explicit(g, memory_order_relaxed);

	atomic_store_explicit(g, gen + 1, memory_order_relaxed);
	return gen;
}

/* trim.c: giving idle memory back. */

/* Whether slot idx, being handed out, lost its constructed state to a
 * trim (and so needs ctor again); clears the mark. */
bool lfpi_trim_reborn(struct lfp_pool *pool, uint32_t idx);
/* At lfp_destroy: unmap what trims mapped. */
void lfpi_trim_destroy(struct lfp_pool *pool);

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

/* grow.c: exhaustion policies, growth, reserve, trim. */

/*
 * What an allocation that may find the pool exhausted must remember from
 * before its first look at the free list: the trim sequence it saw, and
 * how many times it called reclaim.
 */
struct lfpi_want {
	uint32_t trim_seq;
	uint32_t attempt;
	uint32_t rcu_epoch; /* deferred slots come back: see rcu.c */
};

/*
 * Start an allocation's slow path, before its first pop. Acquire: pairs
 * with the release store that ends lfp_trim, so a trim that ended before
 * is seen whole (its slots are back on the list).
 */
static inline void lfpi_want_init(struct lfp_pool *pool, struct lfpi_want *w)
{
	w->trim_seq = atomic_load_explicit(&pool->trim_seq, memory_order_acquire);
	w->attempt = 0;
	/* Acquire: pairs with the increment in rcu_wake (rcu.c), which
	 * follows the push of a reclaimed slot: that slot is on the list
	 * before our first pop looks. */
	w->rcu_epoch = atomic_load_explicit(&pool->rcu_epoch, memory_order_acquire);
}

/*
 * An allocation found the pool exhausted (after stealing). If a trim had
 * the free list aside at any time since lfpi_want_init, wait for it to
 * end and try again; with LFP_F_WAIT_DEFERRED, while deferred releases
 * are pending, wait for one to come back and try again (lfpi_rcu_wait);
 * otherwise apply the pool's policy. Returns true if the allocation
 * should try again.
 */
bool lfpi_exhausted(struct lfp_pool *pool, struct lfpi_want *w);

/* fork.c: keeping pools usable in a child of fork. */

/* Set up the fork handlers once per process: 0 or -errno. */
int lfpi_fork_global_init(void);
/* A pool joins the list the handlers walk at lfp_create, leaves it at
 * lfp_destroy. */
void lfpi_fork_add(struct lfp_pool *pool);
void lfpi_fork_remove(struct lfp_pool *pool);
/* An allocation found the pool exhausted: if a fork holds the caches,
 * wait for it (bounded) and return true to look again. */
static inline bool lfpi_fork_waited(void)
{
	return lfpi_cache_fork_busy() && lfpi_cache_fork_wait();
}

/* rcu.c: deferred release. */

struct lfpi_rcu_slot;
/* At lfp_destroy: wait for pending deferred releases, unmap the table. */
void lfpi_rcu_destroy(struct lfp_pool *pool);
/*
 * An allocation found a pool with LFP_F_WAIT_DEFERRED exhausted. If a
 * deferred slot came back since w was last looked at, return true at
 * once; if some are pending and the caller may wait for a grace period,
 * sleep until one comes back (or a while) and return true. Otherwise
 * (none pending, or inside a read-side section or a call_rcu callback)
 * return false: the policy applies.
 */
bool lfpi_rcu_wait(struct lfp_pool *pool, struct lfpi_want *w);

#endif /* LFPOOL_POOL_H */
