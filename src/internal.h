/*
 * Internal types and prototypes of lfpool, grouped by the file that defines
 * them. Never installed.
 */
#ifndef LFPOOL_INTERNAL_H
#define LFPOOL_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lfpool.h"

#define LFPI_CACHELINE 64

/*
 * ThreadSanitizer cannot see inside Debian's uninstrumented liburcu: the
 * code that relies on its ordering states the edges with these (a no-op
 * in other builds). Shared by the library, its tests and the harness.
 */
#if defined(__SANITIZE_THREAD__)
#define LFPI_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LFPI_TSAN 1
#endif
#endif
#ifdef LFPI_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define lfpi_tsan_acquire(addr) __tsan_acquire(addr)
#define lfpi_tsan_release(addr) __tsan_release(addr)
#else
#define lfpi_tsan_acquire(addr) ((void)(addr))
#define lfpi_tsan_release(addr) ((void)(addr))
#endif

/* The "no slot" index: ends chains and marks an empty stack. */
#define LFPI_NIL UINT32_C(0xffffffff)

#if defined(__GNUC__)
#define LFPI_LIKELY(x) __builtin_expect(!!(x), 1)
#define LFPI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LFPI_NOINLINE __attribute__((noinline))
#else
#define LFPI_LIKELY(x) (x)
#define LFPI_UNLIKELY(x) (x)
#define LFPI_NOINLINE
#endif

/*
 * Per-slot metadata, kept beside the objects and never inside them, so the
 * library's links are atomic words that a racing reader may load without a
 * data race on the user's bytes (DESIGN.md, hard part 1).
 */
struct lfpi_slot {
	/* Next slot in this slot's chain; LFPI_NIL ends the chain. */
	_Atomic uint32_t next;
	/* On a chain's first slot while the chain is on the shared stack:
	 * the first slot of the chain below it. */
	_Atomic uint32_t batch_next;
	/*
	 * Generation and state in one word: odd while the object is live,
	 * even while it is free. It starts at 0 (free, never used) and is
	 * incremented on every allocation and every release, so it changes
	 * on every release and a live generation is never 0.
	 */
	_Atomic uint32_t gen;
	/*
	 * On a chain's first slot: its last slot. Plain, because only the
	 * thread that owns the chain reads or writes it; ownership moves
	 * through the stack's release/acquire.
	 */
	uint32_t tail;
};

static inline bool lfpi_gen_is_live(uint32_t gen)
{
	return gen & 1u;
}

/*
 * The generation a live slot takes when released. 0 means "never used"
 * (the ctor and the debug tools go by it), so the wrap after 2^32 steps
 * skips it: a slot released for the 2^31st time becomes 2, not 0.
 */
static inline uint32_t lfpi_gen_freed(uint32_t gen)
{
	return gen + 1 ? gen + 1 : 2;
}

/*
 * Event counters. Each thread adds to one shard of the pool (picked once
 * per thread), so counting never makes threads share a cache line; a
 * reader sums the shards.
 */
struct lfpi_counters {
	alignas(LFPI_CACHELINE) _Atomic uint64_t allocs;
	_Atomic uint64_t frees;
	_Atomic uint64_t failed_allocs;
	_Atomic uint64_t rejected_frees;
	_Atomic uint64_t cas_retries;
	_Atomic uint64_t cache_misses; /* the rest only ever move in caches */
	_Atomic uint64_t refills;
	_Atomic uint64_t flushes;
	_Atomic uint64_t steals;
	_Atomic uint64_t deferred;  /* lfp_free_deferred calls accepted */
	_Atomic uint64_t reclaimed; /* deferred slots back in the pool */
	_Atomic uint64_t grown;
	_Atomic uint64_t trimmed_bytes;
	_Atomic uint64_t reclaims;
};

#define LFPI_SHARDS 16

