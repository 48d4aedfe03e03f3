/* SPDX-License-Identifier: MIT */
/*
 * The workloads of an engine with many pools, and of size-class families,
 * compiled into each contender's file as workloads.h's are. A contender
 * defines two WL_INLINE functions (see workloads.h for why not plain
 * static inline),
 *
 *   void *alloc_in(void *ctx, unsigned k, size_t size);
 *   void free_in(void *ctx, unsigned k, void *obj);
 *
 * where k names the pool (0 .. N-1) an operation goes to and size the
 * bytes it asks for: a contender with one heap ignores k, a contender of
 * fixed-size pools ignores size. It then says
 * BENCH_POOLS_WORKLOADS(prefix, alloc_in, free_in), or
 * BENCH_FAMILY_WORKLOADS, and lists BENCH_POOLS_FNS(prefix) or
 * BENCH_FAMILY_FNS(prefix) in its table of workloads.
 *
 * Many pools: operation k (an allocation) goes to pool k % N, N = 1, 2,
 * 4 or 8, as pairs (allocate, write, release) or as bursts of
 * WL_MANY_BURST allocations over the N pools in turn, then their release
 * newest first, each into the pool it came from. Every object is 64 bytes.
 *
 * Families: the same pairs and bursts with the sizes asked for taken in
 * turn from a list: one size (60 bytes), or 24, 60, 100 and 200.
 *
 * Every object is written in full (the bytes asked for) when it is
 * allocated, as in workloads.h. N and the sizes are constants in each
 * loop, so k % N and the size are folded or cheap.
 */
#ifndef LFP_BENCH_WORKLOADS_MANY_H
#define LFP_BENCH_WORKLOADS_MANY_H

#include "workloads.h"

#define WL_MANY_BURST 256 /* allocations per burst, over all N pools */
#define WL_MANY_MAX_POOLS 8
#define WL_FAM_ONE 60     /* the one-size family workloads */
#define WL_FAM_SIZES 4    /* the mixed ones take their sizes in turn */

_Static_assert(WL_PUBLISH % WL_MANY_MAX_POOLS == 0 &&
		       WL_MANY_BURST % WL_MANY_MAX_POOLS == 0 &&
		       WL_PUBLISH % WL_FAM_SIZES == 0,
	       "operation k of a run is operation k of every batch mod N");

typedef void *(*wl_alloc_in_fn)(void *ctx, unsigned k, size_t size);
typedef void (*wl_free_in_fn)(void *ctx, unsigned k, void *obj);

static const size_t wl_fam_one[1] = { WL_FAM_ONE };
static const size_t wl_fam_mixed[WL_FAM_SIZES] = { 24, 60, 100, 200 };

/* Write size bytes, a multiple of 4, as workloads.h's wl_fill writes 64. */
WL_INLINE void wl_fill_n(void *obj, size_t size, uint64_t v)
{
	uint64_t *o = obj;
	size_t i;

	/* 64 bytes exactly as the default workloads write them (gcc -O2
	 * vectorises that loop, whose bound it knows from the start, and
	 * not this one's), so that 1 pool costs what pair costs. */
	if (size == BENCH_OBJ_SIZE) {
		wl_fill(obj, v);
		return;
	}
	for (i = 0; i < size / sizeof(uint64_t); i++)
		o[i] = v + i;
	if (size & 4)
		*(uint32_t *)(o + i) = (uint32_t)v;
	wl_escape(obj);
}

/* pairs: operation i goes to pool i % npools, with size sizes[i % nsizes] */

WL_INLINE void wl_many_pair(struct bench_worker *w, wl_alloc_in_fn alloc,
			    wl_free_in_fn release, unsigned npools,
			    const size_t *sizes, unsigned nsizes)
{
	void *ctx = w->ctx;
	uint64_t n = 0;

	while (!wl_stopped(w)) {
		for (unsigned i = 0; i < WL_PUBLISH; i++) {
			size_t size = sizes[i % nsizes];
			void *p = alloc(ctx, i % npools, size);

			if (!p) {
				wl_fail(w);
				return;
			}
			wl_fill_n(p, size, n + i);
			release(ctx, i % npools, p);
		}
		n += WL_PUBLISH;
		wl_publish(w, n);
	}
}

