/* SPDX-License-Identifier: MIT */
/*
 * The cache layer (cache/, above rcu/, below pool/): the calling
 * thread's implicit cache of a pool, found as the inline paths find it
 * (its table), or found or made out of line (registry.c). The second
 * half of the folder's interface upward, beside cache.h, and apart from
 * it so that the files of cache/, which read cache.h, never reach back
 * into registry.c through it.
 */
#ifndef LFPOOL_CACHE_IMPLICIT_H
#define LFPOOL_CACHE_IMPLICIT_H

#include "cache/cache.h"

/* registry.c: the thread's cache of pool when its table does not name
 * it: from the thread's list (made the table's entry), or a new one;
 * NULL after the thread's exit began, or if none could be made. */
struct lfp_cache *lfpi_cache_implicit_slow(struct lfp_pool *pool);

/* Whether c is pool's cache (c never NULL): the inline paths' test,
 * lfpi_cache_is_of in lfpool/inline.h, made again, with its reason for
 * reading the pool word relaxed. Through the hot words alone: c may be
 * the table's nil cache, which is no whole struct lfp_cache and is not
 * aligned as one. */
static inline bool lfpi_cache_of(struct lfp_cache *c,
				 const struct lfp_pool *pool)
{
	struct lfpi_cache_hot *h = (struct lfpi_cache_hot *)(void *)c;

	return atomic_load_explicit(&h->pool, memory_order_relaxed) == pool;
}

/* The thread's implicit cache of pool, whose number is num, if its
 * table names it, looked for as the inline paths look (lfpi_cache_find
 * in lfpool/inline.h): the cache found last, then the entry for num;
 * NULL if not. */
static inline struct lfp_cache *lfpi_cache_lookup(const struct lfp_pool *pool,
						  uint32_t num)
{
	struct lfpi_cache_tab *t = &lfpi_cache_tab;
	struct lfp_cache *c = t->last;

	if (lfpi_cache_of(c, pool) ||
	    lfpi_cache_of(c = t->v[num & t->mask], pool))
		return c;
	return NULL;
}

/* The calling thread's implicit cache of pool: the one its table names,
 * or one found or made outside it; NULL if none could be made (the
 * caller then uses the shared path). */
static inline struct lfp_cache *lfpi_cache_implicit(struct lfp_pool *pool)
{
	struct lfp_cache *c = lfpi_cache_lookup(pool, pool->hot.num);

	return LFPI_LIKELY(c) ? c : lfpi_cache_implicit_slow(pool);
}

#endif /* LFPOOL_CACHE_IMPLICIT_H */
