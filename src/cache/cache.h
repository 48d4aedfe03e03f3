/* SPDX-License-Identifier: MIT */
/*
 * The cache layer (cache/, above rcu/, below pool/): thread caches. The
 * fast path is inline in lfpool.h; here are the cache's layout, the
 * handshake with threads that empty idle caches, and the mechanics of the
 * slow paths: the folder's interface to the pool. Calls the depot, the
 * stack and the slab.
 */
#ifndef LFPOOL_CACHE_H
#define LFPOOL_CACHE_H

#include "lists/depot.h"
#include "memory/slab.h"


/* lfp_cache.state */
enum {
	LFPI_CACHE_DEAD,     /* in the registry, free for any thread to claim */
	LFPI_CACHE_EXPLICIT, /* owned through lfp_cache_create */
	LFPI_CACHE_IMPLICIT, /* owned by a thread through lfp_alloc/lfp_free */
	LFPI_CACHE_EXITING,  /* its thread is exiting and flushing it */
	LFPI_CACHE_ORPHANED, /* its pool is gone; its thread frees it */
};

/* lfp_cache.ctl: non-zero sends the owner out of its inline fast path. */
#define LFPI_CTL_STEAL 1u /* a thief may be emptying the cache: keep off */
#define LFPI_CTL_FLUSH 2u /* a thief found it busy: flush it when you can */
/* Set for the cache's life (lfp_cache.ctl_keep): the pool has quirks
 * (hooks, debug tools, strict releases; see pool_set_quirks), or
 * membarrier(2) is missing and every entry must be the seq_cst one. */
#define LFPI_CTL_SLOW 4u
/* No ctl read yet: the caller has not entered an operation. */
#define LFPI_CTL_OUT UINT32_MAX

/* The counters lfp_cache_stats reports (cache_stat_ctr in registry.c). */
#define LFPI_CACHE_STATS 9

/*
 * A thread cache: a LIFO array of free slot indices, two magazines deep
 * (Bonwick's loaded and previous magazines, laid end to end). When it is
 * empty, one magazine comes in from the depot; when it is full, the
 * colder magazine goes out whole; so right after either exchange it holds
 * one magazine and absorbs a magazine's worth of either operation before
 * the next. Owned by one thread at a time. The owner's fast path (inline,
 * in lfpool.h) uses loads and stores only; the words another thread may
 * read at any time (count, counters) are atomics it reads relaxed. Another
 * thread takes slots only through the steal handshake (steal.c).
 */
struct lfp_cache {
	struct lfpi_cache_hot hot; /* first: lfpool.h reads it */
	struct lfp_pool *pool;     /* hot.pool until orphaned, then still this */
	uint64_t pool_id;
	uint32_t num;              /* the pool's number (lfpi_cache_tab) */
	uint32_t batch;            /* slots per magazine */
	uint32_t quirks;           /* the pool's */
	uint32_t ctl_keep;         /* LFPI_CTL_SLOW or 0: ctl's lasting bits */
	uint32_t spare;            /* the owner's empty magazine, or LFPI_NIL */
	_Atomic(uint32_t) state;    /* LFPI_CACHE_* */
	void *map;                 /* its mapping (it starts in there) */
	size_t map_size;           /* bytes mapped for it */
	uint32_t fork_busy;        /* fork.c: its owner was inside an
				      operation as fork was prepared */
	uint32_t fork_hold;        /* how that fork holds it (fork_hold.c) */
	struct lfp_cache *reg_next;/* registry link, fixed once published */
	struct lfp_cache *tls_next;/* the owning thread's implicit caches */
	/*
	 * Written by the owner only (or by a thread holding the cache
	 * through the handshake). Of allocs and frees only those that did
	 * not go through slots[] count here: the others are hot.top's and
	 * hot.frees' (exchange.c, cache_counts).
	 */
	struct lfpi_counters ctr;
	/* Allocations folded out of hot.top's high part (every 2^50), and
	 * a sequence, odd while a fold changes it and hot.top together. */
	_Atomic(uint64_t) allocs_base;
	_Atomic(uint32_t) fold_seq;
	/* The counters' values when the cache was last claimed: lfp_cache_stats
	 * counts from here, while the pool's sums keep every count. */
	uint64_t base[LFPI_CACHE_STATS];
	uint32_t slots[];         /* plain: see struct lfpi_cache_hot */
};

/*
 * What an orphan's hot.pool holds: the cache's own address, which no pool
 * can have while the cache is mapped, and which is not NULL, so neither
 * a pool made later at the old pool's address nor a NULL pool matches.
 */
#define LFPI_ORPHAN(c) ((struct lfp_pool *)(void *)(c))

/* How an owner's entry to an operation is ordered against a thief: 0
 * seq_cst on both sides, LFPI_MB_SYSCALL membarrier(2), LFPI_MB_SERIAL
 * nothing at all (under Valgrind, which runs one thread at a time). */
#define LFPI_MB_SYSCALL 1
#define LFPI_MB_SERIAL 2
extern int lfpi_cache_membarrier;

