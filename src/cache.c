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
 * Slots parked in a cache are not lost to other threads: when the shared
 * stack and the fresh slots run out, an allocating thread steals the
 * contents of idle caches (lfpi_cache_steal). Caches of a pool sit in a
 * registry that only grows; a cache given up is marked dead and reused by
 * the next thread, so there is no thread limit and no table to size.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "cache.h"

/* How many caches one steal round may empty. */
#define CACHE_STEAL_MAX 32

int lfpi_cache_membarrier;
LFPI_TLS struct lfp_cache *lfpi_cache_last;

/* The calling thread's implicit caches, one per pool it used. */
static LFPI_TLS struct lfp_cache *cache_mine;
/* Set while the thread makes an implicit cache (see cache_implicit_new). */
static LFPI_TLS bool cache_making;
/* Set once the thread's exit destructor gave its caches back: calls made
 * later in its exit (other keys' destructors) take the shared path. */
static LFPI_TLS bool cache_exited;
/* Non-zero while this thread holds LFPI_CTL_STEAL on some caches (inside
 * a steal, or between fork's prepare and parent/child handlers): it must
 * never wait for a steal to end, which may be its own. */
static LFPI_TLS uint32_t cache_steals_held;
/*
 * Which caches this thread holds as a thief: one record per steal in
 * progress (a signal handler may steal while the frame it interrupted
 * does), newest first. Read only by a fork from a signal handler
 * (lfpi_cache_fork_prepare): a cache an interrupted frame of the forking
 * thread holds is let go by that frame, in the parent and in the child,
 * so prepare neither waits for it nor takes it. One thread writes and
 * reads it, its handlers included: relaxed atomics and signal fences,
 * which keep the compiler from moving a write past a point a handler may
 * interrupt. held[0..n) are the caches claimed; an entry is cleared
 * before its cache is let go, so the record never names a cache that
 * another thief may hold by now.
 */
struct cache_thief {
	_Atomic(struct lfp_cache *) held[CACHE_STEAL_MAX];
	_Atomic uint32_t n;
	struct cache_thief *prev;
};
static LFPI_TLS struct cache_thief *cache_thieves;
/* Whether the thread's exit destructor is armed. */
static LFPI_TLS bool cache_key_set;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_init_err;

static void cache_thread_exit(void *unused);

