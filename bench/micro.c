/* SPDX-License-Identifier: MIT */
/*
 * The bulk calls against the single ones, on one thread, in ns per handle
 * or per object (CPU time of the calling thread, median of the
 * repetitions; in each repetition the rows take turns in a rotating order).
 *
 * Resolve: a pool is filled with 64-byte objects and their handles kept;
 * one pass resolves every handle, either with lfp_resolve in a loop or
 * with lfp_resolve_bulk over chunks of MICRO_CHUNK handles, and folds the
 * pointers into a sink (the objects are not read: the rows compare the
 * lookups). Handles come in allocation order (neighbouring slots, what a
 * prefetcher follows) or shuffled (a cache miss per handle once the
 * metadata outgrows the caches). 148,000 handles fit in a large L2/L3;
 * 1,000,000 do not, and are measured again on a pool made with
 * LFP_F_HUGEPAGE.
 *
 * Bulk: one pass allocates MICRO_BATCH objects and releases them, either
 * with lfp_alloc/lfp_free one at a time or with one lfp_alloc_bulk and
 * one lfp_free_bulk, through the thread's implicit cache; the objects are
 * not written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "lfpool.h"

#define MICRO_SMALL 148000u
#define MICRO_LARGE 1000000u
#define MICRO_CHUNK 256u     /* handles per lfp_resolve_bulk call */
#define MICRO_BATCH 32u      /* objects per lfp_alloc_bulk call */
#define MICRO_ROUNDS 65536u  /* batches per bulk pass */

const char *const bench_micro_name[MB_COUNT] = {
	[MB_RES_S_ORDER_LOOP] = "resolve-148k-order-loop",
	[MB_RES_S_ORDER_BULK] = "resolve-148k-order-bulk",
	[MB_RES_S_SHUF_LOOP] = "resolve-148k-shuffled-loop",
	[MB_RES_S_SHUF_BULK] = "resolve-148k-shuffled-bulk",
	[MB_RES_L_ORDER_LOOP] = "resolve-1m-order-loop",
	[MB_RES_L_ORDER_BULK] = "resolve-1m-order-bulk",
	[MB_RES_L_SHUF_LOOP] = "resolve-1m-shuffled-loop",
	[MB_RES_L_SHUF_BULK] = "resolve-1m-shuffled-bulk",
	[MB_RES_H_SHUF_LOOP] = "resolve-1m-huge-shuffled-loop",
	[MB_RES_H_SHUF_BULK] = "resolve-1m-huge-shuffled-bulk",
	[MB_ALLOC_SINGLE] = "alloc-free-single",
	[MB_ALLOC_BULK] = "alloc-free-bulk32",
};

const char *const bench_micro_label[MB_COUNT] = {
	[MB_RES_S_ORDER_LOOP] = "lfp_resolve loop, 148k handles in order",
	[MB_RES_S_ORDER_BULK] = "lfp_resolve_bulk, 148k handles in order",
	[MB_RES_S_SHUF_LOOP] = "lfp_resolve loop, 148k handles shuffled",
	[MB_RES_S_SHUF_BULK] = "lfp_resolve_bulk, 148k handles shuffled",
	[MB_RES_L_ORDER_LOOP] = "lfp_resolve loop, 1M handles in order",
	[MB_RES_L_ORDER_BULK] = "lfp_resolve_bulk, 1M handles in order",
	[MB_RES_L_SHUF_LOOP] = "lfp_resolve loop, 1M handles shuffled",
	[MB_RES_L_SHUF_BULK] = "lfp_resolve_bulk, 1M handles shuffled",
	[MB_RES_H_SHUF_LOOP] = "lfp_resolve loop, 1M shuffled, LFP_F_HUGEPAGE",
	[MB_RES_H_SHUF_BULK] = "lfp_resolve_bulk, 1M shuffled, "
			       "LFP_F_HUGEPAGE",
	[MB_ALLOC_SINGLE] = "lfp_alloc x32 then lfp_free x32 (per object)",
	[MB_ALLOC_BULK] = "lfp_alloc_bulk(32) then lfp_free_bulk(32) "
			  "(per object)",
};

/* A pool of n objects, all live, and their handles in order and shuffled. */
struct micro_set {
	struct lfp_pool *pool;
	lfp_handle *order, *shuf;
	uint32_t n;
};

static volatile uintptr_t micro_sink;

static double micro_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int micro_set_make(struct micro_set *s, uint32_t n, uint32_t flags)
{
	struct lfp_config cfg = { .obj_size = BENCH_OBJ_SIZE, .capacity = n,
				  .flags = flags, .name = "micro" };
	uint64_t rng = 0x9e3779b97f4a7c15u + n + flags;

	memset(s, 0, sizeof(*s));
	s->n = n;
	s->order = malloc(sizeof(lfp_handle) * n);
	s->shuf = malloc(sizeof(lfp_handle) * n);
	if (!s->order || !s->shuf || lfp_create(&cfg, &s->pool))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		void *p = lfp_alloc(s->pool);

		if (!p)
			return -1;
		memset(p, (int)i, BENCH_OBJ_SIZE);
		s->order[i] = s->shuf[i] = lfp_handle_of(s->pool, p);
	}
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(bench_rand(&rng) % (i + 1));
		lfp_handle t = s->shuf[i];

		s->shuf[i] = s->shuf[j];
		s->shuf[j] = t;
	}
	return 0;
}

