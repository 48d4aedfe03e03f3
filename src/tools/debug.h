/* SPDX-License-Identifier: MIT */
/*
 * The tools layer (tools/, above memory/, below rcu/): the tools that watch
 * objects (fill, ASan, Valgrind) and the reports that name a pool. Called
 * from the pool layer and from rcu.c; calls only the slab.
 */
#ifndef LFPOOL_DEBUG_H
#define LFPOOL_DEBUG_H

#include "memory/slab.h"


#define LFPI_DBG_FILL 1u     /* fill released objects, check on reuse */
#define LFPI_DBG_ASAN 2u     /* poison released objects for ASan */
#define LFPI_DBG_VALGRIND 4u /* memcheck mempool client requests */
#define LFPI_DBG_REPORT 8u   /* name the slot of a refused release */

/*
 * Whether the program runs under Valgrind with LFP_VALGRIND=profile in
 * its environment (read by the first call, and kept for the process):
 * then pools are not shown to memcheck (their fast paths stay inline,
 * for callgrind and cachegrind to count), and the thread caches rely on
 * Valgrind running one thread at a time.
 */
bool lfpi_debug_vg_profile(void);
/* The tools (LFPI_DBG_*) that will watch a pool made with these flags and
 * a ctor or none; the same in every call of a process (the build, ASan's
 * presence, Valgrind and LFP_VALGRIND as first read do not change while
 * it runs). */
uint32_t lfpi_debug_tools(uint32_t flags, bool ctor);
/* Set pool->debug (lfpi_debug_tools) and tell the tools about the pool. */
void lfpi_debug_init(struct lfp_pool *pool);
void lfpi_debug_destroy(struct lfp_pool *pool);
/* Slot idx was just taken (fresh: never used); slot idx was released. */
void lfpi_debug_alloc(struct lfp_pool *pool, uint32_t idx, bool fresh);
void lfpi_debug_free(struct lfp_pool *pool, uint32_t idx);
void lfpi_debug_rejected(struct lfp_pool *pool, const void *obj, int err);


/*
 * How diagnostics name a pool: `pool "particles" (0x...)`, or `pool 0x...`
 * without a name; control characters of the name show as '?', so a
 * report stays on its line. Writes into buf and returns it.
 */
#define LFPI_LABEL_MAX (sizeof("pool \"\" (0x)") + LFP_NAME_MAX + 2 * sizeof(void *))
const char *lfpi_pool_label(const struct lfp_pool *pool,
			    char buf[LFPI_LABEL_MAX]);

#endif /* LFPOOL_DEBUG_H */
