/* SPDX-License-Identifier: MIT */
/*
 * The exported calls that are lfpool.h's inline paths, compiled: for a
 * caller built with LFP_NO_INLINE, or in C99, or one that takes a call's
 * address or writes it in parentheses. Each is its inline path
 * (lfpool/inline.h), which calls down into its out-of-line half
 * (pool/slow.c, extras/family.c). In the top layer, above every file
 * those halves are in, so that no file of src/ is both called by the
 * inline paths and calling them.
 */
#include "extras/family.h"

void *lfp_cache_alloc(struct lfp_cache *cache)
{
	return lfpi_cache_alloc_inline(cache);
}

int lfp_cache_free(struct lfp_cache *cache, void *obj)
{
	return lfpi_cache_free_inline(cache, obj);
}

void *lfp_alloc(struct lfp_pool *pool)
{
	return lfpi_alloc_inline(pool);
}

int lfp_free(struct lfp_pool *pool, void *obj)
{
	return lfpi_free_inline(pool, obj);
}

void *lfp_family_alloc(struct lfp_family *fam, size_t size)
{
	return lfpi_family_alloc_inline(fam, size);
}

int lfp_family_free(struct lfp_family *fam, void *obj)
{
	return lfpi_family_free_inline(fam, obj);
}

void *lfp_family_cache_alloc(struct lfp_family_cache *fc, size_t size)
{
	return lfpi_family_cache_alloc_inline(fc, size);
}

int lfp_family_cache_free(struct lfp_family_cache *fc, void *obj)
{
	return lfpi_family_cache_free_inline(fc, obj);
}
