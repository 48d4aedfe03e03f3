/* SPDX-License-Identifier: MIT */
/*
 * Per-thread magazines (Bonwick's caches): explicit ones made with
 * lfp_cache_create, implicit ones made on a thread's first lfp_alloc or
 * lfp_free on a pool and flushed back when the thread exits.
 *
 * A cache is a LIFO array of free slot indices, two magazines deep. When
 * it is empty it loads one magazine from the depot (or takes single slots
 * from the free list, or a run of fresh slots); when it is full its colder
 * magazine goes to the depot whole. Each exchange is one CAS, copying
 * indices between arrays: no walk of per-slot links. The fast path is
 * inline in lfpool.h and uses no read-modify-write.
 *
 * This file is the owner's side: entering and leaving an operation (the
 * owner's half of the handshake with thieves, whose half is steal.c),
 * counting (hot.top and its fold), and the exchange with the depot and
 * the free list: refills, flushes, the slow paths of single and bulk
 * operations, draining. Calls fork_wait.c (a drain waits for a fork), the
 * depot, the stack and the slab; stealing, the registry and fork sit
 * above it in cache/ (steal.c, registry.c, fork_hold.c).
 */
#include <sched.h>
#include <string.h>

#include "base/probes.h"
#include "cache/private.h"

int lfpi_cache_membarrier;

/*
 * Enter an operation from outside the inline fast path. With membarrier
 * it is the inline paths' entry (lfpi_cache_enter_fast, lfpool/inline.h),
 * step for step: we write active, then read ctl, and only the compiler
 * must keep them in order, since a thief's membarrier(2) puts a full
 * barrier between its write of ctl and its read of active. Without
 * membarrier both sides of the handshake use seq_cst: our exchange and
 * load pair with the thief's CAS on ctl and its load of active (the
 * Dekker pattern needs a single total order).
 */
