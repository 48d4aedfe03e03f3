/* SPDX-License-Identifier: MIT */
/*
 * lfpool: a thread-safe, lock-free pool of fixed-size objects.
 *
 * One pool holds objects of one size in memory taken up front. Allocation
 * and release are O(1) and lock-free, through caches of free slots, and a
 * pool never moves an object. A family serves objects of many sizes; a
 * handle names one object for one lifetime. The library never calls
 * malloc (see lfpool(7), DESCRIPTION).
 *
 * Conventions: setup calls return 0 or a negative errno value; allocation
 * returns NULL only when the pool is exhausted; "Thread safety:" says who
 * may call a function concurrently with whom, "Progress:" whether it is
 * wait-free, lock-free or blocking. A contract that spans many calls is a
 * section of lfpool(7), pointed to where it matters, as in "see
 * lfpool(7), FORK".
 */
#ifndef LFPOOL_H
#define LFPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#if defined(__GNUC__) && !defined(__clang__)
/* C allows a struct and a function of one name (lfp_stats,
 * lfp_family_stats); g++ -Wshadow says the function hides the struct's
 * constructor. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
#endif

#if defined(__GNUC__) && !defined(LFP_STATIC_BUILD)
#define LFP_API __attribute__((visibility("default")))
#else
#define LFP_API
#endif

/*
 * The version of lfpool this header belongs to, MAJOR.MINOR.PATCH: the
 * version configure.ac's AC_INIT gives the package (a test checks that
 * they agree). Compare with lfp_version to learn which library a program
 * runs with.
 */
#define LFP_VERSION_MAJOR 0
#define LFP_VERSION_MINOR 1
#define LFP_VERSION_PATCH 0

/*
 * The version of the library the program runs with, "MAJOR.MINOR.PATCH"
 * (e.g. "0.1.0"). A program built against one version may run with
 * another; the LFP_VERSION_* macros say which header it was built with.
 *
 * Returns a string in static storage, never NULL.
 * Thread safety: any thread, any time, even before any pool exists.
 * Progress: wait-free.
 */
LFP_API const char *lfp_version(void);

/*
 * What an error code of lfpool means for a pool, in a sentence: for
 * -EALREADY "object already free: a double release, or a slot that was
 * never allocated", where strerror(EALREADY) says "Operation already in
 * progress". err is what a call returned (a negative errno value), or
 * its positive value. Each text is in the C API's terms, for C and C++
 * callers alike, even that of -EBUSY, which only lfpool.hpp's create
 * functions return.
 *
 * Returns a string in static storage, never NULL: "success" for 0, and
 * one beginning "unknown error" for a code lfpool never returns.
 * Thread safety: any thread, any time; async-signal-safe.
 * Progress: wait-free.
 */
LFP_API const char *lfp_strerror(int err);

/* The largest capacity a pool can have: indices 2^32-2 and 2^32-1 are reserved. */
#define LFP_MAX_CAPACITY UINT32_C(0xfffffffe)

/* Returned by lfp_index_of for a pointer that is not an object of the pool. */
#define LFP_NO_INDEX UINT32_C(0xffffffff)

/*
 * Caller-provided memory (lfp_config.memory) must be aligned to this many
 * bytes, or to the object alignment if that is larger. Declare a static
 * buffer with alignas(LFP_MEMORY_ALIGN).
 */
#define LFP_MEMORY_ALIGN 64

/* Flags for lfp_config.flags. Unknown bits are rejected with -EINVAL. */
#define LFP_F_NONE 0u
/* lfp_alloc and lfp_free skip the per-thread caches and work on the shared
 * free list directly (explicit caches still work). Every release is
 * checked atomically, as with LFP_F_STRICT, explicit caches' included;
 * with LFP_F_UNCHECKED (below) releases are not checked at all. */
#define LFP_F_NO_CACHE (1u << 0)
/* Catch a double release even when it races with another release of the
 * same object, at the price of an atomic read-modify-write per release. */
#define LFP_F_STRICT (1u << 1)

/* What an allocation does when the pool is exhausted (lfp_config.exhaust). */
enum lfp_exhaust {
	LFP_EXHAUST_NULL = 0, /* return NULL (the default) */
	LFP_EXHAUST_GROW,     /* grow the pool, doubling, up to max_capacity */
	LFP_EXHAUST_RECLAIM,  /* call reclaim(), which may release a victim,
				 then try again, reclaim_tries times at most */
	LFP_EXHAUST_ABORT,    /* print the pool's stats and abort(): for pools
				 that must never overflow */
};

/*
 * Fill released objects with 0x1deadb0b and check the fill when they are
 * allocated again: a write after release is reported, naming the pool and
 * the slot, and the program aborts. Always on in --enable-debug builds;
 * not in pools with a ctor, nor under Valgrind (lfpool(7), MEMORY CHECKERS).
 */
#define LFP_F_POISON (1u << 2)

/*
 * Ask for transparent huge pages (madvise MADV_HUGEPAGE) on the memory the
 * pool maps for itself, so that walks and lfp_resolve miss the TLB less:
 * advice, and memory then becomes resident 2 MiB at a time (see
 * lfpool(7), HUGE PAGES).
 */
#define LFP_F_HUGEPAGE (1u << 3)

/*
 * An allocation that finds the pool exhausted while slots released with
 * lfp_free_deferred are pending waits for one to come back (about 10 ms;
 * never inside a read-side critical section) before applying the exhaust
 * policy; a thread that holds a lock a reader needs must not allocate from
 * such a pool. See lfpool(7), DEFERRED RELEASE (and FORK, after a fork).
 */
#define LFP_F_WAIT_DEFERRED (1u << 4)

/*
 * A pool that keeps no generation word, for objects that are never named
 * by handle nor walked (handles and walks are refused): 4 bytes of
 * metadata a slot, not 8. In a release build a double release, or the
 * release of an object never allocated, is undefined, as for free(3):
 * see lfpool(7), UNCHECKED POOLS.
 */
#define LFP_F_UNCHECKED (1u << 5)

/* The largest lfp_config.cache_size. */
#define LFP_MAX_CACHE_SIZE 4096u

/* Opaque: a pool (lfp_create), and an explicit cache of one
 * (lfp_cache_create). */
struct lfp_pool;
struct lfp_cache;

/*
 * How to build a pool. Zero-initialise it (designated initialisers do) and
 * set what you need: every field left zero means its default, and fields
 * added in later versions are appended with zero meaning the old behaviour.
 */
