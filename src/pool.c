/*
 * The public entry points: creating and destroying a pool, the shared
 * (uncached) allocation and release paths, and the counters behind
 * lfp_stats.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"


static _Atomic uint64_t pool_ids = 1;

/* Threads are spread over the counter shards in the order they first count. */
static _Atomic uint32_t pool_next_shard;
static LFPI_TLS uint32_t pool_shard_plus1;

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

const char *lfpi_pool_label(const struct lfp_pool *pool,
			    char buf[LFPI_LABEL_MAX])
{
	char *p;

	if (!pool->name[0]) {
		snprintf(buf, LFPI_LABEL_MAX, "pool %p", (const void *)pool);
		return buf;
	}
	snprintf(buf, LFPI_LABEL_MAX, "pool \"%s\" (%p)", pool->name,
		 (const void *)pool);
	for (p = buf + sizeof("pool \"") - 1; p < buf + LFPI_LABEL_MAX && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return buf;
}

const char *lfp_name(const struct lfp_pool *pool)
{
	return pool ? pool->name : NULL;
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
	lfpi_stack_init(&pool->free);
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

static void pool_set_quirks(struct lfp_pool *pool)
{
	pool->quirks = pool->debug || pool->ctor || pool->on_alloc ||
		       pool->on_free || (pool->flags & LFP_F_STRICT);
}

LFPI_NOINLINE void *lfpi_hand_out_quirky(struct lfp_pool *pool, uint32_t idx)
{
	return lfpi_hand_out(pool, idx);
}

LFPI_NOINLINE uint32_t lfpi_release_quirky(struct lfp_pool *pool, void *obj,
					   int *err)
{
	return lfpi_release_slot(pool, obj, err,
				 pool->flags & LFP_F_STRICT ? LFPI_REL_STRICT : 0);
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
	/* The head is one 64-bit word: no 128-bit CAS, no libatomic lock. */
	if (!atomic_is_lock_free(&probe))
		return -ENOTSUP;
	if ((err = lfpi_cache_global_init()) || (err = lfpi_fork_global_init()))
		return err;
	if (cfg->memory) {
		if (cfg->memory_size < l.total ||
		    (uintptr_t)cfg->memory % l.base_align)
			return -EINVAL;
		base = cfg->memory;
		/* Header and metadata only: the objects stay untouched. */
		memset(base + l.slots_off, 0, l.objs_off - l.slots_off);
	} else {
		base = lfpi_map(l.total, l.objs_off + l.initial * l.stride,
				l.base_align, &map, &map_size);
		if (!base)
			return -ENOMEM;
	}
	/* pool_init clears the header, so the mutex is made after it. */
	pool_init((struct lfp_pool *)base, cfg, &l, base);
	if ((err = pthread_mutex_init(&((struct lfp_pool *)base)->grow_lock,
				      NULL))) {
		lfpi_unmap(map, map_size);
		return -err;
	}
	((struct lfp_pool *)base)->map = map;
	((struct lfp_pool *)base)->map_size = map_size;
	lfpi_debug_init((struct lfp_pool *)base);
	pool_set_quirks((struct lfp_pool *)base);
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
	lfpi_debug_destroy(pool);
	lfpi_trim_destroy(pool);
	pthread_mutex_destroy(&pool->grow_lock);
	lfpi_unmap(pool->map, pool->map_size);
}

uint32_t lfpi_pool_bump(struct lfp_pool *pool, uint32_t n, uint32_t *first)
{
	uint32_t b = atomic_load_explicit(&pool->bump, memory_order_relaxed);
	uint32_t take, limit;

	/*
	 * Relaxed bump: fresh slots' metadata was zeroed when the pool was
	 * made, before any thread could see the pool, and nobody else writes
	 * it. Acquire limit: pairs with the release store in grow.c, after
	 * which the new segment's memory is committed.
	 */
	do {
		limit = atomic_load_explicit(&pool->limit, memory_order_acquire);
		if (b >= limit)
			return 0;
		take = limit - b < n ? limit - b : n;
	} while (!atomic_compare_exchange_weak_explicit(
		&pool->bump, &b, b + take, memory_order_relaxed,
		memory_order_relaxed));
	*first = b;
	return take;
}

/* Pop one slot from the shared stack; the rest of its chain goes back. */
static uint32_t pool_pop_one(struct lfp_pool *pool, uint32_t *retries)
{
	uint32_t n, idx, rest;

	idx = lfpi_stack_pop(&pool->free, pool->slots, &n);
	*retries += n;
	if (idx == LFPI_NIL)
		return idx;
	rest = atomic_load_explicit(&pool->slots[idx].next, memory_order_relaxed);
	if (rest != LFPI_NIL)
		*retries += lfpi_stack_push(&pool->free, pool->slots, rest,
					    pool->slots[idx].tail);
	return idx;
}

/*
 * Reused slots first (they are warm), then fresh ones. If both are gone,
 * look at the stack once more: the bump index never goes back, so a stack
 * that is empty after it ran out means the pool really was exhausted at
 * that moment, not just while we were looking elsewhere.
 */
uint32_t lfpi_pool_take(struct lfp_pool *pool, uint32_t *retries)
{
	uint32_t idx = pool_pop_one(pool, retries);

	if (idx == LFPI_NIL && !lfpi_pool_bump(pool, 1, &idx))
		idx = pool_pop_one(pool, retries);
	return idx;
}

/* The pool looks empty: empty idle explicit caches, then apply the
 * exhaustion policy, until a slot turns up or the policy gives up. */
static LFPI_NOINLINE uint32_t pool_take_hard(struct lfp_pool *pool,
					     struct lfpi_counters *c,
					     uint32_t *retries)
{
	uint32_t idx, emptied = 0;
	struct lfpi_want want;

	lfpi_want_init(pool, &want);
	do {
		idx = lfpi_pool_take(pool, retries);
		if (idx == LFPI_NIL &&
		    lfpi_cache_steal(pool, NULL, &emptied, retries))
			idx = lfpi_pool_take(pool, retries);
	} while (idx == LFPI_NIL &&
		 (lfpi_fork_waited() || lfpi_exhausted(pool, &want)));
	if (emptied)
		pool_count(&c->steals, emptied);
	return idx;
}

static void *pool_alloc_shared(struct lfp_pool *pool)
{
	struct lfpi_counters *c = lfpi_my_shard(pool);
	uint32_t retries = 0, idx = lfpi_pool_take(pool, &retries);

	if (LFPI_UNLIKELY(idx == LFPI_NIL))
		idx = pool_take_hard(pool, c, &retries);
	if (retries)
		pool_count(&c->cas_retries, retries);
	if (LFPI_UNLIKELY(idx == LFPI_NIL)) {
		pool_count(&c->failed_allocs, 1);
		return NULL;
	}
	pool_count(&c->allocs, 1);
	return lfpi_hand_out(pool, idx);
}

/* Push slot idx, marked free, onto the shared stack and count it. */
static void pool_push_shared(struct lfp_pool *pool, struct lfpi_counters *c,
			     uint32_t idx)
{
	uint32_t retries = lfpi_stack_push(&pool->free, pool->slots, idx, idx);

	if (retries)
		pool_count(&c->cas_retries, retries);
	pool_count(&c->frees, 1);
}

static int pool_free_shared(struct lfp_pool *pool, void *obj)
{
	struct lfpi_counters *c = lfpi_my_shard(pool);
	uint32_t idx;
	int err = 0;

	idx = lfpi_release_slot(pool, obj, &err, LFPI_REL_STRICT);
	if (LFPI_UNLIKELY(idx == LFPI_NIL)) {
		pool_count(&c->rejected_frees, 1);
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
		return err;
	}
	if (LFPI_LIKELY(!(pool->flags & LFP_F_NO_CACHE)) &&
	    LFPI_LIKELY(c = lfpi_cache_implicit(pool)))
		lfpi_cache_put(c, idx);
	else
		pool_push_shared(pool, lfpi_my_shard(pool), idx);
	return 0;
}

void *lfp_alloc(struct lfp_pool *pool)
{
	struct lfp_cache *c;

	if (LFPI_UNLIKELY(!pool))
		return NULL;
	if (LFPI_LIKELY(!(pool->flags & LFP_F_NO_CACHE)) &&
	    LFPI_LIKELY(c = lfpi_cache_implicit(pool)))
		return lfpi_cache_alloc(c);
	return pool_alloc_shared(pool);
}

int lfp_free(struct lfp_pool *pool, void *obj)
{
	struct lfp_cache *c;

	if (LFPI_UNLIKELY(!pool))
		return -EINVAL;
	if (LFPI_LIKELY(!(pool->flags & LFP_F_NO_CACHE)) &&
	    LFPI_LIKELY(c = lfpi_cache_implicit(pool)))
		return lfpi_cache_free(c, obj);
	return pool_free_shared(pool, obj);
}

size_t lfp_alloc_bulk(struct lfp_pool *pool, void **objs, size_t n)
{
	size_t i;
	void *obj;

	for (i = 0; objs && i < n && (obj = lfp_alloc(pool)); i++)
		objs[i] = obj;
	return i;
}

size_t lfp_free_bulk(struct lfp_pool *pool, void *const *objs, size_t n)
{
	size_t done = 0;

	for (size_t i = 0; objs && i < n; i++)
		done += lfp_free(pool, objs[i]) == 0;
	return done;
}

static uint64_t pool_sum(const struct lfp_pool *pool, size_t field)
{
	uint64_t sum = lfpi_cache_sum(pool, field, NULL);

	for (unsigned i = 0; i < LFPI_SHARDS; i++) {
		/* Casting away const: loading an atomic writes nothing. */
		_Atomic uint64_t *ctr =
			(_Atomic uint64_t *)((char *)&pool->shard[i] + field);
		sum += atomic_load_explicit(ctr, memory_order_relaxed);
	}
	return sum;
}

static uint64_t pool_clamp(uint64_t x, uint64_t most)
{
	return x > most ? most : x;
}

void lfp_stats(const struct lfp_pool *pool, struct lfp_stats *out)
{
	uint64_t live, pending;

	if (!pool || !out)
		return;
	memset(out, 0, sizeof(*out));
	/*
	 * Hits are counted as misses, off the fast path: hits = allocs -
	 * misses. Misses first: a miss is counted after its allocation, so
	 * read in this order a miss cannot outrun its allocation (except
	 * through the reordering relaxed loads allow; the clamp keeps that
	 * from wrapping). Hits before allocs, which are read later and so
	 * can only be larger (the counters only grow): hits <= allocs.
	 */
	pending = lfpi_cache_sum(pool, offsetof(struct lfpi_counters, cache_misses),
				 NULL);
	live = lfpi_cache_sum(pool, offsetof(struct lfpi_counters, allocs), NULL);
	out->cache_hits = live > pending ? live - pending : 0;
	/* Frees before allocs: a racing pair can then only overstate live. */
	out->frees = pool_sum(pool, offsetof(struct lfpi_counters, frees));
	out->allocs = pool_sum(pool, offsetof(struct lfpi_counters, allocs));
	if (out->cache_hits > out->allocs)
		out->cache_hits = out->allocs;
	out->failed_allocs =
		pool_sum(pool, offsetof(struct lfpi_counters, failed_allocs));
	out->rejected_frees =
		pool_sum(pool, offsetof(struct lfpi_counters, rejected_frees));
	out->cas_retries =
		pool_sum(pool, offsetof(struct lfpi_counters, cas_retries));
	out->refills = pool_sum(pool, offsetof(struct lfpi_counters, refills));
	out->flushes = pool_sum(pool, offsetof(struct lfpi_counters, flushes));
	out->steals = pool_sum(pool, offsetof(struct lfpi_counters, steals));
	out->grown = pool_sum(pool, offsetof(struct lfpi_counters, grown));
	out->trimmed_bytes =
		pool_sum(pool, offsetof(struct lfpi_counters, trimmed_bytes));
	out->reclaims = pool_sum(pool, offsetof(struct lfpi_counters, reclaims));
	/* Reclaimed before deferred, as frees before allocs above. */
	pending = pool_sum(pool, offsetof(struct lfpi_counters, reclaimed));
	pending = pool_sum(pool, offsetof(struct lfpi_counters, deferred)) -
		  pending;
	lfpi_cache_sum(pool, 0, &out->cached);
	live = out->allocs - out->frees;
	out->capacity = atomic_load_explicit(
		&((struct lfp_pool *)pool)->limit, memory_order_relaxed);
	out->max_capacity = pool->capacity;
	out->live = pool_clamp(live, out->capacity);
	out->cached = pool_clamp(out->cached, out->capacity - out->live);
	out->deferred =
		pool_clamp(pending, out->capacity - out->live - out->cached);
	out->free = out->capacity - out->live - out->cached - out->deferred;
	out->high_water = atomic_load_explicit(
		&((struct lfp_pool *)pool)->bump, memory_order_relaxed);
}

#define POOL_U(x) ((unsigned long long)(x))

int lfp_stats_print(const struct lfp_pool *pool, FILE *f)
{
	char label[LFPI_LABEL_MAX], rate[32] = "-";
	struct lfp_stats st;
	int err = 0;

	if (!pool || !f)
		return -EINVAL;
	lfp_stats(pool, &st);
	if (st.allocs)
		snprintf(rate, sizeof(rate), "%.1f%%",
			 100.0 * (double)st.cache_hits / (double)st.allocs);
	/* OR-ed, so that a negative return from any call stays negative. */
	err |= fprintf(f, "lfpool: %s\n", lfpi_pool_label(pool, label));
	err |= fprintf(f,
		       "  slots   capacity %llu (max %llu), live %llu, "
		       "cached %llu, free %llu, deferred %llu, high water %llu\n",
		       POOL_U(st.capacity), POOL_U(st.max_capacity),
		       POOL_U(st.live), POOL_U(st.cached), POOL_U(st.free),
		       POOL_U(st.deferred), POOL_U(st.high_water));
	err |= fprintf(f,
		       "  calls   allocs %llu, frees %llu, failed allocs %llu, "
		       "rejected frees %llu\n",
		       POOL_U(st.allocs), POOL_U(st.frees),
		       POOL_U(st.failed_allocs), POOL_U(st.rejected_frees));
	err |= fprintf(f,
		       "  caches  hit rate %s (%llu of %llu), refills %llu, "
		       "flushes %llu, steals %llu, CAS retries %llu\n",
		       rate, POOL_U(st.cache_hits), POOL_U(st.allocs),
		       POOL_U(st.refills), POOL_U(st.flushes),
		       POOL_U(st.steals), POOL_U(st.cas_retries));
	err |= fprintf(f,
		       "  size    grown %llu times, trimmed %llu bytes, "
		       "reclaim calls %llu\n",
		       POOL_U(st.grown), POOL_U(st.trimmed_bytes),
		       POOL_U(st.reclaims));
	/* A buffered stream fails only when it is written out. */
	return err < 0 || fflush(f) ? -EIO : 0;
}

/* LFP_VERSION_* spelled out by the preprocessor, so the two cannot differ. */
#define POOL_STR(x) #x
#define POOL_VERSION(a, b, c) POOL_STR(a) "." POOL_STR(b) "." POOL_STR(c)

const char *lfp_version(void)
{
	return POOL_VERSION(LFP_VERSION_MAJOR, LFP_VERSION_MINOR,
			    LFP_VERSION_PATCH);
}
