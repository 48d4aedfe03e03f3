/* SPDX-License-Identifier: MIT */
/*
 * lfpool in its three modes, each on a fresh pool per run:
 * - bare: the shared lock-free stack alone (LFP_F_NO_CACHE);
 * - implicit: lfp_alloc/lfp_free through the per-thread cache;
 * - explicit: one lfp_cache per worker, lfp_cache_alloc/lfp_cache_free;
 * - huge: explicit, on a pool made with LFP_F_HUGEPAGE;
 * - unchecked: explicit, on a pool made with LFP_F_UNCHECKED (no
 *   generation word: the cached paths touch only the cache and the
 *   object), and the same pool through the implicit cache.
 * The implicit and explicit rows run the workloads of many pools and of
 * families too, with the hooks of c_lfpmany.c; every cached row runs the
 * bulk workloads, with lfp_alloc_bulk/lfp_free_bulk (implicit) or
 * lfp_cache_alloc_bulk/lfp_cache_free_bulk (explicit): calls into the
 * library today, inline wherever lfpool.h comes to define them inline.
 * The bare row has none: its list is the shared one alone.
 * After each run the pool's counters must show every object back and no
 * release refused.
 */
#include <stdio.h>

#include "bench.h"
#include "workloads.h"
#include "lfpool.h"

static struct lfp_pool *lfpb_pool;
/* A release the pool refused: a bug in the pool or in this program. */
static _Atomic int lfpb_refused;

static int lfpb_init(char *why, size_t why_len)
{
	(void)why;
	(void)why_len;
	return 0;
}

static int lfpb_create(uint32_t flags)
{
	struct lfp_config cfg = {
		.obj_size = BENCH_OBJ_SIZE,
		.capacity = BENCH_CAPACITY,
		.flags = flags,
	};

	bench_lfp_sizes(&cfg.cache_size, &cfg.batch_size);
	atomic_store_explicit(&lfpb_refused, 0, memory_order_relaxed);
	return lfp_create(&cfg, &lfpb_pool);
}

/* The lfp_bare row's flags: the bare list, unchecked unless
 * --lfp-bare-checked asked for the checked one. */
static uint32_t lfpb_bare_flags = LFP_F_NO_CACHE | LFP_F_UNCHECKED;

void bench_lfp_bare_checked(void)
{
	lfpb_bare_flags = LFP_F_NO_CACHE;
}

static int lfpb_setup_bare(unsigned nthreads)
{
	(void)nthreads;
	return lfpb_create(lfpb_bare_flags);
}

static void lfpb_print(const struct lfp_stats *s)
{
	fprintf(stderr,
		"  lfpool: allocs %llu, cas_retries %llu (%.4f per alloc), "
		"high water %llu",
		(unsigned long long)s->allocs,
		(unsigned long long)s->cas_retries,
		s->allocs ? (double)s->cas_retries / (double)s->allocs : 0.0,
		(unsigned long long)s->high_water);
	fprintf(stderr,
		", cache_hits %llu, refills %llu, flushes %llu, steals %llu, "
		"cached after the run %llu",
		(unsigned long long)s->cache_hits,
		(unsigned long long)s->refills, (unsigned long long)s->flushes,
		(unsigned long long)s->steals, (unsigned long long)s->cached);
	fputc('\n', stderr);
}

/* Every worker has left: all objects must be back, none refused. */
static int lfpb_teardown(void)
{
	struct lfp_stats s;
	int bad;

	lfp_stats(lfpb_pool, &s);
	bad = s.live != 0 || s.rejected_frees != 0 ||
	      atomic_load_explicit(&lfpb_refused, memory_order_relaxed);
	if (bad)
		fprintf(stderr, "lfpool: %llu objects live, %llu releases "
				"refused after the run\n",
			(unsigned long long)s.live,
			(unsigned long long)s.rejected_frees);
	if (bench_verbose || bad)
		lfpb_print(&s);
	if (bench_verbose)
		fprintf(stderr, "  AnonHugePages of the process: %ld kB\n",
			bench_rollup_kb("AnonHugePages"));
	lfp_destroy(lfpb_pool);
	lfpb_pool = NULL;
	return bad;
}

static void *lfpb_enter(unsigned tid)
{
	(void)tid;
	return lfpb_pool;
}

static void lfpb_leave(void *ctx)
{
	(void)ctx;
}

WL_INLINE void *lfpb_alloc(void *ctx)
{
	return lfp_alloc(ctx);
}

WL_INLINE void lfpb_free(void *ctx, void *obj)
{
	if (__builtin_expect(lfp_free(ctx, obj) != 0, 0))
		atomic_store_explicit(&lfpb_refused, 1, memory_order_relaxed);
}

WL_INLINE size_t lfpb_alloc_bulk(void *ctx, void **objs, size_t n)
{
	return lfp_alloc_bulk(ctx, objs, n);
}

WL_INLINE void lfpb_free_bulk(void *ctx, void *const *objs, size_t n)
{
	if (__builtin_expect(lfp_free_bulk(ctx, objs, n) != n, 0))
		atomic_store_explicit(&lfpb_refused, 1, memory_order_relaxed);
}

