/* SPDX-License-Identifier: MIT */
/*
 * The lean shared free lists a bare pool is measured against: one list
 * of BENCH_CAPACITY objects shared by every thread, no per-thread cache,
 * no check on release.
 * - treiber: the minimal tagged-index Treiber stack, a few lines here,
 *   inlined into the workloads' loops: what a bare shared list costs
 *   with nothing added.
 * - boost_freelist: boost.lockfree's freelist_stack (boost_freelist.cc),
 *   called once each way through that file's C interface: the list an
 *   engine already using Boost would take.
 * Both carve their objects from one slab, mapped once; every run makes
 * its list afresh and, after it, counts that every object came back.
 */
#include <stdio.h>

#include "bench.h"
#include "workloads.h"
#ifdef BENCH_HAVE_BOOST_FREELIST
#include "boost_freelist.h"
#endif

static char *lean_slab;

static int lean_map(char *why, size_t why_len)
{
	if (!lean_slab)
		lean_slab = bench_map((size_t)BENCH_CAPACITY * BENCH_OBJ_SIZE);
	if (lean_slab)
		return 0;
	snprintf(why, why_len, "cannot map the slab");
	return -1;
}

static char lean_ctx;

static void *lean_enter(unsigned tid)
{
	(void)tid;
	return &lean_ctx;
}

static void lean_leave(void *ctx)
{
	(void)ctx;
}

/* treiber */

#define TRB_NIL UINT32_MAX
#define TRB_INDEX(head) ((uint32_t)(head))
#define TRB_TAG(head) ((head) & ~(uint64_t)UINT32_MAX)
#define TRB_TAG_ONE (UINT64_C(1) << 32)

/* {tag:32, index:32}, alone on its line. */
static struct {
	alignas(BENCH_CACHELINE) _Atomic uint64_t head;
} trb;
/* The link of each free object, beside the slab, never in it. */
static alignas(BENCH_CACHELINE) _Atomic uint32_t trb_next[BENCH_CAPACITY];

static int trb_init(char *why, size_t why_len)
{
	if (!atomic_is_lock_free(&trb.head)) {
		snprintf(why, why_len, "a 64-bit atomic is not lock-free here");
		return -1;
	}
	return lean_map(why, why_len);
}

/* Objects pop in slab order, as lfpool's fresh pool hands them out. */
static int trb_setup(unsigned nthreads)
{
	(void)nthreads;
	for (uint32_t i = 0; i < BENCH_CAPACITY; i++)
		atomic_store_explicit(&trb_next[i],
				      i + 1 < BENCH_CAPACITY ? i + 1 : TRB_NIL,
				      memory_order_relaxed);
	/* Relaxed: pthread_create orders the list before the workers. */
	atomic_store_explicit(&trb.head, 0, memory_order_relaxed);
	return 0;
}

/* Every worker has left: the list must hold every object once. */
static int trb_teardown(void)
{
	uint64_t head = atomic_load_explicit(&trb.head, memory_order_relaxed);
	uint32_t i = TRB_INDEX(head), n = 0;

	for (; i != TRB_NIL && i < BENCH_CAPACITY && n <= BENCH_CAPACITY; n++)
		i = atomic_load_explicit(&trb_next[i], memory_order_relaxed);
	if (i == TRB_NIL && n == BENCH_CAPACITY)
		return 0;
	fprintf(stderr, "treiber: %u objects on the list after the run, "
			"not %u\n", n, (unsigned)BENCH_CAPACITY);
	return 1;
}

/*
 * Pop: one CAS that bumps the tag. The link we read may belong to an
 * object that another thread popped, and maybe pushed back, since we
 * read the head: that is harmless, because the tag has changed too and
 * the CAS fails.
 */
static inline void *trb_alloc(void *ctx)
{
	/* Acquire: pairs with the release CAS in trb_free, so the link of
	 * the object at the top is the one its pusher stored. */
	uint64_t old = atomic_load_explicit(&trb.head, memory_order_acquire);
	uint64_t new;

	(void)ctx;
	do {
		uint32_t i = TRB_INDEX(old);

		if (i == TRB_NIL)
			return NULL;
		new = (TRB_TAG(old) + TRB_TAG_ONE) |
		      atomic_load_explicit(&trb_next[i], memory_order_relaxed);
		/* Acquire on success: pairs with the release CAS in
		 * trb_free, so the last owner's writes to the object come
		 * before ours; on failure, as the load above. */
	} while (!atomic_compare_exchange_weak_explicit(
		&trb.head, &old, new, memory_order_acquire,
		memory_order_acquire));
	return lean_slab + (size_t)TRB_INDEX(old) * BENCH_OBJ_SIZE;
}

