/*
 * lfpool: a thread-safe, lock-free pool of fixed-size objects.
 *
 * One pool holds objects of one size in memory taken up front. Allocation
 * and release are O(1) and lock-free; a pool never calls malloc after
 * lfp_create and never moves an object.
 *
 * Conventions used below:
 * - Setup calls return 0 or a negative errno value.
 * - Allocation returns NULL only when the pool is exhausted.
 * - "Thread safety:" says who may call a function concurrently with whom;
 *   "Progress:" says whether it is wait-free, lock-free or blocking.
 */
#ifndef LFPOOL_H
#define LFPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(LFP_STATIC_BUILD)
#define LFP_API __attribute__((visibility("default")))
#else
#define LFP_API
#endif

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
 * free list directly (explicit caches still work). */
#define LFP_F_NO_CACHE (1u << 0)
/* Catch a double release even when it races with another release of the
 * same object, at the price of an atomic read-modify-write per release. */
#define LFP_F_STRICT (1u << 1)

/* The largest lfp_config.cache_size. */
#define LFP_MAX_CACHE_SIZE 4096u

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
				LFP_MAX_CACHE_SIZE; 0 = capacity / 64
				clamped to 2 .. 64 */
	uint32_t batch_size; /* slots moved between a cache and the shared
				list at once, <= cache_size; 0 = half */
};

/*
 * A snapshot of a pool's counters. Exact when no other thread is using the
 * pool; under concurrent use each field is a recent value, and the sum
 * free + cached + live still equals capacity.
 */
struct lfp_stats {
	uint64_t capacity;       /* objects the pool can hold */
	uint64_t live;           /* allocated and not yet released */
	uint64_t cached;         /* free, but parked in a thread's cache */
	uint64_t free;           /* free on the shared list or never used */
	uint64_t high_water;     /* most slots ever in use at once (live+cached) */
	uint64_t allocs;         /* successful allocations */
	uint64_t frees;          /* successful releases */
	uint64_t failed_allocs;  /* allocations that found the pool exhausted */
	uint64_t rejected_frees; /* releases refused (bad, foreign, double) */
	uint64_t cas_retries;    /* failed compare-and-swaps on the shared list */
	uint64_t cache_hits;     /* allocations served by a cache directly */
	uint64_t refills;        /* batches a cache took from the shared list */
	uint64_t flushes;        /* batches a cache gave back */
	uint64_t steals;         /* idle caches emptied by a starving thread */
};

/*
 * Bytes of caller-provided memory a pool with this configuration needs
 * (the pool's header, its per-slot metadata and the objects). cfg->memory
 * is ignored.
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
 *              two, capacity is 0, unknown flags, cache_size or
 *              batch_size out of range, or caller memory that is too small
 *              or not aligned to max(LFP_MEMORY_ALIGN, align);
 *   -EOVERFLOW capacity > LFP_MAX_CAPACITY or the total size overflows;
 *   -ENOMEM    the memory could not be mapped;
 *   -EAGAIN    the per-thread cache key could not be made;
 *   -ENOTSUP   this platform has no lock-free 64-bit atomics.
 * On error *out is left unchanged.
 * Thread safety: any thread. Progress: blocking (maps memory).
 */
LFP_API int lfp_create(const struct lfp_config *cfg, struct lfp_pool **out);

/*
 * Destroy a pool and return its memory (caller-provided memory is left to
 * the caller). Objects still live are gone with it, and so are explicit
 * caches not yet destroyed. Threads that still hold an implicit cache for
 * the pool may go on and exit safely: their caches are let go without
 * touching the pool. NULL is ignored.
 * Thread safety: no other thread may use the pool during or after the call.
 * Progress: blocking (waits for threads that are exiting at that moment).
 */
LFP_API void lfp_destroy(struct lfp_pool *pool);

/*
 * Allocate one object. Its contents are unspecified.
 *
 * Unless the pool has LFP_F_NO_CACHE, the object comes from the calling
 * thread's cache for this pool, made on the thread's first call and given
 * back when the thread exits; the cache exchanges batches with the shared
 * free list. Slots parked in other threads' caches are not lost: when the
 * shared list runs dry, the allocation empties idle caches into it first.
 *
 * Returns the object, or NULL if the pool is exhausted (or pool is NULL).
 * NULL is also possible, rarely, while every remaining free slot sits in
 * the cache of a thread that is preempted in the middle of an lfp call;
 * that cache gives them back at its next call.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Progress: lock-free.
 */
