/* SPDX-License-Identifier: MIT */
/*
 * The pool's block as data: the per-slot metadata and the header, struct
 * lfp_pool, that aggregates every layer's state (the free list, the
 * depot, the cache registry, the counters). Every layer reads the fields
 * it owns here; calls go only downward, through the layers' own headers.
 * The memory layer (memory/, above lists/, below tools/), as slab.h; the
 * layers and their words (top, bottom, leaf) are named once, in
 * README.md's "How it works".
 * tests/layers.test checks the includes and the calls.
 */
#ifndef LFPOOL_BLOCK_H
#define LFPOOL_BLOCK_H

#include <pthread.h>
#include "base/counters.h"
#include "lists/depot.h"
#include "lists/stack.h"

/*
 * Per-slot metadata, kept beside the objects and never inside them, so the
 * library's links are atomic words that a racing reader may load without a
 * data race on the user's bytes (DESIGN.md, hard part 1). A bare pool
 * (LFP_F_UNCHECKED, no debug tool) never reads a generation, so it lays
 * out next alone, 4 bytes a slot instead of 8: reach next through
 * lfpi_slot_next, which goes by the free stack's stride, and gen through
 * lfpi_slot_gen, never in a bare pool.
 */
struct lfpi_slot {
	/* The free list's link (stack.c): the slot below this one. */
	_Atomic(uint32_t) next;
	/*
	 * Generation and state in one word: odd while the object is live,
	 * even while it is free. It starts at 0 (free, never used) and is
	 * incremented on every allocation and every release, so it changes
	 * on every release and a live generation is never 0. The inline
	 * fast path in lfpool.h reads it as gen[2 * index].
	 */
	_Atomic(uint32_t) gen;
};

static inline bool lfpi_gen_is_live(uint32_t gen)
{
	return gen & 1u;
}

/*
 * The generation a live slot takes when released out of line. 0 means
 * "never used" (the ctor and the debug tools go by it), so the wrap after
 * 2^32 steps skips it: a slot released for the 2^31st time becomes 2, not
 * 0. The inline release (lfpool.h) lets it wrap to 0: it serves only
 * pools without a ctor or debug tools, for which 0 is one more even
 * (free) generation; a handle never names it, since live ones are odd.
 */
static inline uint32_t lfpi_gen_freed(uint32_t gen)
{
	return gen + 1 ? gen + 1 : 2;
}

struct lfp_pool {
	/* Read-only after lfp_create. */
	struct lfpi_pool_hot hot; /* first: lfpool.h reads it */
	uint32_t capacity;
	char *objs;               /* the object region */
	/* Metadata, one per slot: struct lfpi_slot, or in a bare pool its
	 * next word alone (see struct lfpi_slot). */
	struct lfpi_slot *slots;
	size_t stride;            /* bytes from one object to the next */
	size_t region_size;       /* capacity * stride */
	uint32_t stride_shift;    /* log2(stride) if a power of two, else 0 */
	uint32_t stride_tz;       /* stride = odd << stride_tz */
	uint64_t stride_inv;      /* odd's inverse modulo 2^64 */
	uint32_t flags;
	bool map_lent;            /* map is part of a family's reservation
				     (lfpi_create_at), which unmaps it */
	/* LFP_F_UNCHECKED and no debug tool: the generation words are
	 * never read nor written (lfpool(7), UNCHECKED POOLS, says when the flag is ignored). */
	bool bare;
	void *map;                /* what lfp_create mapped, or NULL */
	size_t map_size;
	uint64_t id;              /* unique per pool ever made in the process */
	size_t obj_size;
	uint32_t debug;           /* LFPI_DBG_*: tools watching the objects */
	/* Non-zero if releases or allocations need more than the bare
	 * minimum (hooks, debug tools, strict releases: LFP_F_STRICT or
	 * LFP_F_NO_CACHE): caches then leave
	 * their fast path for lfpi_hand_out and lfpi_release_slot. */
	uint32_t quirks;
	uint32_t exhaust;         /* enum lfp_exhaust */
	uint32_t reclaim_tries;
	int (*reclaim)(struct lfp_pool *pool, void *arg);
	void (*ctor)(void *obj, void *arg);
	void (*on_alloc)(void *obj, void *arg);
	void (*on_free)(void *obj, void *arg);
	void *hook_arg;
	uint32_t cache_size;      /* slots per thread cache */
	uint32_t batch;           /* slots per exchange with the shared stack */
	char name[LFP_NAME_MAX + 1]; /* lfp_config.name, cut; "" if none */

	/* Shared and hot: each on its own cache line. */
	struct lfpi_stack free;   /* single free slots, linked by next */
	struct lfpi_depot depot;  /* magazines of free slots */
	/* Slots [bump, limit) were never handed out (lazy first touch). */
	alignas(LFPI_CACHELINE) _Atomic(uint32_t) bump;
	/*
	 * Slots [0, limit) are usable: capacity grows by raising it, up to
	 * `capacity`, which is the most the pool was laid out for (its
	 * max_capacity). Metadata exists for all of them.
	 */
	_Atomic(uint32_t) limit;
	/* Odd while lfp_trim has the free list aside; it changes on every
	 * trim that took slots aside (grow.c). */
	_Atomic(uint32_t) trim_seq;
	/* Set once lfp_trim gave pages back: their slots read as zeroes. */
	_Atomic(uint32_t) trimmed;
	/* Pools with a ctor: a bit per slot whose memory lfp_trim gave
	 * back, so that its next handout constructs it again (trim.c). */
	_Atomic(_Atomic(uint64_t) *) ctor_due;

	/* Rare paths: growth, trim, the deferred-release table. */
	pthread_mutex_t grow_lock;
	_Atomic(struct lfpi_rcu_slot *) rcu; /* mapped on first use (rcu.c) */
	size_t rcu_size;

	/*
	 * LFP_F_WAIT_DEFERRED (rcu.c): every deferred slot that comes back
	 * advances rcu_epoch, on which allocations waiting for one sleep;
	 * rcu_sleepers is set while one may sleep. On their own line: the
	 * call_rcu thread writes it once per slot.
	 */
	alignas(LFPI_CACHELINE) _Atomic(uint32_t) rcu_epoch;
	_Atomic(uint32_t) rcu_sleepers;
	_Atomic(uint64_t) rcu_waits; /* sleeps, for the tests */

	/* Every cache ever made for this pool; pushed, never unlinked. */
	alignas(LFPI_CACHELINE) _Atomic(struct lfp_cache *) caches;

	/* fork.c, under its lock: the list of pools, and the caches that
	 * fork_prepare took (the registry's head then). */
	struct lfp_pool *fork_next, *fork_prev;
	struct lfp_cache *fork_caches;
	bool fork_took;           /* fork.c: its prepare took grow_lock */

	struct lfpi_counters shard[LFPI_SHARDS];
};


/* Slot idx's free-list link, in any pool: free.stride apart (4 bytes in a
 * bare pool, 8 in the others). */
static inline _Atomic(uint32_t) *lfpi_slot_next(const struct lfp_pool *pool,
					       uint32_t idx)
{
	return lfpi_stack_next(&pool->free, idx);
}

/* Slot idx's generation word; a bare pool has none, and must not ask. */
static inline _Atomic(uint32_t) *lfpi_slot_gen(const struct lfp_pool *pool,
					      uint32_t idx)
{
	return &pool->slots[idx].gen;
}

static inline struct lfpi_counters *lfpi_my_shard(struct lfp_pool *pool)
{
	return lfpi_shard(pool->shard);
}

#endif /* LFPOOL_BLOCK_H */