struct lfp_config {
	size_t obj_size;    /* bytes per object, > 0 */
	size_t align;       /* power of two; 0 = alignof(max_align_t) */
	uint32_t capacity;  /* number of objects, 1 .. LFP_MAX_CAPACITY */
	uint32_t flags;     /* LFP_F_* */
	void *memory;       /* optional caller-provided region of
			       lfp_memory_size(cfg) bytes, see LFP_MEMORY_ALIGN */
	size_t memory_size; /* bytes at memory; ignored if memory is NULL */
	uint32_t cache_size; /* slots a thread cache holds, up to
				LFP_MAX_CACHE_SIZE; 0 = capacity / 4
				clamped to 2 .. 1024 */
	uint32_t batch_size; /* slots moved between a cache and the pool
				at once (a magazine), <= cache_size
				(the default one too: more is -EINVAL);
				0 = half */

	/* When the pool is exhausted (enum lfp_exhaust); 0 = return NULL. */
	uint32_t exhaust;
	/* LFP_EXHAUST_GROW: the most the pool may grow to, >= capacity,
	 * required with that policy (0 is refused); otherwise 0 = capacity.
	 * Address space (and caller memory) is reserved for it up front;
	 * memory is committed as the pool grows. */
	uint32_t max_capacity;
	/* LFP_EXHAUST_RECLAIM: called when the pool is full. It may release
	 * an object (the quietest sound) and return 0 to have the allocation
	 * tried again, or return non-zero to give up (NULL). */
	int (*reclaim)(struct lfp_pool *pool, void *arg);
	uint32_t reclaim_tries; /* reclaim calls per allocation; 0 = 3 */

	/* Object hooks, each called exactly once per event, outside the
	 * pool's retry loops and operations, with hook_arg. NULL = none.
	 * A hook may call back into its pool: see lfpool(7), HOOKS.
	 * ctor builds the state that survives release: it runs at a slot's
	 * first handout, and again at the first handout after lfp_trim gave
	 * the slot's memory back. */
	void (*ctor)(void *obj, void *arg);     /* before on_alloc */
	void (*on_alloc)(void *obj, void *arg); /* every allocation */
	void (*on_free)(void *obj, void *arg);  /* every accepted release */
	void *hook_arg;                         /* also reclaim's arg */

	/* A name for the pool's diagnostics and lfp_name, e.g. "particles";
	 * NULL = none. The pool keeps a copy of its first LFP_NAME_MAX
	 * bytes (cut back to a UTF-8 character boundary), inside its
	 * header: the string need not outlive lfp_create, and a pool in
	 * caller memory still allocates nothing. */
	const char *name;
};

/* The most bytes of lfp_config.name a pool keeps (without the NUL). */
#define LFP_NAME_MAX 31

/*
 * A snapshot of a pool's counters. Exact when no other thread is using the
 * pool; under concurrent use each field is a recent value. In every
 * snapshot, after a rejected call as after any other, free + cached +
 * live + deferred = capacity (deferred is 0 unless lfp_free_deferred is
 * used; see lfpool(7), STATISTICS).
 */
struct lfp_stats {
	uint64_t capacity;       /* objects the pool can hold */
	uint64_t live;           /* allocated and not yet released */
	uint64_t cached;         /* free, but parked in a thread's cache */
	uint64_t free;           /* the rest: in the pool's magazines or on
				    its free list, or never used */
	uint64_t high_water;     /* slots ever taken into use: lfp_extent,
				    at least the most in use at once */
	uint64_t allocs;         /* successful allocations (a bare pool's
				    inline ones aside: LFP_F_UNCHECKED) */
	uint64_t frees;          /* successful releases (the same) */
	uint64_t failed_allocs;  /* allocations that found the pool exhausted */
	uint64_t rejected_frees; /* releases refused (bad, foreign, double) */
	uint64_t cas_retries;    /* failed compare-and-swaps on the pool's
				    lists (magazines, free slots) */
	uint64_t cache_hits;     /* allocations served by a cache directly */
	uint64_t refills;        /* magazines (or runs of free or fresh
				    slots) a cache took from the pool */
	uint64_t flushes;        /* magazines a cache gave back */
	uint64_t steals;         /* idle caches emptied by a starving thread */
	uint64_t deferred;       /* released with lfp_free_deferred, waiting
				    for a grace period (neither live nor free) */
	uint64_t max_capacity;   /* what capacity may grow to */
	uint64_t grown;          /* times the pool grew (segments added) */
	uint64_t trimmed_bytes;  /* bytes lfp_trim returned to the system */
	uint64_t reclaims;       /* calls of the reclaim callback */
};

/*
 * Bytes of caller-provided memory a pool with this configuration needs
 * (the pool's header, its per-slot metadata and the objects), in this
 * process: an LFP_F_UNCHECKED pool needs less where no debug tool checks
 * it (see the flag). cfg->memory is ignored.
 *
 * Returns the size, or 0 if cfg is NULL, invalid, or the size overflows.
 * Thread safety: any thread, any time. Progress: wait-free.
 */
LFP_API size_t lfp_memory_size(const struct lfp_config *cfg);

/*
 * Create a pool. With cfg->memory == NULL the pool maps its memory from the
 * operating system; pages of objects never allocated are never touched, so
 * a large pool costs little resident memory until it is used.
 *
 * Returns 0 and sets *out, or:
 *   -EINVAL    cfg or out is NULL, obj_size is 0, align is not a power of
 *              two, capacity is 0, unknown flags or exhaust policy,
 *              LFP_EXHAUST_RECLAIM without reclaim, LFP_EXHAUST_GROW
 *              without max_capacity, max_capacity below capacity,
 *              cache_size or batch_size out of range, caller
 *              memory that is too small or not aligned to
 *              max(LFP_MEMORY_ALIGN, align), or LFP_F_UNCHECKED with
 *              LFP_F_STRICT or a ctor;
 *   -EOVERFLOW capacity or max_capacity > LFP_MAX_CAPACITY, or the total
 *              size overflows (without caller memory: once rounded up
 *              and aligned for mapping too);
 *   -ENOMEM    the memory could not be mapped;
 *   -EAGAIN    the per-thread cache key could not be made;
 *   -ENOMEM    also: the fork handlers could not be registered;
 *   -ENOTSUP   this platform has no lock-free 64-bit atomics.
 * On error *out is left unchanged; for an -EINVAL or -EOVERFLOW that cfg
 * caused, lfp_config_fault names the field.
 * Thread safety: any thread. Progress: blocking (maps memory).
 */
LFP_API int lfp_create(const struct lfp_config *cfg, struct lfp_pool **out);