uint32_t lfpi_cache_enter(struct lfp_cache *c)
{
	if (LFPI_LIKELY(lfpi_cache_membarrier)) {
		atomic_store_explicit(&c->hot.active, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		/* Acquire: pairs with the release by which a thief lets go
		 * of the cache (steal.c), so the count read after this is
		 * the one it left. */
		return atomic_load_explicit(&c->hot.ctl, memory_order_acquire);
	}
	atomic_exchange_explicit(&c->hot.active, 1, memory_order_seq_cst);
	return atomic_load_explicit(&c->hot.ctl, memory_order_seq_cst);
}

/* The fast path entered with the membarrier-mode handshake; without
 * membarrier (then ctl has LFPI_CTL_SLOW), enter again the seq_cst way. */
static uint32_t cache_reenter(struct lfp_cache *c, uint32_t ctl)
{
	return lfpi_cache_membarrier ? ctl : lfpi_cache_enter(c);
}

void lfpi_cache_leave(struct lfp_cache *c)
{
	/* Release: pairs with the thief's acquire load of active, so a thief
	 * that sees 0 also sees our slots, count and object writes. */
	atomic_store_explicit(&c->hot.active, 0, memory_order_release);
}

/*
 * Counting. hot.top's low part is the count C, its high part H = C + the
 * allocations out of slots[]: an allocation lowers C alone (H - C grows
 * by one), a release raises both (and counts in hot.frees), and a move
 * that is no allocation or release (refill, flush, steal) changes C and
 * H by the same amount, in the same store. So the allocations out of
 * slots[] are H - C in any one reading of one word: exact when the cache
 * is still, and never lower than in an earlier reading. They are the
 * cache's hits: the slot an allocation takes right after a refill (a
 * miss) leaves slots[] as a move. Allocations and releases that bypass
 * the count (misses, the shared path, a release pushed while a thief
 * waits) count in ctr.allocs and ctr.frees. H has 51 bits: when
 * it passes 2^50, a move folds it into allocs_base, under a sequence
 * that readers check (the one time two words change together). A cache
 * that never moves a magazine never folds: its count wraps after 2^51
 * releases (lfp_stats documents it). A fork that cuts a fold short leaves
 * the child that cache's allocations off by the fold, once in 2^50.
 */
#ifdef LFPI_CACHE_FOLD
/* Test-only: tests/relacy lowers it, so that a refill folds. */
#define CACHE_FOLD LFPI_CACHE_FOLD
#else
#define CACHE_FOLD (UINT64_C(1) << 50)
#endif

/*
 * The fold: a sequence lock with one writer (the owner, or a thread
 * holding the cache through the handshake), high allocations out of
 * slots[] moved into allocs_base and the count made n.
 */
static void cache_fold(struct lfp_cache *c, uint64_t high, uint32_t n)
{
	/* Relaxed: the release stores below order it before themselves, so
	 * a reader that sees either of them sees the odd sequence too. */
	uint32_t seq = atomic_load_explicit(&c->fold_seq, memory_order_relaxed);

	atomic_store_explicit(&c->fold_seq, seq + 1, memory_order_relaxed);
	/* Release, each: pairs with the acquire loads in cache_counts. */
	atomic_store_explicit(&c->allocs_base,
			      atomic_load_explicit(&c->allocs_base,
						   memory_order_relaxed) +
				      high - n,
			      memory_order_release);
	atomic_store_explicit(&c->hot.top, (uint64_t)n << LFPI_TOP_SHIFT | n,
			      memory_order_release);
	atomic_store_explicit(&c->fold_seq, seq + 2, memory_order_release);
}

void lfpi_cache_set_n(struct lfp_cache *c, uint32_t n)
{
	uint64_t top = atomic_load_explicit(&c->hot.top, memory_order_relaxed);
	uint64_t high = (top >> LFPI_TOP_SHIFT) - (top & LFPI_TOP_COUNT) + n;

	if (LFPI_LIKELY(high < CACHE_FOLD))
		/* Release: pairs with the acquire load in cache_counts (a
		 * reader that sees this count sees the fold before it). */
		atomic_store_explicit(&c->hot.top, high << LFPI_TOP_SHIFT | n,
				      memory_order_release);
	else
		cache_fold(c, high, n);
}

/* Owner, inside an operation: k releases into slots[] counted. Release:
 * as the store of frees in lfpi_cache_push_top (lfpool/inline.h). */
static void cache_freed(struct lfp_cache *c, uint32_t k)
{
	atomic_store_explicit(&c->hot.frees,
			      atomic_load_explicit(&c->hot.frees,
						   memory_order_relaxed) + k,
			      memory_order_release);
}

/* Owner, inside an operation: k slots taken off the top of slots[] by
 * allocations. */
static void cache_popped(struct lfp_cache *c, uint32_t k)
{
	/* Release: as the store of top in lfpi_cache_pop_top
	 * (lfpool/inline.h). */
	atomic_store_explicit(&c->hot.top,
			      atomic_load_explicit(&c->hot.top,
						   memory_order_relaxed) - k,
			      memory_order_release);
}

/* Owner, inside an operation, n the count: slot idx released into
 * slots[n]. */
static inline void cache_pushed(struct lfp_cache *c, uint32_t n, uint32_t idx)
{
	c->slots[n] = idx;
	cache_freed(c, 1);
	/* Release: as the store of top in lfpi_cache_pop_top
	 * (lfpool/inline.h). */
	atomic_store_explicit(&c->hot.top,
			      atomic_load_explicit(&c->hot.top,
						   memory_order_relaxed) +
				      1 + LFPI_TOP_FREE,
			      memory_order_release);
}

/* Owner, inside an operation: k slots just copied above the count,
 * released into slots[]. */
static void cache_pushed_run(struct lfp_cache *c, uint32_t k)
{
	cache_freed(c, k);
	/* Release: as the store of top in lfpi_cache_pop_top
	 * (lfpool/inline.h). */
	atomic_store_explicit(&c->hot.top,
			      atomic_load_explicit(&c->hot.top,
						   memory_order_relaxed) +
				      k * (1 + LFPI_TOP_FREE),
			      memory_order_release);
}

/*
 * Allocations out of slots[] and releases into it since the cache was
 * made. A reading retries only across a fold (once per 2^50
 * allocations), yielding after the first few tries, and gives up after
 * CACHE_COUNT_TRIES: a reader must not wait without bound for a thread
 * that may be preempted, or interrupted by this very signal handler, in
 * the middle of a fold.
 */
#define CACHE_COUNT_TRIES 1024
#define CACHE_COUNT_SPINS 16

static void cache_counts(const struct lfp_cache *c, uint64_t *allocs,
			 uint64_t *frees)
{
	struct lfp_cache *m = (struct lfp_cache *)c; /* loads write nothing */
	uint64_t base, top;
	uint32_t s1, s2, tries = 0;

	for (;;) {
		/* Acquire, each: pairs with the release stores in
		 * cache_fold, lfpi_cache_set_n and the fast paths. */
		s1 = atomic_load_explicit(&m->fold_seq, memory_order_acquire);
		base = atomic_load_explicit(&m->allocs_base, memory_order_acquire);
		top = atomic_load_explicit(&m->hot.top, memory_order_acquire);
		/* Relaxed: the acquire loads above keep it after them. */
		s2 = atomic_load_explicit(&m->fold_seq, memory_order_relaxed);
		if ((s1 == s2 && !(s1 & 1)) || ++tries >= CACHE_COUNT_TRIES)
			break;
		if (tries >= CACHE_COUNT_SPINS)
			sched_yield();
	}
	*allocs = base + (top >> LFPI_TOP_SHIFT) - (top & LFPI_TOP_COUNT);
	/* Acquire: pairs with the release stores of hot.frees (lfpool.h,
	 * cache_freed): a reader that counts a release sees the allocation
	 * it followed, wherever that was counted. */
	*frees = atomic_load_explicit(&m->hot.frees, memory_order_acquire);
}

/* The owner's counter at offset `off` of struct lfpi_counters. */
uint64_t lfpi_cache_value(const struct lfp_cache *c, size_t off)
{
	/* Casting away const: loading an atomic writes nothing. Relaxed:
	 * counters order nothing. */
	uint64_t v = atomic_load_explicit(
		(_Atomic(uint64_t) *)((char *)&c->ctr + off),
		memory_order_relaxed);

	uint64_t allocs, frees;

	/* Allocations out of slots[] are the hits, and allocations too. */
	if (off == offsetof(struct lfpi_counters, allocs) ||
	    off == offsetof(struct lfpi_counters, cache_hits) ||
	    off == offsetof(struct lfpi_counters, frees)) {
		cache_counts(c, &allocs, &frees);
		v += off == offsetof(struct lfpi_counters, frees) ? frees
								  : allocs;
	}
	return v;
}

/*
 * Give idx[0..n) to the pool: to the depot a magazine at a time, or, when
 * every magazine is in use, onto the free list as one chain. The caller
 * owns the slots (and *spare, a magazine or LFPI_NIL).
 */
static void cache_give(struct lfp_pool *pool, const uint32_t *idx,
		       uint32_t n, uint32_t *spare, uint32_t *retries)
{
	uint32_t m = pool->depot.size, k, i;

	for (; n; idx += k, n -= k) {
		k = n < m ? n : m;
		if (lfpi_depot_store(&pool->depot, idx, k, spare, retries))
			continue;
		/* Relaxed links: the push's release publishes them. */
		for (i = 0; i + 1 < n; i++)
			atomic_store_explicit(lfpi_slot_next(pool, idx[i]),
					      idx[i + 1], memory_order_relaxed);
		*retries += lfpi_stack_push(&pool->free, idx[0], idx[n - 1]);
		return;
	}
}

/* Give every slot of c to the pool. The caller owns the slots: it is c's
 * owner inside an operation (and passes its spare), or a thief that has
 * seen the owner outside one (and passes a spare of its own). Returns how
 * many slots moved. */
uint32_t lfpi_cache_empty(struct lfp_cache *c, uint32_t *spare,
			  uint32_t *retries)
{
	uint32_t n = lfpi_cache_n(c);

	if (!n)
		return 0;
	cache_give(c->pool, c->slots, n, spare, retries);
	lfpi_cache_set_n(c, 0);
	return n;
}

/* Owner, inside an operation: send the colder (bottom) magazine of a
 * full cache to the depot and slide the rest down. Returns the new count. */
static uint32_t cache_flush_cold(struct lfp_cache *c, uint32_t n)
{
	uint32_t b = c->batch, retries = 0;

	cache_give(c->pool, c->slots, b, &c->spare, &retries);
	memmove(c->slots, c->slots + b, (n - b) * sizeof(c->slots[0]));
	lfpi_cache_set_n(c, n - b);
	lfpi_cache_count(&c->ctr.cas_retries, retries);
	lfpi_cache_count(&c->ctr.flushes, 1);
	LFPI_PROBE(flush, c->pool, b);
	return n - b;
}

/* Owner, inside an operation, cache empty: load a magazine from the
 * depot, or take single slots from the free list, or a run of fresh
 * slots. Returns the new count. */
static uint32_t cache_refill(struct lfp_cache *c)
{
	struct lfp_pool *pool = c->pool;
	uint32_t retries = 0, n, idx, first;

	n = lfpi_depot_load(&pool->depot, c->slots, &c->spare, &retries);
	/* Single slots come back through the free list (deferred releases,
	 * the shared path): up to a magazine's worth, one CAS each. */
	if (!n)
		while (n < c->batch &&
		       (idx = lfpi_stack_pop(&pool->free, &retries)) != LFPI_NIL)
			c->slots[n++] = idx;
	if (!n) {
		n = lfpi_slab_bump(pool, c->batch, &first);
		for (uint32_t i = 0; i < n; i++)
			c->slots[i] = first + n - 1 - i;
	}
	lfpi_cache_count(&c->ctr.cas_retries, retries);
	if (n) {
		lfpi_cache_set_n(c, n);
		lfpi_cache_count(&c->ctr.refills, 1);
		LFPI_PROBE(refill, pool, n);
	}
	return n;
}

/* Owner, inside an operation, ctl == FLUSH: a thief starved while we were
 * busy. Give everything back and clear the request. */
static void cache_answer_flush(struct lfp_cache *c, uint32_t *retries)
{
	uint32_t n = lfpi_cache_empty(c, &c->spare, retries);

	if (n) {
		lfpi_cache_count(&c->ctr.flushes, 1);
		LFPI_PROBE(flush, c->pool, n);
	}
	/*
	 * Relaxed: it publishes nothing. A thief may claim the cache between
	 * our entry and this store; it then sees us active (the handshake),
	 * keeps off the slots and sets FLUSH again: a stale request that
	 * costs one extra flush, and that never hides the slots, since
	 * thieves claim caches with FLUSH set too.
	 */
	atomic_fetch_and_explicit(&c->hot.ctl, ~LFPI_CTL_FLUSH, memory_order_relaxed);
}

/*
 * Owner, inside an operation, n the count after a refill: the top slot
 * taken by an allocation that missed. It leaves slots[] as a move and its
 * allocation counts in ctr.allocs, so that hot.top counts hits alone: one
 * word, which a reader never sees go down (lfp_stats' cache_hits).
 */
static uint32_t cache_popped_miss(struct lfp_cache *c, uint32_t n)
{
	uint32_t idx = c->slots[n - 1];

	lfpi_cache_set_n(c, n - 1);
	lfpi_cache_count(&c->ctr.allocs, 1);
	return idx;
}

/*
 * An allocation's turn at the cache, in one operation: enter it (or finish
 * the inline path's entry, which read *ctl), pop a slot, refilling the
 * empty cache first, and leave. Returns the slot, or LFPI_NIL with *ctl
 * the operation's, which says why: STEAL, a thief may be at the slots and
 * we kept off; FLUSH, a thief wanted them and they went to the depot;
 * neither, the refill found nothing. What to do then is the pool's.
 */
uint32_t lfpi_cache_pop(struct lfp_cache *c, uint32_t *ctl)
{
	uint32_t n, idx = LFPI_NIL, retries = 0;

	*ctl = *ctl == LFPI_CTL_OUT ? lfpi_cache_enter(c)
				    : cache_reenter(c, *ctl);
	if (*ctl & LFPI_CTL_STEAL) {
		/* a thief may be at the slots: keep off */
	} else if (*ctl & LFPI_CTL_FLUSH) {
		/* the slots go to the depot; the pool takes from there */
		cache_answer_flush(c, &retries);
		lfpi_cache_count(&c->ctr.cas_retries, retries);
	} else if ((n = lfpi_cache_n(c))) {
		idx = c->slots[n - 1];
		cache_popped(c, 1); /* a hit */
	} else if ((n = cache_refill(c))) {
		idx = cache_popped_miss(c, n);
	}
	lfpi_cache_leave(c);
	return idx;
}

/* lfpi_cache_put's other cases: a full cache, a thief at the slots or
 * asking for them (ctl, as the operation read it). */
static LFPI_NOINLINE void cache_put_hard(struct lfp_cache *c, uint32_t idx,
					 uint32_t ctl)
{
	struct lfp_pool *pool = c->pool;
	uint32_t retries = 0, n;

	ctl &= CACHE_ASKS;
	if (ctl == LFPI_CTL_FLUSH)
		cache_answer_flush(c, &retries);
	if (!ctl) {
		n = lfpi_cache_n(c);
		/* Full: make room by sending the colder magazine out. */
		if (n == c->hot.size)
			n = cache_flush_cold(c, n);
		cache_pushed(c, n, idx);
		lfpi_cache_leave(c);
	} else {
		/* A thief is at the slots, or wants slots: share this one. */
		lfpi_cache_leave(c);
		retries += lfpi_stack_push(&pool->free, idx, idx);
		lfpi_cache_count(&c->ctr.frees, 1);
	}
	lfpi_cache_count(&c->ctr.cas_retries, retries);
}

/*
 * A release's whole operation on the cache, slot idx already marked
 * free: enter it (ctl is LFPI_CTL_OUT), or finish the inline path's
 * entry (ctl is what it read); push idx, sending the colder magazine to
 * the depot first if the cache is full; leave. While a thief is at the
 * slots, or wants them, idx goes onto the free list instead.
 */
void lfpi_cache_put(struct lfp_cache *c, uint32_t idx, uint32_t ctl)
{
	uint32_t n;

	ctl = ctl == LFPI_CTL_OUT ? lfpi_cache_enter(c) : cache_reenter(c, ctl);
	n = lfpi_cache_n(c);
	if (LFPI_UNLIKELY((ctl & CACHE_ASKS) || n == c->hot.size)) {
		cache_put_hard(c, idx, ctl);
		return;
	}
	cache_pushed(c, n, idx);
	lfpi_cache_leave(c);
}

/*
 * Owner: give every slot back. Waits while a thief is at the slots; a
 * thief holds them for a few hundred instructions. A fork holds them from
 * its prepare to its parent handler, and an atfork handler that runs in
 * between may wait for a lock our caller holds: that wait is bounded
 * (lfpi_cache_fork_wait), and then the slots stay in the cache, free
 * slots that a starving thread takes by stealing; so do they, at once,
 * when the thief is a steal of this thread's that the caller interrupted.
 * Returns whether the cache was drained.
 */
bool lfpi_cache_drain(struct lfp_cache *c)
{
	uint32_t ctl, retries = 0, n;

	while ((ctl = lfpi_cache_enter(c)) & LFPI_CTL_STEAL) {
		lfpi_cache_leave(c);
		/* The thief may be a steal of ours that a signal handler (or
		 * the atfork handler of a fork from one) interrupted. */
		if (lfpi_cache_steals_held ||
		    (lfpi_cache_fork_busy() && !lfpi_cache_fork_wait()))
			return false;
		sched_yield();
	}
	if (ctl & LFPI_CTL_FLUSH)
		cache_answer_flush(c, &retries);
	else if ((n = lfpi_cache_empty(c, &c->spare, &retries))) {
		lfpi_cache_count(&c->ctr.flushes, 1);
		LFPI_PROBE(flush, c->pool, n);
	}
	lfpi_cache_leave(c);
	lfpi_cache_count(&c->ctr.cas_retries, retries);
	return true;
}

/*
 * Pop up to n slots into objs (as indices, for now) inside one operation,
 * refilling once if the cache is empty. Returns how many; 0 also when a
 * thief's request is pending, which the single path answers.
 */
size_t lfpi_cache_pop_run(struct lfp_cache *c, void **objs, size_t n)
{
	uint32_t ctl = lfpi_cache_enter(c), cnt, k = 0, i = 0;

	if (!(ctl & CACHE_ASKS)) {
		cnt = lfpi_cache_n(c);
		/* After a refill the first slot is a miss, the rest hits. */
		if (!cnt && (cnt = cache_refill(c)) && n)
			objs[i++] = (void *)(uintptr_t)cache_popped_miss(c, cnt--);
		k = cnt < n - i ? cnt : (uint32_t)(n - i);
		for (uint32_t j = 0; j < k; j++)
			objs[i + j] = (void *)(uintptr_t)c->slots[cnt - 1 - j];
		cache_popped(c, k);
		k += i;
	}
	lfpi_cache_leave(c);
	return k;
}

/* Put idx[0..n), marked free, into the cache in one operation, sending
 * cold magazines out as it fills; or onto the free list as one chain if
 * a thief's request is pending. */
void lfpi_cache_put_run(struct lfp_cache *c, const uint32_t *idx, uint32_t n)
{
	uint32_t ctl = lfpi_cache_enter(c) & CACHE_ASKS, cnt, retries = 0;
	struct lfp_pool *pool = c->pool;

	if (ctl == LFPI_CTL_FLUSH)
		cache_answer_flush(c, &retries);
	if (!ctl) {
		cnt = lfpi_cache_n(c);
		for (uint32_t i = 0, k; i < n; i += k, cnt += k) {
			if (cnt == c->hot.size)
				cnt = cache_flush_cold(c, cnt);
			k = c->hot.size - cnt < n - i ? c->hot.size - cnt : n - i;
			memcpy(c->slots + cnt, idx + i, k * sizeof(*idx));
			cache_pushed_run(c, k);
		}
		lfpi_cache_leave(c);
	} else {
		lfpi_cache_leave(c);
		for (uint32_t i = 0; i + 1 < n; i++)
			atomic_store_explicit(lfpi_slot_next(pool, idx[i]),
					      idx[i + 1], memory_order_relaxed);
		retries += lfpi_stack_push(&pool->free, idx[0], idx[n - 1]);
		lfpi_cache_count(&c->ctr.frees, n);
	}
	lfpi_cache_count(&c->ctr.cas_retries, retries);
}

void lfp_cache_flush(struct lfp_cache *cache)
{
	if (cache)
		(void)lfpi_cache_drain(cache); /* see there for a fork */
}
