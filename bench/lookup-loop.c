/* SPDX-License-Identifier: MIT */
/*
 * Where a change of pool costs: one thread, pairs (allocate, write 64
 * bytes, release) on N = 1, 2, 4, 8 pools in turn, as lfpbench's
 * poolsN-pair runs them (fresh pools and a fresh thread for each run,
 * CPU time of the thread), with the thread's cache of each pool reached
 * in different ways:
 *
 *   implicit  lfp_alloc/lfp_free: the cache the out-of-line path found
 *             last, else the table (pool's number, entry, cache)
 *   table     the table alone, never `last`
 *   chain1    the cache's pointer from the caller's array (one load, as
 *             lfp_cache_alloc on a cache kept per pool), checked against
 *             the pool as the implicit path checks it
 *   chain2    the same through one more dependent load
 *   chain3    through two more: as many as the table's path
 *
 * Not built by make. Build and run from a build directory:
 *
 *   cc -O2 -I../include -Iinclude ../bench/lookup-loop.c -o lookup-loop \
 *      -Lsrc/.libs -llfpool -lpthread -Wl,-rpath,$PWD/src/.libs
 *   ./lookup-loop [pairs per run] [runs]
 *
 * It prints, per way and N, the median and the minimum CPU ns a pair
 * over the runs; on a shared machine the minimum is the steadier one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lfpool.h"

#define PUBLISH 64 /* pairs between two tests of the loop's end */
#define MAX_POOLS 8
#define escape(p) __asm__ volatile("" : : "r"(p) : "memory")

struct link {
	struct link *next;
	struct lfp_cache *cache;
};

struct ctx {
	alignas(64) struct lfp_pool *pool[MAX_POOLS];
	struct lfp_cache *cache[MAX_POOLS];
	struct link *link[MAX_POOLS];
};

static struct link links[MAX_POOLS][2];

static inline void fill(void *obj, uint64_t v)
{
	uint64_t *o = obj;

	for (unsigned i = 0; i < 8; i++)
		o[i] = v + i;
	escape(obj);
}

/* The thread's cache of pool k, each way; NULL sends the call out of line. */
#define FIND_table(c, k) lfpi_cache_entry((c)->pool[k])
#define FIND_chain1(c, k) (c)->cache[k]
#define FIND_chain2(c, k) (c)->link[k]->cache
#define FIND_chain3(c, k) (c)->link[k]->next->cache

#define WAY(way)                                                               \
	static inline __attribute__((always_inline)) struct lfp_cache *        \
	find_##way(struct ctx *c, unsigned k)                                  \
	{                                                                      \
		struct lfp_cache *cache = FIND_##way(c, k);                    \
		return lfpi_cache_is_of(cache, c->pool[k]) ? cache : NULL;     \
	}                                                                      \
	static inline __attribute__((always_inline)) void *alloc_##way(        \
		struct ctx *c, unsigned k)                                     \
	{                                                                      \
		struct lfp_cache *cache = find_##way(c, k);                    \
		return cache ? lfpi_cache_alloc_body(cache)                    \
			     : lfpi_alloc_slow(c->pool[k]);                    \
	}                                                                      \
	static inline __attribute__((always_inline)) int free_##way(           \
		struct ctx *c, unsigned k, void *obj)                          \
	{                                                                      \
		struct lfp_cache *cache = find_##way(c, k);                    \
		return cache ? lfpi_cache_free_body(cache, obj)                \
			     : lfpi_free_slow(c->pool[k], obj);                \
	}

static inline __attribute__((always_inline)) void *
alloc_implicit(struct ctx *c, unsigned k)
{
	return lfp_alloc(c->pool[k]);
}

static inline __attribute__((always_inline)) int
free_implicit(struct ctx *c, unsigned k, void *obj)
{
	return lfp_free(c->pool[k], obj);
}

WAY(table)
WAY(chain1)
WAY(chain2)
WAY(chain3)

