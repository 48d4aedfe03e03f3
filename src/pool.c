/*
 * The public entry points: creating and destroying a pool, the shared
 * (uncached) allocation and release paths, and the counters behind
 * lfp_stats.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define POOL_KNOWN_FLAGS LFP_F_NONE

/* Threads are spread over the counter shards in the order they first count. */
static _Atomic uint32_t pool_next_shard;
static _Thread_local uint32_t pool_shard_plus1;

struct lfpi_counters *lfpi_my_shard(struct lfp_pool *pool)
{
	uint32_t s = pool_shard_plus1;

	if (LFPI_UNLIKELY(!s)) {
		/* Relaxed: only spreads threads; any value is correct. */
		s = atomic_fetch_add_explicit(&pool_next_shard, 1,
					      memory_order_relaxed) %
			    LFPI_SHARDS + 1;
		pool_shard_plus1 = s;
	}
	return &pool->shard[s - 1];
}

/* Relaxed: counters order nothing; lfp_stats sums recent values. */
static inline void pool_count(_Atomic uint64_t *ctr, uint64_t n)
{
	atomic_fetch_add_explicit(ctr, n, memory_order_relaxed);
}

static void pool_init(struct lfp_pool *pool, const struct lfp_config *cfg,
		      const struct lfpi_layout *l, char *base)
{
	memset(pool, 0, sizeof(*pool));
	pool->slots = (struct lfpi_slot *)(base + l->slots_off);
	pool->objs = base + l->objs_off;
	pool->stride = l->stride;
	pool->region_size = (size_t)cfg->capacity * l->stride;
	pool->capacity = cfg->capacity;
	pool->flags = cfg->flags;
	if (!(l->stride & (l->stride - 1)))
		pool->stride_shift = (uint32_t)__builtin_ctzl(l->stride);
	lfpi_stack_init(&pool->free);
	atomic_init(&pool->bump, 0);
	for (unsigned i = 0; i < LFPI_SHARDS; i++) {
		atomic_init(&pool->shard[i].allocs, 0);
		atomic_init(&pool->shard[i].frees, 0);
		atomic_init(&pool->shard[i].failed_allocs, 0);
		atomic_init(&pool->shard[i].rejected_frees, 0);
		atomic_init(&pool->shard[i].cas_retries, 0);
	}
}

int lfp_create(const struct lfp_config *cfg, struct lfp_pool **out)
{
	static _Atomic uint64_t probe;
	struct lfpi_layout l;
	void *map = NULL;
	size_t map_size = 0;
	char *base;
	int err;

	if (!cfg || !out)
		return -EINVAL;
	if ((err = lfpi_layout(cfg, &l)))
		return err;
	if (cfg->flags & ~POOL_KNOWN_FLAGS)
		return -EINVAL;
	/* The head is one 64-bit word: no 128-bit CAS, no libatomic lock. */
	if (!atomic_is_lock_free(&probe))
		return -ENOTSUP;
	if (cfg->memory) {
		if (cfg->memory_size < l.total ||
		    (uintptr_t)cfg->memory % l.base_align)
			return -EINVAL;
		base = cfg->memory;
		/* Header and metadata only: the objects stay untouched. */
		memset(base + l.slots_off, 0, l.objs_off - l.slots_off);
	} else {
		base = lfpi_map(l.total, l.base_align, &map, &map_size);
		if (!base)
			return -ENOMEM;
	}
	pool_init((struct lfp_pool *)base, cfg, &l, base);
	((struct lfp_pool *)base)->map = map;
	((struct lfp_pool *)base)->map_size = map_size;
	*out = (struct lfp_pool *)base;
	return 0;
}

void lfp_destroy(struct lfp_pool *pool)
{
	if (!pool)
		return;
	lfpi_unmap(pool->map, pool->map_size);
}

