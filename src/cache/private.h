/* SPDX-License-Identifier: MIT */
/*
 * What the files of cache/ share and nothing above them uses: functions
 * that one file of the folder owns and another calls, and the thread's
 * count of steals held. The folder's interface to the pool is cache.h.
 * Files in order, each calling only those before it: fork_wait.c,
 * exchange.c, steal.c and table.c (neither calls the other), registry.c,
 * fork_hold.c.
 */
#ifndef LFPOOL_CACHE_PRIVATE_H
#define LFPOOL_CACHE_PRIVATE_H

#include "cache/cache.h"

/* The bits of ctl by which thieves ask something of the owner. */
#define CACHE_ASKS (LFPI_CTL_STEAL | LFPI_CTL_FLUSH)

/* fork_wait.c: CLOCK_MONOTONIC in nanoseconds (async-signal-safe), and
 * when the fork being prepared stops waiting for thieves. */
uint64_t lfpi_cache_now_ns(void);
uint64_t lfpi_cache_fork_until(void);

/* exchange.c */
/* Enter an operation outside the inline path (the owner's half of the
 * handshake with thieves); returns ctl. Leave it. */
uint32_t lfpi_cache_enter(struct lfp_cache *c);
void lfpi_cache_leave(struct lfp_cache *c);
/* The cache's counter at offset off of struct lfpi_counters, with the
 * allocations and releases its count keeps (lfp_cache_stats, lfp_stats). */
uint64_t lfpi_cache_value(const struct lfp_cache *c, size_t off);
/* Give every slot of c to the pool (the caller owns them, and passes a
 * spare magazine or LFPI_NIL); how many moved. */
uint32_t lfpi_cache_empty(struct lfp_cache *c, uint32_t *spare,
			  uint32_t *retries);
/* Owner: give every slot back; false if a fork kept them. */
bool lfpi_cache_drain(struct lfp_cache *c);

/* steal.c */
/* Non-zero while this thread holds LFPI_CTL_STEAL on some caches. */
extern LFPI_TLS uint32_t lfpi_cache_steals_held;
/* Set LFPI_CTL_STEAL on c unless another thief holds it. */
bool lfpi_cache_claim_steal(struct lfp_cache *c);
/* The thief's barrier in membarrier mode: false if it failed. */
bool lfpi_cache_fence_all(void);
/* Whether one of this thread's steals holds c. */
bool lfpi_cache_held_by_me(const struct lfp_cache *c);

/* table.c: make c the thread's entry for its pool's number (growing the
 * table; without memory, no entry), drop c's entry before c is unmapped,
 * free the thread's table at its exit. */
void lfpi_cache_tab_put(struct lfp_cache *c);
void lfpi_cache_tab_drop(const struct lfp_cache *c);
void lfpi_cache_tab_free(void);

/* registry.c: whether c is one of this thread's implicit caches. */
bool lfpi_cache_is_mine(const struct lfp_cache *c);

#endif /* LFPOOL_CACHE_PRIVATE_H */
