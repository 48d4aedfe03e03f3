/* SPDX-License-Identifier: MIT */
/*
 * lfpool on the workloads of an engine with many pools and of size-class
 * families (workloads_many.h), on pools made fresh for each run:
 * - implicit: lfp_alloc(pool[k])/lfp_free(pool[k], obj), through the
 *   thread's implicit cache of each pool; on a family,
 *   lfp_family_alloc/lfp_family_free, through the implicit caches of its
 *   classes;
 * - explicit: one lfp_cache per pool per worker, lfp_cache_alloc/
 *   lfp_cache_free; on a family, one lfp_family_cache per worker,
 *   lfp_family_cache_alloc/lfp_family_cache_free.
 * They are the lfp_implicit and lfp_explicit rows of the report; with
 * --lfp-many-unchecked the pools and every class of the family are made
 * with LFP_F_UNCHECKED (issue 28's family target is for such classes). After
 * each run every pool's counters must show every object back and no
 * release refused.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "workloads_many.h"
#include "lfpool.h"

/*
 * Capacities: the objects live at once, with 4x headroom.
 * - Many pools: the most one pool has live is a burst of 256 all on it
 *   (N = 1) in each of BENCH_MAX_THREADS threads, 2048. Every pool holds
 *   4 x 2048 = 8192 whatever N is, so that every N runs pools of one
 *   configuration (the default cache: capacity / 4, at most 1024, batches
 *   of 64) and N pools against 1 pool measures the change of pool alone.
 * - Family: classes of 32, 64, 128 and 256 bytes, 8192 objects each. The
 *   one-size workloads (60 bytes) keep all their live objects in the
 *   64-byte class, 2048 at 8 threads; the mixed ones a quarter in each.
 * --lfp-cache-size and --lfp-batch-size apply here too.
 */
#define LFPM_LIVE (BENCH_MAX_THREADS * WL_MANY_BURST)
#define LFPM_CAPACITY (4 * LFPM_LIVE)

static const size_t lfpm_class_size[] = { 32, 64, 128, 256 };
#define LFPM_CLASSES (sizeof(lfpm_class_size) / sizeof(lfpm_class_size[0]))

static struct lfp_pool *lfpm_pool[WL_MANY_MAX_POOLS];
static unsigned lfpm_npools;
static struct lfp_family *lfpm_fam;
/* A release the pool refused: a bug in the pool or in this program. */
static _Atomic int lfpm_refused;

/* A worker's context; aligned so that no two workers share a line. */
struct lfpm_ctx {
	alignas(BENCH_CACHELINE) struct lfp_pool *pool[WL_MANY_MAX_POOLS];
	struct lfp_cache *cache[WL_MANY_MAX_POOLS];
	struct lfp_family *fam;
	struct lfp_family_cache *fc;
};

static int lfpm_family_create(void)
{
	uint32_t cap[LFPM_CLASSES], cache_size, batch_size;
	struct lfp_family_config cfg = {
		.sizes = lfpm_class_size,
		.capacities = cap,
		.classes = LFPM_CLASSES,
		.flags = bench_lfp_many_is_unchecked() ? LFP_F_UNCHECKED : 0,
		.name = "bench",
	};

	for (size_t i = 0; i < LFPM_CLASSES; i++)
		cap[i] = LFPM_CAPACITY;
	bench_lfp_sizes(&cache_size, &batch_size);
	cfg.cache_size = cache_size;
	cfg.batch_size = batch_size;
	return lfp_family_create(&cfg, &lfpm_fam);
}

static int lfpm_pools_create(unsigned n)
{
	struct lfp_config cfg = {
		.obj_size = BENCH_OBJ_SIZE,
		.capacity = LFPM_CAPACITY,
		.flags = bench_lfp_many_is_unchecked() ? LFP_F_UNCHECKED : 0,
		.name = "bench",
	};
	int err = 0;

	bench_lfp_sizes(&cfg.cache_size, &cfg.batch_size);
	for (lfpm_npools = 0; lfpm_npools < n && !err; lfpm_npools++)
		err = lfp_create(&cfg, &lfpm_pool[lfpm_npools]);
	if (!err)
		return 0;
	/* The last one failed and made nothing. */
	for (lfpm_npools--; lfpm_npools > 0; lfpm_npools--)
		lfp_destroy(lfpm_pool[lfpm_npools - 1]);
	return err;
}

static int lfpm_setup(unsigned nthreads, enum bench_workload wl)
{
	unsigned n = bench_wl_pools(wl);

	(void)nthreads;
	atomic_store_explicit(&lfpm_refused, 0, memory_order_relaxed);
	return n ? lfpm_pools_create(n) : lfpm_family_create();
}

/* Every object back, no release refused, no allocation failed. */
static int lfpm_check(const struct lfp_stats *s, const char *what)
{
	if (!s->live && !s->rejected_frees && !s->failed_allocs)
		return 0;
	fprintf(stderr, "lfpool %s: %llu objects live, %llu releases refused, "
			"%llu allocations failed after the run\n",
		what, (unsigned long long)s->live,
		(unsigned long long)s->rejected_frees,
		(unsigned long long)s->failed_allocs);
	return 1;
}

