/* SPDX-License-Identifier: MIT */
/*
 * Bare pools (bare.c): the inline paths' words, and the live count of a
 * pool whose inline calls count nothing.
 */
#ifndef LFPOOL_BARE_H
#define LFPOOL_BARE_H

#include "cache/cache.h"

/* Decide whether the pool keeps its generation (pool->bare) and whether
 * lfpi_bare_alloc and lfpi_bare_free may run, and fill pool->hot's words
 * for them: after the pool's flags, hooks and debug tools are set, before
 * its quirks. */
void lfpi_bare_setup(struct lfp_pool *pool);
/*
 * The live slots of a bare pool (pool->hot.bare != 0): those handed out
 * once and now on no list, in no cache (cached of them) and not waiting
 * for a grace period (pending). A snapshot, exact when the pool is idle.
 */
uint64_t lfpi_bare_live(const struct lfp_pool *pool, uint64_t cached,
			uint64_t pending);

#endif /* LFPOOL_BARE_H */
