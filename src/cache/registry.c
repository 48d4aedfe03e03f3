/* SPDX-License-Identifier: MIT */
/*
 * The registry of a pool's caches and the implicit ones. Caches of a pool
 * sit in a registry that only grows; a cache given up is marked dead and
 * reused by the next thread, so there is no thread limit and no table to
 * size. A thread's implicit caches, one per pool it used, are found from
 * its table (lfpi_cache_tab, indexed by the pool's number, read inline by
 * lfpool.h) or its own list, and given back when the thread exits
 * (a pthread key's destructor). Here too: lfp_cache_create and
 * lfp_cache_destroy, the sums and walks over every cache, the counters
 * lfp_cache_stats reports, and the setup once per process. Calls
 * exchange.c (to drain a cache, to read its counts), table.c (the
 * thread's table), the depot, the slab, and the tools (whether Valgrind
 * runs the program for profiling).
 */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "cache/implicit.h"
#include "cache/private.h"
#include "tools/debug.h"


/* The calling thread's implicit caches, one per pool it used. */
static LFPI_TLS struct lfp_cache *cache_mine;
/*
 * The cache this thread is claiming as an implicit one, from before it
 * may become IMPLICIT until it is on cache_mine: a fork from a signal
 * handler in between must count it as ours (lfpi_cache_is_mine), since
 * the interrupted frame goes on claiming it in the child.
 */
static LFPI_TLS struct lfp_cache *cache_claiming;
/* Set while the thread makes an implicit cache (see cache_implicit_new). */
static LFPI_TLS bool cache_making;
/* Set once the thread's exit destructor gave its caches back: calls made
 * later in its exit (other keys' destructors) take the shared path. */
static LFPI_TLS bool cache_exited;
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
	if (!syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		     0, 0))
		lfpi_cache_membarrier = LFPI_MB_SYSCALL;
#endif
	/* Valgrind has no membarrier; it needs none, as it runs one thread
	 * at a time, switching through a lock (a full barrier). */
	if (lfpi_debug_vg_profile())
		lfpi_cache_membarrier = LFPI_MB_SERIAL;
}

int lfpi_cache_global_init(void)
{
	pthread_once(&cache_once, cache_global_init);
	return cache_init_err;
}

/*
 * Each cache starts at one of CACHE_COLORS offsets in its pages, in
 * turn: the owner's fast path stores to its first words on every
 * operation, and a thread going through the caches of several pools in
 * turn would otherwise load each one's words from the same offset in a
 * page as the stores it just made to another's, which the processor
 * takes for a dependence until it has the full addresses (4K aliasing).
 */
#define CACHE_COLORS 15

/*
 * Memory for a cache of the pool, from mmap rather than malloc: a program
 * whose malloc is built on lfpool (an allocator over pools, or a shim
 * serving small sizes) would otherwise recurse into its own allocator
 * from a thread's first call. A cache is a page or a few, made once per
 * thread and pool and recycled, never per operation.
 */
static struct lfp_cache *cache_map(struct lfp_pool *pool)
{
	static _Atomic(uint32_t) colors;
	size_t page = lfpi_page_size();
	/* Relaxed: any spread will do. */
	size_t color = (1 + atomic_fetch_add_explicit(&colors, 1,
						      memory_order_relaxed) %
				    CACHE_COLORS) * LFPI_CACHELINE * 2;
	size_t bytes = color + sizeof(struct lfp_cache) +
		       pool->cache_size * sizeof(_Atomic(uint32_t));
	struct lfp_cache *c;
	char *p;

	bytes = (bytes + page - 1) & ~(page - 1);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	c = (struct lfp_cache *)(void *)(p + color);
	c->map = p;
	c->map_size = bytes;
	return c;
}

