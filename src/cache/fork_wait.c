/* SPDX-License-Identifier: MIT */
/*
 * Whether a fork holds every cache: fork.c raises the flag before its
 * prepare handler takes the caches (fork_hold.c) and lowers it after the
 * parent's or the child's handler gave them back. An owner or a thief
 * that finds a cache held, and the flag up, waits for the fork, bounded
 * (LFPI_CACHE_FORK_WAIT_MS): the forking thread may itself wait for a
 * lock the waiter holds. The lowest file of cache/: calls nothing.
 */
#include <sched.h>
#include <time.h>

#include "cache/private.h"

/* Non-zero while this thread holds LFPI_CTL_STEAL on some caches (inside
 * a steal, or between fork's prepare and parent/child handlers): it must
 * never wait for a steal to end, which may be its own. Here, below every
 * file that counts or reads it (steal.c, fork_hold.c, exchange.c). */
LFPI_TLS uint32_t lfpi_cache_steals_held;

/*
 * Non-zero while a fork holds every cache (lfpi_cache_fork_begin/end).
 * Every access is relaxed. An owner that finds its cache claimed by the
 * fork and then looks here sees the flag up: the flag is raised before
 * the fork's claims, whose CAS (lfpi_cache_claim_steal: seq_cst, so a
 * release) pairs with the acquire load of ctl by which the owner found it
 * (lfpi_cache_enter); tests/relacy/cache.cc asserts it (fork_hold).
 * A thread that learnt of the fork otherwise (a thief's failed claim,
 * a poll of ctl) only polls the flag again, which needs the flag to
 * become visible, not an order; and once it sees the flag down, it
 * looks at the cache again through lfpi_cache_enter, whose acquire
 * pairs with the release by which the fork let go of it
 * (lfpi_cache_fork_parent). No order here would add to either.
 */
static _Atomic(uint32_t) cache_fork_busy;

/* When fork's prepare stops waiting for thieves (fork_hold.c): one
 * deadline for the whole fork, every pool. The forking thread's, under
 * fork.c's lock. */
static uint64_t cache_fork_until;

uint64_t lfpi_cache_fork_until(void)
{
	return cache_fork_until;
}

void lfpi_cache_fork_begin(void)
{
	cache_fork_until = lfpi_cache_now_ns() +
			   LFPI_CACHE_FORK_WAIT_MS * UINT64_C(1000000);
	/* Relaxed: before fork_prepare's claims on the caches, which carry
	 * it (see cache_fork_busy). */
	atomic_store_explicit(&cache_fork_busy, 1, memory_order_relaxed);
}

void lfpi_cache_fork_end(void)
{
	/* Relaxed: the caches were let go before, each with its release
	 * (see cache_fork_busy). */
	atomic_store_explicit(&cache_fork_busy, 0, memory_order_relaxed);
}

bool lfpi_cache_fork_busy(void)
{
	/* Relaxed: see cache_fork_busy. */
	return atomic_load_explicit(&cache_fork_busy, memory_order_relaxed);
}

uint64_t lfpi_cache_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool lfpi_cache_fork_wait(void)
{
	uint64_t until = lfpi_cache_now_ns() + LFPI_CACHE_FORK_WAIT_MS * UINT64_C(1000000);

	/* Relaxed: see cache_fork_busy. */
	while (atomic_load_explicit(&cache_fork_busy, memory_order_relaxed)) {
		if (lfpi_cache_now_ns() > until)
			return false;
		sched_yield();
	}
	return true;
}
