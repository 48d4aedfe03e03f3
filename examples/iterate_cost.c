/* SPDX-License-Identifier: MIT */
/*
 * iterate_cost: what a walk over a pool's live objects costs, per live
 * object, against a plain array that holds only live objects.
 *
 * For each occupancy the pool is filled, then a random share of its slots
 * is released (so live and free slots mix as they do after churn), and
 * every live object gets the same small update: position += velocity.
 * Printed per occupancy, in ns per live object (best of --reps runs):
 *   walk      lfp_foreach with the update in a callback
 *   array+cb  a dense array of the same live objects, the same callback
 *             called through a function pointer (the walk minus the scan)
 *   array     a dense array, the update inlined (the practical limit)
 * Also the cost of one lfp_alloc + lfp_free pair, and of the two atomic
 * read-modify-writes a live bitmap would add to that pair.
 *
 * With -H it compares instead the walk over a pool made with
 * LFP_F_HUGEPAGE and over one without (medians of --reps walks taken in
 * turns), and says how much of the process is on huge pages
 * (AnonHugePages in /proc/self/smaps_rollup) once both pools are full.
 *
 * Single-threaded; numbers are for comparing on one machine, not absolute.
 *
 * To build it against an installed lfpool, in the directory that holds
 * it, <prefix>/share/doc/lfpool/examples (or a copy):
 *
 *   cc -O2 -pthread -o iterate_cost iterate_cost.c \
 *       $(pkg-config --cflags --libs lfpool)
 *
 * or with CMake, whose project in cmake/ there builds every example:
 *
 *   cmake -S cmake -B build -DCMAKE_PREFIX_PATH=<prefix>
 *   cmake --build build --target iterate_cost
 *
 * Where the dynamic linker does not search <prefix>/lib, run the program
 * pkg-config's line built with LD_LIBRARY_PATH=<prefix>/lib (CMake's has
 * a run path).
 */
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lfpool.h"

struct body {
	float x, y, z, vx, vy, vz;
	uint64_t pad;
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline void step(struct body *b)
{
	b->x += b->vx;
	b->y += b->vy;
	b->z += b->vz;
}

static int step_cb(void *obj, lfp_handle h, void *arg)
{
	(void)h;
	step(obj);
	++*(uint64_t *)arg;
	return 0;
}

/* Noinline: the array+cb loop must really call through the pointer. */
static __attribute__((noinline)) void run_array_cb(struct body *a, size_t n,
						    lfp_visit_fn fn,
						    uint64_t *count)
{
	for (size_t i = 0; i < n; i++)
		fn(&a[i], LFP_NULL_HANDLE, count);
}

static __attribute__((noinline)) void run_array(struct body *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		step(&a[i]);
}

struct result {
	double walk, array_cb, array;
};

/* A pool of n bodies, pct percent of them live at random slots. */
static struct lfp_pool *make_pool(uint32_t n, unsigned pct, uint64_t *live,
				  uint32_t flags)
{
	struct lfp_config cfg = { .obj_size = sizeof(struct body),
				  .capacity = n, .flags = flags };
	struct lfp_pool *pool;
	uint64_t seed = 12345;

	if (lfp_create(&cfg, &pool))
		return NULL;
	*live = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct body *b = lfp_alloc(pool);

		memset(b, 0, sizeof(*b));
		b->vx = 1.0f;
		if (rng_next(&seed) % 100 >= pct)
			lfp_free(pool, b);
		else
			++*live;
	}
	return pool;
}

static int measure(uint32_t n, unsigned pct, int reps, struct result *r)
{
	uint64_t live, count;
	struct lfp_pool *pool = make_pool(n, pct, &live, 0);
	struct body *arr = calloc(n, sizeof(*arr));
	double t;

	if (!pool || !arr)
		return -1;
	r->walk = r->array_cb = r->array = 1e30;
	for (int i = 0; i < reps; i++) {
		count = 0;
		t = now_ns();
		lfp_foreach(pool, step_cb, &count);
		t = now_ns() - t;
		if (count != live) {
			fprintf(stderr, "walk visited %llu, %llu are live\n",
				(unsigned long long)count,
				(unsigned long long)live);
			return -1;
		}
		r->walk = t < r->walk ? t : r->walk;
		t = now_ns();
		run_array_cb(arr, live, step_cb, &count);
		t = now_ns() - t;
		r->array_cb = t < r->array_cb ? t : r->array_cb;
		t = now_ns();
		run_array(arr, live);
		t = now_ns() - t;
		r->array = t < r->array ? t : r->array;
	}
	r->walk /= (double)live, r->array_cb /= (double)live;
	r->array /= (double)live;
	free(arr);
	lfp_destroy(pool);
	return 0;
}

