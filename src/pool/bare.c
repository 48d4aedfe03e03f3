/* SPDX-License-Identifier: MIT */
/*
 * Bare pools: a pool with LFP_F_NO_CACHE and LFP_F_UNCHECKED that
 * nothing sends out of line on every call (no hooks, no debug tool) is
 * its free list, popped and pushed inline by lfp_alloc and lfp_free
 * (lfpi_bare_alloc in lfpool.h). Here: the words of struct lfpi_pool_hot
 * those inline paths read, and what lfp_stats counts for such a pool,
 * whose inline calls count nothing. In pool/, beside stats.c; calls the
 * lists and the caches below it.
 */
#include <sched.h>
#include <time.h>

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

/* Slots handed out once (bump) less those found idle: live. */
static uint64_t bare_live_once(struct lfp_pool *p, uint64_t others)
{
	/* Relaxed: a snapshot, as every count of lfp_stats. */
	uint32_t limit = atomic_load_explicit(&p->limit, memory_order_relaxed);
	uint64_t bump = atomic_load_explicit(&p->bump, memory_order_relaxed);
	uint64_t idle = bare_stacked(p, limit) + others;

	/* Magazines: only an explicit cache of the pool fills them, and
	 * may be doing so now (lfpi_depot_walk is for idle depots). */
	if (!lfpi_depot_is_empty(&p->depot))
		idle += lfpi_depot_slots(&p->depot);
	return idle < bump ? bump - idle : 0;
}

/*
 * A trim takes the whole free list and the depot aside (trim.c), and a
 * walk that meets them aside would count their slots as live: the walk is
 * taken again, a few times, until no trim began or ended during it, as a
 * sequence lock's reader does, and while a trim has them aside the walk
 * waits for it, yielding, up to BARE_LIVE_WAIT_NS in all. A trim that
 * lasts longer is seen (lfpool.h says so at lfp_stats): waiting without
 * bound would make lfp_stats wait for another thread, and it is
 * wait-free and async-signal-safe (clock_gettime and sched_yield are
 * system calls that a handler may make).
 */
#define BARE_LIVE_TRIES 8
#define BARE_LIVE_WAIT_NS 1000000 /* 1 ms: a short trim, many times over */

static uint64_t bare_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* trim_seq, waited on while odd (a trim has the lists aside) until
 * *deadline, set at the first wait. */
static uint32_t bare_trim_seq(struct lfp_pool *p, uint64_t *deadline)
{
	/* Acquire: pairs with the release store that ends a trim
	 * (trim_locked), so a walk after it sees the lists back. */
	uint32_t seq = atomic_load_explicit(&p->trim_seq, memory_order_acquire);

	while (seq & 1) {
		uint64_t now = bare_now_ns();

		if (!*deadline)
			*deadline = now + BARE_LIVE_WAIT_NS;
		if (now >= *deadline)
			break;
		sched_yield();
		seq = atomic_load_explicit(&p->trim_seq, memory_order_acquire);
	}
	return seq;
}

uint64_t lfpi_bare_live(const struct lfp_pool *pool, uint64_t cached,
			uint64_t pending)
{
	struct lfp_pool *p = (struct lfp_pool *)pool;
	uint64_t live = 0, deadline = 0;
	uint32_t seq;

	for (unsigned tries = 0; tries < BARE_LIVE_TRIES; tries++) {
		seq = bare_trim_seq(p, &deadline);
		live = bare_live_once(p, cached + pending);
		/* Acquire fence: a walk that saw a trim's pop_all (its
		 * release, after the trim made trim_seq odd) makes that odd
		 * value visible to the load below, which then differs. */
		atomic_thread_fence(memory_order_acquire);
		if (!(seq & 1) &&
		    atomic_load_explicit(&p->trim_seq, memory_order_relaxed) == seq)
			break;
	}
	return live;
}