static void cache_unmap(struct lfp_cache *c)
{
	munmap(c->map, c->map_size);
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
	return lfpi_cache_value(c, cache_stat_ctr[i]);
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
	c->num = pool->hot.num;
	c->batch = pool->batch;
	c->quirks = pool->quirks;
	c->ctl_keep = lfpi_cache_ctl_keep(pool);
	c->spare = LFPI_NIL;
	c->tls_next = NULL;
	atomic_init(&h->active, 0);
	atomic_init(&h->ctl, c->ctl_keep);
	h->size = pool->cache_size;
	h->slots = c->slots;
	h->objs = pool->objs;
	h->stride = pool->stride;
	/* None in a bare pool, whose caches never look (nslots is 0). */
	h->gen = pool->bare ? NULL : lfpi_slot_gen(pool, 0);
	h->inv = pool->stride_inv;
	h->shift = pool->stride_tz;
	/* A pool with quirks checks every release out of line; an
	 * unchecked one without checks none (lfpool.h, bslots), for the
	 * slots committed now: a growable pool's slots above its limit are
	 * not objects yet, and those it grows into later go out of line,
	 * where lfpi_mark_free refuses what is above the limit then. The
	 * owner reads bslots plainly, so it is set once, here. Relaxed:
	 * a bound, read through nothing; the limit only grows, so a stale
	 * one is lower and sends more releases out of line, and a slot
	 * below it reaches the cache only from the thread whose
	 * allocation of it acquired the limit (lfpi_slab_bump). */
	h->nslots = pool->quirks || pool->bare ? 0 : pool->capacity;
	h->bslots = pool->bare && !pool->quirks ?
			    atomic_load_explicit(&pool->limit,
						 memory_order_relaxed) :
			    0;
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
		if (atomic_load_explicit(&c->state, memory_order_relaxed) != dead)
			continue;
		if (kind == LFPI_CACHE_IMPLICIT) {
			cache_claiming = c;
			atomic_signal_fence(memory_order_seq_cst);
		}
		/* Acquire: pairs with the release store of DEAD by the last
		 * owner, whose counters and empty count we take over. */
		if (atomic_compare_exchange_strong_explicit(
			    &c->state, &dead, kind, memory_order_acquire,
			    memory_order_relaxed)) {
			cache_stats_reset(c);
			return c;
		}
		/* Another thread's now: never ours in a child. */
		atomic_signal_fence(memory_order_seq_cst);
		cache_claiming = NULL;
	}
	if (!(c = cache_map(pool)))
		return NULL;
	if (kind == LFPI_CACHE_IMPLICIT) {
		cache_claiming = c;
		atomic_signal_fence(memory_order_seq_cst);
	}
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

/* Owner: hand the cache back to the registry for the next thread. If
 * mine is not NULL, it is the link of the thread's list that holds c, and
 * c leaves the list just before another thread may claim it. */
static void cache_release(struct lfp_cache *c, struct lfp_cache **mine)
{
	uint32_t spare;

	/* Undrained (a fork kept it), it is given up with its slots, which
	 * the next owner uses or a starving thread steals. */
	(void)lfpi_cache_drain(c);
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
	if (!mine) {
		atomic_store_explicit(&c->state, LFPI_CACHE_DEAD,
				      memory_order_release);
		return;
	}
	/*
	 * An exiting thread's cache leaves its list before another thread
	 * may claim it (see cache_thread_exit), and goes from EXITING to
	 * DEAD only if it still is EXITING: a fork from a signal handler in
	 * between sees it off our list, so the child gives it up itself,
	 * and may hand it out again before our frame goes on there, which
	 * must then not store DEAD over its new owner. (Relaxed on failure:
	 * that happens only in such a child, which has one thread.)
	 */
	*mine = c->tls_next;
	atomic_signal_fence(memory_order_seq_cst);
	uint32_t s = LFPI_CACHE_EXITING;

	atomic_compare_exchange_strong_explicit(&c->state, &s, LFPI_CACHE_DEAD,
						memory_order_release,
						memory_order_relaxed);
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
		atomic_signal_fence(memory_order_seq_cst);
		cache_mine = c;
		lfpi_cache_tab_put(c);
	}
	/* On the list now (or claimed none): see cache_claiming. */
	atomic_signal_fence(memory_order_seq_cst);
	cache_claiming = NULL;
	cache_making = false;
	return c;
}

struct lfp_cache *lfpi_cache_implicit_slow(struct lfp_pool *pool)
{
	struct lfp_cache **pp = &cache_mine, *c;