static int lfpm_teardown(void)
{
	int bad = atomic_load_explicit(&lfpm_refused, memory_order_relaxed);
	struct lfp_family_stats fs;
	struct lfp_stats s;

	for (unsigned i = 0; i < lfpm_npools; i++) {
		lfp_stats(lfpm_pool[i], &s);
		bad |= lfpm_check(&s, "pool");
		if (bench_verbose)
			fprintf(stderr, "  pool %u of %u: allocs %llu, cache_hits "
					"%llu, refills %llu, flushes %llu\n",
				i, lfpm_npools, (unsigned long long)s.allocs,
				(unsigned long long)s.cache_hits,
				(unsigned long long)s.refills,
				(unsigned long long)s.flushes);
		lfp_destroy(lfpm_pool[i]);
	}
	lfpm_npools = 0;
	if (lfpm_fam) {
		lfp_family_stats(lfpm_fam, &fs);
		bad |= lfpm_check(&fs.total, "family");
		bad |= fs.spilled != 0 || fs.bad_sizes != 0;
		lfp_family_destroy(lfpm_fam);
		lfpm_fam = NULL;
	}
	return bad;
}

static void *lfpm_enter(unsigned tid)
{
	struct lfpm_ctx *c = aligned_alloc(BENCH_CACHELINE, sizeof(*c));

	(void)tid;
	if (!c)
		return NULL;
	*c = (struct lfpm_ctx){ .fam = lfpm_fam };
	for (unsigned i = 0; i < lfpm_npools; i++)
		c->pool[i] = lfpm_pool[i];
	return c;
}

static void lfpm_leave(void *ctx)
{
	free(ctx);
}

static void lfpm_cache_leave(void *ctx)
{
	struct lfpm_ctx *c = ctx;

	for (unsigned i = 0; i < lfpm_npools; i++)
		lfp_cache_destroy(c->cache[i]);
	lfp_family_cache_destroy(c->fc);
	free(c);
}

static void *lfpm_cache_enter(unsigned tid)
{
	struct lfpm_ctx *c = lfpm_enter(tid);

	for (unsigned i = 0; c && i < lfpm_npools; i++)
		if (!(c->cache[i] = lfp_cache_create(c->pool[i]))) {
			lfpm_cache_leave(c); /* NULL is ignored */
			return NULL;
		}
	if (c && c->fam && !(c->fc = lfp_family_cache_create(c->fam))) {
		lfpm_cache_leave(c);
		return NULL;
	}
	return c;
}

WL_INLINE void lfpm_refuse(int err)
{
	if (__builtin_expect(err != 0, 0))
		atomic_store_explicit(&lfpm_refused, 1, memory_order_relaxed);
}

/* implicit caches: lfp_alloc and lfp_free on pool k */

WL_INLINE void *lfpm_alloc(void *ctx, unsigned k, size_t size)
{
	(void)size;
	return lfp_alloc(((struct lfpm_ctx *)ctx)->pool[k]);
}

WL_INLINE void lfpm_free(void *ctx, unsigned k, void *obj)
{
	lfpm_refuse(lfp_free(((struct lfpm_ctx *)ctx)->pool[k], obj));
}

BENCH_POOLS_WORKLOADS(lfpmi, lfpm_alloc, lfpm_free)

/* explicit caches: one per pool */

WL_INLINE void *lfpm_cache_alloc(void *ctx, unsigned k, size_t size)
{
	(void)size;
	return lfp_cache_alloc(((struct lfpm_ctx *)ctx)->cache[k]);
}

WL_INLINE void lfpm_cache_free(void *ctx, unsigned k, void *obj)
{
	lfpm_refuse(lfp_cache_free(((struct lfpm_ctx *)ctx)->cache[k], obj));
}

BENCH_POOLS_WORKLOADS(lfpmc, lfpm_cache_alloc, lfpm_cache_free)

/* the family, through the implicit caches of its classes */

WL_INLINE void *lfpm_fam_alloc(void *ctx, unsigned k, size_t size)
{
	(void)k;
	return lfp_family_alloc(((struct lfpm_ctx *)ctx)->fam, size);
}

WL_INLINE void lfpm_fam_free(void *ctx, unsigned k, void *obj)
{
	(void)k;
	lfpm_refuse(lfp_family_free(((struct lfpm_ctx *)ctx)->fam, obj));
}

BENCH_FAMILY_WORKLOADS(lfpmf, lfpm_fam_alloc, lfpm_fam_free)

/* the family, through one family cache per worker */

WL_INLINE void *lfpm_fc_alloc(void *ctx, unsigned k, size_t size)
{
	(void)k;
	return lfp_family_cache_alloc(((struct lfpm_ctx *)ctx)->fc, size);
}

WL_INLINE void lfpm_fc_free(void *ctx, unsigned k, void *obj)
{
	(void)k;
	lfpm_refuse(lfp_family_cache_free(((struct lfpm_ctx *)ctx)->fc, obj));
}

BENCH_FAMILY_WORKLOADS(lfpmfc, lfpm_fc_alloc, lfpm_fc_free)

static const bench_fn lfpm_implicit_fns[WL_COUNT] = {
	BENCH_POOLS_FNS(lfpmi),
	BENCH_FAMILY_FNS(lfpmf),
};

static const bench_fn lfpm_explicit_fns[WL_COUNT] = {
	BENCH_POOLS_FNS(lfpmc),
	BENCH_FAMILY_FNS(lfpmfc),
};

const struct bench_many bench_many_lfp_implicit = {
	.setup = lfpm_setup,
	.teardown = lfpm_teardown,
	.enter = lfpm_enter,
	.leave = lfpm_leave,
	.fns = lfpm_implicit_fns,
};

const struct bench_many bench_many_lfp_explicit = {
	.setup = lfpm_setup,
	.teardown = lfpm_teardown,
	.enter = lfpm_cache_enter,
	.leave = lfpm_cache_leave,
	.fns = lfpm_explicit_fns,
};