/* bursts: WL_MANY_BURST allocations in turn, then release newest first */

WL_INLINE void wl_many_burst(struct bench_worker *w, wl_alloc_in_fn alloc,
			     wl_free_in_fn release, unsigned npools,
			     const size_t *sizes, unsigned nsizes)
{
	void *ctx = w->ctx;
	void *objs[WL_MANY_BURST];
	uint64_t n = 0;

	while (!wl_stopped(w)) {
		unsigned got;

		for (got = 0; got < WL_MANY_BURST; got++) {
			size_t size = sizes[got % nsizes];

			if (!(objs[got] = alloc(ctx, got % npools, size)))
				break;
			wl_fill_n(objs[got], size, n + got);
		}
		for (unsigned i = got; i > 0; i--)
			release(ctx, (i - 1) % npools, objs[i - 1]);
		if (got < WL_MANY_BURST) {
			wl_fail(w);
			break;
		}
		n += WL_MANY_BURST;
		wl_publish(w, n);
	}
}

#define WL_MANY_FN(prefix, name, shape, alloc, release, npools, sizes, ns)     \
	static void prefix##_##name(struct bench_worker *w)                    \
	{                                                                      \
		wl_many_##shape(w, alloc, release, npools, sizes, ns);         \
	}

static const size_t wl_pool_size[1] = { BENCH_OBJ_SIZE };

#define BENCH_POOLS_WORKLOADS(prefix, alloc, release)                          \
	WL_MANY_FN(prefix, p1_pair, pair, alloc, release, 1, wl_pool_size, 1)  \
	WL_MANY_FN(prefix, p2_pair, pair, alloc, release, 2, wl_pool_size, 1)  \
	WL_MANY_FN(prefix, p4_pair, pair, alloc, release, 4, wl_pool_size, 1)  \
	WL_MANY_FN(prefix, p8_pair, pair, alloc, release, 8, wl_pool_size, 1)  \
	WL_MANY_FN(prefix, p1_burst, burst, alloc, release, 1, wl_pool_size, 1)\
	WL_MANY_FN(prefix, p2_burst, burst, alloc, release, 2, wl_pool_size, 1)\
	WL_MANY_FN(prefix, p4_burst, burst, alloc, release, 4, wl_pool_size, 1)\
	WL_MANY_FN(prefix, p8_burst, burst, alloc, release, 8, wl_pool_size, 1)

#define BENCH_POOLS_FNS(prefix)                                                \
	[WL_POOLS1_PAIR] = prefix##_p1_pair,                                   \
	[WL_POOLS2_PAIR] = prefix##_p2_pair,                                   \
	[WL_POOLS4_PAIR] = prefix##_p4_pair,                                   \
	[WL_POOLS8_PAIR] = prefix##_p8_pair,                                   \
	[WL_POOLS1_BURST] = prefix##_p1_burst,                                 \
	[WL_POOLS2_BURST] = prefix##_p2_burst,                                 \
	[WL_POOLS4_BURST] = prefix##_p4_burst,                                 \
	[WL_POOLS8_BURST] = prefix##_p8_burst

#define BENCH_FAMILY_WORKLOADS(prefix, alloc, release)                         \
	WL_MANY_FN(prefix, f_pair, pair, alloc, release, 1, wl_fam_one, 1)     \
	WL_MANY_FN(prefix, f_burst, burst, alloc, release, 1, wl_fam_one, 1)   \
	WL_MANY_FN(prefix, fm_pair, pair, alloc, release, 1, wl_fam_mixed,     \
		   WL_FAM_SIZES)                                               \
	WL_MANY_FN(prefix, fm_burst, burst, alloc, release, 1, wl_fam_mixed,   \
		   WL_FAM_SIZES)

#define BENCH_FAMILY_FNS(prefix)                                               \
	[WL_FAM_PAIR] = prefix##_f_pair,                                       \
	[WL_FAM_BURST] = prefix##_f_burst,                                     \
	[WL_FAM_MIXED_PAIR] = prefix##_fm_pair,                                \
	[WL_FAM_MIXED_BURST] = prefix##_fm_burst

#endif /* LFP_BENCH_WORKLOADS_MANY_H */