static inline void lfpi_counters_init(struct lfpi_counters *c)
{
	atomic_init(&c->allocs, 0);
	atomic_init(&c->frees, 0);
	atomic_init(&c->failed_allocs, 0);
	atomic_init(&c->rejected_frees, 0);
	atomic_init(&c->cas_retries, 0);
	atomic_init(&c->cache_misses, 0);
	atomic_init(&c->refills, 0);
	atomic_init(&c->flushes, 0);
	atomic_init(&c->steals, 0);
	atomic_init(&c->deferred, 0);
	atomic_init(&c->reclaimed, 0);
	atomic_init(&c->grown, 0);
	atomic_init(&c->trimmed_bytes, 0);
	atomic_init(&c->reclaims, 0);
}

/* The Treiber stack of free chains: {tag:32 | index:32} in one word. */
struct lfpi_stack {
	alignas(LFPI_CACHELINE) _Atomic uint64_t head;
};

struct lfp_pool {
	/* Read-only after lfp_create. */
	char *objs;               /* the object region */
	struct lfpi_slot *slots;  /* metadata, one per slot */
	size_t stride;            /* bytes from one object to the next */
	size_t region_size;       /* capacity * stride */
	uint32_t capacity;
	uint32_t stride_shift;    /* log2(stride) if a power of two, else 0 */
	uint32_t flags;
	void *map;                /* what lfp_create mapped, or NULL */
	size_t map_size;
	uint64_t id;              /* unique per pool ever made in the process */
	size_t obj_size;
	uint32_t debug;           /* LFPI_DBG_*: tools watching the objects */
	/* Non-zero if releases or allocations need more than the bare
	 * minimum (hooks, debug tools, strict releases): caches then leave
	 * their fast path for lfpi_hand_out and lfpi_release_slot. */
	uint32_t quirks;
	uint32_t exhaust;         /* enum lfp_exhaust */
	uint32_t reclaim_tries;
	int (*reclaim)(struct lfp_pool *pool, void *arg);
	void (*ctor)(void *obj, void *arg);
	void (*on_alloc)(void *obj, void *arg);
	void (*on_free)(void *obj, void *arg);
	void *hook_arg;
	uint32_t cache_size;      /* slots per thread cache */
	uint32_t batch;           /* slots per exchange with the shared stack */
	char name[LFP_NAME_MAX + 1]; /* lfp_config.name, cut; "" if none */

	/* Shared and hot: each on its own cache line. */
	struct lfpi_stack free;
	/* Slots [bump, limit) were never handed out (lazy first touch). */
	alignas(LFPI_CACHELINE) _Atomic uint32_t bump;
	/*
	 * Slots [0, limit) are usable: capacity grows by raising it, up to
	 * `capacity`, which is the most the pool was laid out for (its
	 * max_capacity). Metadata exists for all of them.
	 */
	_Atomic uint32_t limit;
	/* Odd while lfp_trim has the free list aside; it changes on every
	 * trim that took slots aside (grow.c). */
	_Atomic uint32_t trim_seq;
	/* Set once lfp_trim gave pages back: their slots read as zeroes. */
	_Atomic uint32_t trimmed;
	/* Pools with a ctor: a bit per slot whose memory lfp_trim gave
	 * back, so that its next handout constructs it again (trim.c). */
	_Atomic(_Atomic uint64_t *) ctor_due;

	/* Rare paths: growth, trim, the deferred-release table. */
	pthread_mutex_t grow_lock;
	_Atomic(struct lfpi_rcu_slot *) rcu; /* mapped on first use (rcu.c) */
	size_t rcu_size;

	/*
	 * LFP_F_WAIT_DEFERRED (rcu.c): every deferred slot that comes back
	 * advances rcu_epoch, on which allocations waiting for one sleep;
	 * rcu_sleepers is set while one may sleep. On their own line: the
	 * call_rcu thread writes it once per slot.
	 */
	alignas(LFPI_CACHELINE) _Atomic uint32_t rcu_epoch;
	_Atomic uint32_t rcu_sleepers;
	_Atomic uint64_t rcu_waits; /* sleeps, for the tests */

	/* Every cache ever made for this pool; pushed, never unlinked. */
	alignas(LFPI_CACHELINE) _Atomic(struct lfp_cache *) caches;

