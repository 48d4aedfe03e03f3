/*
 * Internal types and prototypes of lfpool, grouped by the file that defines
 * them. Never installed.
 */
#ifndef LFPOOL_INTERNAL_H
#define LFPOOL_INTERNAL_H

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lfpool.h"

#define LFPI_CACHELINE 64

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
};

#define LFPI_SHARDS 16

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

	/* Shared and hot: each on its own cache line. */
	struct lfpi_stack free;
	/* Slots [bump, capacity) were never handed out (lazy first touch). */
	alignas(LFPI_CACHELINE) _Atomic uint32_t bump;

	struct lfpi_counters shard[LFPI_SHARDS];
};

/* slab.c: sizing, alignment, index <-> pointer, memory. */

struct lfpi_layout {
	size_t align;     /* object alignment */
	size_t stride;    /* object size rounded up to align */
	size_t slots_off; /* offset of the metadata array */
	size_t objs_off;  /* offset of the object region */
	size_t total;     /* bytes for header, metadata and objects */
	size_t base_align;/* alignment the whole block needs */
};

int lfpi_layout(const struct lfp_config *cfg, struct lfpi_layout *out);
void *lfpi_map(size_t size, size_t align, void **map, size_t *map_size);
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
 * Make live slot idx free; with expect != 0 only if its generation is
 * expect. Returns 0, -EALREADY if it was not live, or -ESTALE if it was
 * live with another generation.
 */
int lfpi_mark_free(struct lfp_pool *pool, uint32_t idx, uint32_t expect);
/*
 * Check obj and mark its slot free. Returns the slot, or LFPI_NIL with
 * *err = -EINVAL, -EFAULT or -EALREADY as documented for lfp_free.
 */
uint32_t lfpi_release_slot(struct lfp_pool *pool, void *obj, int *err);
/*
 * Return slot idx, just marked free, to the pool; or, if err < 0, count a
 * refused release. Returns err.
 */
int lfpi_finish_release(struct lfp_pool *pool, uint32_t idx, int err);

/* debug.c: consistency checks for tests and the stress harness. */

struct lfpi_census {
	uint64_t live;   /* slots whose generation says live */
	uint64_t listed; /* slots on the shared free stack */
	uint64_t fresh;  /* slots never handed out */
};

/*
 * Walk the pool while no other thread uses it and check that every slot
 * is exactly one of: live, on the free stack, never used; and that the
 * counters agree. Fills *out. Returns 0, or -EUCLEAN with a message in
 * msg (len bytes) naming the first problem and its slot.
 */
int lfpi_audit(struct lfp_pool *pool, struct lfpi_census *out, char *msg,
	       size_t len);

#endif /* LFPOOL_INTERNAL_H */