LFP_API void *lfp_alloc(struct lfp_pool *pool);

/*
 * Release an object allocated from this pool, by any thread (it need not
 * be the thread that allocated it).
 *
 * Returns 0, or, leaving every count but rejected_frees unchanged:
 *   -EINVAL   pool or obj is NULL, or obj points inside the pool but not to
 *             the start of an object;
 *   -EFAULT   obj is not inside this pool's memory;
 *   -EALREADY obj is already free (a double release) or was never
 *             allocated.
 * A double release that races with another release of the same object is
 * caught only with LFP_F_STRICT or LFP_F_NO_CACHE (then exactly one of the
 * two succeeds); without, both may appear to succeed.
 * Thread safety: any thread, concurrently with any pool call but
 * lfp_destroy. Progress: lock-free.
 */
LFP_API int lfp_free(struct lfp_pool *pool, void *obj);

/*
 * Allocate up to n objects into objs[0..n). Returns how many were taken
 * (fewer than n only if the pool ran out), 0 if pool or objs is NULL.
 * Thread safety and progress: as lfp_alloc.
 */
LFP_API size_t lfp_alloc_bulk(struct lfp_pool *pool, void **objs, size_t n);

/*
 * Release objs[0..n) as lfp_free would. Returns how many were released;
 * objects lfp_free would reject are skipped and stay as they were.
 * Thread safety and progress: as lfp_free.
 */
LFP_API size_t lfp_free_bulk(struct lfp_pool *pool, void *const *objs,
			     size_t n);

/*
 * Explicit caches, for job systems whose workers have fixed identities:
 * a worker keeps its own cache and allocates through it with no lookup.
 * A cache may be used by one thread at a time; it may move between threads
 * if the hand-over synchronises (a mutex, a queue). Objects taken from a
 * cache may be released anywhere, and any object of the pool may be
 * released into any cache. Destroy every cache before its pool.
 */

/*
 * Make a cache for pool (reusing one given up earlier if possible).
 * Returns it, or NULL if pool is NULL or memory ran out.
 * Thread safety: any thread. Progress: lock-free, blocking only inside
 * malloc when no cache can be reused.
 */
LFP_API struct lfp_cache *lfp_cache_create(struct lfp_pool *pool);

/*
 * Give every cached slot back to the pool and give the cache up.
 * NULL is ignored. The cache must not be used afterwards.
 * Thread safety: the cache's thread. Progress: blocking only while another
 * thread is emptying this cache (a short, bounded wait).
 */
LFP_API void lfp_cache_destroy(struct lfp_cache *cache);

/*
 * Allocate one object through the cache. Returns it, or NULL if the pool
 * is exhausted (see lfp_alloc) or cache is NULL.
 * Thread safety: the cache's thread. Progress: lock-free; the common case
 * is a few loads and stores with no atomic read-modify-write.
 */
LFP_API void *lfp_cache_alloc(struct lfp_cache *cache);

/*
 * Release an object of the cache's pool into the cache. Returns 0 or the
 * errors of lfp_free (-EINVAL also for a NULL cache).
 * Thread safety: the cache's thread. Progress: lock-free.
 */
LFP_API int lfp_cache_free(struct lfp_cache *cache, void *obj);

/*
 * Give every cached slot back to the shared free list (before a worker
 * goes idle, say). NULL is ignored.
 * Thread safety: the cache's thread. Progress: as lfp_cache_destroy.
 */
LFP_API void lfp_cache_flush(struct lfp_cache *cache);

/*
 * Whether ptr points into the pool's object memory (to any byte of any
 * slot, live or free). False for NULL arguments.
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
 * The object at slot index, live or not, or NULL if index >= capacity.
 * Inverse of lfp_index_of.
 * Thread safety: any thread. Progress: wait-free.
 */
LFP_API void *lfp_at(const struct lfp_pool *pool, uint32_t index);

/*
 * Fill *out with a snapshot of the pool's counters (see struct lfp_stats).
 * Does nothing if pool or out is NULL.
 * Thread safety: any thread. Progress: wait-free, O(caches of the pool).
 */
LFP_API void lfp_stats(const struct lfp_pool *pool, struct lfp_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* LFPOOL_H */