	/* fork.c, under its lock: the list of pools, and the caches that
	 * fork_prepare took (the registry's head then). */
	struct lfp_pool *fork_next, *fork_prev;
	struct lfp_cache *fork_caches;

	struct lfpi_counters shard[LFPI_SHARDS];
};

/* slab.c: sizing, alignment, index <-> pointer, memory. */

#define LFPI_KNOWN_FLAGS \
	(LFP_F_NO_CACHE | LFP_F_STRICT | LFP_F_POISON | LFP_F_WAIT_DEFERRED)

struct lfpi_layout {
	size_t align;     /* object alignment */
	size_t stride;    /* object size rounded up to align */
	size_t slots_off; /* offset of the metadata array */
	size_t objs_off;  /* offset of the object region */
	size_t total;     /* bytes for header, metadata and objects */
	size_t base_align;/* alignment the whole block needs */
	uint32_t cache_size; /* slots per thread cache */
	uint32_t batch;      /* slots per exchange */
	uint32_t initial;    /* slots usable at creation */
	uint32_t slots;      /* slots laid out (max_capacity) */
};

int lfpi_layout(const struct lfp_config *cfg, struct lfpi_layout *out);
void *lfpi_map(size_t size, size_t commit, size_t align, void **map,
	       size_t *map_size);
size_t lfpi_page_size(void);
/* Make [addr, addr+len) usable: 0 or -errno. A pointer so that tests can
 * inject a failure to get memory. */
extern int (*lfpi_commit)(void *addr, size_t len);
int lfpi_commit_mprotect(void *addr, size_t len);
void lfpi_unmap(void *map, size_t map_size);

/*
 * Index of the slot that starts at ptr, or LFPI_NIL with *err set to
 * -EFAULT (outside the region) or -EINVAL (inside, not a slot start).
 */
static inline uint32_t lfpi_slot_of(const struct lfp_pool *pool,
				    const void *ptr, int *err)
{
	uintptr_t off = (uintptr_t)ptr - (uintptr_t)pool->objs;
	size_t idx;

	/* Unsigned wrap makes pointers below objs huge, hence outside. */
	if (LFPI_UNLIKELY(off >= pool->region_size)) {
		*err = -EFAULT;
		return LFPI_NIL;
	}
	if (pool->stride_shift)
		idx = off >> pool->stride_shift;
	else
		idx = off / pool->stride;
	if (LFPI_UNLIKELY(idx * pool->stride != off)) {
		*err = -EINVAL;
		return LFPI_NIL;
	}
	return (uint32_t)idx;
}

static inline void *lfpi_obj(const struct lfp_pool *pool, uint32_t idx)
{
	return pool->objs + (size_t)idx * pool->stride;
}

/* debug.c: the tools that watch objects (fill, ASan, Valgrind). */

#define LFPI_DBG_FILL 1u     /* fill released objects, check on reuse */
#define LFPI_DBG_ASAN 2u     /* poison released objects for ASan */
#define LFPI_DBG_VALGRIND 4u /* memcheck mempool client requests */
#define LFPI_DBG_REPORT 8u   /* name the slot of a refused release */

/* Set pool->debug and tell the tools about the pool. */
void lfpi_debug_init(struct lfp_pool *pool);
void lfpi_debug_destroy(struct lfp_pool *pool);
/* Slot idx was just taken (fresh: never used); slot idx was released. */
void lfpi_debug_alloc(struct lfp_pool *pool, uint32_t idx, bool fresh);
void lfpi_debug_free(struct lfp_pool *pool, uint32_t idx);
void lfpi_debug_rejected(struct lfp_pool *pool, const void *obj, int err);

/* stack.c: the tagged Treiber stack of free chains. */

void lfpi_stack_init(struct lfpi_stack *s);
/*
 * Push the chain first -> ... -> last (linked by next; last's next may be
 * anything, it is set to LFPI_NIL). Returns the number of failed CAS.
 */
uint32_t lfpi_stack_push(struct lfpi_stack *s, struct lfpi_slot *slots,
			 uint32_t first, uint32_t last);
