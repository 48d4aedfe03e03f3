/*
 * Bare pools: a pool with LFP_F_NO_CACHE and LFP_F_UNCHECKED that
 * nothing sends out of line on every call (no hooks, no debug tool) is
 * its free list, popped and pushed inline by lfp_alloc and lfp_free
 * (lfpi_bare_alloc in lfpool.h). Here: the words of struct lfpi_pool_hot
 * those inline paths read, and what lfp_stats counts for such a pool,
 * whose inline calls count nothing. In pool/, beside stats.c; calls the
 * lists and the caches below it.
 */
#include "pool/bare.h"

void lfpi_bare_setup(struct lfp_pool *pool)
{
	struct lfpi_pool_hot *h = &pool->hot;

	/* pool->bare comes from the layout (pool_layout): any debug tool
	 * (--enable-debug, ASan, Valgrind, LFP_F_POISON) keeps the
	 * generation, so that it checks what the flag would not; without
	 * one the metadata is the link alone, 4 bytes a slot, which the
	 * inline paths index as meta[i]. */
	h->head = &pool->free.head;
	h->meta = lfpi_slot_next(pool, 0);
	h->limit = &pool->limit;
	h->objs = pool->objs;
	h->stride = pool->stride;
	h->inv = pool->stride_inv;
	h->shift = pool->stride_tz;
	/*
	 * Unchecked pools only: a checked one could take the same path with
	 * a CAS on the generation, but its lfp_stats promises allocs and
	 * frees counted call by call, which would cost an atomic add each
	 * way. pool->bare is false where a debug tool checks the pool, and
	 * a ctor is refused with the flag.
	 */
	h->bare = (pool->flags & LFP_F_NO_CACHE) && pool->bare &&
		  pool->free.stride == sizeof(uint32_t) &&
		  !pool->on_alloc && !pool->on_free;
}

/*
 * The slots on the free list, counted by following the links from the
 * head, at most limit of them and only through indices below it: while
 * other threads pop and push, the walk may follow a link that changed
 * and count a few slots twice or not at all, but it stays inside the
 * pool's metadata and ends. Exact when no thread changes the list.
 */
static uint64_t bare_stacked(const struct lfp_pool *pool, uint32_t limit)
{
	/* Acquire: as lfpi_stack_walk's load of the head. */
	uint64_t head = atomic_load_explicit(&pool->free.head,
					     memory_order_acquire);
	uint32_t i = (uint32_t)head;
	uint64_t n = 0;

	for (; i < limit && n < limit; n++)
		i = atomic_load_explicit(lfpi_slot_next(pool, i),
					 memory_order_relaxed);
	return n;
}

uint64_t lfpi_bare_live(const struct lfp_pool *pool, uint64_t cached,
			uint64_t pending)
{
	struct lfp_pool *p = (struct lfp_pool *)pool;
	/* Relaxed: a snapshot, as every count of lfp_stats. */
	uint32_t limit = atomic_load_explicit(&p->limit, memory_order_relaxed);
	uint64_t bump = atomic_load_explicit(&p->bump, memory_order_relaxed);
	uint64_t idle = bare_stacked(pool, limit) + cached + pending;

	/* Magazines: only an explicit cache of the pool fills them, and
	 * may be doing so now (lfpi_depot_walk is for idle depots). */
	if (!lfpi_depot_is_empty(&p->depot))
		idle += lfpi_depot_slots(&p->depot);
	return idle < bump ? bump - idle : 0;
}