/* Hand out a never-used slot, or LFPI_NIL once all have been. */
static uint32_t pool_bump(struct lfp_pool *pool)
{
	uint32_t b = atomic_load_explicit(&pool->bump, memory_order_relaxed);

	/*
	 * Relaxed: a fresh slot's memory was zeroed when the pool was made,
	 * before any thread could see the pool, and nobody else writes it.
	 */
	while (b < pool->capacity)
		if (atomic_compare_exchange_weak_explicit(&pool->bump, &b, b + 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return b;
	return LFPI_NIL;
}

/* Pop one slot from the shared stack; the rest of its chain goes back. */
static uint32_t pool_pop_one(struct lfp_pool *pool, struct lfpi_counters *c)
{
	uint32_t retries, idx, rest;

	idx = lfpi_stack_pop(&pool->free, pool->slots, &retries);
	if (idx != LFPI_NIL) {
		rest = atomic_load_explicit(&pool->slots[idx].next,
					    memory_order_relaxed);
		if (rest != LFPI_NIL)
			retries += lfpi_stack_push(&pool->free, pool->slots, rest,
						   pool->slots[idx].tail);
	}
	if (retries)
		pool_count(&c->cas_retries, retries);
	return idx;
}

/*
 * Reused slots first (they are warm), then fresh ones. If both are gone,
 * look at the stack once more: the bump index never goes back, so a stack
 * that is empty after it ran out means the pool really was exhausted at
 * that moment, not just while we were looking elsewhere.
 */
static uint32_t pool_take(struct lfp_pool *pool, struct lfpi_counters *c)
{
	uint32_t idx = pool_pop_one(pool, c);

	if (idx == LFPI_NIL)
		idx = pool_bump(pool);
	if (idx == LFPI_NIL)
		idx = pool_pop_one(pool, c);
	return idx;
}

void *lfp_alloc(struct lfp_pool *pool)
{
	struct lfpi_counters *c;
	uint32_t idx, gen;

	if (LFPI_UNLIKELY(!pool))
		return NULL;
	c = lfpi_my_shard(pool);
	idx = pool_take(pool, c);
	if (LFPI_UNLIKELY(idx == LFPI_NIL)) {
		pool_count(&c->failed_allocs, 1);
		return NULL;
	}
	/*
	 * We own the slot, so a load and a store are enough to make it live.
	 * Relaxed: the free that made gen even happens-before our pop (the
	 * stack's release/acquire), so we read that value or a later one.
	 */
	gen = atomic_load_explicit(&pool->slots[idx].gen, memory_order_relaxed);
	atomic_store_explicit(&pool->slots[idx].gen, gen + 1,
			      memory_order_relaxed);
	pool_count(&c->allocs, 1);
	return lfpi_obj(pool, idx);
}

/*
 * Make a live slot free: the one place where a double release or a stale
 * handle is caught. With expect == 0 any live generation is released;
 * otherwise only generation `expect` (a handle's), so a handle whose object
 * was released, and perhaps reused, never touches the new owner.
 * Returns 0, -EALREADY (not live) or -ESTALE (live, another generation).
 * Relaxed: the word only decides which of several releases of one object
 * wins; the object itself is handed to its next owner by the stack's
 * release/acquire.
 */
int lfpi_mark_free(struct lfp_pool *pool, uint32_t idx, uint32_t expect)
{
	_Atomic uint32_t *g = &pool->slots[idx].gen;
	uint32_t gen = expect ? expect
			      : atomic_load_explicit(g, memory_order_relaxed);

	do {
		if (expect && gen != expect)
			return -ESTALE;
		if (!lfpi_gen_is_live(gen))
			return -EALREADY;
	} while (!atomic_compare_exchange_weak_explicit(
		g, &gen, gen + 1, memory_order_relaxed, memory_order_relaxed));
	return 0;
}

/* Validate obj and mark it free; returns its slot or LFPI_NIL with *err. */
uint32_t lfpi_release_slot(struct lfp_pool *pool, void *obj, int *err)
{
	uint32_t idx;

	if (LFPI_UNLIKELY(!obj)) {
		*err = -EINVAL;
		return LFPI_NIL;
	}
	idx = lfpi_slot_of(pool, obj, err);
	if (LFPI_LIKELY(idx != LFPI_NIL) && (*err = lfpi_mark_free(pool, idx, 0)))
		idx = LFPI_NIL;
	return idx;
}

/*
 * Give a slot that was just marked free back to the pool, or count the
 * release that was refused (err < 0). Every release ends here, whether it
 * named its object by pointer or by handle.
 */
int lfpi_finish_release(struct lfp_pool *pool, uint32_t idx, int err)
{
	struct lfpi_counters *c = lfpi_my_shard(pool);
	uint32_t retries;

	if (LFPI_UNLIKELY(err)) {
		pool_count(&c->rejected_frees, 1);
		return err;
	}
	retries = lfpi_stack_push(&pool->free, pool->slots, idx, idx);
	if (retries)
		pool_count(&c->cas_retries, retries);
	pool_count(&c->frees, 1);
	return 0;
}

int lfp_free(struct lfp_pool *pool, void *obj)
{
	uint32_t idx;
	int err = 0;

	if (LFPI_UNLIKELY(!pool))
		return -EINVAL;
	idx = lfpi_release_slot(pool, obj, &err);
	return lfpi_finish_release(pool, idx, err);
}

static uint64_t pool_sum(const struct lfp_pool *pool, size_t field)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < LFPI_SHARDS; i++) {
		/* Casting away const: loading an atomic writes nothing. */
		_Atomic uint64_t *ctr =
			(_Atomic uint64_t *)((char *)&pool->shard[i] + field);
		sum += atomic_load_explicit(ctr, memory_order_relaxed);
	}
	return sum;
}

void lfp_stats(const struct lfp_pool *pool, struct lfp_stats *out)
{
	uint64_t live;

	if (!pool || !out)
		return;
	memset(out, 0, sizeof(*out));
	/* Frees before allocs: a racing pair can then only overstate live. */
	out->frees = pool_sum(pool, offsetof(struct lfpi_counters, frees));
	out->allocs = pool_sum(pool, offsetof(struct lfpi_counters, allocs));
	out->failed_allocs =
		pool_sum(pool, offsetof(struct lfpi_counters, failed_allocs));
	out->rejected_frees =
		pool_sum(pool, offsetof(struct lfpi_counters, rejected_frees));
	out->cas_retries =
		pool_sum(pool, offsetof(struct lfpi_counters, cas_retries));
	live = out->allocs - out->frees;
	out->capacity = pool->capacity;
	out->live = live > pool->capacity ? pool->capacity : live;
	out->cached = 0;
	out->free = out->capacity - out->live - out->cached;
	out->high_water = atomic_load_explicit(
		&((struct lfp_pool *)pool)->bump, memory_order_relaxed);
}