/*
 * Name the field of cfg that lfp_create refuses. Its -EINVAL and
 * -EOVERFLOW stand for many fields; this says which one: "obj_size",
 * "capacity", "align", "max_capacity", "flags", "exhaust", "reclaim",
 * "ctor", "cache_size", "batch_size", "memory_size" or "memory", as the
 * fields of struct lfp_config are named. Where several are at fault it
 * names the one lfp_create checks first (obj_size, then capacity, before
 * the others). A size that overflows is blamed on obj_size, or on align
 * where align is set and the larger. Nothing is mapped or made.
 *
 * Returns the field's name, a string in static storage; NULL if cfg is
 * NULL or lfp_create refuses none of its fields (it may still fail for
 * want of memory: -ENOMEM, -EAGAIN, -ENOTSUP).
 * Thread safety: any thread, any time. Progress: wait-free.
 */
LFP_API const char *lfp_config_fault(const struct lfp_config *cfg);

/*
 * Destroy a pool and return its memory (caller-provided memory is left to
 * the caller). Objects still live are gone with it, and so are explicit
 * caches not yet destroyed: they must not be used (or destroyed) after
 * this call. Threads that still hold an implicit cache for
 * the pool may go on and exit safely: their caches are let go without
 * touching the pool. Deferred releases still pending are waited for
 * (lfp_barrier), so it must not be called inside an RCU read-side
 * critical section. NULL is ignored.
 * Thread safety: no other thread may use the pool during or after the call.
 * Progress: blocking (waits for threads that are exiting at that moment).
 */
LFP_API void lfp_destroy(struct lfp_pool *pool);

/*
 * Allocate one object, through the calling thread's cache for the pool
 * unless it has LFP_F_NO_CACHE. Its contents are unspecified.
 * Returns the object, or NULL if the pool is exhausted (or pool is NULL);
 * slots in idle caches count as free: see lfpool(7), IDLE CACHES.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; in a signal handler, see lfpool(7), SIGNALS AND
 * ASYNC-SIGNAL SAFETY.
 * Progress: lock-free while the pool has free slots; when it looks
 * exhausted, it may wait for a trim, a thread emptying a cache (a few
 * hundred instructions), a fork (20 ms at most) or a deferred slot (about
 * 10 ms) before its policy (see lfpool(7), EXHAUSTION). A thread's first
 * call on a pool maps its cache (a system call).
 */
LFP_API void *lfp_alloc(struct lfp_pool *pool);

/*
 * Release an object allocated from this pool, by any thread (it need not
 * be the thread that allocated it).
 *
 * Returns 0, or, leaving every count but rejected_frees unchanged:
 *   -EINVAL   pool or obj is NULL, or obj points inside the pool but not to
 *             the start of an object;
 *   -EFAULT   obj is not inside this pool's memory (all of it, as laid
 *             out for max_capacity slots);
 *   -EALREADY obj is already free (a double release) or was never
 *             allocated (this includes slots a growable pool has not
 *             grown into yet, which lfp_owns does not count as its own);
 *             in an unchecked pool (LFP_F_UNCHECKED) that is undefined
 *             instead, except for slots not grown into yet (still
 *             refused) and where the pool is checked anyway.
 * A racing double release is caught only with LFP_F_STRICT or
 * LFP_F_NO_CACHE (see lfpool(7), DOUBLE RELEASES).
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; in a signal handler, see lfpool(7), SIGNALS AND
 * ASYNC-SIGNAL SAFETY. Progress: lock-free.
 */
LFP_API int lfp_free(struct lfp_pool *pool, void *obj);

/*
 * Allocate up to n objects into objs[0..n), through the calling thread's
 * cache as lfp_cache_alloc_bulk does. Returns how many were taken (fewer
 * than n only if the pool ran out), 0 if pool or objs is NULL.
 * Thread safety and progress: as lfp_alloc.
 */
LFP_API size_t lfp_alloc_bulk(struct lfp_pool *pool, void **objs, size_t n);

/*
 * Release objs[0..n) as lfp_free would, through the calling thread's
 * cache as lfp_cache_free_bulk does. Returns how many were released;
 * objects lfp_free would reject are skipped and stay as they were.
 * Thread safety and progress: as lfp_free.
 */
LFP_API size_t lfp_free_bulk(struct lfp_pool *pool, void *const *objs,
			     size_t n);

/*
 * Explicit caches
 *
 * For job systems whose workers have fixed identities: a worker keeps its
 * own cache and allocates through it with no lookup, one thread at a time
 * (lfpool(7), DESCRIPTION), destroying it before its pool or leaving it
 * to lfp_destroy. A signal handler may keep one of its own: lfpool(7),
 * SIGNALS AND ASYNC-SIGNAL SAFETY.
 */

/*
 * Make a cache for pool (reusing one given up earlier if possible).
 * Returns it, or NULL if pool is NULL or memory ran out.
 * Thread safety: any thread. Progress: lock-free, blocking only inside
 * mmap when no cache can be reused.
 */
LFP_API struct lfp_cache *lfp_cache_create(struct lfp_pool *pool);

/*
 * Give every cached slot back to the pool and give the cache up.
 * NULL is ignored. The cache must not be used afterwards. While a fork
 * holds the caches, slots it cannot give back within 20 ms stay in the
 * cache it gives up (see lfpool(7), FORK).
 * Thread safety: the cache's thread. Progress: blocking only while another
 * thread is emptying this cache: a few hundred instructions, unless that
 * thread is preempted meanwhile, when the wait lasts until it runs again;
 * or while fork is being prepared, 20 ms at most.
 */
LFP_API void lfp_cache_destroy(struct lfp_cache *cache);

/*
 * Allocate one object through the cache. Returns it, or NULL if the pool
 * is exhausted (see lfp_alloc) or cache is NULL.
 * Thread safety: the cache's thread. Progress: as lfp_alloc; the common
 * case is a few loads and stores with no atomic read-modify-write.
 */
LFP_API void *lfp_cache_alloc(struct lfp_cache *cache);

/*
 * Release an object of the cache's pool into the cache. Returns 0 or the
 * errors of lfp_free (-EINVAL also for a NULL cache).
 * Thread safety: the cache's thread. Progress: lock-free.
 */
LFP_API int lfp_cache_free(struct lfp_cache *cache, void *obj);

/*
 * Allocate up to n objects through the cache into objs[0..n), moving
 * whole runs of slots between the cache and the pool (a magazine per
 * exchange) rather than one slot per call: the bulk counterpart of
 * lfp_cache_alloc, for a worker that spawns many objects at once. A pool
 * with a ctor or on_alloc hook is served one object at a time (see
 * lfpool(7), HOOKS).
 * Returns how many were taken (fewer than n only if the pool ran out, as
 * lfp_cache_alloc would return NULL), 0 if cache or objs is NULL or n is 0.
 * Thread safety: the cache's thread. Progress: as lfp_cache_alloc; when
 * the cache holds n slots, one pass over them inline, with no atomic
 * read-modify-write.
 */
