/* SPDX-License-Identifier: MIT */
/*
 * The rcu layer (rcu/, above tools/, below cache/): the slots waiting for
 * an RCU grace period (rcu.c). The pool destroys the table, the exhaustion
 * policy (grow.c) waits for slots to come back, and lfp_free_deferred
 * (deferred.c) queues them.
 */
#ifndef LFPOOL_RCU_H
#define LFPOOL_RCU_H

#include "memory/block.h"

struct lfpi_rcu_slot;

/* The pool's table of struct rcu_head, mapped on first use; NULL without
 * memory. */
struct lfpi_rcu_slot *lfpi_rcu_table(struct lfp_pool *pool);
/* Slot idx, released and counted, goes back onto the free list after a
 * grace period; t is the pool's table. */
void lfpi_rcu_defer(struct lfp_pool *pool, struct lfpi_rcu_slot *t,
		    uint32_t idx);
/* Deferred slots whose grace period has not ended yet. */
uint64_t lfpi_rcu_pending(const struct lfp_pool *pool);
/* At lfp_destroy: wait for pending deferred releases, unmap the table. */
void lfpi_rcu_destroy(struct lfp_pool *pool);
/*
 * An allocation found a pool with LFP_F_WAIT_DEFERRED exhausted. If a
 * deferred slot came back since the epoch *seen (which the allocation
 * read before its first look at the free list), update *seen and return
 * true at once; if some are pending and the caller may wait for a grace
 * period, sleep until one comes back (or a while) and return true.
 * Otherwise (none pending, or inside a read-side section or a call_rcu
 * callback) return false: the policy applies.
 */
bool lfpi_rcu_wait(struct lfp_pool *pool, uint32_t *seen);

#endif /* LFPOOL_RCU_H */