/*
 * Pop one chain. Returns its first slot (follow next to LFPI_NIL), or
 * LFPI_NIL if the stack is empty. *retries gets the failed CAS count.
 */
uint32_t lfpi_stack_pop(struct lfpi_stack *s, struct lfpi_slot *slots,
			uint32_t *retries);
/* Take every chain at once: returns the top chain's first slot (chains
 * linked by batch_next, as on the stack) or LFPI_NIL. */
uint32_t lfpi_stack_pop_all(struct lfpi_stack *s);
/* Whether the stack looked empty a moment ago. */
bool lfpi_stack_is_empty(struct lfpi_stack *s);
/*
 * Call fn on every slot on the stack, top chain first, until fn returns
 * non-zero (which is returned). Only while no thread changes the stack;
 * fn must stop the walk if it sees a slot twice (a cycle).
 */
int lfpi_stack_walk(struct lfpi_stack *s, struct lfpi_slot *slots,
		    int (*fn)(uint32_t idx, void *arg), void *arg);

/* pool.c: the shared paths and the counters. */

struct lfpi_counters *lfpi_my_shard(struct lfp_pool *pool);

/*
 * How diagnostics name a pool: `pool "particles" (0x...)`, or `pool 0x...`
 * without a name; control characters of the name show as '?', so a
 * report stays on its line. Writes into buf and returns it.
 */
#define LFPI_LABEL_MAX (sizeof("pool \"\" (0x)") + LFP_NAME_MAX + 2 * sizeof(void *))
const char *lfpi_pool_label(const struct lfp_pool *pool,
			    char buf[LFPI_LABEL_MAX]);
/*
 * Make live slot idx free: 0, or -EALREADY if it was not live. With
 * `strict` a CAS decides between racing releases of one object, so
 * exactly one wins; without, a load and a store catch every release of a
 * free object except one that races with another release of it.
 *
 * With expect != 0 (a handle's generation; implies strict) only that
 * generation is released: -ESTALE if the slot holds another one, so a
 * stale handle never touches the slot's new owner. Handles and pointers
 * share this one CAS loop.
 *
 * Relaxed: the word only decides which release wins; the object itself
 * reaches its next owner through the stack's or the cache's release and
 * acquire.
 */
static inline int lfpi_mark_free(struct lfp_pool *pool, uint32_t idx,
				 bool strict, uint32_t expect)
{
	_Atomic uint32_t *g = &pool->slots[idx].gen;
	uint32_t gen = atomic_load_explicit(g, memory_order_relaxed);

	if (LFPI_LIKELY(!strict)) {
		if (LFPI_UNLIKELY(!lfpi_gen_is_live(gen)))
			return -EALREADY;
		atomic_store_explicit(g, lfpi_gen_freed(gen), memory_order_relaxed);
		return 0;
	}
	do {
		if (expect && gen != expect)
			return -ESTALE;
		if (!lfpi_gen_is_live(gen))
			return -EALREADY;
	} while (!atomic_compare_exchange_weak_explicit(
		g, &gen, lfpi_gen_freed(gen), memory_order_relaxed,
		memory_order_relaxed));
	return 0;
}

/*
 * A release of slot idx was accepted; the slot is free but still ours.
 * Run on_free once, then let the debug tools poison the object, unless
 * the release is deferred: RCU readers may still read it until the grace
 * period ends (rcu.c poisons it then).
 */
static inline void lfpi_released(struct lfp_pool *pool, uint32_t idx,
				  bool deferred)
{
	if (LFPI_UNLIKELY(pool->on_free))
		pool->on_free(lfpi_obj(pool, idx), pool->hook_arg);
	if (LFPI_UNLIKELY(pool->debug) && !deferred)
		lfpi_debug_free(pool, idx);
}

#define LFPI_REL_STRICT 1u   /* decide racing releases with a CAS */
#define LFPI_REL_DEFERRED 2u /* the slot returns after a grace period */

/*
 * Check obj and mark its slot free. Returns the slot, or LFPI_NIL with
 * *err = -EINVAL, -EFAULT or -EALREADY as documented for lfp_free.
 */