	if (cache_exited)
		return NULL;
	while ((c = *pp)) {
		if (c->pool == pool && c->pool_id == pool->id) {
			/* Not in the table: pools beyond its numbers, or
			 * one whose entry had no memory to grow, or the
			 * number's last pool's orphan still there. */
			lfpi_cache_tab_put(c);
			return c;
		}
		/* Acquire: pairs with the CAS in lfpi_cache_destroy_all. An
		 * orphan's pool is gone; the cache is ours to free. */
		if (atomic_load_explicit(&c->state, memory_order_acquire) ==
		    LFPI_CACHE_ORPHANED) {
			lfpi_cache_tab_drop(c);
			*pp = c->tls_next;
			/* Off the list before unmapped: a fork from a
			 * signal handler reads it (cache_thread_exit). */
			atomic_signal_fence(memory_order_seq_cst);
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
	struct lfp_cache *c;
	uint32_t s;

	(void)unused;
	/* From now on the thread's calls take the shared path (a signal
	 * handler's, a later key's destructor's): none makes a table again
	 * nor a cache that nothing would give back. */
	cache_exited = true;
	atomic_signal_fence(memory_order_seq_cst);
	/* The table first: its entries name the caches given back below. */
	lfpi_cache_tab_free();
	/*
	 * Each cache stays on cache_mine while we give it back, and leaves
	 * it before it is unmapped or another thread may claim it: a fork
	 * from a signal handler of ours reads the list (lfpi_cache_is_mine),
	 * and must leave our half-given-back cache to us, but never read an
	 * unmapped one nor take another thread's for ours.
	 */
	while ((c = cache_mine)) {
		s = LFPI_CACHE_IMPLICIT;
		/* Acquire on failure: pairs with the CAS in
		 * lfpi_cache_destroy_all; on success the pool stays alive
		 * until we store DEAD (it waits for EXITING to end), and the
		 * acquire is there only because C11 wants no failure order
		 * stronger than the success one (IMPLICIT is our own). */
		if (atomic_compare_exchange_strong_explicit(
			    &c->state, &s, LFPI_CACHE_EXITING,
			    memory_order_acquire, memory_order_acquire)) {
			cache_release(c, &cache_mine);
		} else {
			cache_mine = c->tls_next;
			atomic_signal_fence(memory_order_seq_cst);
			cache_unmap(c); /* orphaned: the pool is gone */
		}
	}
}

void lfpi_cache_destroy_all(struct lfp_pool *pool)
{
	struct lfp_cache *c, *next;
	uint32_t s;

	/* Acquire: pairs with the release CAS that published each cache.
	 * Kept though no check needs it: no other thread may use the pool
	 * during or after lfp_destroy (lfpool.h), so every use, those that
	 * made its caches among them, happens before it, which carries the
	 * publication as well. */
	c = atomic_load_explicit(&pool->caches, memory_order_acquire);
	for (; c; c = next) {
		next = c->reg_next;
		/* Acquire: pairs with the release CAS of DEAD in
		 * cache_release by an exiting thread, so its drain comes
		 * before our unmap. */
		while ((s = atomic_load_explicit(&c->state,
						 memory_order_acquire)) ==
		       LFPI_CACHE_EXITING)
			sched_yield();
		/*
		 * A live thread's cache becomes an orphan its thread frees.
		 * Release: pairs with its thread's acquire of ORPHANED (the
		 * failed CAS in cache_thread_exit, the load in
		 * lfpi_cache_implicit_slow), so our reads of the cache come
		 * before it is unmapped. Acquire on failure: as the load
		 * above, where an exiting thread stored DEAD since; on
		 * success only because C11 wants no failure order stronger
		 * than the success one. Its inline paths must never match a
		 * pool made later at this address, nor NULL (relaxed: see
		 * lfpi_cache_is_of in lfpool.h).
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
		sum += lfpi_cache_value(c, counter);
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
		cache_release(cache, NULL);
}

bool lfpi_cache_is_mine(const struct lfp_cache *c)
{
	/* The cache being claimed, unless it is EXITING: our claim never
	 * makes it so, so it is another thread's that took it first. */
	if (c == cache_claiming)
		return atomic_load_explicit(&c->state, memory_order_relaxed) !=
		       LFPI_CACHE_EXITING;
	for (const struct lfp_cache *m = cache_mine; m; m = m->tls_next)
		if (m == c)
			return true;
	return false;
}