LFP_API size_t lfp_cache_alloc_bulk(struct lfp_cache *cache, void **objs,
				    size_t n);

/*
 * Release objs[0..n) into the cache, each checked as lfp_cache_free
 * checks it; the accepted ones go into the cache in runs, the colder
 * magazines out to the pool as it fills (one at a time in a pool with an
 * on_free hook, as for allocation). Returns how many were released;
 * objects lfp_cache_free would reject are skipped, stay as they were and
 * count in rejected_frees. 0 if cache or objs is NULL or n is 0.
 * Thread safety: the cache's thread. Progress: lock-free; when the cache
 * has room for n slots, one pass over them inline, with no atomic
 * read-modify-write.
 */
LFP_API size_t lfp_cache_free_bulk(struct lfp_cache *cache,
				   void *const *objs, size_t n);

/*
 * Give every cached slot back to the pool (before a worker
 * goes idle, say). NULL is ignored. While a fork holds the caches, it
 * waits 20 ms at most, then returns with the slots still in the cache
 * (see lfpool(7), FORK).
 * Thread safety: the cache's thread. Progress: as lfp_cache_destroy.
 */
LFP_API void lfp_cache_flush(struct lfp_cache *cache);

/*
 * Fill *out with one worker's share of the pool's counters: what went
 * through this cache since lfp_cache_create made it (a cache reused from
 * one given up earlier starts again from zero):
 * the counts of the calls made through it (allocs to steals) and cached
 * are the cache's own, the other fields the pool's (see lfpool(7),
 * STATISTICS).
 * Does nothing if cache or out is NULL.
 * Thread safety: any thread, while the cache exists (until
 * lfp_cache_destroy or lfp_destroy). The counts are read one by one:
 * exact when the cache's thread is idle, otherwise each is a recent value.
 * Progress: wait-free, O(caches of the pool) for the pool-wide fields.
 */
LFP_API void lfp_cache_stats(const struct lfp_cache *cache,
			     struct lfp_stats *out);

/*
 * Slots and counters
 *
 * Every object of a pool lives in a slot with a fixed index; a slot's
 * address never changes while the pool lives, so a pointer and its index
 * convert both ways in constant time, whether the slot is live or free.
 */

/*
 * Whether ptr points into the pool's object memory (to any byte of any
 * slot, live or free). Returns true if so, false if not and for NULL
 * arguments.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API bool lfp_owns(const struct lfp_pool *pool, const void *ptr);

/*
 * The slot index of the object at obj: 0 .. capacity-1. Returns
 * LFP_NO_INDEX if obj is not the start of a slot of this pool.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API uint32_t lfp_index_of(const struct lfp_pool *pool, const void *obj);

/*
 * The object at slot index, live or not: the inverse of lfp_index_of.
 * Returns it, or NULL if index >= capacity.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API void *lfp_at(const struct lfp_pool *pool, uint32_t index);

/*
 * Fill *out with a snapshot of the pool's counters (see struct lfp_stats).
 * Does nothing if pool or out is NULL. Exact while no other thread uses
 * the pool; under traffic each field is a recent value, the event counts
 * never read lower than in an earlier call, and allocs >= frees. A
 * cache's allocation count is exact for 2^51 releases between two of its
 * magazine exchanges, and a read that meets its fold into a wider count
 * retries; a bare pool's live is counted from its lists, and a running
 * lfp_trim is waited for up to 1 ms: see lfpool(7), STATISTICS.
 * Thread safety: any thread. Progress: wait-free, O(caches of the pool);
 * for a bare pool, O(slots on its free list) too.
 */
LFP_API void lfp_stats(const struct lfp_pool *pool, struct lfp_stats *out);

/*
 * What happened between two snapshots of one pool (or of one cache, with
 * lfp_cache_stats), for per-frame or per-second figures: into *out go the
 * event counters as now minus before (0, not a wrapped count, where now
 * reads lower), and the gauges (capacity, live, cached, free, deferred,
 * high_water, max_capacity) as in now: see lfpool(7), STATISTICS. out
 * may be now or before. Does nothing if an argument is NULL.
 * Thread safety: any thread; it reads and writes its arguments only.
 * Progress: wait-free.
 */
static inline void lfp_stats_delta(const struct lfp_stats *now,
				   const struct lfp_stats *before,
				   struct lfp_stats *out);

#include "lfpool/stats.h"

/*
 * The pool's name: its copy of lfp_config.name, at most LFP_NAME_MAX
 * bytes. Every message the library prints about a pool names it by this
 * name (when it has one) and by its address.
 *
 * Returns the name, "" if the pool was made without one, or NULL if pool
 * is NULL. The string lives as long as the pool.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Progress: wait-free.
 */
LFP_API const char *lfp_name(const struct lfp_pool *pool);

/*
 * Write a report of the pool's counters to f, for a human at a glance:
 * its slots, calls, caches and size, from one lfp_stats snapshot. The
 * layout is for people and may change (see lfpool(7), STATISTICS);
 * programs should read lfp_stats. f is flushed.
 *
 * Returns 0, -EINVAL if pool or f is NULL (nothing is written), or -EIO if
 * writing or flushing f failed (f's error indicator says more; part of the
 * report may have been written).
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; the stream is locked as stdio does.
 * Progress: blocking (stdio).
 */
LFP_API int lfp_stats_print(const struct lfp_pool *pool, FILE *f);

/*
 * Growth and contraction
 *
 * A pool made with exhaust = LFP_EXHAUST_GROW reserves address space for
 * max_capacity slots at creation and commits memory for more of them as it
 * grows, so slot indices and objects never move and no table is ever
 * reallocated.
 */

/*
 * Make sure the pool can hold n objects without growing on the allocation
 * path (like XNA's Preallocate): grow it to n if it is smaller, and fault
 * in the memory of the first n slots.
 * Returns 0, or -EINVAL (pool NULL, or n > max_capacity), or -ENOMEM (the
 * memory could not be committed; the pool is unchanged and usable).
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Progress: blocking (a lock on the growth path, and page
 * faults).
 */
LFP_API int lfp_reserve(struct lfp_pool *pool, uint32_t n);

/*
 * Give back to the operating system the memory of every resident page
 * whose slots are all free on the shared list (madvise MADV_DONTNEED);
 * slots in thread caches count as in use, and pages never used or given
 * back already hold nothing to give back (a second trim of an idle pool
 * returns 0). Indices and handles stay valid. A trimmed slot reads as
 * zeroes when next allocated, except in a pool with a ctor, which
 * constructs it again. Only memory the pool mapped itself is trimmed,
 * never caller memory. An allocation that finds the pool empty while it
 * runs waits for it (see lfpool(7), EXHAUSTION).
 * Returns the bytes given back (0 if pool is NULL).
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Progress: blocking. It never calls malloc.
 */
