/*
 * Deferred release with RCU: a slot released with lfp_free_deferred goes
 * back to the pool only after a grace period of liburcu's memb flavour,
 * so readers inside urcu_memb_read_lock() never see the object they
 * reached change identity under them (Linux's SLAB_TYPESAFE_BY_RCU).
 *
 * call_rcu needs an rcu_head that outlives the call, and the object
 * cannot hold it: readers may still be reading the object. So each slot
 * has one in a table beside the pool, mapped on the first deferred
 * release (untouched pages of it cost nothing).
 */
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <urcu/urcu-memb.h>

#include "pool.h"

struct lfpi_rcu_slot {
	struct rcu_head head;
	struct lfp_pool *pool;
};

/* The table, mapped once; NULL without memory. */
static struct lfpi_rcu_slot *rcu_table(struct lfp_pool *pool)
{
	/* Acquire: pairs with the release store below. */
	struct lfpi_rcu_slot *t =
		atomic_load_explicit(&pool->rcu, memory_order_acquire);
	size_t size;
	void *p;

	if (LFPI_LIKELY(t))
		return t;
	pthread_mutex_lock(&pool->grow_lock);
	t = atomic_load_explicit(&pool->rcu, memory_order_relaxed);
	if (!t) {
		size = (size_t)pool->capacity * sizeof(*t);
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED) {
			t = p;
			pool->rcu_size = size;
			/* Release: the mapping is complete before anyone
			 * sees the pointer. */
			atomic_store_explicit(&pool->rcu, t,
					      memory_order_release);
		}
	}
	pthread_mutex_unlock(&pool->grow_lock);
	return t;
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
	atomic_fetch_add_explicit(&lfpi_my_shard(pool)->reclaimed, 1,
				  memory_order_relaxed);
	/* rcu_barrier returns after this callback: pairs with the
	 * __tsan_acquire in lfp_barrier and lfpi_rcu_destroy. */
	lfpi_tsan_release(&pool->rcu);
}

int lfp_free_deferred(struct lfp_pool *pool, void *obj)
{
	struct lfpi_counters *ctr;
	struct lfpi_rcu_slot *t;
	uint32_t idx;
	int err = 0;

	if (!pool)
		return -EINVAL;
	if (!(t = rcu_table(pool)))
		return -ENOMEM;
	ctr = lfpi_my_shard(pool);
	/* Strict: this path is not the hot one, and racing double releases
	 * must not queue one slot twice. */
	idx = lfpi_release_slot(pool, obj, &err,
				LFPI_REL_STRICT | LFPI_REL_DEFERRED);
	if (idx == LFPI_NIL) {
		atomic_fetch_add_explicit(&ctr->rejected_frees, 1,
					  memory_order_relaxed);
		return err;
	}
	t[idx].pool = pool;
	/* Counted before the callback can count it reclaimed. */
	atomic_fetch_add_explicit(&ctr->frees, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&ctr->deferred, 1, memory_order_relaxed);
	/*
	 * Tell TSan what call_rcu guarantees: our writes to the object and
	 * to t[idx] happen before the callback (a grace period is a full
	 * barrier in between). Pairs with __tsan_acquire in rcu_reclaim.
	 */
	lfpi_tsan_release(&t[idx]);
	urcu_memb_call_rcu(&t[idx].head, rcu_reclaim);
	return 0;
}

void lfp_barrier(struct lfp_pool *pool)
{
	if (pool && atomic_load_explicit(&pool->rcu, memory_order_relaxed)) {
		urcu_memb_barrier();
		lfpi_tsan_acquire(&pool->rcu);
	}
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
