/* SPDX-License-Identifier: MIT */
/*
 * Keeping pools usable in a child of fork (fork.c): the handlers that
 * hold every pool's locks and caches across fork(2). For the pool's
 * create, destroy and allocation paths; calls the caches.
 */
#ifndef LFPOOL_FORK_H
#define LFPOOL_FORK_H

#include "cache/cache.h"

/* Set up the fork handlers once per process: 0 or -errno. */
int lfpi_fork_global_init(void);
/* A pool joins the list the handlers walk at lfp_create, leaves it at
 * lfp_destroy. */
void lfpi_fork_add(struct lfp_pool *pool);
void lfpi_fork_remove(struct lfp_pool *pool);
/* An allocation found the pool exhausted: if a fork holds the caches,
 * wait for it (bounded) and return true to look again. */
static inline bool lfpi_fork_waited(void)
{
	return lfpi_cache_fork_busy() && lfpi_cache_fork_wait();
}

#endif /* LFPOOL_FORK_H */