#define LOOP(way, n)                                                           \
	static __attribute__((noinline)) void loop_##way##n(struct ctx *c,     \
							    uint64_t pairs)    \
	{                                                                      \
		for (uint64_t done = 0; done < pairs; done += PUBLISH)         \
			for (unsigned i = 0; i < PUBLISH; i++) {               \
				void *p = alloc_##way(c, i % n);               \
				if (!p)                                        \
					abort();                               \
				fill(p, done + i);                             \
				if (free_##way(c, i % n, p))                   \
					abort();                               \
			}                                                      \
	}
#define LOOPS(way)                                                             \
	LOOP(way, 1) LOOP(way, 2) LOOP(way, 4) LOOP(way, 8)                    \
	static void (*const loops_##way[])(struct ctx *, uint64_t) = {         \
		loop_##way##1, loop_##way##2, loop_##way##4, loop_##way##8     \
	};

LOOPS(implicit)
LOOPS(table)
LOOPS(chain1)
LOOPS(chain2)
LOOPS(chain3)

static const struct {
	const char *name;
	void (*const *loops)(struct ctx *, uint64_t);
} ways[] = {
	{ "implicit", loops_implicit }, { "table", loops_table },
	{ "chain1", loops_chain1 },     { "chain2", loops_chain2 },
	{ "chain3", loops_chain3 },
};
#define WAYS (sizeof(ways) / sizeof(ways[0]))

struct run {
	struct lfp_pool *pool[MAX_POOLS];
	void (*loop)(struct ctx *, uint64_t);
	uint64_t pairs;
	double ns;
};

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *run_thread(void *arg)
{
	struct run *r = arg;
	struct ctx *c = aligned_alloc(64, sizeof(*c));
	double t0;

	if (!c)
		abort();
	memset(c, 0, sizeof(*c));
	for (unsigned k = MAX_POOLS; k-- > 0;) {
		c->pool[k] = r->pool[k];
		/* Each pool's implicit cache made and found once, so that
		 * the table holds them all, pool 0's last: the one `last`
		 * names, as in lfpbench's runs of one pool. The chains lead
		 * to the same caches. */
		lfp_free(c->pool[k], lfp_alloc(c->pool[k]));
		c->cache[k] = lfpi_cache_entry(c->pool[k]);
		links[k][0].cache = c->cache[k];
		links[k][0].next = &links[k][1];
		links[k][1].cache = c->cache[k];
		c->link[k] = &links[k][0];
	}
	r->loop(c, r->pairs / 10); /* warm-up */
	t0 = cpu_now();
	r->loop(c, r->pairs);
	r->ns = (cpu_now() - t0) / (double)r->pairs * 1e9;
	free(c);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t pairs = argc > 1 ? strtoull(argv[1], NULL, 0) : 5000000;
	int runs = argc > 2 ? atoi(argv[2]) : 9;
	static double ns[WAYS][4][64];

	if (runs < 1 || runs > 64 || pairs < PUBLISH)
		return 2;
	for (int r = 0; r < runs; r++)
		for (unsigned w = 0; w < WAYS; w++)
			for (unsigned j = 0; j < 4; j++) {
				struct run run = { .loop = ways[w].loops[j],
						   .pairs = pairs };
				struct lfp_config cfg = {
					.obj_size = 64,
					.capacity = 8192,
					.name = "loop",
				};
				pthread_t t;

				for (unsigned k = 0; k < MAX_POOLS; k++)
					if (lfp_create(&cfg, &run.pool[k]))
						abort();
				if (pthread_create(&t, NULL, run_thread, &run) ||
				    pthread_join(t, NULL))
					abort();
				for (unsigned k = 0; k < MAX_POOLS; k++)
					lfp_destroy(run.pool[k]);
				ns[w][j][r] = run.ns;
			}
	printf("CPU ns a pair, median (minimum) of %d runs of %llu pairs\n",
	       runs, (unsigned long long)pairs);
	printf("%-9s %-14s %-14s %-14s %-14s\n", "way", "N=1", "N=2", "N=4",
	       "N=8");
	for (unsigned w = 0; w < WAYS; w++) {
		printf("%-9s", ways[w].name);
		for (unsigned j = 0; j < 4; j++) {
			qsort(ns[w][j], (size_t)runs, sizeof(double), cmp_double);
			printf(" %5.2f (%5.2f) ", ns[w][j][runs / 2], ns[w][j][0]);
		}
		printf("\n");
	}
	return 0;
}