LFP_API size_t lfp_trim(struct lfp_pool *pool);

/*
 * Deferred release
 *
 * For readers that reach objects without locks, inside liburcu's RCU
 * read-side critical sections (see lfpool(7), DEFERRED RELEASE, and FORK).
 */

/*
 * Deferred release with RCU (liburcu's memb flavour): the object is
 * released at once, as by lfp_free, but its slot is reused only after a
 * grace period, so that a reader never sees it reused under it. The
 * calling thread must be registered with urcu_memb_register_thread(). For
 * sizing the pool, see lfpool(7), DEFERRED RELEASE.
 * Returns 0, the errors of lfp_free, or -ENOMEM if the pool's deferred
 * bookkeeping (made on first use) could not be mapped.
 * Thread safety: any registered thread. Progress: lock-free (call_rcu's
 * enqueue is wait-free; the first call of a pool maps memory).
 */
LFP_API int lfp_free_deferred(struct lfp_pool *pool, void *obj);

/*
 * Wait until every deferred release issued before the call has returned
 * its slot to the pool (rcu_barrier; about 10 ms with liburcu 0.13).
 * lfp_destroy does this itself. An allocation that runs a pool dry need
 * not call it: LFP_F_WAIT_DEFERRED makes lfp_alloc wait for the slots.
 * Must not be called inside an RCU read-side critical section.
 * Thread safety: any thread. Progress: blocking.
 */
LFP_API void lfp_barrier(struct lfp_pool *pool);

/*
 * How many slots released with lfp_free_deferred are waiting for their
 * grace period now (lfp_stats's deferred, without its walk of the
 * caches). Sample it under load to size a pool: see lfpool(7),
 * DEFERRED RELEASE.
 *
 * Returns the count, 0 if pool is NULL.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; under concurrent releases it is a recent value.
 * Progress: wait-free.
 */
LFP_API uint64_t lfp_deferred_pending(const struct lfp_pool *pool);

/*
 * Generational handles
 *
 * A handle names one object for one lifetime: {generation:32 | index:32}.
 * Each slot's generation changes on every allocation and every release, so
 * once an object is released its handle resolves to NULL, even after the
 * slot holds a new object. Live generations are odd and never 0, so a
 * zeroed handle (LFP_NULL_HANDLE) is never valid. A generation repeats
 * after 2^31 reuses of its slot, and resolving does not order memory: the
 * handle must reach a thread as a pointer would (see lfpool(7), HANDLES).
 */
typedef struct {
	uint64_t bits; /* generation << 32 | index */
} lfp_handle;

/* C++ has no compound literals: there the null handle is a value-initialised,
 * that is zeroed, lfp_handle. */
#ifdef __cplusplus
#define LFP_NULL_HANDLE (lfp_handle())
#else
#define LFP_NULL_HANDLE ((lfp_handle){ 0 })
#endif

/*
 * The slot index a handle names, whether or not the handle is current
 * (lfp_resolve tells that). Returns h's low 32 bits.
 * Thread safety: any thread; it reads h only. Progress: wait-free.
 */
static inline uint32_t lfp_handle_index(lfp_handle h);

/*
 * The generation a handle names. Returns h's high 32 bits: odd in a
 * handle of a live object, 0 in the null handle.
 * Thread safety: any thread; it reads h only. Progress: wait-free.
 */
static inline uint32_t lfp_handle_gen(lfp_handle h);

/*
 * Whether h is the null handle (LFP_NULL_HANDLE, or zeroed memory).
 * Returns true if so. A handle that is not null may still be stale:
 * lfp_resolve tells.
 * Thread safety: any thread; it reads h only. Progress: wait-free.
 */
static inline bool lfp_handle_is_null(lfp_handle h);

/*
 * Whether a and b are the same handle: the same slot and the same
 * generation, so they name the same object (or are both null). Two
 * handles of one slot from different lifetimes are not equal. Returns
 * true if they are the same.
 * Thread safety: any thread; it reads a and b only. Progress: wait-free.
 */
static inline bool lfp_handle_eq(lfp_handle a, lfp_handle b);

#include "lfpool/handle.h"

/*
 * The handle of a live object.
 *
 * Returns the handle, or LFP_NULL_HANDLE if pool or obj is NULL, obj is not
 * the start of an object of this pool, the object is not live, or the
 * pool is unchecked (LFP_F_UNCHECKED), which has no handles.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; if another thread releases obj meanwhile, the result is
 * either its old handle (already stale) or the null handle.
 * Progress: wait-free.
 */
LFP_API lfp_handle lfp_handle_of(const struct lfp_pool *pool, const void *obj);

/*
 * The object a handle names, if it is still live.
 *
 * Returns the object, or NULL if pool is NULL or h is stale (its object was
 * released), null, forged, or out of range, or the pool is unchecked
 * (LFP_F_UNCHECKED: every handle is forged there; lfp_resolve_bulk too).
 * Never reads memory outside the pool's metadata, whatever h holds.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. The answer is true at the moment of the call: if another
 * thread may release the object, it may be gone by the time you use it
 * (use lfp_free_handle to release safely, or keep the object alive by a
 * protocol of your own).
 * Progress: wait-free.
 */
LFP_API void *lfp_resolve(const struct lfp_pool *pool, lfp_handle h);

/*
 * Resolve n handles at once: objs[i] = lfp_resolve(pool, hs[i]) for each
 * i < n, NULL for a stale, null, forged or out-of-range handle, with the
 * cache misses of handles in no particular order overlapping (see
 * lfpool(7), HANDLES). hs and objs may not overlap.
 *
 * Returns how many objs[i] are not NULL. If pool is NULL every objs[i] is
 * set to NULL and it returns 0; if n is 0, or hs or objs is NULL, it
 * writes nothing and returns 0.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Each answer is true at some moment during the call, with
 * lfp_resolve's caveats: an object another thread may release may be gone
 * by the time it is used, and one allocated during the call may or may
 * not be found.
 * Progress: wait-free (O(n)).
 */
LFP_API size_t lfp_resolve_bulk(const struct lfp_pool *pool,
				const lfp_handle *hs, void **objs, size_t n);