/* ns per alloc+free pair, and per pair of bitmap updates on top. */
static void hot_path(int reps, double *pair, double *bitmap)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 1024 };
	static _Atomic uint64_t bits[16];
	struct lfp_pool *pool;
	enum { N = 1 << 20 };
	double t;

	*pair = *bitmap = 1e30;
	if (lfp_create(&cfg, &pool))
		return;
	for (int r = 0; r < reps; r++) {
		t = now_ns();
		for (int i = 0; i < N; i++)
			lfp_free(pool, lfp_alloc(pool));
		t = (now_ns() - t) / N;
		*pair = t < *pair ? t : *pair;
		t = now_ns();
		for (uint64_t i = 0; i < N; i++) {
			/* Relaxed, uncontended: the least a bitmap could cost. */
			atomic_fetch_or_explicit(&bits[i & 15], 1ull << (i & 63),
						 memory_order_relaxed);
			atomic_fetch_and_explicit(&bits[i & 15],
						  ~(1ull << (i & 63)),
						  memory_order_relaxed);
		}
		t = (now_ns() - t) / N;
		*bitmap = t < *bitmap ? t : *bitmap;
	}
	lfp_destroy(pool);
}

/* A field of /proc/self/smaps_rollup in kB; -1 if there is none. */
static long rollup_kb(const char *key)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	size_t klen = strlen(key);
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtol(line + klen + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One walk of pool, in ns per live object; -1 if it missed one. */
static double walk_once(struct lfp_pool *pool, uint64_t live)
{
	uint64_t count = 0;
	double t = now_ns();

	lfp_foreach(pool, step_cb, &count);
	t = now_ns() - t;
	return count == live ? t / (double)live : -1;
}

/* The walk with and without LFP_F_HUGEPAGE, taken in turns. */
static int measure_huge(uint32_t n, unsigned pct, int reps)
{
	double *plain = calloc((size_t)reps, sizeof(double));
	double *huge = calloc((size_t)reps, sizeof(double));
	uint64_t live_p, live_h;
	long before = rollup_kb("AnonHugePages"), after;
	struct lfp_pool *p = make_pool(n, pct, &live_p, 0);
	struct lfp_pool *h = make_pool(n, pct, &live_h, LFP_F_HUGEPAGE);

	if (!plain || !huge || !p || !h)
		return -1;
	after = rollup_kb("AnonHugePages");
	for (int i = 0; i < reps; i++) {
		plain[i] = walk_once(p, live_p);
		huge[i] = walk_once(h, live_h);
		if (plain[i] < 0 || huge[i] < 0) {
			fprintf(stderr, "a walk missed live objects\n");
			return -1;
		}
	}
	printf("%8u%% %9.2f %9.2f %8.2fx %14ld\n", pct, median(plain, reps),
	       median(huge, reps), median(plain, reps) / median(huge, reps),
	       after - before);
	lfp_destroy(p);
	lfp_destroy(h);
	free(plain);
	free(huge);
	return 0;
}

int main(int argc, char **argv)
{
	static const unsigned pcts[] = { 10, 50, 90, 100 };
	unsigned long n = 1ul << 20, reps = 5;
	double pair, bitmap;
	bool hugepage = false;
	int c;

	while ((c = getopt(argc, argv, "n:r:Hh")) != -1) {
		if (c == 'H')
			hugepage = true;
		else if (c == 'n')
			n = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			reps = strtoul(optarg, NULL, 10);
		else {
			fprintf(c == 'h' ? stdout : stderr,
				"usage: iterate_cost [-n OBJECTS] [-r REPS] [-H]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (n < 64 || n > LFP_MAX_CAPACITY || reps < 1 || reps > 1000) {
		fprintf(stderr, "iterate_cost: bad -n or -r\n");
		return 2;
	}
	if (hugepage) {
		printf("%lu slots of %zu bytes, medians of %lu walks; ns per "
		       "live object\n"
		       "occupancy  4K pages  huge pages  4K/huge  "
		       "AnonHugePages kB\n", n, sizeof(struct body), reps);
		for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
			if (measure_huge((uint32_t)n, pcts[i], (int)reps))
				return 1;
		return 0;
	}
	printf("%lu slots of %zu bytes, best of %lu; ns per live object\n"
	       "occupancy     walk  array+cb   array   walk/array+cb\n",
	       n, sizeof(struct body), reps);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		struct result r;

		if (measure((uint32_t)n, pcts[i], (int)reps, &r))
			return 1;
		printf("%8u%% %8.2f %9.2f %7.2f %12.2fx\n", pcts[i], r.walk,
		       r.array_cb, r.array, r.walk / r.array_cb);
	}
	hot_path((int)reps, &pair, &bitmap);
	printf("alloc+free pair %.1f ns; two bitmap RMWs would add >= %.1f ns\n",
	       pair, bitmap);
	return 0;
}
