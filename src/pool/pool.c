/* SPDX-License-Identifier: MIT */
/*
 * Creating and destroying a pool, the shared (uncached) allocation and
 * release paths, and what the slow paths (slow.c, above it) take from
 * the pool: the lists looked at one slot at a time (lfpi_pool_take) and
 * the checks of a release. Calls the pool's policies (grow.c, trim.c,
 * fork.c), the caches, rcu.c, the debug tools, the slab and the lists.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/probes.h"
#include "pool/fork.h"
#include "pool/grow.h"
#include "pool/pool.h"
#include "rcu/rcu.h"

static _Atomic(uint64_t) pool_ids = 1;

/* Relaxed: counters order nothing; lfp_stats sums recent values. */
static inline void pool_count(_Atomic(uint64_t) *ctr, uint64_t n)
{
	atomic_fetch_add_explicit(ctr, n, memory_order_relaxed);
}

/*
 * Keep the first LFP_NAME_MAX bytes of name, backing off over UTF-8
 * continuation bytes so that a cut never leaves half a character.
 */
static void pool_set_name(struct lfp_pool *pool, const char *name)
{
	size_t n = name ? strnlen(name, LFP_NAME_MAX + 1) : 0;

	if (n > LFP_NAME_MAX) {
		n = LFP_NAME_MAX;
		while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(pool->name, name ? name : "", n);
	pool->name[n] = '\0';
}

const char *lfp_name(const struct lfp_pool *pool)
{
	return pool ? pool->name : NULL;
}

/*
 * How the inline release finds a slot by exact division: stride = odd <<
 * tz, and odd's inverse modulo 2^64 (Newton's iteration doubles the bits
 * that are right at each step: 3, 6, 12, 24, 48, 96).
 */
static void pool_set_divisor(struct lfp_pool *pool, size_t stride)
{
	uint64_t odd, inv;

	pool->stride_tz = (uint32_t)__builtin_ctzll(stride);
	odd = (uint64_t)stride >> pool->stride_tz;
	inv = odd;
	for (int i = 0; i < 5; i++)
		inv *= 2 - odd * inv;
	pool->stride_inv = inv;
}

static void pool_init(struct lfp_pool *pool, const struct lfp_config *cfg,
		      const struct lfpi_layout *l, char *base)
{
	memset(pool, 0, sizeof(*pool));
	pool->slots = (struct lfpi_slot *)(base + l->slots_off);
	pool->objs = base + l->objs_off;
	pool->stride = l->stride;
	pool->region_size = (size_t)l->slots * l->stride;
	pool->capacity = l->slots;
	pool->flags = cfg->flags;
	pool->exhaust = cfg->exhaust;
	pool->reclaim = cfg->reclaim;
	pool->reclaim_tries = cfg->reclaim_tries ? cfg->reclaim_tries : 3;
	pool->ctor = cfg->ctor;
	pool->on_alloc = cfg->on_alloc;
	pool->on_free = cfg->on_free;
	pool->hook_arg = cfg->hook_arg;
	pool->obj_size = cfg->obj_size;
	if (!(l->stride & (l->stride - 1)))
		pool->stride_shift = (uint32_t)__builtin_ctzl(l->stride);
	pool_set_divisor(pool, l->stride);
	lfpi_stack_init(&pool->free, &pool->slots[0].next, l->meta);
	lfpi_depot_init(&pool->depot, base + l->mags_off, l->nmags, l->batch);
	atomic_init(&pool->bump, 0);
	atomic_init(&pool->limit, l->initial);
	atomic_init(&pool->trim_seq, 0);
	atomic_init(&pool->trimmed, 0);
	atomic_init(&pool->ctor_due, NULL);
	atomic_init(&pool->rcu, NULL);
	atomic_init(&pool->rcu_epoch, 0);
	atomic_init(&pool->rcu_sleepers, 0);
	atomic_init(&pool->rcu_waits, 0);
	atomic_init(&pool->caches, NULL);
	for (unsigned i = 0; i < LFPI_SHARDS; i++)
		lfpi_counters_init(&pool->shard[i]);
	/* Relaxed: only has to be unique. */
	pool->id = atomic_fetch_add_explicit(&pool_ids, 1, memory_order_relaxed);
	pool->cache_size = l->cache_size;
	pool->batch = l->batch;
	pool_set_name(pool, cfg->name);
}

/*
 * Releases in a pool with LFP_F_STRICT or LFP_F_NO_CACHE settle the slot's
 * generation with a CAS, through every path, explicit caches included:
 * lfp_free promises that of two racing releases exactly one succeeds, and
 * a check-then-store in one of them would let both through.
 */
static bool pool_strict(const struct lfp_pool *pool)
{
	return !pool->bare && (pool->flags & (LFP_F_STRICT | LFP_F_NO_CACHE));
}

static void pool_set_quirks(struct lfp_pool *pool)
{
	pool->quirks = pool->debug || pool->ctor || pool->on_alloc ||
		       pool->on_free || pool_strict(pool);
}

LFPI_NOINLINE void *lfpi_hand_out_quirky(struct lfp_pool *pool, uint32_t idx)
{
	return lfpi_hand_out(pool, idx);
}

LFPI_NOINLINE uint32_t lfpi_release_quirky(struct lfp_pool *pool, void *obj,
					   int *err)
{
	return lfpi_release_slot(pool, obj, err,
				 pool_strict(pool) ? LFPI_REL_STRICT : 0);
}

int lfp_create(const struct lfp_config *cfg, struct lfp_pool **out)
{
	return lfpi_create_at(cfg, NULL, 0, out);
}

/* cfg's layout, for lfp_memory_size and lfp_create alike. Any debug tool
 * keeps an unchecked pool's generation words, to check what the flag
 * would not; without one the pool is bare, its metadata half as big.
 * fault: see lfpi_layout. */
static int pool_layout(const struct lfp_config *cfg, struct lfpi_layout *l,
		       const char **fault)
{
	return lfpi_layout(cfg,
			   (cfg->flags & LFP_F_UNCHECKED) &&
			       !lfpi_debug_tools(cfg->flags, cfg->ctor != NULL),
			   l, fault);
}

/* Caller memory, if any, for a pool laid out as l: 0 or -EINVAL, with
 * *fault (if fault is not NULL) naming the field. */
static int pool_check_memory(const struct lfp_config *cfg,
			     const struct lfpi_layout *l, const char **fault)
{
	const char *field = NULL;

	if (cfg->memory && cfg->memory_size < l->total)
		field = "memory_size";
	else if (cfg->memory && (uintptr_t)cfg->memory % l->base_align)
		field = "memory";
	if (field && fault)
		*fault = field;
	return field ? -EINVAL : 0;
}

size_t lfp_memory_size(const struct lfp_config *cfg)
{
	struct lfpi_layout l;

	return !cfg || pool_layout(cfg, &l, NULL) ? 0 : l.total;
}

const char *lfp_config_fault(const struct lfp_config *cfg)
{
	struct lfpi_layout l;
	const char *fault = NULL;

	if (cfg && !pool_layout(cfg, &l, &fault) &&
	    !pool_check_memory(cfg, &l, &fault) && !cfg->memory &&
	    !lfpi_map_pool_len(&l, cfg->flags))
		fault = lfpi_size_field(cfg); /* lfp_create's -EOVERFLOW */
	return fault;
}

int lfpi_pool_map_len(const struct lfp_config *cfg, size_t *len,
		      const char **fault)
{
	struct lfpi_layout l;
	int err;

	if (!cfg)
		return -EINVAL;
	if ((err = pool_layout(cfg, &l, fault)))
		return err;
	*len = cfg->memory ? 0 : lfpi_map_pool_len(&l, cfg->flags);
	if (cfg->memory || *len)
		return 0;
	if (fault)
		*fault = lfpi_size_field(cfg);
	return -EOVERFLOW;
}

int lfpi_create_at(const struct lfp_config *cfg, void *where, size_t room,
		   struct lfp_pool **out)
{
	static _Atomic(uint64_t) probe;
	struct lfpi_layout l;
	void *map = NULL;
	size_t map_size = 0;
	char *base;
	int err;

	if (!cfg || !out)
		return -EINVAL;
	if ((err = pool_layout(cfg, &l, NULL)))
		return err;
	/* The head is one 64-bit word: no 128-bit CAS, no libatomic lock. */
	if (!atomic_is_lock_free(&probe))
		return -ENOTSUP;
	if ((err = lfpi_cache_global_init()) || (err = lfpi_fork_global_init()))
		return err;
	if ((err = pool_check_memory(cfg, &l, NULL)))
		return err;
	/* Fits, but not once rounded and aligned for mapping (as
	 * lfpi_pool_map_len, and a family, say): the size overflows. */
	if (!cfg->memory && !lfpi_map_pool_len(&l, cfg->flags))
		return -EOVERFLOW;
	if (where && (cfg->memory || lfpi_map_pool_len(&l, cfg->flags) - 1 >=
						  room))
		return -EINVAL;
	if (cfg->memory) {
		base = cfg->memory;
		/* Header and metadata only: the objects stay untouched. */
		memset(base + l.slots_off, 0, l.objs_off - l.slots_off);
	} else {
		base = lfpi_map_pool(&l, cfg->flags, where, &map, &map_size);
		if (!base)
			return -ENOMEM;
	}
	/* pool_init clears the header, so the mutex is made after it. */
	pool_init((struct lfp_pool *)base, cfg, &l, base);
	if ((err = pthread_mutex_init(&((struct lfp_pool *)base)->grow_lock,
				      NULL))) {
		if (where)
			lfpi_uncommit(map, map_size);
		else
			lfpi_unmap(map, map_size);
		return -err;
	}
	((struct lfp_pool *)base)->map = map;
	((struct lfp_pool *)base)->map_size = map_size;
	((struct lfp_pool *)base)->map_lent = where != NULL;
	lfpi_debug_init((struct lfp_pool *)base);
	/* As laid out (pool_layout): no generation words with no tool. */
	((struct lfp_pool *)base)->bare = l.bare;
	lfpi_bare_setup((struct lfp_pool *)base);
	pool_set_quirks((struct lfp_pool *)base);
	lfpi_cache_number((struct lfp_pool *)base);
	lfpi_fork_add((struct lfp_pool *)base);
	*out = (struct lfp_pool *)base;
	return 0;
}

void lfp_destroy(struct lfp_pool *pool)
{
	if (!pool)
		return;
	lfpi_fork_remove(pool);
	lfpi_rcu_destroy(pool);
	lfpi_cache_destroy_all(pool);
	lfpi_cache_unnumber(pool);
	lfpi_debug_destroy(pool);
	lfpi_trim_destroy(pool);
	pthread_mutex_destroy(&pool->grow_lock);
	/* A lent mapping stays: the reservation's owner unmaps it whole
	 * (unmapped here, its range could go to another mapping first). */
	if (!pool->map_lent)
		lfpi_unmap(pool->map, pool->map_size);
}

/*
 * Single slots first (the free list), then one out of a loaded magazine,
 * then fresh ones. If all are gone, look at the lists once more: the bump
 * index never goes back, so lists that are empty after it ran out mean
 * the pool really was exhausted at that moment, not just while we were
 * looking elsewhere, under the limit the bump read (lfpi_exhausted, in
 * grow.c, checks that the limit is still that one).
 */
uint32_t lfpi_pool_take(struct lfp_pool *pool, uint32_t *retries)
{
	uint32_t idx = lfpi_stack_pop(&pool->free, retries);

	if (idx == LFPI_NIL)
		idx = lfpi_depot_take_one(&pool->depot, retries);
	if (idx == LFPI_NIL && !lfpi_slab_bump(pool, 1, &idx) &&
	    (idx = lfpi_stack_pop(&pool->free, retries)) == LFPI_NIL)
		idx = lfpi_depot_take_one(&pool->depot, retries);
	return idx;
}

/* The pool looks empty: empty idle explicit caches, then apply the
 * exhaustion policy, until a slot turns up or the policy gives up. While
 * a steal moved slots that another thread took first, steal again: some
 * other cache may hold slots its owner left idle (check_idle.c,
 * steal_after_wait_sees_idle_cache); each round means another thread
 * took slots, so this stays lock-free. slow.c's slow_cache_miss does
 * too. */
static LFPI_NOINLINE uint32_t pool_take_hard(struct lfp_pool *pool,
					     struct lfpi_counters *c,
					     uint32_t *retries)
{
	uint32_t idx, emptied = 0;
	struct lfpi_want want;

	lfpi_want_init(pool, &want);
	do {
		idx = lfpi_pool_take(pool, retries);
		while (idx == LFPI_NIL &&
		       lfpi_cache_steal(pool, NULL, &emptied, retries))
			idx = lfpi_pool_take(pool, retries);
	} while (idx == LFPI_NIL &&
		 (lfpi_fork_waited() || lfpi_exhausted(pool, &want)));
	if (emptied)
		pool_count(&c->steals, emptied);
	return idx;
}

void *lfpi_pool_alloc_shared(struct lfp_pool *pool)
{
	struct lfpi_counters *c = lfpi_my_shard(pool);
	uint32_t retries = 0, idx = lfpi_pool_take(pool, &retries);

	if (LFPI_UNLIKELY(idx == LFPI_NIL))
		idx = pool_take_hard(pool, c, &retries);
	if (retries)
		pool_count(&c->cas_retries, retries);
	if (LFPI_UNLIKELY(idx == LFPI_NIL)) {
		pool_count(&c->failed_allocs, 1);
		LFPI_PROBE(exhausted, pool, pool->capacity);
		return NULL;
	}
	pool_count(&c->allocs, 1);
	return lfpi_hand_out(pool, idx);
}

/* Push slot idx, marked free, onto the shared stack and count it. */
static void pool_push_shared(struct lfp_pool *pool, struct lfpi_counters *c,
			     uint32_t idx)
{
	uint32_t retries = lfpi_stack_push(&pool->free, idx, idx);

	if (retries)
		pool_count(&c->cas_retries, retries);
	pool_count(&c->frees, 1);
}

int lfpi_pool_free_shared(struct lfp_pool *pool, void *obj)
{
	struct lfpi_counters *c = lfpi_my_shard(pool);
	uint32_t idx;
	int err = 0;

	idx = lfpi_release_slot(pool, obj, &err, LFPI_REL_STRICT);
	if (LFPI_UNLIKELY(idx == LFPI_NIL)) {
		pool_count(&c->rejected_frees, 1);
		LFPI_PROBE(free_refused, pool, err);
		return err;
	}
	pool_push_shared(pool, c, idx);
	return 0;
}

/* The second half of lfp_free, for releases that were checked elsewhere
 * (by handle): same cache, same stack, same counters. */
int lfpi_finish_release(struct lfp_pool *pool, uint32_t idx, int err)
{
	struct lfp_cache *c;

	if (LFPI_UNLIKELY(err)) {
		pool_count(&lfpi_my_shard(pool)->rejected_frees, 1);
		LFPI_PROBE(free_refused, pool, err);
		return err;
	}
	if (LFPI_LIKELY(!(pool->flags & LFP_F_NO_CACHE)) &&
	    LFPI_LIKELY(c = lfpi_cache_implicit(pool)))
		lfpi_cache_put(c, idx, LFPI_CTL_OUT);
	else
		pool_push_shared(pool, lfpi_my_shard(pool), idx);
	return 0;
}

/* The checks of lfp_cache_free (pool.h). */
uint32_t lfpi_release_checked(struct lfp_cache *c, void *obj, int *err)
{
	struct lfp_pool *pool = c->pool;
	uint32_t idx;

	if (LFPI_UNLIKELY(c->quirks))
		idx = lfpi_release_quirky(pool, obj, err);
	else if (LFPI_UNLIKELY(!obj))
		idx = LFPI_NIL, *err = -EINVAL;
	else if ((idx = lfpi_slot_of(pool, obj, err)) != LFPI_NIL &&
		 LFPI_UNLIKELY(*err = lfpi_mark_free(pool, idx, false, 0)))
		idx = LFPI_NIL;
	if (LFPI_UNLIKELY(idx == LFPI_NIL)) {
		lfpi_cache_count(&c->ctr.rejected_frees, 1);
		LFPI_PROBE(free_refused, pool, *err);
	}
	return idx;
}