/* Push: one CAS that keeps the tag; pops alone change it, which is
 * enough for a pop to tell the head it read from a head made since. */
static inline void trb_free(void *ctx, void *obj)
{
	uint32_t i = (uint32_t)(((uintptr_t)obj - (uintptr_t)lean_slab) /
			       BENCH_OBJ_SIZE);
	uint64_t old = atomic_load_explicit(&trb.head, memory_order_relaxed);

	(void)ctx;
	do
		atomic_store_explicit(&trb_next[i], TRB_INDEX(old),
				      memory_order_relaxed);
	/* Release: publishes the link and our writes to the object; pairs
	 * with the acquire load and CAS in trb_alloc. */
	while (!atomic_compare_exchange_weak_explicit(
		&trb.head, &old, TRB_TAG(old) | i, memory_order_release,
		memory_order_relaxed));
}

BENCH_WORKLOADS(trb, trb_alloc, trb_free);

const struct bench_contender bench_treiber = {
	.name = "treiber",
	.label = "minimal tagged-index Treiber stack: 64-bit head {tag, "
		 "index}, links in a side array, one CAS each way, inlined",
	.init = trb_init,
	.setup = trb_setup,
	.teardown = trb_teardown,
	.enter = lean_enter,
	.leave = lean_leave,
	.fns = trb_fns,
};

/* boost_freelist */

#ifdef BENCH_HAVE_BOOST_FREELIST
static int bfl_init(char *why, size_t why_len)
{
	if (lean_map(why, why_len))
		return -1;
	/* A trial list: the object size matches and the head is lock-free. */
	if (bench_bfl_setup(lean_slab, 1, BENCH_OBJ_SIZE)) {
		snprintf(why, why_len, "boost %s: the free list's head is not "
				       "lock-free, or its object is not %d "
				       "bytes", bench_bfl_version(),
			 BENCH_OBJ_SIZE);
		return -1;
	}
	bench_bfl_teardown();
	if (bench_verbose)
		fprintf(stderr, "boost %s freelist_stack\n",
			bench_bfl_version());
	return 0;
}

static int bfl_setup(unsigned nthreads)
{
	(void)nthreads;
	return bench_bfl_setup(lean_slab, BENCH_CAPACITY, BENCH_OBJ_SIZE);
}

static int bfl_teardown(void)
{
	size_t n = bench_bfl_teardown();

	if (n == BENCH_CAPACITY)
		return 0;
	fprintf(stderr, "boost_freelist: %zu objects on the list after the "
			"run, not %u\n", n, (unsigned)BENCH_CAPACITY);
	return 1;
}

static inline void *bfl_alloc(void *ctx)
{
	(void)ctx;
	return bench_bfl_alloc();
}

static inline void bfl_free(void *ctx, void *obj)
{
	(void)ctx;
	bench_bfl_free(obj);
}

BENCH_WORKLOADS(bfl, bfl_alloc, bfl_free);
#define BFL_FNS bfl_fns
#else
static int bfl_init(char *why, size_t why_len)
{
	snprintf(why, why_len, "not built: configure found no "
			       "boost/lockfree/detail/freelist.hpp or no "
			       "C++ compiler (apt-get install libboost-dev)");
	return -1;
}

static int bfl_setup(unsigned nthreads)
{
	(void)nthreads;
	return -1;
}

static int bfl_teardown(void)
{
	return 0;
}
#define BFL_FNS NULL
#endif

const struct bench_contender bench_boost_freelist = {
	.name = "boost_freelist",
	.label = "boost.lockfree freelist_stack (48-bit pointer + 16-bit tag "
		 "head, links in the objects), one call each way into C++",
	.init = bfl_init,
	.setup = bfl_setup,
	.teardown = bfl_teardown,
	.enter = lean_enter,
	.leave = lean_leave,
	.fns = BFL_FNS,
};