/* lfp_bare's loops, and the implicit rows' with the bulk ones too. */
BENCH_WORKLOADS(lfpb, lfpb_alloc, lfpb_free);
BENCH_BULK_LOOPS(lfpb, lfpb_alloc_bulk, lfpb_free_bulk)

static const bench_fn lfpb_bulk_fns[WL_COUNT] = {
	BENCH_WORKLOAD_FNS(lfpb),
	BENCH_BULK_FNS(lfpb),
};

const struct bench_contender bench_lfp_bare = {
	.name = "lfp_bare",
	.label = "lfpool, shared lock-free stack only (LFP_F_NO_CACHE | "
		 "LFP_F_UNCHECKED; LFP_F_NO_CACHE with --lfp-bare-checked)",
	.init = lfpb_init,
	.setup = lfpb_setup_bare,
	.teardown = lfpb_teardown,
	.enter = lfpb_enter,
	.leave = lfpb_leave,
	.fns = lfpb_fns,
};

static int lfpb_setup_cached(unsigned nthreads)
{
	(void)nthreads;
	return lfpb_create(LFP_F_NONE);
}

static int lfpb_setup_huge(unsigned nthreads)
{
	(void)nthreads;
	return lfpb_create(LFP_F_HUGEPAGE);
}

static void *lfpb_cache_enter(unsigned tid)
{
	(void)tid;
	return lfp_cache_create(lfpb_pool);
}

static void lfpb_cache_leave(void *ctx)
{
	lfp_cache_destroy(ctx);
}

WL_INLINE void *lfpb_cache_alloc(void *ctx)
{
	return lfp_cache_alloc(ctx);
}

WL_INLINE void lfpb_cache_free(void *ctx, void *obj)
{
	if (__builtin_expect(lfp_cache_free(ctx, obj) != 0, 0))
		atomic_store_explicit(&lfpb_refused, 1, memory_order_relaxed);
}

WL_INLINE size_t lfpb_cache_alloc_bulk(void *ctx, void **objs, size_t n)
{
	return lfp_cache_alloc_bulk(ctx, objs, n);
}

WL_INLINE void lfpb_cache_free_bulk(void *ctx, void *const *objs, size_t n)
{
	if (__builtin_expect(lfp_cache_free_bulk(ctx, objs, n) != n, 0))
		atomic_store_explicit(&lfpb_refused, 1, memory_order_relaxed);
}

BENCH_WORKLOADS_BULK(lfpc, lfpb_cache_alloc, lfpb_cache_free,
		     lfpb_cache_alloc_bulk, lfpb_cache_free_bulk);

const struct bench_contender bench_lfp_implicit = {
	.name = "lfp_implicit",
	.label = "lfpool, lfp_alloc/lfp_free through the implicit "
		 "per-thread cache",
	.init = lfpb_init,
	.setup = lfpb_setup_cached,
	.teardown = lfpb_teardown,
	.enter = lfpb_enter,
	.leave = lfpb_leave,
	.fns = lfpb_bulk_fns,
	.many = &bench_many_lfp_implicit,
};

const struct bench_contender bench_lfp_explicit = {
	.name = "lfp_explicit",
	.label = "lfpool, one lfp_cache per worker (lfp_cache_alloc/"
		 "lfp_cache_free)",
	.init = lfpb_init,
	.setup = lfpb_setup_cached,
	.teardown = lfpb_teardown,
	.enter = lfpb_cache_enter,
	.leave = lfpb_cache_leave,
	.fns = lfpc_fns,
	.many = &bench_many_lfp_explicit,
};

const struct bench_contender bench_lfp_huge = {
	.name = "lfp_huge",
	.label = "lfp_explicit on a pool made with LFP_F_HUGEPAGE (only when "
		 "named in --contenders)",
	.flags = CT_OPTIONAL,
	.init = lfpb_init,
	.setup = lfpb_setup_huge,
	.teardown = lfpb_teardown,
	.enter = lfpb_cache_enter,
	.leave = lfpb_cache_leave,
	.fns = lfpc_fns,
};

static int lfpb_setup_unchecked(unsigned nthreads)
{
	(void)nthreads;
	return lfpb_create(LFP_F_UNCHECKED);
}

const struct bench_contender bench_lfp_unchecked = {
	.name = "lfp_unchecked",
	.label = "lfp_explicit on a pool made with LFP_F_UNCHECKED (no "
		 "generation, no double-release check)",
	.init = lfpb_init,
	.setup = lfpb_setup_unchecked,
	.teardown = lfpb_teardown,
	.enter = lfpb_cache_enter,
	.leave = lfpb_cache_leave,
	.fns = lfpc_fns,
};

const struct bench_contender bench_lfp_unchecked_implicit = {
	.name = "lfp_unchecked_implicit",
	.label = "lfp_implicit on a pool made with LFP_F_UNCHECKED",
	.init = lfpb_init,
	.setup = lfpb_setup_unchecked,
	.teardown = lfpb_teardown,
	.enter = lfpb_enter,
	.leave = lfpb_leave,
	.fns = lfpb_bulk_fns,
};
