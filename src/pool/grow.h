/* SPDX-License-Identifier: MIT */
/*
 * The exhaustion policy (grow.c): what an allocation that finds the pool
 * empty does, after stealing: wait for a trim or for deferred slots,
 * grow, ask the user to reclaim, or abort. For the pool's allocation
 * paths (pool.c); calls the slab, the debug reports, rcu.c and
 * lfp_stats, nothing of pool.c.
 */
#ifndef LFPOOL_GROW_H
#define LFPOOL_GROW_H

#include "memory/block.h"

/*
 * What an allocation that may find the pool exhausted must remember from
 * before the first look at the lists that can lead to the policy (after a
 * refill found nothing, lfpi_pool_take looks at them all again): the
 * trim sequence it saw, how many times it called reclaim, and a limit
 * read before the first look, or at the last lfpi_exhausted that saw it
 * move (never newer than what a later look's bump reads).
 */
struct lfpi_want {
	uint32_t trim_seq;
	uint32_t attempt;
	uint32_t rcu_epoch; /* deferred slots come back: see rcu.c */
	uint32_t limit;     /* see lfpi_exhausted */
};

/*
 * Start an allocation's slow path, before the first look at the lists
 * that can lead to the policy. Acquire: pairs
 * with the release store that ends lfp_trim, so a trim that ended before
 * is seen whole (its slots are back on the list).
 */
static inline void lfpi_want_init(struct lfp_pool *pool, struct lfpi_want *w)
{
	/* Acquire: pairs with the release store that ends lfp_trim, so an
	 * allocation that begins after a trim finds its slots back. */
	w->trim_seq = atomic_load_explicit(&pool->trim_seq, memory_order_acquire);
	w->attempt = 0;
	/* Acquire: pairs with the increment in rcu_wake (rcu.c), which
	 * follows the push of a reclaimed slot: that slot is on the list
	 * before our next look. */
	w->rcu_epoch = atomic_load_explicit(&pool->rcu_epoch, memory_order_acquire);
	/* Relaxed: only compared (lfpi_exhausted); the look's bump
	 * acquires the limit it takes fresh slots under. */
	w->limit = atomic_load_explicit(&pool->limit, memory_order_relaxed);
}

/*
 * An allocation found the pool exhausted (after stealing). If a trim had
 * the free list aside at any time since lfpi_want_init, wait for it to
 * end and try again; if the pool grew since its limit was last read
 * (struct lfpi_want), try again under the new limit; with
 * LFP_F_WAIT_DEFERRED, while deferred releases are pending, wait for one
 * to come back and try again (lfpi_rcu_wait); otherwise apply the pool's
 * policy. Returns true if the allocation should try again.
 */
bool lfpi_exhausted(struct lfp_pool *pool, struct lfpi_want *w);

#endif /* LFPOOL_GROW_H */