/*
 * Release the object a handle names, only if the handle is still current:
 * the generation is checked and advanced in one atomic step, so a stale
 * handle never releases the slot's new owner. The slot goes back to the
 * pool exactly as with lfp_free.
 *
 * Returns 0, or, leaving every object and count but rejected_frees as it
 * was:
 *   -ENOTSUP  the pool is unchecked (LFP_F_UNCHECKED);
 *   -EINVAL   pool is NULL, or h has a generation no live object has
 *             (the null handle, any even generation);
 *   -EFAULT   h's index is not a slot of this pool (>= max_capacity;
 *             slots not grown into yet give -ESTALE, never allocated);
 *   -ESTALE   h's object was already released (the slot may be free or
 *             hold a new object), or the slot was never handed out.
 * Of two releases by one handle at once exactly one succeeds; one racing
 * with an lfp_free is caught as for lfp_free (lfpool(7), DOUBLE RELEASES).
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Progress: lock-free.
 */
LFP_API int lfp_free_handle(struct lfp_pool *pool, lfp_handle h);

/*
 * As lfp_free_handle, into an explicit cache (see lfp_cache_free): for a
 * worker that owns a cache and names its objects by handle.
 * Returns 0 or the errors of lfp_free_handle (-EINVAL also for a NULL
 * cache).
 * Thread safety: the cache's thread. Progress: lock-free.
 */
LFP_API int lfp_cache_free_handle(struct lfp_cache *cache, lfp_handle h);

/*
 * Whether obj is a live object of this pool (allocated, not yet released).
 * Returns true if so; false for NULL arguments, pointers outside the pool
 * or not at the start of an object. In an unchecked pool (LFP_F_UNCHECKED)
 * without checks it cannot tell live from released: true for the start of
 * any object below lfp_extent (maybe live), false for the rest (never
 * live).
 * Thread safety: any thread; like lfp_resolve, the answer may be outdated
 * as soon as it is returned if another thread allocates or releases obj.
 * Progress: wait-free.
 */
LFP_API bool lfp_is_live(const struct lfp_pool *pool, const void *obj);

/*
 * Live-object iteration
 *
 * The callback gets each live object, its handle and the caller's arg; it
 * returns 0 to go on, any other value to stop the walk (which returns it),
 * and may release or allocate objects. An object allocated before the walk
 * and not released before the walk passes it is visited once; others may
 * or may not be (see lfpool(7), WALKS).
 */
typedef int (*lfp_visit_fn)(void *obj, lfp_handle h, void *arg);

/*
 * How far into the pool slots have been used: every live object has an
 * index below it, and no slot at or above it was ever handed out (slots
 * below it may be free, some parked in thread caches). It only grows, up
 * to capacity. Use it to split a pool into ranges of equal work for
 * lfp_foreach_range. Returns it, 0 if pool is NULL.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API uint32_t lfp_extent(const struct lfp_pool *pool);

/*
 * Call fn on every live object, in slot order (see "Live-object
 * iteration"). The walk reads one generation word per slot up to
 * lfp_extent (a fraction of a nanosecond for a free slot); slots never
 * handed out are not looked at.
 *
 * Returns 0 when every slot was visited, the first non-zero value fn
 * returned, -EINVAL if pool or fn is NULL (fn should therefore stop
 * the walk with a positive value), or -ENOTSUP if the pool is unchecked
 * (LFP_F_UNCHECKED), whose objects are not walked (fn is not called).
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; several walks may run at once. Progress: wait-free for the
 * walk itself (O(extent)), plus whatever fn does.
 */
LFP_API int lfp_foreach(const struct lfp_pool *pool, lfp_visit_fn fn,
			void *arg);

/*
 * As lfp_foreach, over the slot indices [begin, end) only. end is clamped
 * to lfp_extent, so UINT32_MAX means "to the end"; begin >= end visits
 * nothing. Workers that share one extent with lfp_range visit every live
 * object once between them (see lfpool(7), WALKS).
 *
 * Returns as lfp_foreach.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Progress: wait-free for the walk itself (O(end - begin)).
 */
LFP_API int lfp_foreach_range(const struct lfp_pool *pool, uint32_t begin,
			      uint32_t end, lfp_visit_fn fn, void *arg);

/*
 * Worker k's share of n equal shares of the slot indices [0, extent):
 * *begin = extent * k / n and *end = extent * (k + 1) / n, computed in 64
 * bits so that no product overflows. The n shares are consecutive and
 * cover [0, extent) exactly once; their sizes differ by one at most, and
 * some are empty when n > extent. If n is 0 or k >= n, *begin = *end = 0
 * (an empty share). A NULL begin or end is not written.
 *
 * The extent is an argument, not read from the pool: give every worker
 * the same snapshot of lfp_extent(pool), or the shares may leave a gap
 * (see lfpool(7), WALKS).
 * Thread safety: any thread; it reads its arguments only.
 * Progress: wait-free.
 */
LFP_API void lfp_range(uint32_t extent, uint32_t k, uint32_t n,
		       uint32_t *begin, uint32_t *end);

/*
 * An iteration over live objects, for loops that do not fit a callback
 * (lfp_iter_init, lfp_iter_next). Declare one anywhere, on the stack say;
 * it holds no resources and needs no cleanup. Its fields are public only
 * so that its size is known: they are opaque, and may change.
 */
struct lfp_iter {
	const struct lfp_pool *pool_; /* opaque */
	uint32_t next_;               /* opaque */
	uint32_t end_;                /* opaque */
};

/*
 * Start an iteration over the live objects of the slot indices [begin,
 * end), in slot order, as lfp_foreach_range would walk them: end is
 * clamped to lfp_extent (read here, once), so UINT32_MAX means "to the
 * end", and begin >= end yields nothing. If pool is NULL or unchecked
 * (LFP_F_UNCHECKED) the iteration yields nothing; if it is NULL, nothing is done.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; it must be the only thread using it until it is done.
 * Progress: wait-free.
 */
LFP_API void lfp_iter_init(struct lfp_iter *it, const struct lfp_pool *pool,
			   uint32_t begin, uint32_t end);

/*
 * The next live object of the iteration, storing its handle in *h if h is
 * not NULL.
 *
 * Returns the object, or NULL when the range is done (and then sets *h to
 * LFP_NULL_HANDLE, and returns NULL again on every later call), or if it
 * is NULL. It has exactly the guarantees of lfp_foreach_range, this loop
 * with a callback, reading each slot once (see lfpool(7), WALKS).
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy; one thread at a time per iteration.
 * Progress: wait-free (O(slots passed over)).
 */
LFP_API void *lfp_iter_next(struct lfp_iter *it, lfp_handle *h);

/*
 * Size-class families
 *
 * A family is a set of pools, its classes, of increasing object sizes,
 * each a whole pool (lfp_family_pool), whose objects may be released with
 * lfp_family_free or lfp_free on their class (see lfpool(7), FAMILIES).
 */

