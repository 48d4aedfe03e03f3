/* SPDX-License-Identifier: MIT */
/*
 * The slots waiting for an RCU grace period: a slot released with
 * lfp_free_deferred (deferred.c, which checks the release) goes back to
 * the pool only after a grace period of liburcu's memb flavour, so
 * readers inside urcu_memb_read_lock() never see the object they reached
 * change identity under them (Linux's SLAB_TYPESAFE_BY_RCU). Here: the
 * table of struct rcu_head, the call_rcu callback that pushes a slot back onto
 * the free list, the count of slots pending, and the wait of an
 * allocation that LFP_F_WAIT_DEFERRED lets sleep until one comes back
 * (for the exhaustion policy, grow.c).
 *
 * call_rcu needs an rcu_head that outlives the call, and the object
 * cannot hold it: readers may still be reading the object. So each slot
 * has one in a table beside the pool, mapped on the first deferred
 * release (untouched pages of it cost nothing).
 *
 * Below the caches and the pool: calls the free list (stack.c),
 * the debug tools and the slab, and knows nothing of the pool's policies.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <sys/mman.h>
#include <time.h>
#include <urcu/urcu-memb.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "tools/debug.h"
#include "rcu/rcu.h"

struct lfpi_rcu_slot {
	struct rcu_head head;
	struct lfp_pool *pool;
};

struct lfpi_rcu_slot *lfpi_rcu_table(struct lfp_pool *pool)
{
	/* Acquire: pairs with the release store below. */
	struct lfpi_rcu_slot *t =
		atomic_load_explicit(&pool->rcu, memory_order_acquire);
	size_t size;
	void *p;

	if (LFPI_LIKELY(t))
		return t;
	lfpi_lock(&pool->grow_lock);
	t = atomic_load_explicit(&pool->rcu, memory_order_relaxed);
	if (!t) {
		size = (size_t)pool->capacity * sizeof(*t);
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED) {
			t = (struct lfpi_rcu_slot *)p;
			pool->rcu_size = size;
			/* Release: the mapping is complete before anyone
			 * sees the pointer. */
			atomic_store_explicit(&pool->rcu, t,
					      memory_order_release);
		}
	}
	lfpi_unlock(&pool->grow_lock);
	return t;
}

/*
 * LFP_F_WAIT_DEFERRED. A slot came back: advance the epoch, and wake the
 * allocations sleeping on it, if any. Their side is rcu_sleep.
 */
static void rcu_wake(struct lfp_pool *pool)
{
	/*
	 * seq_cst, the increment and the load of rcu_sleepers: a Dekker
	 * pair with rcu_sleep's store of rcu_sleepers and load of the
	 * epoch. Either the sleeper sees the new epoch and stays awake, or
	 * we see it and wake it. Also a release: pairs with the acquire
	 * loads of the epoch in lfpi_want_init and lfpi_rcu_wait, so the
	 * slot we pushed is on the list for whoever sees the new epoch.
	 */
	atomic_fetch_add_explicit(&pool->rcu_epoch, 1, memory_order_seq_cst);
	if (!atomic_load_explicit(&pool->rcu_sleepers, memory_order_seq_cst))
		return;
	/* Relaxed: it only elects one waker per sleep; the ordering is the
	 * Dekker pair's above. */
	if (!atomic_exchange_explicit(&pool->rcu_sleepers, 0,
				      memory_order_relaxed))
		return;
#ifdef __linux__
	syscall(SYS_futex, &pool->rcu_epoch, FUTEX_WAKE_PRIVATE, INT_MAX,
		NULL, NULL, 0);
#endif
}

/* After the grace period, in liburcu's call_rcu thread. */
static void rcu_reclaim(struct rcu_head *head)
{
	struct lfpi_rcu_slot *s =
		(struct lfpi_rcu_slot *)((char *)head -
					 offsetof(struct lfpi_rcu_slot, head));
	struct lfp_pool *pool;
	uint32_t idx;

	/* The edge from lfp_free_deferred runs through liburcu's queues,
	 * which TSan does not see; this is its other end, before we read
	 * anything the releasing thread wrote. */
	lfpi_tsan_acquire(s);
	pool = s->pool;
	idx = (uint32_t)(s - atomic_load_explicit(&pool->rcu,
						  memory_order_relaxed));
	/*
	 * Readers' sections ended before the grace period did, but TSan does
	 * not see urcu_memb_read_unlock either. A reader that wants its reads
	 * of the object ordered before the reuse, under TSan, calls
	 * __tsan_release(obj) before unlocking; this is the other end.
	 */
	lfpi_tsan_acquire(lfpi_obj(pool, idx));
	/* No reader can hold the object any more: now it may be poisoned. */
	if (pool->debug)
		lfpi_debug_free(pool, idx);
	lfpi_stack_push(&pool->free, idx, idx);
	if (pool->flags & LFP_F_WAIT_DEFERRED)
		rcu_wake(pool);
	/* Release, after the epoch moved: pairs with the acquire loads in
	 * lfpi_rcu_pending, so a waiter that counts this slot back sees the
	 * new epoch too (and looks again rather than giving up). */
	atomic_fetch_add_explicit(&lfpi_my_shard(pool)->reclaimed, 1,
				  memory_order_release);
	/* rcu_barrier returns after this callback: pairs with the
	 * __tsan_acquire in lfp_barrier and lfpi_rcu_destroy. */
	lfpi_tsan_release(&pool->rcu);
}

