/* SPDX-License-Identifier: MIT */
/*
 * Deferred release, the entry points: lfp_free_deferred checks a release
 * as lfp_free does (strictly) and hands the slot to rcu.c, which returns
 * it to the pool after a grace period; lfp_barrier and
 * lfp_deferred_pending. In the top layer (extras/), above the pool: calls
 * pool.h's release checks and rcu.c.
 */
#include <errno.h>
#include <urcu/urcu-memb.h>

#include "base/probes.h"
#include "pool/pool.h"
#include "rcu/rcu.h"

int lfp_free_deferred(struct lfp_pool *pool, void *obj)
{
	struct lfpi_counters *ctr;
	struct lfpi_rcu_slot *t;
	uint32_t idx;
	int err = 0;

	if (!pool)
		return -EINVAL;
	if (!(t = lfpi_rcu_table(pool)))
		return -ENOMEM;
	ctr = lfpi_my_shard(pool);
	/* Strict: this path is not the hot one, and racing double releases
	 * must not queue one slot twice. */
	idx = lfpi_release_slot(pool, obj, &err,
				LFPI_REL_STRICT | LFPI_REL_DEFERRED);
	if (idx == LFPI_NIL) {
		atomic_fetch_add_explicit(&ctr->rejected_frees, 1,
					  memory_order_relaxed);
		LFPI_PROBE(free_refused, pool, err);
		return err;
	}
	/* Counted before the callback can count it reclaimed. */
	atomic_fetch_add_explicit(&ctr->frees, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&ctr->deferred, 1, memory_order_relaxed);
	lfpi_rcu_defer(pool, t, idx);
	return 0;
}

void lfp_barrier(struct lfp_pool *pool)
{
	if (pool && atomic_load_explicit(&pool->rcu, memory_order_relaxed)) {
		urcu_memb_barrier();
		lfpi_tsan_acquire(&pool->rcu);
	}
}

uint64_t lfp_deferred_pending(const struct lfp_pool *pool)
{
	return pool ? lfpi_rcu_pending(pool) : 0;
}
