/* SPDX-License-Identifier: MIT */
/*
 * fork(2) and the caches: fork.c's handlers call these with every pool
 * locked. Before the fork every cache is taken as a thief takes it;
 * after it, the parent gives them back, and the child keeps what is
 * consistent and drops what an operation may have been changing. Calls
 * steal.c (to take caches, and to know this thread's own steals),
 * registry.c (to know this thread's caches), exchange.c and fork_wait.c.
 */
#include <sched.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "cache/private.h"

/* lfp_cache.fork_hold: how fork's prepare holds a cache. */
enum {
	CACHE_FORK_TAKEN, /* it claimed the cache */
	CACHE_FORK_THIEF, /* another thread's steal held it too long */
	CACHE_FORK_MINE,  /* the forking thread's own interrupted steal holds it */
};

/*
 * fork (see fork.c). Before the fork, take every cache of the pool as a
 * thief would: from then on owners keep off their slots. An owner seen
 * inside an operation after the barrier may still be changing its cache
 * as the fork happens, so the cache is marked busy and the child drops
 * its contents (lost to the child, never handed out twice); the others
 * are consistent. Prepare never waits for an owner: that owner may be a
 * thread interrupted by a signal handler that waits for the fork. Caches
 * made after this point (newer than pool->fork_caches) are not covered
 * and dropped in the child too. Caller holds every grow_lock and the fork
 * lock.
 */

/*
 * Take c for a fork, as a thief would. A thief that holds it now lets go
 * within a few hundred instructions, unless it is preempted, or it is
 * interrupted by a signal handler that forks too and so waits for us: we
 * wait until `until`, then leave it to that thief (CACHE_FORK_THIEF). A
 * steal of this very thread, interrupted by the handler that forks, lets
 * go only after we return: we do not wait for it (CACHE_FORK_MINE).
 */
static uint32_t cache_fork_take(struct lfp_cache *c, uint64_t until)
{
	while (!lfpi_cache_claim_steal(c)) {
		if (lfpi_cache_held_by_me(c))
			return CACHE_FORK_MINE;
		if (lfpi_cache_now_ns() > until)
			return CACHE_FORK_THIEF;
		sched_yield();
	}
	return CACHE_FORK_TAKEN;
}

void lfpi_cache_fork_prepare(struct lfp_pool *pool)
{
	struct lfp_cache *c, *head;
	bool fenced;

	/* Acquire: pairs with the release CAS that published each cache. */
	head = atomic_load_explicit(&pool->caches, memory_order_acquire);
	pool->fork_caches = head;
	lfpi_cache_steals_held++;
	for (c = head; c; c = c->reg_next)
		c->fork_hold = cache_fork_take(c, lfpi_cache_fork_until());
	/* Without the barrier (a sandbox forbade membarrier after it was
	 * registered) an owner entering right now might be missed: then
	 * every cache counts as busy. */
	fenced = !lfpi_cache_membarrier || lfpi_cache_fence_all();
	for (c = head; c; c = c->reg_next)
		/* seq_cst: the handshake's read, as in lfpi_cache_steal;
		 * pairs with the release in lfpi_cache_leave. */
		c->fork_busy = !fenced || atomic_load_explicit(
						  &c->hot.active, memory_order_seq_cst);
}

/* In the parent after the fork: give the caches we took back to their
 * owners; the ones a thief held, it lets go itself. */
void lfpi_cache_fork_parent(struct lfp_pool *pool)
{
	lfpi_cache_steals_held--;
	for (struct lfp_cache *c = pool->fork_caches; c; c = c->reg_next) {
		c->fork_busy = 0;
		/* Release: pairs with the acquire load of ctl in
		 * lfpi_cache_enter, as when a thief lets go. */
		if (c->fork_hold == CACHE_FORK_TAKEN)
			atomic_fetch_and_explicit(&c->hot.ctl, ~LFPI_CTL_STEAL,
						  memory_order_release);
		c->fork_hold = CACHE_FORK_TAKEN;
	}
}