/* The most classes a family can have. */
#define LFP_FAMILY_MAX_CLASSES 64u

/* Opaque: a family of pools (lfp_family_create). */
struct lfp_family;

/*
 * How to build a family. Zero-initialise it and set what you need, as
 * with struct lfp_config: the fields after classes mean what their
 * namesakes in struct lfp_config mean, and apply to every class.
 */
struct lfp_family_config {
	/* Object size of each class, > 0, strictly increasing. */
	const size_t *sizes;
	/* Objects each class holds, 1 .. LFP_MAX_CAPACITY. */
	const uint32_t *capacities;
	uint32_t classes; /* entries of sizes and capacities,
			     1 .. LFP_FAMILY_MAX_CLASSES */
	/* How many larger classes an allocation may try, in order of size,
	 * when the class that fits it is exhausted (after that class's
	 * exhaust policy gave up); 0 = none, the allocation fails. A spilled
	 * object is an object of the larger class in every respect. */
	uint32_t spill;
	/* LFP_EXHAUST_GROW: the most each class may grow to, one entry per
	 * class, each >= its capacity; required with that policy. NULL
	 * otherwise (or each class's capacity). */
	const uint32_t *max_capacities;

	size_t align;         /* 0 = alignof(max_align_t) */
	uint32_t flags;       /* LFP_F_* */
	uint32_t exhaust;     /* enum lfp_exhaust; 0 = return NULL */
	uint32_t cache_size;  /* 0 = each class's default */
	uint32_t batch_size;  /* 0 = half the cache */
	int (*reclaim)(struct lfp_pool *pool, void *arg);
	uint32_t reclaim_tries;
	void (*ctor)(void *obj, void *arg);
	void (*on_alloc)(void *obj, void *arg);
	void (*on_free)(void *obj, void *arg);
	void *hook_arg;
	/* The family's name, e.g. "jobs"; NULL = none. Each class's pool is
	 * named after it and its size, "jobs/64" (or "64" without a name),
	 * the family's name cut (at a UTF-8 character boundary) so that the
	 * whole fits in LFP_NAME_MAX bytes. */
	const char *name;
};

/*
 * A snapshot of a family's counters (lfp_family_stats).
 */
struct lfp_family_stats {
	/* Every class's lfp_stats added up field by field, the frees that
	 * no class owned (foreign_frees) counted in rejected_frees too. An
	 * allocation that spilled counts a failed_alloc in the classes that
	 * were exhausted, and an alloc in the one that served it. */
	struct lfp_stats total;
	uint64_t spilled;       /* allocations served by a larger class
				   than the one that fits them */
	uint64_t failed_allocs; /* allocations that returned NULL because
				   every class they could use was exhausted */
	uint64_t bad_sizes;     /* allocations refused for a size of 0 or
				   above the largest class */
	uint64_t foreign_frees; /* lfp_family_free of a pointer no class
				   owns (-EFAULT) */
};

/*
 * Create a family: one pool per class, each made as lfp_create makes it
 * from the class's size, capacity and max_capacity and the shared fields
 * of cfg. The family reserves address space for a zone per class up
 * front, so that a release finds the class from the address (see
 * lfpool(7), FAMILIES); memory is committed as with lfp_create.
 *
 * Returns 0 and sets *out, or:
 *   -EINVAL    cfg or out is NULL, sizes or capacities is NULL, classes
 *              is 0, a size is 0 or not larger than the one before it,
 *              max_capacities is missing with LFP_EXHAUST_GROW, or a
 *              class's lfp_create refused its configuration (see there);
 *   -E2BIG     classes > LFP_FAMILY_MAX_CLASSES;
 *   -ENOMEM    the zones could not be reserved;
 *   any other error of lfp_create (-EOVERFLOW, -ENOMEM, -EAGAIN,
 *   -ENOTSUP), of the first class that failed.
 * On error no pool is left behind and *out is unchanged; for an -EINVAL,
 * -E2BIG or -EOVERFLOW that cfg caused, lfp_family_config_fault names
 * the field.
 * Thread safety: any thread. Progress: blocking (maps memory).
 */
LFP_API int lfp_family_create(const struct lfp_family_config *cfg,
			      struct lfp_family **out);

/*
 * Name the field of cfg that lfp_family_create refuses, as
 * lfp_config_fault does for lfp_create: first the family's own fields
 * ("classes", "sizes", "capacities", "max_capacities"), then the field
 * that lfp_config_fault names for the first class lfp_create would
 * refuse, by its name here: a class's obj_size, capacity and
 * max_capacity are "sizes", "capacities" and "max_capacities", the
 * shared fields keep their names ("align", "flags", "batch_size", ...).
 * No memory is reserved and no pool made.
 *
 * Returns the field's name, a string in static storage; NULL if cfg is
 * NULL or lfp_family_create refuses none of its fields (it may still
 * fail for want of memory).
 * Thread safety: any thread, any time. Progress: wait-free (O(classes)).
 */
LFP_API const char *lfp_family_config_fault(
	const struct lfp_family_config *cfg);

/*
 * Destroy a family: lfp_destroy on every class's pool (with everything
 * that says about live objects, explicit caches and deferred releases),
 * then the family itself. NULL is ignored.
 * Thread safety: no other thread may use the family or its pools during
 * or after the call. Progress: blocking (as lfp_destroy).
 */
LFP_API void lfp_family_destroy(struct lfp_family *fam);

/*
 * Allocate an object of at least size bytes from the smallest class whose
 * objects are that large (lfp_alloc on its pool, through the calling
 * thread's cache for it). If that class is exhausted and cfg.spill allows,
 * the next larger classes are tried in turn. The object's contents are
 * unspecified, and it is aligned to the family's align.
 *
 * Returns the object, or NULL if every class it may come from is
 * exhausted, or if fam is NULL, size is 0 or size is larger than the
 * largest class (counted in bad_sizes; lfp_family_class tells these
 * apart: it returns -EINVAL or -ERANGE for them).
 * Thread safety: any thread, concurrently with any call but
 * lfp_family_destroy. Progress: as lfp_alloc, once per class tried; the
 * class is found with one table lookup for sizes up to 4096 bytes, in
 * O(log classes) above.
 */
LFP_API void *lfp_family_alloc(struct lfp_family *fam, size_t size);