static inline uint32_t lfpi_release_slot(struct lfp_pool *pool, void *obj,
					 int *err, unsigned how)
{
	uint32_t idx;

	if (LFPI_UNLIKELY(!obj)) {
		*err = -EINVAL;
		return LFPI_NIL;
	}
	idx = lfpi_slot_of(pool, obj, err);
	if (LFPI_UNLIKELY(idx == LFPI_NIL) ||
	    LFPI_UNLIKELY(*err = lfpi_mark_free(pool, idx,
						how & LFPI_REL_STRICT, 0))) {
		if (LFPI_UNLIKELY(pool->debug))
			lfpi_debug_rejected(pool, obj, *err);
		return LFPI_NIL;
	}
	lfpi_released(pool, idx, how & LFPI_REL_DEFERRED);
	return idx;
}

/* pool.c (continued): the shared path that caches fall back on. */

/* Take one slot from the shared stack or the fresh ones, or LFPI_NIL. */
uint32_t lfpi_pool_take(struct lfp_pool *pool, uint32_t *retries);
/* Take up to n never-used slots: returns how many, the first in *first. */
uint32_t lfpi_pool_bump(struct lfp_pool *pool, uint32_t n, uint32_t *first);
/*
 * Give slot idx, just marked free, back to the pool the way lfp_free does
 * (through the thread's cache unless LFP_F_NO_CACHE); or, if err < 0,
 * count a refused release. Returns err.
 */
int lfpi_finish_release(struct lfp_pool *pool, uint32_t idx, int err);
/* Make slot idx live (its generation odd): the caller owns the slot.
 * Returns the generation it had (0: never used). */
static inline uint32_t lfpi_mark_live(struct lfp_pool *pool, uint32_t idx)
{
	_Atomic uint32_t *g = &pool->slots[idx].gen;
	/*
	 * A load and a store suffice: nobody else may change a free slot we
	 * hold. Relaxed: the release that made it even happens-before our
	 * taking it (through the stack or a cache), so we read that value.
	 */
	uint32_t gen = atomic_load_explicit(g, memory_order_relaxed);

	atomic_store_explicit(g, gen + 1, memory_order_relaxed);
	return gen;
}

/* trim.c: giving idle memory back. */

/* Whether slot idx, being handed out, lost its constructed state to a
 * trim (and so needs ctor again); clears the mark. */
bool lfpi_trim_reborn(struct lfp_pool *pool, uint32_t idx);
/* At lfp_destroy: unmap what trims mapped. */
void lfpi_trim_destroy(struct lfp_pool *pool);

/*
 * Hand slot idx, just taken, to the caller: make it live, let the debug
 * tools see it, construct it if it was never used (or trimmed since), run
 * on_alloc. Always called after the caller left its cache's operation, so
 * the hooks may call back into the pool, through the same cache too.
 */
static inline void *lfpi_hand_out(struct lfp_pool *pool, uint32_t idx)
{
	void *obj = lfpi_obj(pool, idx);
	uint32_t gen = lfpi_mark_live(pool, idx);

	if (LFPI_UNLIKELY(pool->debug))
		lfpi_debug_alloc(pool, idx, gen == 0);
	/* The mark is cleared whenever ctor runs, so it runs once. */
	if (LFPI_UNLIKELY(pool->ctor) &&
	    (lfpi_trim_reborn(pool, idx) || gen == 0))
		pool->ctor(obj, pool->hook_arg);
	if (LFPI_UNLIKELY(pool->on_alloc))
		pool->on_alloc(obj, pool->hook_arg);
	return obj;
}

/* The same, out of line, for caches of pools with quirks. */
void *lfpi_hand_out_quirky(struct lfp_pool *pool, uint32_t idx);
uint32_t lfpi_release_quirky(struct lfp_pool *pool, void *obj, int *err);

/* cache.c: per-thread magazines. */