void lfpi_rcu_defer(struct lfp_pool *pool, struct lfpi_rcu_slot *t,
		    uint32_t idx)
{
	t[idx].pool = pool;
	/*
	 * Tell TSan what call_rcu guarantees: our writes to the object and
	 * to t[idx] happen before the callback (a grace period is a full
	 * barrier in between). Pairs with __tsan_acquire in rcu_reclaim.
	 */
	lfpi_tsan_release(&t[idx]);
	urcu_memb_call_rcu(&t[idx].head, rcu_reclaim);
}

void lfpi_rcu_destroy(struct lfp_pool *pool)
{
	struct lfpi_rcu_slot *t =
		atomic_load_explicit(&pool->rcu, memory_order_relaxed);

	if (!t)
		return;
	urcu_memb_barrier(); /* no callback may run on a freed pool */
	lfpi_tsan_acquire(&pool->rcu);
	munmap(t, pool->rcu_size);
}

/*
 * Reclaimed first: a slot is counted deferred before its callback can
 * count it back, so read in this order a slot is never counted back
 * without being counted out (relaxed loads of other shards may still
 * reorder; the clamp keeps that from wrapping).
 */
uint64_t lfpi_rcu_pending(const struct lfp_pool *pool)
{
	uint64_t back = 0, out = 0;

	for (unsigned i = 0; i < LFPI_SHARDS; i++)
		/* Acquire: pairs with the release increment in rcu_reclaim. */
		back += atomic_load_explicit(&pool->shard[i].reclaimed,
					     memory_order_acquire);
	for (unsigned i = 0; i < LFPI_SHARDS; i++)
		out += atomic_load_explicit(&pool->shard[i].deferred,
					    memory_order_relaxed);
	return out > back ? out - back : 0;
}

/*
 * Whether this thread must not wait for a grace period: inside a
 * read-side section it would wait for itself; in a call_rcu thread
 * (a callback that allocates) it would wait for the callbacks queued
 * behind the one it runs, ours among them.
 */
static bool rcu_cannot_wait(void)
{
	struct call_rcu_data *crdp;

	if (urcu_memb_read_ongoing())
		return true;
	crdp = urcu_memb_get_thread_call_rcu_data();
	return crdp && pthread_equal(urcu_memb_get_call_rcu_thread(crdp),
				     pthread_self());
}

/* The longest sleep before a waiter looks again by itself: it is woken
 * when a slot comes back, this only bounds a wait gone wrong. */
#define RCU_NAP_NS 50000000L

/* Sleep until the epoch moves past seen (or RCU_NAP_NS). */
static void rcu_sleep(struct lfp_pool *pool, uint32_t seen)
{
	struct timespec nap = { .tv_sec = 0, .tv_nsec = RCU_NAP_NS };

	/* seq_cst, both: the other half of rcu_wake's Dekker pair. Kept
	 * though no check needs them: on Linux the full barrier futex_wait
	 * takes before it compares the epoch would do (either it sees the
	 * increment, or rcu_wake's load sees our store), but that barrier
	 * is the kernel's implementation, not futex(2)'s promise. */
	atomic_store_explicit(&pool->rcu_sleepers, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&pool->rcu_epoch, memory_order_seq_cst) != seen)
		return;
#ifdef __linux__
	/* The kernel compares the epoch with seen under its own lock, so a
	 * wake between our load and the sleep is not lost. */
	syscall(SYS_futex, &pool->rcu_epoch, FUTEX_WAIT_PRIVATE, seen, &nap,
		NULL, 0);
#else
	nap.tv_nsec = 1000000L; /* no futex: poll every millisecond */
	nanosleep(&nap, NULL);
#endif
}

bool lfpi_rcu_wait(struct lfp_pool *pool, uint32_t *seen)
{
	/* Pending first: a slot it counts back moved the epoch before
	 * (see rcu_reclaim), so the load below sees that. */
	uint64_t pending = lfpi_rcu_pending(pool);
	/* Acquire: pairs with rcu_wake's increment, which follows its
	 * push; seen the new epoch, the slot is on the list. */
	uint32_t now = atomic_load_explicit(&pool->rcu_epoch,
					    memory_order_acquire);

	if (now != *seen) {
		*seen = now; /* some came back since we looked */
		return true;
	}
	if (!pending || rcu_cannot_wait())
		return false;
	atomic_fetch_add_explicit(&pool->rcu_waits, 1, memory_order_relaxed);
	rcu_sleep(pool, now);
	/* Whether woken or not, look again: the caller pops first, and
	 * comes back here if others took what came back. */
	return true;
}