static void cache_global_init(void)
{
	cache_init_err = -pthread_key_create(&cache_key, cache_thread_exit);
#if defined(__linux__) && defined(__NR_membarrier)
	lfpi_cache_membarrier =
		syscall(__NR_membarrier,
			MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

int lfpi_cache_global_init(void)
{
	pthread_once(&cache_once, cache_global_init);
	return cache_init_err;
}

#define CACHE_ASKS (LFPI_CTL_STEAL | LFPI_CTL_FLUSH)

/*
 * Enter an operation from outside the inline fast path. Without
 * membarrier both sides of the handshake use seq_cst: our exchange and
 * load pair with the thief's CAS on ctl and its load of active (the
 * Dekker pattern needs a single total order).
 */
uint32_t lfpi_cache_enter(struct lfp_cache *c)
{
	if (LFPI_LIKELY(lfpi_cache_membarrier))
		return lfpi_cache_enter_fast(&c->hot);
	atomic_exchange_explicit(&c->hot.active, 1, memory_order_seq_cst);
	return atomic_load_explicit(&c->hot.ctl, memory_order_seq_cst);
}

/* The fast path entered with the membarrier-mode handshake; without
 * membarrier (then ctl has LFPI_CTL_SLOW), enter again the seq_cst way. */
uint32_t lfpi_cache_reenter(struct lfp_cache *c, uint32_t ctl)
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
#define CACHE_FOLD (UINT64_C(1) << 50)

void lfpi_cache_set_n(struct lfp_cache *c, uint32_t n)
{
	uint64_t top = atomic_load_explicit(&c->hot.top, memory_order_relaxed);
	uint64_t high = (top >> LFPI_TOP_SHIFT) - (top & LFPI_TOP_COUNT) + n;
	uint32_t seq;

	if (LFPI_LIKELY(high < CACHE_FOLD)) {
		/* Release: pairs with the acquire load in cache_counts. */
		atomic_store_explicit(&c->hot.top, high << LFPI_TOP_SHIFT | n,
				      memory_order_release);
		return;
	}
	/*
	 * The fold: a sequence lock with one writer (the owner, or a thread
	 * holding the cache through the handshake). Relaxed: the release
	 * stores below order it before themselves, so a reader that sees
	 * either of them sees the odd sequence too.
	 */
	seq = atomic_load_explicit(&c->fold_seq, memory_order_relaxed);
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

/* Owner, inside an operation: k releases into slots[] counted. Release:
 * as in lfpi_cache_free_inline (lfpool.h). */
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
	/* Release: as in lfpi_cache_alloc_inline (lfpool.h). */
	atomic_store_explicit(&c->hot.top,
			      atomic_load_explicit(&c->hot.top,
						   memory_order_relaxed) - k,
			      memory_order_release);
}

/* Owner, inside an operation, n the count: slot idx released into
 * slots[n]. */
static void cache_pushed(struct lfp_cache *c, uint32_t n, uint32_t idx)
{
	c->slots[n] = idx;
	cache_freed(c, 1);
	/* Release: as in lfpi_cache_alloc_inline (lfpool.h). */
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
	/* Release: as in lfpi_cache_alloc_inline (lfpool.h). */
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
		 * lfpi_cache_set_n and of the fast paths. */
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
static uint64_t cache_value(const struct lfp_cache *c, size_t off)
{
	/* Casting away const: loading an atomic writes nothing. Relaxed:
	 * counters order nothing. */
	uint64_t v = atomic_load_explicit(
		(_Atomic uint64_t *)((char *)&c->ctr + off), memory_order_relaxed);

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
			atomic_store_explicit(&pool->slots[idx[i]].next,
					      idx[i + 1], memory_order_relaxed);
		*retries += lfpi_stack_push(&pool->free, idx[0], idx[n - 1]);
		return;
	}
}

/* Give every slot of c to the pool. The caller owns the slots: it is c's
 * owner inside an operation (and passes its spare), or a thief that has
 * seen the owner outside one (and passes a spare of its own). Returns how
 * many slots moved. */
static uint32_t cache_empty(struct lfp_cache *c, uint32_t *spare,
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
	}
	return n;
}

/*
 * Take the thief's side of the handshake on c: set LFPI_CTL_STEAL if no
 * other thief holds it. A pending flush request does not keep us off: its
 * owner may have gone idle right after a thief asked, and would then hold
 * its slots for good, since only its next call answers the request.
 */
static bool cache_claim_steal(struct lfp_cache *c)
{
	uint32_t ctl = atomic_load_explicit(&c->hot.ctl, memory_order_relaxed);

	do {
#ifdef LFPI_FAULT_IDLE_FLUSH
		/* Test-only fault: skip caches with a request pending, which
		 * strands the slots of an owner gone idle. */
		if (ctl & CACHE_ASKS)
			return false;
#endif
		if (ctl & LFPI_CTL_STEAL)
			return false;
		/* seq_cst: our write in the handshake, ordered before the
		 * read of active in lfpi_cache_steal (see lfpi_cache_enter). */
	} while (!atomic_compare_exchange_weak_explicit(
		&c->hot.ctl, &ctl, ctl | LFPI_CTL_STEAL, memory_order_seq_cst,
		memory_order_relaxed));
	return true;
}

/*
 * The thief's barrier in membarrier mode. It cannot fail once registered,
 * unless a sandbox forbids the call later: then no idle cache can be
 * emptied, and the program is told once.
 */
static bool cache_fence_all(void)
{
#if defined(__linux__) && defined(__NR_membarrier)
	static _Atomic int told;

	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return true;
	static const char msg[] =
		"lfpool: membarrier(2) failed after it was registered; slots "
		"parked in idle thread caches cannot be taken back\n";

	/* Relaxed: only says whether the message was printed. write(2),
	 * not stdio: this may run in a signal handler. */
	if (!atomic_exchange_explicit(&told, 1, memory_order_relaxed))
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
#endif
	return false;
}

/*
 * Empty idle caches of the pool into the shared stack; caches whose owner
 * is inside an operation are asked to flush themselves instead. Returns
 * the slots moved; *emptied counts the caches emptied.
 *
 * The handshake with lfpi_cache_enter: we set LFPI_CTL_STEAL, then read
 * active; the owner sets active, then reads ctl. Between our write and our
 * read, membarrier(2) runs a full barrier on every thread of the process
 * that is running, so either the owner's active = 1 is visible to us, or
 * its later read of ctl sees STEAL and it keeps off the slots. Without
 * membarrier both sides use seq_cst and the same argument holds.
 */
static uint32_t cache_steal_round(struct cache_thief *me, uint32_t *emptied,
				  uint32_t *retries);
static bool cache_wait_other_thief(struct lfp_cache *c);

/*
 * A cache whose owner looks busy is only asked to flush: claiming it
 * would cost a share of a barrier for nothing. Relaxed: a hint; a stale
 * "busy" leaves an idle cache to the next round or the next thief, and a
 * stale "idle" is settled by the handshake.
 */
static bool cache_ask_busy(struct lfp_cache *c)
{
	if (!atomic_load_explicit(&c->hot.active, memory_order_relaxed))
		return false;
	/* Relaxed: the owner reads it at its next entry. */
	atomic_fetch_or_explicit(&c->hot.ctl, LFPI_CTL_FLUSH, memory_order_relaxed);
	return true;
}

/* Note in the thread's record (struct cache_thief) that it holds c. */
static void cache_thief_add(struct cache_thief *me, struct lfp_cache *c)
{
	uint32_t n = atomic_load_explicit(&me->n, memory_order_relaxed);

	atomic_store_explicit(&me->held[n], c, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst); /* the entry, then n */
	atomic_store_explicit(&me->n, n + 1, memory_order_relaxed);
}

uint32_t lfpi_cache_steal(struct lfp_pool *pool, struct lfp_cache *self,
				  uint32_t *emptied, uint32_t *retries)
{
	struct lfp_cache *c, *other = NULL;
	struct cache_thief me;
	uint32_t got = 0;

	atomic_init(&me.n, 0);
	me.prev = cache_thieves;
	cache_thieves = &me;
	atomic_signal_fence(memory_order_seq_cst); /* the record, then claims */
	cache_steals_held++;
	/* Acquire: pairs with the release CAS that published each cache.
	 * Rounds of up to CACHE_STEAL_MAX caches, until one moves slots. */
	c = atomic_load_explicit(&pool->caches, memory_order_acquire);
	while (c && !got) {
		atomic_store_explicit(&me.n, 0, memory_order_relaxed);
		for (; c && atomic_load_explicit(&me.n, memory_order_relaxed) <
				    CACHE_STEAL_MAX;
		     c = c->reg_next) {
			if (c == self ||
			    !lfpi_cache_n(c) ||
			    cache_ask_busy(c))
				continue;
			if (cache_claim_steal(c))
				cache_thief_add(&me, c);
			else
				other = c; /* another thief has it */
		}
		got = cache_steal_round(&me, emptied, retries);
	}
	cache_steals_held--;
	atomic_signal_fence(memory_order_seq_cst); /* every cache let go */
	cache_thieves = me.prev;
	if (!got && other && cache_wait_other_thief(other))
		got = !lfpi_depot_is_empty(&pool->depot) ||
		      !lfpi_stack_is_empty(&pool->free);
	return got;
}

/*
 * Another thief held a cache we wanted while we found nothing: it is
 * moving that cache's slots to the depot right now. Wait for it to let go
 * (a few hundred instructions, unless it is preempted), so that two
 * starving threads do not both report exhaustion while one of them is
 * freeing slots. Not from inside a steal of our own (a signal handler
 * would wait for itself), and not past a fork (bounded, as in
 * lfpi_cache_wait_thief). Returns whether to look at the lists again.
 */
static bool cache_wait_other_thief(struct lfp_cache *c)
{
	return lfpi_cache_wait_thief(c, LFPI_CTL_STEAL);
}

/* Empty the claimed caches whose owners are idle; ask the others to
 * flush; let go of all of them. Returns the slots moved. */
static uint32_t cache_steal_round(struct cache_thief *me, uint32_t *emptied,
				  uint32_t *retries)
{
	uint32_t nv = atomic_load_explicit(&me->n, memory_order_relaxed);
	bool fenced = nv && (!lfpi_cache_membarrier || cache_fence_all());
	struct lfp_cache *c;
	uint32_t got = 0;

	for (uint32_t i = 0; i < nv; i++) {
		uint32_t done = LFPI_CTL_STEAL;

		c = atomic_load_explicit(&me->held[i], memory_order_relaxed);
		/* seq_cst (acquire is what membarrier mode needs): pairs with
		 * the release in lfpi_cache_leave, so the slots we take and
		 * the owner's writes to their objects are visible. */
		if (fenced &&
		    !atomic_load_explicit(&c->hot.active, memory_order_seq_cst)) {
			uint32_t spare = LFPI_NIL;

			got += cache_empty(c, &spare, retries);
			lfpi_depot_put_spare(&c->pool->depot, spare);
			++*emptied;
			done |= LFPI_CTL_FLUSH; /* emptied: a request is answered */
		} else {
			/* Relaxed: the owner acts on it at its next entry; the
			 * release below publishes it. */
			atomic_fetch_or_explicit(&c->hot.ctl, LFPI_CTL_FLUSH,
						 memory_order_relaxed);
		}
		/* Out of the record before we let go (struct cache_thief). */
		atomic_store_explicit(&me->held[i], NULL, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		/* Release: pairs with the acquire load of ctl in
		 * lfpi_cache_enter, so the owner sees the count we left, and a
		 * later thief that claims the cache sees what we saw. */
		atomic_fetch_and_explicit(&c->hot.ctl, ~done, memory_order_release);
	}
	return got;
}


/* Owner, inside an operation, ctl == FLUSH: a thief starved while we were
 * busy. Give everything back and clear the request. */
static void cache_answer_flush(struct lfp_cache *c, uint32_t *retries)
{
	if (cache_empty(c, &c->spare, retries))
		lfpi_cache_count(&c->ctr.flushes, 1);
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

/* Inside an operation: pop a slot, refilling first if empty. */
uint32_t lfpi_cache_pop(struct lfp_cache *c, uint32_t ctl,
			       uint32_t *retries)
{
	uint32_t n, idx;

	if (ctl & LFPI_CTL_STEAL)
		return LFPI_NIL; /* a thief may be at the slots: keep off */
	if (ctl & LFPI_CTL_FLUSH) {
		cache_answer_flush(c, retries);
		return LFPI_NIL; /* take from the pool like the rest */
	}
	n = lfpi_cache_n(c);
	if (!n)
		return (n = cache_refill(c)) ? cache_popped_miss(c, n) : LFPI_NIL;
	idx = c->slots[n - 1];
	cache_popped(c, 1); /* a hit */
	return idx;
}

/*
 * The pool looked exhausted while a thief held our cache (ctl had STEAL),
 * so our own slots were out of reach: they are free slots all the same.
 * Wait, outside the operation, until the thief lets go (a few hundred
 * instructions), then look again. A fork being prepared holds every cache
 * until the fork is done; that wait is bounded (lfpi_cache_fork_wait),
 * since the forking thread may itself wait for a lock our thread holds while a
 * signal handler of ours is the one allocating. Returns whether to look
 * again. Never when this thread holds steals itself: a signal handler
 * that interrupted our own steal would wait for itself.
 */
bool lfpi_cache_wait_thief(struct lfp_cache *c, uint32_t ctl)
{
	if (!(ctl & LFPI_CTL_STEAL) || cache_steals_held)
		return false;
	/* Relaxed: what the caller reads next carries the ordering (the
	 * acquire load in lfpi_cache_enter, or the depot's stacks). */
	while (atomic_load_explicit(&c->hot.ctl, memory_order_relaxed) &
	       LFPI_CTL_STEAL) {
		if (lfpi_cache_fork_busy())
			return lfpi_cache_fork_wait();
		sched_yield();
	}
	return true;
}

/* The inline fast path found ctl set, or the cache full, with slot idx
 * already marked free; it entered the operation and left it to us. */
void lfpi_cache_put_slow(struct lfp_cache *c, uint32_t idx, uint32_t ctl)
{
	struct lfp_pool *pool = c->pool;
	uint32_t retries = 0, n;

	ctl = lfpi_cache_reenter(c, ctl) & CACHE_ASKS;
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
 * Owner: give every slot back. Waits while a thief is at the slots; a
 * thief holds them for a few hundred instructions. A fork holds them from
 * its prepare to its parent handler, and an atfork handler that runs in
 * between may wait for a lock our caller holds: that wait is bounded
 * (lfpi_cache_fork_wait), and then the slots stay in the cache, free
 * slots that a starving thread takes by stealing; so do they, at once,
 * when the thief is a steal of this thread's that the caller interrupted.
 * Returns whether the cache was drained.
 */
static bool cache_drain(struct lfp_cache *c)
{
	uint32_t ctl, retries = 0;

	while ((ctl = lfpi_cache_enter(c)) & LFPI_CTL_STEAL) {
		lfpi_cache_leave(c);
		/* The thief may be a steal of ours that a signal handler (or
		 * the atfork handler of a fork from one) interrupted. */
		if (cache_steals_held ||
		    (lfpi_cache_fork_busy() && !lfpi_cache_fork_wait()))
			return false;
		sched_yield();
	}
	if (ctl & LFPI_CTL_FLUSH)
		cache_answer_flush(c, &retries);
	else if (cache_empty(c, &c->spare, &retries))
		lfpi_cache_count(&c->ctr.flushes, 1);
	lfpi_cache_leave(c);
	lfpi_cache_count(&c->ctr.cas_retries, retries);
	return true;
}

/*
 * Memory for a cache of the pool, from mmap rather than malloc: a program
 * whose malloc is built on lfpool (an allocator over pools, or a shim
 * serving small sizes) would otherwise recurse into its own allocator
 * from a thread's first call. A cache is a page or a few, made once per
 * thread and pool and recycled, never per operation.
 */
static struct lfp_cache *cache_map(struct lfp_pool *pool)
{
	size_t page = lfpi_page_size();
	size_t bytes = sizeof(struct lfp_cache) +
		       pool->cache_size * sizeof(_Atomic uint32_t);
	struct lfp_cache *c;
	void *p;

	bytes = (bytes + page - 1) & ~(page - 1);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	c = p;
	c->map_size = bytes;
	return c;
}

static void cache_unmap(struct lfp_cache *c)
{
	munmap(c, c->map_size);
}

/* The counters lfp_cache_stats reports, by index in lfpi_cache_stat(). */
static const size_t cache_stat_ctr[LFPI_CACHE_STATS] = {
	offsetof(struct lfpi_counters, cache_hits),
	offsetof(struct lfpi_counters, allocs),
	offsetof(struct lfpi_counters, frees),
	offsetof(struct lfpi_counters, failed_allocs),
	offsetof(struct lfpi_counters, rejected_frees),
	offsetof(struct lfpi_counters, cas_retries),
	offsetof(struct lfpi_counters, refills),
	offsetof(struct lfpi_counters, flushes),
	offsetof(struct lfpi_counters, steals),
};

/* Counter i of cache_stat_ctr, since the cache was made. */
static uint64_t cache_ctr(const struct lfp_cache *c, unsigned i)
{
	/* Relaxed: counters order nothing. */
	return cache_value(c, cache_stat_ctr[i]);
}

/* Counter i since the cache was last claimed. */
uint64_t lfpi_cache_stat(const struct lfp_cache *c, unsigned i)
{
	uint64_t v = cache_ctr(c, i);

	/* Never below the value at the claim, but a last reading taken
	 * mid-move (cache_counts) must not wrap. */
	return v > c->base[i] ? v - c->base[i] : 0;
}

/* A claimed cache counts from here on, for lfp_cache_stats. */
static void cache_stats_reset(struct lfp_cache *c)
{
	for (unsigned i = 0; i < LFPI_CACHE_STATS; i++)
		c->base[i] = cache_ctr(c, i);
}

/* Fill in a new cache of pool. */
static void cache_init(struct lfp_cache *c, struct lfp_pool *pool,
		       uint32_t kind)
{
	struct lfpi_cache_hot *h = &c->hot;

	c->pool = pool;
	c->pool_id = pool->id;
	c->batch = pool->batch;
	c->quirks = pool->quirks;
	c->ctl_keep = pool->quirks || !lfpi_cache_membarrier ? LFPI_CTL_SLOW : 0;
	c->spare = LFPI_NIL;
	c->tls_next = NULL;
	atomic_init(&h->active, 0);
	atomic_init(&h->ctl, c->ctl_keep);
	h->size = pool->cache_size;
	h->slots = c->slots;
	h->objs = pool->objs;
	h->stride = pool->stride;
	h->gen = &pool->slots[0].gen;
	h->inv = pool->stride_inv;
	h->shift = pool->stride_tz;
	/* A pool with quirks checks every release out of line. */
	h->nslots = pool->quirks ? 0 : pool->capacity;
	atomic_init(&h->top, 0);
	atomic_init(&h->frees, 0);
	atomic_init(&c->allocs_base, 0);
	atomic_init(&c->fold_seq, 0);
	atomic_init(&h->pool, pool);
	atomic_init(&c->state, kind);
}

/* A dead cache of the pool to reuse, or a new one; NULL without memory. */
static struct lfp_cache *cache_claim(struct lfp_pool *pool, uint32_t kind)
{
	struct lfp_cache *c, *old;
	uint32_t dead;

	/* Acquire: pairs with the release CAS that published each cache. */
	for (c = atomic_load_explicit(&pool->caches, memory_order_acquire); c;
	     c = c->reg_next) {
		dead = LFPI_CACHE_DEAD;
		/* Acquire: pairs with the release store of DEAD by the last
		 * owner, whose counters and empty count we take over. */
		if (atomic_load_explicit(&c->state, memory_order_relaxed) == dead &&
		    atomic_compare_exchange_strong_explicit(
			    &c->state, &dead, kind, memory_order_acquire,
			    memory_order_relaxed)) {
			cache_stats_reset(c);
			return c;
		}
	}
	if (!(c = cache_map(pool)))
		return NULL;
	cache_init(c, pool, kind);
	lfpi_counters_init(&c->ctr);
	memset(c->base, 0, sizeof(c->base));
	old = atomic_load_explicit(&pool->caches, memory_order_relaxed);
	do
		c->reg_next = old;
	/* Release: pairs with the acquire loads of the registry head, so
	 * walkers see the fields set above. */
	while (!atomic_compare_exchange_weak_explicit(&pool->caches, &old, c,
						      memory_order_release,
						      memory_order_relaxed));
	return c;
}

/* Owner: hand the cache back to the registry for the next thread. */
static void cache_release(struct lfp_cache *c)
{
	uint32_t spare;

	/* Undrained (a fork kept it), it is given up with its slots, which
	 * the next owner uses or a starving thread steals. */
	(void)cache_drain(c);
	/*
	 * The drain may have used the spare, so read it after. Clear it
	 * before the push: a fork between the two must not find the
	 * magazine both on the empty stack and here (the child drops at
	 * most a magazine; never holds one twice). The fence keeps the
	 * compiler from sinking the store past the push's CAS.
	 */
	spare = c->spare;
	c->spare = LFPI_NIL;
	atomic_signal_fence(memory_order_seq_cst);
	lfpi_depot_put_spare(&c->pool->depot, spare);
	/* Release: pairs with the acquire CAS in cache_claim and the acquire
	 * load in lfpi_cache_destroy_all. */
	atomic_store_explicit(&c->state, LFPI_CACHE_DEAD, memory_order_release);
}

/*
 * Make the thread's cache for pool. pthread_setspecific may call malloc,
 * and a malloc built on lfpool may call back here: such a nested call
 * finds cache_making set and takes the shared path instead.
 */
static struct lfp_cache *cache_implicit_new(struct lfp_pool *pool)
{
	struct lfp_cache *c = NULL;

	if (cache_making || cache_exited)
		return NULL;
	cache_making = true;
	/* The key's value only has to be non-NULL for the destructor to run. */
	if (!cache_key_set && !pthread_setspecific(cache_key, &cache_mine))
		cache_key_set = true;
	if (cache_key_set && (c = cache_claim(pool, LFPI_CACHE_IMPLICIT))) {
		c->tls_next = cache_mine;
		cache_mine = c;
		lfpi_cache_last = c;
	}
	cache_making = false;
	return c;
}

struct lfp_cache *lfpi_cache_implicit_slow(struct lfp_pool *pool)
{
	struct lfp_cache **pp = &cache_mine, *c;

	/* It may be an orphan freed below: never leave it dangling. */
	lfpi_cache_last = NULL;
	while ((c = *pp)) {
		if (c->pool == pool && c->pool_id == pool->id)
			return lfpi_cache_last = c;
		/* Acquire: pairs with the CAS in lfpi_cache_destroy_all. An
		 * orphan's pool is gone; the cache is ours to free. */
		if (atomic_load_explicit(&c->state, memory_order_acquire) ==
		    LFPI_CACHE_ORPHANED) {
			*pp = c->tls_next;
			cache_unmap(c);
			continue;
		}
		pp = &c->tls_next;
	}
	return cache_implicit_new(pool);
}

/* pthread key destructor: give back every implicit cache of the thread. */
static void cache_thread_exit(void *unused)
{
	struct lfp_cache *c, *next;
	uint32_t s;

	(void)unused;
	lfpi_cache_last = NULL;
	for (c = cache_mine; c; c = next) {
		next = c->tls_next;
		s = LFPI_CACHE_IMPLICIT;
		/* Acquire on failure: pairs with the CAS in
		 * lfpi_cache_destroy_all; on success the pool stays alive
		 * until we store DEAD (it waits for EXITING to end). */
		if (atomic_compare_exchange_strong_explicit(
			    &c->state, &s, LFPI_CACHE_EXITING,
			    memory_order_acquire, memory_order_acquire))
			cache_release(c);
		else
			cache_unmap(c); /* orphaned: the pool is gone */
	}
	cache_mine = NULL;
	/* A later key's destructor may still call us: it gets the shared
	 * path, not a cache that nothing would give back. */
	cache_exited = true;
}

void lfpi_cache_destroy_all(struct lfp_pool *pool)
{
	struct lfp_cache *c, *next;
	uint32_t s;

	/* Acquire: pairs with the release CAS that published each cache. */
	c = atomic_load_explicit(&pool->caches, memory_order_acquire);
	for (; c; c = next) {
		next = c->reg_next;
		/* Acquire: pairs with the release store of DEAD in
		 * cache_release by an exiting thread. */
		while ((s = atomic_load_explicit(&c->state,
						 memory_order_acquire)) ==
		       LFPI_CACHE_EXITING)
			sched_yield();
		/*
		 * A live thread's cache becomes an orphan its thread frees;
		 * acq_rel pairs with the CAS in cache_thread_exit. Its inline
		 * paths must never match a pool made later at this address,
		 * nor NULL (relaxed: see lfpi_alloc_inline in lfpool.h).
		 */
		if (s == LFPI_CACHE_IMPLICIT)
			atomic_store_explicit(&c->hot.pool, LFPI_ORPHAN(c),
					      memory_order_relaxed);
		if (s == LFPI_CACHE_IMPLICIT &&
		    atomic_compare_exchange_strong_explicit(
			    &c->state, &s, LFPI_CACHE_ORPHANED,
			    memory_order_acq_rel, memory_order_acquire))
			continue;
		if (s == LFPI_CACHE_EXITING) { /* lost the race: wait again */
			next = c;
			continue;
		}
		cache_unmap(c);
	}
}

uint64_t lfpi_cache_sum(const struct lfp_pool *pool, size_t counter,
			uint64_t *cached)
{
	struct lfp_pool *p = (struct lfp_pool *)pool; /* loads write nothing */
	uint64_t sum = 0, parked = 0;
	struct lfp_cache *c;

	/* Acquire: pairs with the release CAS that published each cache. */
	for (c = atomic_load_explicit(&p->caches, memory_order_acquire); c;
	     c = c->reg_next) {
		sum += cache_value(c, counter);
		parked += lfpi_cache_n(c);
	}
	if (cached)
		*cached = parked;
	return sum;
}

int lfpi_cache_walk(struct lfp_pool *pool, int (*fn)(uint32_t idx, void *arg),
		    void *arg)
{
	struct lfp_cache *c;
	uint32_t i, n;
	int r;

	/* Acquire: pairs with the release CAS that published each cache. */
	c = atomic_load_explicit(&pool->caches, memory_order_acquire);
	for (; c; c = c->reg_next) {
		n = lfpi_cache_n(c);
		for (i = 0; i < n; i++)
			if ((r = fn(c->slots[i], arg)))
				return r;
	}
	return 0;
}

struct lfp_cache *lfp_cache_create(struct lfp_pool *pool)
{
	return pool ? cache_claim(pool, LFPI_CACHE_EXPLICIT) : NULL;
}

void lfp_cache_destroy(struct lfp_cache *cache)
{
	if (cache)
		cache_release(cache);
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
			atomic_store_explicit(&pool->slots[idx[i]].next,
					      idx[i + 1], memory_order_relaxed);
		retries += lfpi_stack_push(&pool->free, idx[0], idx[n - 1]);
		lfpi_cache_count(&c->ctr.frees, n);
	}
	lfpi_cache_count(&c->ctr.cas_retries, retries);
}

void lfp_cache_flush(struct lfp_cache *cache)
{
	if (cache)
		(void)cache_drain(cache); /* see there for a fork */
}

/* lfp_cache.fork_hold: how fork's prepare holds a cache. */
enum {
	CACHE_FORK_TAKEN, /* it claimed the cache */
	CACHE_FORK_THIEF, /* another thread's steal held it too long */
	CACHE_FORK_MINE,  /* the forking thread's own interrupted steal holds it */
};

/* Non-zero while a fork holds every cache (lfpi_cache_fork_begin/end). */
static _Atomic uint32_t cache_fork_busy;

/* When fork's prepare stops waiting for thieves (cache_fork_take): one
 * deadline for the whole fork, every pool. The forking thread's, under
 * fork.c's lock. */
static uint64_t cache_fork_until;
static uint64_t cache_now_ns(void);

void lfpi_cache_fork_begin(void)
{
	cache_fork_until = cache_now_ns() +
			   LFPI_CACHE_FORK_WAIT_MS * UINT64_C(1000000);
	/* seq_cst: ordered before fork_prepare's claims on the caches, so a
	 * thread that finds its cache claimed (lfpi_cache_enter) and then
	 * looks here sees it. */
	atomic_store_explicit(&cache_fork_busy, 1, memory_order_seq_cst);
}

void lfpi_cache_fork_end(void)
{
	/* Release: pairs with the acquire load in lfpi_cache_fork_wait; the
	 * caches were let go before. */
	atomic_store_explicit(&cache_fork_busy, 0, memory_order_release);
}

bool lfpi_cache_fork_busy(void)
{
	/* seq_cst: pairs with the store in lfpi_cache_fork_begin (see there). */
	return atomic_load_explicit(&cache_fork_busy, memory_order_seq_cst);
}

static uint64_t cache_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool lfpi_cache_fork_wait(void)
{
	uint64_t until = cache_now_ns() + LFPI_CACHE_FORK_WAIT_MS * UINT64_C(1000000);

	/* Acquire: pairs with the release store in lfpi_cache_fork_end. */
	while (atomic_load_explicit(&cache_fork_busy, memory_order_acquire)) {
		if (cache_now_ns() > until)
			return false;
		sched_yield();
	}
	return true;
}

/*
 * fork (see fork.c). Before the fork, take every cache of the pool as a
 * thief would: from then on owners keep off their slots. An owner seen
 * inside an operation after the barrier may still be changing its cache
 * as the fork happens, so the cache is marked busy and the child drops
 * its contents (lost to the child, never handed out twice); the others
 * are consistent. Prepare never waits for an owner: that owner may be a
 * thread interrupted by a signal handler that waits for the fork. Caches
 * made after this point (newer than pool->fork_caches) are not covered
 * and dropped in the child too. Caller holds every grow_lock and the fork
 * lock.
 */
/* Whether one of this thread's steals holds c (struct cache_thief). */
static bool cache_held_by_me(const struct lfp_cache *c)
{
	for (struct cache_thief *t = cache_thieves; t; t = t->prev) {
		uint32_t n = atomic_load_explicit(&t->n, memory_order_relaxed);

		for (uint32_t i = 0; i < n; i++)
			if (atomic_load_explicit(&t->held[i],
						 memory_order_relaxed) == c)
				return true;
	}
	return false;
}

/*
 * Take c for a fork, as a thief would. A thief that holds it now lets go
 * within a few hundred instructions, unless it is preempted, or it is
 * interrupted by a signal handler that forks too and so waits for us: we
 * wait until `until`, then leave it to that thief (CACHE_FORK_THIEF). A
 * steal of this very thread, interrupted by the handler that forks, lets
 * go only after we return: we do not wait for it (CACHE_FORK_MINE).
 */
static uint32_t cache_fork_take(struct lfp_cache *c, uint64_t until)
{
	while (!cache_claim_steal(c)) {
		if (cache_held_by_me(c))
			return CACHE_FORK_MINE;
		if (cache_now_ns() > until)
			return CACHE_FORK_THIEF;
		sched_yield();
	}
	return CACHE_FORK_TAKEN;
}

void lfpi_cache_fork_prepare(struct lfp_pool *pool)
{
	struct lfp_cache *c, *head;
	bool fenced;

	/* Acquire: pairs with the release CAS that published each cache. */
	head = atomic_load_explicit(&pool->caches, memory_order_acquire);
	pool->fork_caches = head;
	cache_steals_held++;
	for (c = head; c; c = c->reg_next)
		c->fork_hold = cache_fork_take(c, cache_fork_until);
	/* Without the barrier (a sandbox forbade membarrier after it was
	 * registered) an owner entering right now might be missed: then
	 * every cache counts as busy. */
	fenced = !lfpi_cache_membarrier || cache_fence_all();
	for (c = head; c; c = c->reg_next)
		/* seq_cst: the handshake's read, as in lfpi_cache_steal;
		 * pairs with the release in lfpi_cache_leave. */
		c->fork_busy = !fenced || atomic_load_explicit(
						  &c->hot.active, memory_order_seq_cst);
}

/* In the parent after the fork: give the caches we took back to their
 * owners; the ones a thief held, it lets go itself. */
void lfpi_cache_fork_parent(struct lfp_pool *pool)
{
	cache_steals_held--;
	for (struct lfp_cache *c = pool->fork_caches; c; c = c->reg_next) {
		c->fork_busy = 0;
		/* Release: pairs with the acquire load of ctl in
		 * lfpi_cache_enter, as when a thief lets go. */
		if (c->fork_hold == CACHE_FORK_TAKEN)
			atomic_fetch_and_explicit(&c->hot.ctl, ~LFPI_CTL_STEAL,
						  memory_order_release);
		c->fork_hold = CACHE_FORK_TAKEN;
	}
}

static bool cache_is_mine(const struct lfp_cache *c)
{
	for (const struct lfp_cache *m = cache_mine; m; m = m->tls_next)
		if (m == c)
			return true;
	return false;
}

/*
 * In the child: only the forking thread exists. Its own caches stay its
 * own; an explicit cache stays for whoever holds it (if nobody in the
 * child does, its slots are taken by the next starving allocation); the
 * implicit caches of the threads that did not come along are emptied into
 * the free list and recycled. A cache that was busy at the fork, or made
 * after fork_prepare, or that another thread's steal held (it may have
 * been moving the slots out), may have been in the middle of an
 * operation: its slots are dropped (lost to the child), never handed out
 * twice. A cache a steal of the forking thread holds is left to that
 * steal, which goes on when the signal handler that forked returns.
 */
void lfpi_cache_fork_child(struct lfp_pool *pool)
{
	struct lfp_cache *c;
	uint32_t retries = 0, s, hold;
	bool covered = false, mine;

	cache_steals_held--;
	/* Acquire: pairs with the release CAS that published each cache. */
	c = atomic_load_explicit(&pool->caches, memory_order_acquire);
	for (; c; c = c->reg_next) {
		covered = covered || c == pool->fork_caches;
		hold = covered ? c->fork_hold : CACHE_FORK_TAKEN;
		mine = cache_is_mine(c);
		s = atomic_load_explicit(&c->state, memory_order_relaxed);
		/* One of ours that was busy is still in its operation: the
		 * frame a signal handler interrupted to fork goes on with it
		 * when the handler returns, and a steal meanwhile (the handler
		 * allocating) must see it busy, as in the parent. */
		if (!(mine && covered && c->fork_busy))
			atomic_store_explicit(&c->hot.active, 0,
					      memory_order_relaxed);
		/* membarrier may be gone in the child
		 * (lfpi_cache_fork_child_init). */
		c->ctl_keep = c->quirks || !lfpi_cache_membarrier ? LFPI_CTL_SLOW
								  : 0;
		atomic_store_explicit(&c->hot.ctl,
				      c->ctl_keep | (hold == CACHE_FORK_MINE ?
							     LFPI_CTL_STEAL : 0),
				      memory_order_relaxed);
		/* A fold cut short by the fork must not keep readers
		 * retrying (relaxed: the child has one thread). */
		atomic_store_explicit(
			&c->fold_seq,
			(atomic_load_explicit(&c->fold_seq, memory_order_relaxed) +
			 1) & ~1u,
			memory_order_relaxed);
		/* The owner's spare stays if the owner is us: only an
		 * owner moves it, and our interrupted frame may hold it. */
		if (((!covered || c->fork_busy) && !mine) ||
		    hold == CACHE_FORK_THIEF) {
			lfpi_cache_set_n(c, 0);
			if (!mine)
				c->spare = LFPI_NIL; /* it may have been in flight */
		}
		c->fork_busy = 0;
		c->fork_hold = CACHE_FORK_TAKEN;
		/* An exiting cache of ours: the exit a handler interrupted
		 * goes on to give it back. */
		if ((s == LFPI_CACHE_EXITING || s == LFPI_CACHE_IMPLICIT) &&
		    !mine) {
			if (hold != CACHE_FORK_MINE)
				cache_empty(c, &c->spare, &retries);
			atomic_store_explicit(&c->state, LFPI_CACHE_DEAD,
					      memory_order_relaxed);
		}
	}
}

/* In the child: membarrier registration belongs to the parent's process. */
void lfpi_cache_fork_child_init(void)
{
#if defined(__linux__) && defined(__NR_membarrier)
	if (lfpi_cache_membarrier &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		    0, 0))
		lfpi_cache_membarrier = 0; /* one thread: switching is safe */
#endif
}