/*
 * Release an object of any class of the family, by any thread, its class
 * found from the address alone (see lfpool(7), FAMILIES).
 *
 * Returns 0, or, leaving every count unchanged but rejected_frees (of the
 * class, or the family's foreign_frees):
 *   -EINVAL   fam or obj is NULL, or obj points inside an object of a
 *             class but not to its start;
 *   -EFAULT   obj is not in the object memory of any class: a pointer of
 *             another family or pool, or of no pool, or into the part of
 *             a growable class it has not grown into yet (which lfp_owns
 *             does not count as the class's);
 *   -EALREADY obj is already free (a double release), or was never
 *             allocated.
 * Double releases that race are caught as lfp_free catches them.
 * Thread safety: any thread, concurrently with any call but
 * lfp_family_destroy. Progress: lock-free.
 */
LFP_API int lfp_family_free(struct lfp_family *fam, void *obj);

/*
 * The number of classes of the family. Returns cfg.classes, 0 if fam is
 * NULL.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API uint32_t lfp_family_classes(const struct lfp_family *fam);

/*
 * The pool of class i (0 = the smallest), for the per-class calls: its
 * explicit caches, handles, stats, walks, lfp_reserve, lfp_trim. The pool
 * belongs to the family: lfp_family_destroy destroys it, and it must not
 * be destroyed by itself.
 *
 * Returns the pool, or NULL if fam is NULL or i >= lfp_family_classes.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API struct lfp_pool *lfp_family_pool(const struct lfp_family *fam,
					 uint32_t i);

/*
 * The object size of class i, cfg.sizes[i] (objects of the class are
 * that large at least).
 *
 * Returns the size, or 0 if fam is NULL or i >= lfp_family_classes.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API size_t lfp_family_class_size(const struct lfp_family *fam,
				     uint32_t i);

/*
 * The class lfp_family_alloc serves size from first: the smallest whose
 * objects hold size bytes. With it a worker can keep an explicit cache
 * per class and allocate through the right one (or keep an explicit
 * family cache, which does this itself).
 *
 * Returns the class index, or -EINVAL if fam is NULL or size is 0, or
 * -ERANGE if size is larger than the largest class.
 * Thread safety: any thread. Progress: wait-free: a table lookup for
 * sizes up to 4096 bytes, O(log classes) above.
 */
LFP_API int lfp_family_class(const struct lfp_family *fam, size_t size);

/*
 * The class whose object memory holds obj (live or free), found as
 * lfp_family_free finds it: to release into that class's explicit cache,
 * or to take its handle.
 *
 * Returns the class index, or -EINVAL if fam or obj is NULL, or -EFAULT
 * if obj is in the object memory of no class.
 * Thread safety: any thread. Progress: wait-free, O(1).
 */
LFP_API int lfp_family_class_of(const struct lfp_family *fam,
				const void *obj);

/*
 * Fill *out with a snapshot of the family's counters (see struct
 * lfp_family_stats): lfp_stats of each class, added up, and the family's
 * own. Exact when no other thread uses the family; otherwise each field
 * is a recent value. Does nothing if fam or out is NULL.
 * Thread safety: any thread, concurrently with any call but
 * lfp_family_destroy. Progress: wait-free, O(classes and their caches).
 */
LFP_API void lfp_family_stats(const struct lfp_family *fam,
			      struct lfp_family_stats *out);

/*
 * Explicit family caches
 *
 * An explicit cache of every class of a family in one object, with every
 * rule of an explicit cache; destroy it before its family, or leave it to
 * lfp_family_destroy (see lfpool(7), FAMILIES).
 */

/* Opaque: an explicit cache of each class of a family. */
struct lfp_family_cache;

/*
 * Make an explicit cache of each class of fam (lfp_cache_create on each
 * class's pool), reusing a family cache given up earlier if possible.
 * Returns it, or NULL if fam is NULL or memory ran out.
 * Thread safety: any thread, concurrently with any call but
 * lfp_family_destroy. Progress: lock-free, blocking only inside mmap
 * (the family cache's own, when none can be reused, or a class's
 * lfp_cache_create's).
 */
LFP_API struct lfp_family_cache *lfp_family_cache_create(
	struct lfp_family *fam);

/*
 * Give every cached slot back to the classes' pools and give the family
 * cache up (lfp_cache_destroy on each class's cache). NULL is ignored.
 * The family cache must not be used afterwards.
 * Thread safety: the cache's thread. Progress: as lfp_cache_destroy, once
 * per class.
 */
LFP_API void lfp_family_cache_destroy(struct lfp_family_cache *fc);

/*
 * Give every cached slot back to the classes' pools (lfp_cache_flush on
 * each class's cache). NULL is ignored.
 * Thread safety: the cache's thread. Progress: as lfp_cache_flush, once
 * per class.
 */
LFP_API void lfp_family_cache_flush(struct lfp_family_cache *fc);

/*
 * lfp_family_alloc through the family cache: an object of the smallest
 * class that holds size bytes, from that class's cache, spilling to
 * larger classes' caches as the family allows. Returns what
 * lfp_family_alloc returns, counted in the same counters.
 * Thread safety: the cache's thread. Progress: as lfp_cache_alloc, once
 * per class tried.
 */
LFP_API void *lfp_family_cache_alloc(struct lfp_family_cache *fc,
				     size_t size);

/*
 * lfp_family_free into the family cache: the object goes into the cache
 * of its class. Returns what lfp_family_free returns (-EINVAL also for a
 * NULL fc), counted in the same counters.
 * Thread safety: the cache's thread. Progress: lock-free.
 */
LFP_API int lfp_family_cache_free(struct lfp_family_cache *fc, void *obj);

/*
 * The explicit cache of class i inside fc, for the per-class calls
 * (lfp_cache_stats, the bulk calls). It belongs to fc: it must not be
 * destroyed by itself.
 * Returns it, or NULL if fc is NULL or i >= lfp_family_classes.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API struct lfp_cache *lfp_family_cache_class(
	const struct lfp_family_cache *fc, uint32_t i);

/*
 * The fast paths, inline: in C11 (and C++11 with gcc or clang) the
 * allocation and release calls of caches, pools and families are macros
 * over the static inline functions of lfpool/inline.h, included here, and
 * a program built with them depends on the library's soname;
 * (lfp_alloc)(pool) reaches the function itself, a member so named is
 * called in parentheses, and LFP_NO_INLINE calls the exported functions
 * always. See lfpool(7), INLINE FAST PATHS.
 */
#if !defined(LFP_NO_INLINE) &&                                                \
	((!defined(__cplusplus) && defined(__STDC_VERSION__) &&                \
	  __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__) &&      \
	  !defined(__STDC_NO_THREADS__)) ||                                    \
	 (defined(__cplusplus) && __cplusplus >= 201103L && defined(__GNUC__)))
#include "lfpool/hot.h"
#include "lfpool/inline.h"
#endif /* the inline fast paths */

#ifdef __cplusplus
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}
#endif

#endif /* LFPOOL_H */
