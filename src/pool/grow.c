/* SPDX-License-Identifier: MIT */
/*
 * What a pool does when it runs out: grow, ask the user to reclaim, or
 * abort; and growth and preallocation (lfp_trim is in trim.c).
 *
 * A growable pool is laid out at creation for max_capacity slots: the
 * metadata exists for all of them and the object region is reserved but
 * committed only up to `limit`. Growing commits the next segment (the pool
 * doubles) and raises `limit`, so indices stay stable, objects never move
 * and there is no segment table to reallocate under a reader. The grow
 * path takes a mutex; it runs once per doubling.
 *
 * For pool.c, through grow.h; calls lfp_stats (stats.c), rcu.c, the debug
 * reports and the slab, nothing of pool.c.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/probes.h"
#include "tools/debug.h"
#include "pool/grow.h"
#include "rcu/rcu.h"

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
	/* Release: pairs with the acquire load in lfpi_slab_bump. */
	atomic_store_explicit(&pool->limit, want, memory_order_release);
	atomic_fetch_add_explicit(&lfpi_my_shard(pool)->grown, 1,
				  memory_order_relaxed);
	LFPI_PROBE(grow, pool, cur, want);
	return 0;
}

/* Double the pool, up to its max_capacity. 0, -ENOSPC or -ENOMEM. */
static int grow_step(struct lfp_pool *pool, uint32_t seen)
{
	uint32_t cur, want;
	int err;

	/* Full grown already, as when we looked: no lock (and none of its
	 * system calls, lock.c) for an exhaustion that is a normal state.
	 * Relaxed: the limit only grows; a stale value takes the lock. */
	cur = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	if (cur == seen && cur == pool->capacity)
		return -ENOSPC;
	lfpi_lock(&pool->grow_lock);
	cur = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	if (cur != seen) {
		err = 0; /* another thread grew it meanwhile: try that */
	} else if (cur == pool->capacity) {
		err = -ENOSPC;
	} else {
		want = cur > pool->capacity - cur ? pool->capacity : 2 * cur;
		err = grow_to(pool, want);
	}
	lfpi_unlock(&pool->grow_lock);
	return err;
}

static void grow_abort(struct lfp_pool *pool)
{
	char label[LFPI_LABEL_MAX];
	struct lfp_stats st;

	lfp_stats(pool, &st);
	fprintf(stderr,
		"lfpool: %s exhausted and its policy is to abort: "
		"capacity %llu, live %llu, cached %llu, deferred %llu, "
		"allocs %llu, frees %llu, failed %llu\n",
		lfpi_pool_label(pool, label), (unsigned long long)st.capacity,
		(unsigned long long)st.live, (unsigned long long)st.cached,
		(unsigned long long)st.deferred, (unsigned long long)st.allocs,
		(unsigned long long)st.frees,
		(unsigned long long)st.failed_allocs + 1);
	abort();
}

/* A test-only fault, below: on in the harness's broken build
 * (-DLFPI_FAULT_TRIM_RACE), and where the Relacy check
 * (tests/relacy/pool.cc) defines it as its flag. */
#ifdef LFPI_FAULT_TRIM_RACE
#define GROW_FAULT_TRIM_RACE (LFPI_FAULT_TRIM_RACE)
#else
#define GROW_FAULT_TRIM_RACE 0
#endif

/*
 * Did a trim overlap the allocation's pops? lfp_trim makes trim_seq odd
 * before it takes the list (its pop_all is a release), so a pop that saw
 * the list emptied by the trim synchronises with it and our load below
 * sees an odd or a later value: either way not the one the allocation
 * started with. Then wait for the trim to end and look again.
 */
static bool grow_trim_overlapped(struct lfp_pool *pool, struct lfpi_want *w)
{
	/* Acquire: pairs with the release store that ends lfp_trim, after
	 * which its slots are back on the free list. */
	uint32_t seq = atomic_load_explicit(&pool->trim_seq, memory_order_acquire);

	/* Test-only fault: look only at whether a trim runs right now, which
	 * misses one that ended between our last pop and this load. */
	if (GROW_FAULT_TRIM_RACE)
		w->trim_seq = seq & ~1u;
	if (seq == w->trim_seq && !(seq & 1))
		return false;
	while (seq & 1) {
		sched_yield();
		seq = atomic_load_explicit(&pool->trim_seq, memory_order_acquire);
	}
	w->trim_seq = seq;
	return true;
}

bool lfpi_exhausted(struct lfp_pool *pool, struct lfpi_want *w)
{
	uint32_t limit;

	if (grow_trim_overlapped(pool, w))
		return true;
	/*
	 * The pool grew (by any thread, this one included) since w->limit
	 * was read: our last look may have searched for fresh slots under
	 * an older limit only, so look again under this one rather than
	 * wait, grow, reclaim or fail. The limit only grows (every store
	 * under grow_lock), and w->limit, the look's bump and this load
	 * read it in that order in one thread: equal values mean the bump
	 * ran under this limit. Relaxed: only compared; the next bump
	 * reads this value or a later one, and acquires it.
	 */
	limit = atomic_load_explicit(&pool->limit, memory_order_relaxed);
	if (limit != w->limit) {
		w->limit = limit;
		return true;
	}
	/* Slots waiting for a grace period are the pool's before any
	 * policy: growing or reclaiming a victim would be premature. */
	if (LFPI_UNLIKELY(pool->flags & LFP_F_WAIT_DEFERRED) &&
	    lfpi_rcu_wait(pool, &w->rcu_epoch))
		return true;
	switch (pool->exhaust) {
	case LFP_EXHAUST_GROW:
		return grow_step(pool, limit) == 0;
	case LFP_EXHAUST_RECLAIM:
		if (w->attempt >= pool->reclaim_tries)
			return false;
		w->attempt++;
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
	lfpi_lock(&pool->grow_lock);
	err = grow_to(pool, n);
	lfpi_unlock(&pool->grow_lock);
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