/*
 * In the child: only the forking thread exists. Its own caches stay its
 * own; an explicit cache stays for whoever holds it (if nobody in the
 * child does, its slots are taken by the next starving allocation); the
 * implicit caches of the threads that did not come along are emptied into
 * the free list and recycled. A cache that was busy at the fork, or made
 * after fork_prepare, or that another thread's steal held (it may have
 * been moving the slots out), may have been in the middle of an
 * operation: its slots are dropped (lost to the child), never handed out
 * twice. A cache a steal of the forking thread holds is left to that
 * steal, which goes on when the signal handler that forked returns.
 */
void lfpi_cache_fork_child(struct lfp_pool *pool)
{
	struct lfp_cache *c;
	uint32_t retries = 0, s, hold;
	bool covered = false, mine;

	lfpi_cache_steals_held--;
	/*
	 * Acquire: pairs with the release CAS that published each cache.
	 * Unchecked on the C11 model: C11 has no fork, and the child has one
	 * thread. The child's memory is the parent's at the fork, where a
	 * cache's publisher made its fields visible before the head (its
	 * release), and nothing changes them in the child, so a relaxed load
	 * would read the same; the acquire is the walkers' pattern, kept.
	 */
	c = atomic_load_explicit(&pool->caches, memory_order_acquire);
	for (; c; c = c->reg_next) {
		covered = covered || c == pool->fork_caches;
		hold = covered ? c->fork_hold : (uint32_t)CACHE_FORK_TAKEN;
		mine = lfpi_cache_is_mine(c);
		s = atomic_load_explicit(&c->state, memory_order_relaxed);
		/* One of ours that was busy is still in its operation: the
		 * frame a signal handler interrupted to fork goes on with it
		 * when the handler returns, and a steal meanwhile (the handler
		 * allocating) must see it busy, as in the parent. */
		if (!(mine && covered && c->fork_busy))
			atomic_store_explicit(&c->hot.active, 0,
					      memory_order_relaxed);
		/* membarrier may be gone in the child
		 * (lfpi_cache_fork_child_init). */
		c->ctl_keep = lfpi_cache_ctl_keep(pool);
		atomic_store_explicit(&c->hot.ctl,
				      c->ctl_keep | (hold == CACHE_FORK_MINE ?
							     LFPI_CTL_STEAL : 0),
				      memory_order_relaxed);
		/* A fold cut short by the fork must not keep readers
		 * retrying (relaxed: the child has one thread). */
		atomic_store_explicit(
			&c->fold_seq,
			(atomic_load_explicit(&c->fold_seq, memory_order_relaxed) +
			 1) & ~1u,
			memory_order_relaxed);
		/* The owner's spare stays if the owner is us: only an
		 * owner moves it, and our interrupted frame may hold it. */
		if (((!covered || c->fork_busy) && !mine) ||
		    hold == CACHE_FORK_THIEF) {
			lfpi_cache_set_n(c, 0);
			if (!mine)
				c->spare = LFPI_NIL; /* it may have been in flight */
		}
		c->fork_busy = 0;
		c->fork_hold = CACHE_FORK_TAKEN;
		/* An exiting cache of ours: the exit a handler interrupted
		 * goes on to give it back. */
		if ((s == LFPI_CACHE_EXITING || s == LFPI_CACHE_IMPLICIT) &&
		    !mine) {
			if (hold != CACHE_FORK_MINE)
				lfpi_cache_empty(c, &c->spare, &retries);
			atomic_store_explicit(&c->state, LFPI_CACHE_DEAD,
					      memory_order_relaxed);
		}
	}
}

/* In the child: membarrier registration belongs to the parent's process. */
void lfpi_cache_fork_child_init(void)
{
#if defined(__linux__) && defined(__NR_membarrier)
	if (lfpi_cache_membarrier == LFPI_MB_SYSCALL &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		    0, 0))
		lfpi_cache_membarrier = 0; /* one thread: switching is safe */
#endif
}
