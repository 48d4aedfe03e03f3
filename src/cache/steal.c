/* SPDX-License-Identifier: MIT */
/*
 * Stealing. Slots parked in a cache are not lost to other threads: when
 * the shared stack and the fresh slots run out, an allocating thread
 * steals the contents of idle caches (lfpi_cache_steal), through the
 * thief's half of the handshake with their owners (whose half is
 * lfpi_cache_enter and lfpi_cache_leave in exchange.c), and asks busy
 * ones to flush. Here too: the record of the caches a thread holds as a
 * thief, and the wait of an owner or a thief for another thief to let go.
 * Calls exchange.c (to empty a cache), fork_wait.c and the depot.
 */
#include <sched.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "base/probes.h"
#include "cache/private.h"

/* How many caches one steal round may empty. */
#define CACHE_STEAL_MAX 32

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
	_Atomic(uint32_t) n;
	struct cache_thief *prev;
};
static LFPI_TLS struct cache_thief *cache_thieves;

/*
 * Take the thief's side of the handshake on c: set LFPI_CTL_STEAL if no
 * other thief holds it. A pending flush request does not keep us off: its
 * owner may have gone idle right after a thief asked, and would then hold
 * its slots for good, since only its next call answers the request.
 */
#ifdef LFPI_FAULT_CLAIM_IGNORES_STEAL
/* Test-only fault, built only into tests/relacy's check (its value says
 * whether it is on): a claim that ignores another thief's. */
#define CACHE_CLAIM_SEES_STEAL (!(LFPI_FAULT_CLAIM_IGNORES_STEAL))
#else
#define CACHE_CLAIM_SEES_STEAL 1
#endif

bool lfpi_cache_claim_steal(struct lfp_cache *c)
{
	uint32_t ctl = atomic_load_explicit(&c->hot.ctl, memory_order_relaxed);

	do {
		if ((ctl & LFPI_CTL_STEAL) && CACHE_CLAIM_SEES_STEAL)
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
/* Set once membarrier(2) failed after it was registered (never cleared):
 * no thief can empty a cache from then on. */
static _Atomic(int) cache_fence_failed;

bool lfpi_cache_fence_all(void)
{
#if defined(__linux__) && defined(__NR_membarrier)
	if (lfpi_cache_membarrier == LFPI_MB_SERIAL)
		return true;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return true;
	static const char msg[] =
		"lfpool: membarrier(2) failed after it was registered; slots "
		"parked in idle thread caches cannot be taken back\n";

	/* Relaxed: says whether the message was printed, and tells later
	 * steals not to wait for thieves that cannot empty anything (a
	 * stale 0 costs one more look). write(2), not stdio: this may run
	 * in a signal handler. */
	if (!atomic_exchange_explicit(&cache_fence_failed, 1,
				      memory_order_relaxed))
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
static uint32_t cache_steal_caches(struct lfp_pool *pool,
				   struct lfp_cache *self,
				   struct cache_thief *me,
				   struct lfp_cache **other, uint32_t *emptied,
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
	struct lfp_cache *other;
	struct cache_thief me;
	uint32_t got;

	atomic_init(&me.n, 0);
	me.prev = cache_thieves;
	cache_thieves = &me;
	atomic_signal_fence(memory_order_seq_cst); /* the record, then claims */
	for (;;) {
		other = NULL;
		lfpi_cache_steals_held++;
		got = cache_steal_caches(pool, self, &me, &other, emptied,
					 retries);
		lfpi_cache_steals_held--;
		atomic_signal_fence(memory_order_seq_cst); /* every cache let go */
		/* Where membarrier failed, no thief empties a cache: the
		 * other one moved nothing, and two of us could take turns
		 * holding the caches the other wants, for good. */
		if (got || !other ||
		    atomic_load_explicit(&cache_fence_failed,
					 memory_order_relaxed) ||
		    !cache_wait_other_thief(other))
			break;
		/*
		 * The other thief let go. It may have moved that cache's
		 * slots to the depot, or found the owner busy and left them
		 * where they were (asking for a flush); the owner may have
		 * gone idle since, with nobody left to take them. So the
		 * lists first, then the caches again, not the lists alone
		 * (tests/model/steal.pml, -DNO_RESTEAL: two thieves, or a
		 * thief and a fork, and a NULL with a slot in an idle cache).
		 * We look again only after another thief let go of a cache
		 * in our way, which ends a steal of its own that could empty
		 * caches: the thieves as a whole make progress.
		 */
		if (!lfpi_depot_is_empty(&pool->depot) ||
		    !lfpi_stack_is_empty(&pool->free)) {
			got = 1;
			break;
		}
	}
	cache_thieves = me.prev;
	return got;
}

/*
 * One look at the pool's caches: rounds of up to CACHE_STEAL_MAX caches,
 * until one moves slots. Returns the slots moved; *other is a cache that
 * another thief held (and we could not claim), if any.
 */
static uint32_t cache_steal_caches(struct lfp_pool *pool,
				   struct lfp_cache *self,
				   struct cache_thief *me,
				   struct lfp_cache **other, uint32_t *emptied,
				   uint32_t *retries)
{
	struct lfp_cache *c;
	uint32_t got = 0;

	/* Acquire: pairs with the release CAS that published each cache. */
	c = atomic_load_explicit(&pool->caches, memory_order_acquire);
	while (c && !got) {
		atomic_store_explicit(&me->n, 0, memory_order_relaxed);
		for (; c && atomic_load_explicit(&me->n, memory_order_relaxed) <
				    CACHE_STEAL_MAX;
		     c = c->reg_next) {
			if (c == self ||
			    !lfpi_cache_n(c) ||
			    cache_ask_busy(c))
				continue;
#ifdef LFPI_FAULT_IDLE_FLUSH
			/* Test-only fault: skip caches with a request pending,
			 * which strands the slots of an owner gone idle.
			 * Relaxed: a fault needs no order. */
			if (atomic_load_explicit(&c->hot.ctl,
						 memory_order_relaxed) &
			    LFPI_CTL_FLUSH)
				continue;
#endif
			if (lfpi_cache_claim_steal(c))
				cache_thief_add(me, c);
			else
				*other = c; /* another thief has it */
		}
		got = cache_steal_round(me, emptied, retries);
	}
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
	bool fenced = nv && (!lfpi_cache_membarrier || lfpi_cache_fence_all());
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
			uint32_t spare = LFPI_NIL, k;

			got += k = lfpi_cache_empty(c, &spare, retries);
			lfpi_depot_put_spare(&c->pool->depot, spare);
			++*emptied;
			/* One per cache emptied, as lfp_stats counts steals;
			 * k is 0 if the owner emptied it just before. */
			LFPI_PROBE(steal, c->pool, k);
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
	if (!(ctl & LFPI_CTL_STEAL) || lfpi_cache_steals_held)
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

/* Whether one of this thread's steals holds c (struct cache_thief). */
bool lfpi_cache_held_by_me(const struct lfp_cache *c)
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