/* ctl's lasting bits for a cache of pool (LFPI_CTL_BARE is lfpool.h's). */
static inline uint32_t lfpi_cache_ctl_keep(const struct lfp_pool *pool)
{
	return (pool->quirks || !lfpi_cache_membarrier ? LFPI_CTL_SLOW : 0) |
	       (pool->bare ? LFPI_CTL_BARE : 0);
}


/* table.c: make c, the thread's implicit cache of a pool (from
 * lfpi_cache_lookup; NULL: nothing), its entry for family class i
 * (lfpi_cache_cls in lfpool.h). */
void lfpi_cache_cls_put(struct lfp_cache *c, uint32_t i);
/*
 * Empty idle caches of pool (other than self) into the depot. Returns the
 * slots moved; adds the caches emptied to *emptied and failed CAS to
 * *retries.
 */
uint32_t lfpi_cache_steal(struct lfp_pool *pool, struct lfp_cache *self,
			  uint32_t *emptied, uint32_t *retries);
/* Set up what caches need once per process: 0 or -errno. */
int lfpi_cache_global_init(void);
/* Pool numbers (the threads' tables of implicit caches are indexed by
 * them): lfp_create takes one, lfp_destroy gives it back after
 * lfpi_cache_destroy_all. A pool beyond LFPI_POOL_NUMS has none
 * (LFPI_NIL). */
#define LFPI_POOL_NUMS 4096u
void lfpi_cache_number(struct lfp_pool *pool);
void lfpi_cache_unnumber(struct lfp_pool *pool);
/* At lfp_destroy: free or orphan every cache of the pool. */
void lfpi_cache_destroy_all(struct lfp_pool *pool);
/* Around fork(2): see fork.c. */
void lfpi_cache_fork_prepare(struct lfp_pool *pool);
void lfpi_cache_fork_parent(struct lfp_pool *pool);
void lfpi_cache_fork_child(struct lfp_pool *pool);
void lfpi_cache_fork_child_init(void);
/* Call fn on every slot parked in a cache; quiescent pools only. */
int lfpi_cache_walk(struct lfp_pool *pool, int (*fn)(uint32_t idx, void *arg),
		    void *arg);
uint64_t lfpi_cache_sum(const struct lfp_pool *pool, size_t counter,
			uint64_t *cached);

/* Owner-only counter: a load and a store, no read-modify-write. */
static inline void lfpi_cache_count(_Atomic(uint64_t) *ctr, uint64_t n)
{
	atomic_store_explicit(ctr, atomic_load_explicit(ctr, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Free slots in the cache now (relaxed: a reader's recent value). */
static inline uint32_t lfpi_cache_n(const struct lfp_cache *c)
{
	struct lfp_cache *m = (struct lfp_cache *)c; /* a load writes nothing */

	return (uint32_t)(atomic_load_explicit(&m->hot.top, memory_order_relaxed) &
			  LFPI_TOP_COUNT);
}

/* The slow paths' pieces, for the pool layer (pool.c, bulk.c). */
/*
 * An allocation's whole operation on the cache: enter it (*ctl is
 * LFPI_CTL_OUT), or finish the inline path's entry (*ctl is what it
 * read); pop a slot, refilling first if empty (that slot counts as a
 * miss); leave. LFPI_NIL if there was none, or if *ctl, as the operation
 * read it, asked us off (STEAL) or for the slots (FLUSH, answered).
 */
uint32_t lfpi_cache_pop(struct lfp_cache *c, uint32_t *ctl);
/*
 * A release's whole operation on the cache, slot idx already marked
 * free: enter it (ctl is LFPI_CTL_OUT), or finish the inline path's entry
 * (ctl is what it read); push idx, the colder magazine sent to the depot
 * first if the cache is full; leave. With a thief at the slots, or
 * asking for them, idx goes onto the free list.
 */
void lfpi_cache_put(struct lfp_cache *c, uint32_t idx, uint32_t ctl);
/* After a failed look with ctl holding STEAL: wait (outside the
 * operation) for the thief to let go; whether to look again. */
bool lfpi_cache_wait_thief(struct lfp_cache *c, uint32_t ctl);
/* One operation: up to n slot indices into objs (as uintptr_t), refilling
 * once (the first slot after it counts as a miss); 0 if ctl asks us off. */
size_t lfpi_cache_pop_run(struct lfp_cache *c, void **objs, size_t n);
/* One operation: idx[0..n), marked free, into the cache. */
void lfpi_cache_put_run(struct lfp_cache *c, const uint32_t *idx, uint32_t n);
/* Inside an operation: the count set to n by a move that is no
 * allocation or release (refill, flush, steal). */
void lfpi_cache_set_n(struct lfp_cache *c, uint32_t n);
/* Counter i of lfp_cache_stats' list since the cache was last claimed. */
uint64_t lfpi_cache_stat(const struct lfp_cache *c, unsigned i);
/* Whether a fork holds every cache (fork.c calls begin and end). */
void lfpi_cache_fork_begin(void);
void lfpi_cache_fork_end(void);
bool lfpi_cache_fork_busy(void);
/* Wait for that fork to end, at most LFPI_CACHE_FORK_WAIT_MS: true if it
 * did. */
bool lfpi_cache_fork_wait(void);
#define LFPI_CACHE_FORK_WAIT_MS 20

#endif /* LFPOOL_CACHE_H */