static void micro_set_free(struct micro_set *s)
{
	lfp_destroy(s->pool);
	free(s->order);
	free(s->shuf);
}

/* One pass over hs; ns per handle, or -1 if a live handle did not resolve. */
static double micro_resolve(const struct micro_set *s, const lfp_handle *hs,
			    bool bulk)
{
	void *objs[MICRO_CHUNK];
	uintptr_t sink = 0;
	size_t found = 0;
	double t = micro_cpu_ns();

	if (bulk) {
		for (uint32_t i = 0; i < s->n; i += MICRO_CHUNK) {
			size_t k = s->n - i < MICRO_CHUNK ? s->n - i : MICRO_CHUNK;

			found += lfp_resolve_bulk(s->pool, hs + i, objs, k);
			for (size_t j = 0; j < k; j++)
				sink ^= (uintptr_t)objs[j];
		}
	} else {
		for (uint32_t i = 0; i < s->n; i++) {
			void *p = lfp_resolve(s->pool, hs[i]);

			found += p != NULL;
			sink ^= (uintptr_t)p;
		}
	}
	t = micro_cpu_ns() - t;
	micro_sink ^= sink;
	return found == s->n ? t / s->n : -1;
}

/* One pass of MICRO_ROUNDS batches; ns per object (alloc + free). */
static double micro_alloc(struct lfp_pool *pool, bool bulk)
{
	void *objs[MICRO_BATCH];
	double t = micro_cpu_ns();

	for (uint32_t r = 0; r < MICRO_ROUNDS; r++) {
		if (bulk) {
			if (lfp_alloc_bulk(pool, objs, MICRO_BATCH) != MICRO_BATCH ||
			    lfp_free_bulk(pool, objs, MICRO_BATCH) != MICRO_BATCH)
				return -1;
			continue;
		}
		for (uint32_t i = 0; i < MICRO_BATCH; i++)
			if (!(objs[i] = lfp_alloc(pool)))
				return -1;
		for (uint32_t i = 0; i < MICRO_BATCH; i++)
			if (lfp_free(pool, objs[i]))
				return -1;
	}
	t = micro_cpu_ns() - t;
	return t / ((double)MICRO_ROUNDS * MICRO_BATCH);
}

static double micro_row(enum bench_micro row, const struct micro_set sets[3],
			struct lfp_pool *bulk_pool)
{
	const struct micro_set *s;
	bool shuf, bulk = (row - MB_RES_S_ORDER_LOOP) % 2 == 1;

	if (row == MB_ALLOC_SINGLE || row == MB_ALLOC_BULK)
		return micro_alloc(bulk_pool, row == MB_ALLOC_BULK);
	if (row >= MB_RES_H_SHUF_LOOP) {
		s = &sets[2];
		shuf = true;
	} else {
		s = &sets[row >= MB_RES_L_ORDER_LOOP];
		shuf = (row - MB_RES_S_ORDER_LOOP) % 4 >= 2;
	}
	return micro_resolve(s, shuf ? s->shuf : s->order, bulk);
}

int bench_micro_run(struct bench_table *t, unsigned reps)
{
	struct lfp_config cfg = { .obj_size = BENCH_OBJ_SIZE,
				  .capacity = BENCH_CAPACITY };
	struct micro_set sets[3];
	struct lfp_pool *bulk_pool = NULL;
	int err = 0;

	memset(t->micro, 0, sizeof(t->micro));
	if (micro_set_make(&sets[0], MICRO_SMALL, 0) ||
	    micro_set_make(&sets[1], MICRO_LARGE, 0) ||
	    micro_set_make(&sets[2], MICRO_LARGE, LFP_F_HUGEPAGE) ||
	    lfp_create(&cfg, &bulk_pool)) {
		fprintf(stderr, "lfpbench: cannot set up the bulk-call "
				"measurements\n");
		return -1;
	}
	fprintf(stderr, "lfpbench: AnonHugePages %ld kB with the "
			"LFP_F_HUGEPAGE pool of %u objects filled\n",
		bench_rollup_kb("AnonHugePages"), MICRO_LARGE);
	for (int row = 0; row < MB_COUNT; row++) /* warm up, untimed */
		err |= micro_row((enum bench_micro)row, sets, bulk_pool) < 0;
	for (unsigned rep = 0; rep < reps && !err; rep++)
		for (int k = 0; k < MB_COUNT; k++) {
			int row = (k + (int)rep) % MB_COUNT;
			double ns = micro_row((enum bench_micro)row, sets,
					      bulk_pool);

			err |= ns < 0;
			t->micro[row].ns[t->micro[row].n++] = ns;
		}
	if (err)
		fprintf(stderr, "lfpbench: a bulk-call measurement lost "
				"objects or handles\n");
	for (int i = 0; i < 3; i++)
		micro_set_free(&sets[i]);
	lfp_destroy(bulk_pool);
	fprintf(stderr, "lfpbench: bulk-call measurements done\n");
	return err ? -1 : 0;
}