/* lfp_cache.state */
enum {
	LFPI_CACHE_DEAD,     /* in the registry, free for any thread to claim */
	LFPI_CACHE_EXPLICIT, /* owned through lfp_cache_create */
	LFPI_CACHE_IMPLICIT, /* owned by a thread through lfp_alloc/lfp_free */
	LFPI_CACHE_EXITING,  /* its thread is exiting and flushing it */
	LFPI_CACHE_ORPHANED, /* its pool is gone; its thread frees it */
};

/* lfp_cache.ctl: requests from other threads, 0 on the fast path. */
#define LFPI_CTL_STEAL 1u /* a thief may be emptying the cache: keep off */
#define LFPI_CTL_FLUSH 2u /* a thief found it busy: flush it when you can */

/* The counters lfp_cache_stats reports (cache_stat_ctr in cache.c). */
#define LFPI_CACHE_STATS 9

/*
 * A magazine of free slot indices, LIFO, owned by one thread at a time.
 * The owner's fast path uses loads and stores only; the words another
 * thread may read (count, slots, counters) are atomics it reads relaxed.
 * Another thread takes slots only through the steal handshake in cache.c.
 */
struct lfp_cache {
	struct lfp_pool *pool;
	uint64_t pool_id;
	uint32_t size;             /* slots[] holds this many */
	uint32_t batch;            /* slots per exchange */
	uint32_t quirks;           /* the pool's, kept beside count */
	_Atomic uint32_t count;    /* slots[0..count) are free slots */
	_Atomic uint32_t active;   /* 1 while the owner is in an operation */
	_Atomic uint32_t ctl;      /* LFPI_CTL_* */
	_Atomic uint32_t state;    /* LFPI_CACHE_* */
	size_t map_size;           /* bytes mapped for it */
	uint32_t fork_busy;        /* fork.c: its owner was inside an
				      operation as fork was prepared */
	struct lfp_cache *reg_next;/* registry link, fixed once published */
	struct lfp_cache *tls_next;/* the owning thread's implicit caches */
	struct lfpi_counters ctr;  /* written by the owner only */
	/* ctr's values when the cache was last claimed: lfp_cache_stats
	 * counts from here, while the pool's sums keep every count. */
	uint64_t base[LFPI_CACHE_STATS];
	_Atomic uint32_t slots[];
};

/* How an owner's entry to an operation is ordered against a thief. */
extern int lfpi_cache_membarrier;

/* The calling thread's cache for pool, made on first use; NULL if none
 * could be made (the caller then uses the shared path). */
struct lfp_cache *lfpi_cache_implicit_slow(struct lfp_pool *pool);
/* Slow paths: entered with the cache active (lfpi_cache_enter returned
 * ctl); they leave it. */
void *lfpi_cache_alloc_slow(struct lfp_cache *c, uint32_t ctl);
void lfpi_cache_put_slow(struct lfp_cache *c, uint32_t idx, uint32_t ctl);
/*
 * Empty idle caches of pool (other than self) into the shared stack.
 * Returns the slots moved; adds the caches emptied to *emptied and failed
 * CAS to *retries.
 */
uint32_t lfpi_cache_steal(struct lfp_pool *pool, struct lfp_cache *self,
			  uint32_t *emptied, uint32_t *retries);
/* Set up what caches need once per process: 0 or -errno. */
int lfpi_cache_global_init(void);
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

#if defined(__GNUC__)
#define LFPI_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define LFPI_TLS _Thread_local
#endif
extern LFPI_TLS struct lfp_cache *lfpi_cache_last;

static inline struct lfp_cache *lfpi_cache_implicit(struct lfp_pool *pool)
{
	struct lfp_cache *c = lfpi_cache_last;

	/* The id tells a new pool from a destroyed one at the same address. */
	if (LFPI_LIKELY(c && c->pool == pool && c->pool_id == pool->id))
		return c;
	return lfpi_cache_implicit_slow(pool);
}

/* Owner-only counter: a load and a store, no read-modify-write. */
static inline void lfpi_cache_count(_Atomic uint64_t *ctr, uint64_t n)
{
	atomic_store_explicit(ctr, atomic_load_explicit(ctr, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/*
 * Enter an operation on the cache's slots. Returns the pending requests
 * (LFPI_CTL_*): 0 means the fast path may go on.
 *
 * This is one side of a Dekker handshake with the thief in cache.c:
 * owner: active = 1, then read ctl; thief: set ctl, then read active. One
 * of them must see the other's write. With membarrier(2) the thief's
 * system call puts a full barrier into every running thread, so the owner
 * needs only to keep the compiler from swapping the store and the load;
 * without it both sides use seq_cst operations.
 */
static inline uint32_t lfpi_cache_enter(struct lfp_cache *c)
{
	if (LFPI_LIKELY(lfpi_cache_membarrier)) {
		atomic_store_explicit(&c->active, 1, memory_order_relaxed);
		/* Compiler-only: the CPU barrier comes from the thief's
		 * membarrier, see lfpi_cache_steal in cache.c. */
		atomic_signal_fence(memory_order_seq_cst);
		/* Acquire: pairs with the thief's release when it clears
		 * LFPI_CTL_STEAL, so we see the count it left. */
		return atomic_load_explicit(&c->ctl, memory_order_acquire);
	}
	/* seq_cst: pairs with the thief's seq_cst CAS on ctl and load of
	 * active (the Dekker pattern needs a single total order). */
	atomic_exchange_explicit(&c->active, 1, memory_order_seq_cst);
	return atomic_load_explicit(&c->ctl, memory_order_seq_cst);
}

static inline void lfpi_cache_leave(struct lfp_cache *c)
{
	/* Release: pairs with the thief's acquire load of active, so a thief
	 * that sees 0 also sees our slots, count and object writes. */
	atomic_store_explicit(&c->active, 0, memory_order_release);
}

static inline void *lfpi_cache_alloc(struct lfp_cache *c)
{
	struct lfp_pool *pool = c->pool;
	uint32_t ctl = lfpi_cache_enter(c), n, idx;

	n = atomic_load_explicit(&c->count, memory_order_relaxed);
	if (LFPI_UNLIKELY(ctl || n == 0))
		return lfpi_cache_alloc_slow(c, ctl);
	idx = atomic_load_explicit(&c->slots[n - 1], memory_order_relaxed);
	atomic_store_explicit(&c->count, n - 1, memory_order_relaxed);
	lfpi_cache_leave(c);
	lfpi_cache_count(&c->ctr.allocs, 1);
	if (LFPI_UNLIKELY(c->quirks))
		return lfpi_hand_out_quirky(pool, idx);
	lfpi_mark_live(pool, idx);
	return lfpi_obj(pool, idx);
}

/* Put slot idx, already marked free, into the cache. */
static inline void lfpi_cache_put(struct lfp_cache *c, uint32_t idx)
{
	uint32_t ctl = lfpi_cache_enter(c), n;

	n = atomic_load_explicit(&c->count, memory_order_relaxed);
	if (LFPI_UNLIKELY(ctl || n == c->size)) {
		lfpi_cache_put_slow(c, idx, ctl);
		return;
	}
	atomic_store_explicit(&c->slots[n], idx, memory_order_relaxed);
	atomic_store_explicit(&c->count, n + 1, memory_order_relaxed);
	lfpi_cache_leave(c);
	lfpi_cache_count(&c->ctr.frees, 1);
}

/* lfp_free through cache c: check obj, mark it free, keep it. */
static inline int lfpi_cache_free(struct lfp_cache *c, void *obj)
{
	struct lfp_pool *pool = c->pool;
	int err = 0;
	uint32_t idx;

	if (LFPI_UNLIKELY(c->quirks))
		idx = lfpi_release_quirky(pool, obj, &err);
	else if (LFPI_UNLIKELY(!obj))
		idx = LFPI_NIL, err = -EINVAL;
	else if ((idx = lfpi_slot_of(pool, obj, &err)) != LFPI_NIL &&
		 LFPI_UNLIKELY(err = lfpi_mark_free(pool, idx, false, 0)))
		idx = LFPI_NIL;
	if (LFPI_UNLIKELY(idx == LFPI_NIL)) {
		lfpi_cache_count(&c->ctr.rejected_frees, 1);
		return err;
	}
	lfpi_cache_put(c, idx);
	return 0;
}

/* grow.c: exhaustion policies, growth, reserve, trim. */

/*
 * What an allocation that may find the pool exhausted must remember from
 * before its first look at the free list: the trim sequence it saw, and
 * how many times it called reclaim.
 */
struct lfpi_want {
	uint32_t trim_seq;
	uint32_t attempt;
	uint32_t rcu_epoch; /* deferred slots come back: see rcu.c */
};

/*
 * Start an allocation's slow path, before its first pop. Acquire: pairs
 * with the release store that ends lfp_trim, so a trim that ended before
 * is seen whole (its slots are back on the list).
 */
static inline void lfpi_want_init(struct lfp_pool *pool, struct lfpi_want *w)
{
	w->trim_seq = atomic_load_explicit(&pool->trim_seq, memory_order_acquire);
	w->attempt = 0;
	/* Acquire: pairs with the increment in rcu_wake (rcu.c), which
	 * follows the push of a reclaimed slot: that slot is on the list
	 * before our first pop looks. */
	w->rcu_epoch = atomic_load_explicit(&pool->rcu_epoch, memory_order_acquire);
}

/*
 * An allocation found the pool exhausted (after stealing). If a trim had
 * the free list aside at any time since lfpi_want_init, wait for it to
 * end and try again; with LFP_F_WAIT_DEFERRED, while deferred releases
 * are pending, wait for one to come back and try again (lfpi_rcu_wait);
 * otherwise apply the pool's policy. Returns true if the allocation
 * should try again.
 */
bool lfpi_exhausted(struct lfp_pool *pool, struct lfpi_want *w);

/* fork.c: keeping pools usable in a child of fork. */

/* Set up the fork handlers once per process: 0 or -errno. */
int lfpi_fork_global_init(void);
/* A pool joins the list the handlers walk at lfp_create, leaves it at
 * lfp_destroy. */
void lfpi_fork_add(struct lfp_pool *pool);
void lfpi_fork_remove(struct lfp_pool *pool);
/* Whether another thread is between fork's prepare and parent handlers,
 * holding every cache. */
bool lfpi_fork_busy(void);
/* Wait for that fork to end, at most LFPI_FORK_WAIT_MS: true if it did. */
bool lfpi_fork_wait(void);
#define LFPI_FORK_WAIT_MS 20
/* An allocation found the pool exhausted: if a fork holds the caches,
 * wait for it (bounded) and return true to look again. */
static inline bool lfpi_fork_waited(void)
{
	return lfpi_fork_busy() && lfpi_fork_wait();
}

/* rcu.c: deferred release. */

struct lfpi_rcu_slot;
/* At lfp_destroy: wait for pending deferred releases, unmap the table. */
void lfpi_rcu_destroy(struct lfp_pool *pool);
/*
 * An allocation found a pool with LFP_F_WAIT_DEFERRED exhausted. If a
 * deferred slot came back since w was last looked at, return true at
 * once; if some are pending and the caller may wait for a grace period,
 * sleep until one comes back (or a while) and return true. Otherwise
 * (none pending, or inside a read-side section or a call_rcu callback)
 * return false: the policy applies.
 */
bool lfpi_rcu_wait(struct lfp_pool *pool, struct lfpi_want *w);

/* debug.c: consistency checks for tests and the stress harness. */

struct lfpi_census {
	uint64_t live;   /* slots whose generation says live */
	uint64_t listed; /* slots on the shared free stack */
	uint64_t cached; /* slots parked in caches */
	uint64_t fresh;  /* slots never handed out */
	uint64_t deferred; /* free, waiting for an RCU grace period */
};

/*
 * Walk the pool while no other thread uses it and check that every slot
 * is exactly one of: live, on the free stack, in a cache, never used; and that the
 * counters agree. Fills *out. Returns 0, or -EUCLEAN with a message in
 * msg (len bytes) naming the first problem and its slot.
 */
int lfpi_audit(struct lfp_pool *pool, struct lfpi_census *out, char *msg,
	       size_t len);

#endif /* LFPOOL_INTERNAL_H */
