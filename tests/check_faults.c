/* SPDX-License-Identifier: MIT */
/*
 * Smaller promises: a growable pool needs room to grow; lfp_stats never
 * reports more cache hits than allocations, even while they happen; a
 * thread whose pool was destroyed under it goes on with the next one; and
 * the default cache is the size the header says.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

/*
 * LFP_EXHAUST_GROW with max_capacity 0 ("= capacity") is a pool that says
 * it grows and never can: refused, like max_capacity below capacity.
 */
START_TEST(grow_without_room_is_invalid)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 128,
				  .exhaust = LFP_EXHAUST_GROW };
	struct lfp_pool *pool = (struct lfp_pool *)&cfg; /* a sentinel */
	int err = lfp_create(&cfg, &pool);

	ck_assert_msg(err == -EINVAL,
		      "lfp_create with exhaust = LFP_EXHAUST_GROW and "
		      "max_capacity = 0 returned %d, not -EINVAL (%d)", err,
		      -EINVAL);
	if (err == 0)
		lfp_destroy(pool);
	else
		ck_assert_ptr_eq(pool, (struct lfp_pool *)&cfg);
	ck_assert_msg(lfp_memory_size(&cfg) == 0,
		      "lfp_memory_size of that configuration is %zu, not 0",
		      lfp_memory_size(&cfg));
	/* With room to grow it is fine. */
	cfg.max_capacity = 256;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	lfp_destroy(pool);
}
END_TEST

/*
 * cache_hits <= allocs in every snapshot. A thread allocates through a
 * cache of two slots: mostly one object at a time, which hits, and now
 * and then three, which misses; another reads the stats. An underflow
 * would show as a huge number of hits.
 */
static struct lfp_pool *hit_pool;
static _Atomic int hit_stop;

static void *hit_churn(void *arg)
{
	void *objs[3];
	int n;

	(void)arg;
	for (unsigned r = 0;
	     !atomic_load_explicit(&hit_stop, memory_order_relaxed); r++) {
		n = r % 1024 ? 1 : 3;
		for (int i = 0; i < n; i++)
			objs[i] = lfp_alloc(hit_pool);
		for (int i = 0; i < n; i++)
			lfp_free(hit_pool, objs[i]);
	}
	return NULL;
}

START_TEST(hits_never_exceed_allocs)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 64,
				  .cache_size = 2, .batch_size = 1 };
	double secs = under_sanitizer() ? 2 : 1;
	struct lfp_stats st, first_bad = { 0 };
	struct timespec t0, t;
	long bad = 0;
	pthread_t th;

	ck_assert_int_eq(lfp_create(&cfg, &hit_pool), 0);
	atomic_store(&hit_stop, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, hit_churn, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000 && !bad; i++) {
			lfp_stats(hit_pool, &st);
			if (st.cache_hits > st.allocs && !bad++)
				first_bad = st;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!bad && (t.tv_sec - t0.tv_sec) +
				 (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	atomic_store(&hit_stop, 1);
	pthread_join(th, NULL);
	ck_assert_msg(bad == 0,
		      "a snapshot of a pool in use reported %llu cache hits "
		      "for %llu allocations",
		      (unsigned long long)first_bad.cache_hits,
		      (unsigned long long)first_bad.allocs);
	lfp_stats(hit_pool, &st);
	ck_assert_uint_le(st.cache_hits, st.allocs);
	expect_accounted(hit_pool, 0);
	lfp_destroy(hit_pool);
}
END_TEST

/*
 * Pools destroyed under threads that used them: each thread's implicit
 * cache for the old pool is orphaned, and the thread goes on with the
 * next pool (often mapped at the same address), round after round, and
 * exits holding only orphans. Under ASan a touch of a freed cache or an
 * unmapped pool fails.
 */
enum { ORPHAN_THREADS = 4, ORPHAN_ROUNDS = 20 };

static struct lfp_pool *orphan_pool;
static pthread_barrier_t orphan_bar;

static long orphan_use(struct lfp_pool *pool)
{
	void *objs[40];
	size_t n = lfp_alloc_bulk(pool, objs, 40);
	long bad = n != 40;

	for (size_t i = 0; i < n; i++)
		memset(objs[i], 0x3c, 64);
	bad += lfp_free_bulk(pool, objs, n) != n;
	return bad;
}

static void *orphan_worker(void *arg)
{
	long bad = 0;

	(void)arg;
	for (int r = 0; r < ORPHAN_ROUNDS; r++) {
		pthread_barrier_wait(&orphan_bar); /* a new pool */
		bad += orphan_use(orphan_pool);
		pthread_barrier_wait(&orphan_bar); /* main checks it */
		pthread_barrier_wait(&orphan_bar); /* main destroyed it */
	}
	return (void *)bad; /* exits with orphaned caches only */
}

START_TEST(orphaned_caches_move_on)
{
	pthread_t th[ORPHAN_THREADS];
	void *bad;

	pthread_barrier_init(&orphan_bar, NULL, ORPHAN_THREADS + 1);
	for (int i = 0; i < ORPHAN_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, orphan_worker,
						NULL), 0);
	for (int r = 0; r < ORPHAN_ROUNDS; r++) {
		orphan_pool = test_pool(64, 1024);
		pthread_barrier_wait(&orphan_bar);
		/* This thread's own implicit cache is orphaned too. */
		ck_assert_int_eq(orphan_use(orphan_pool), 0);
		pthread_barrier_wait(&orphan_bar);
		expect_accounted(orphan_pool, 0);
		lfp_destroy(orphan_pool);
		pthread_barrier_wait(&orphan_bar);
	}
	for (int i = 0; i < ORPHAN_THREADS; i++) {
		pthread_join(th[i], &bad);
		ck_assert_msg(bad == NULL, "a thread failed %ld times to use "
			      "a pool made after its last one was destroyed",
			      (long)bad);
	}
	pthread_barrier_destroy(&orphan_bar);
	/* And one last pool, after all those threads are gone. */
	orphan_pool = test_pool(64, 1024);
	ck_assert_int_eq(orphan_use(orphan_pool), 0);
	expect_accounted(orphan_pool, 0);
	lfp_destroy(orphan_pool);
}
END_TEST

/*
 * The default cache: capacity / 4 slots, clamped to 2 .. 1024, exchanged
 * with the shared list in batches of half a cache. Observed: a fresh pool
 * refills a cache with one batch of fresh slots on the first allocation,
 * so `cached` is batch - 1 right after it; and freeing cache_size + batch
 * objects into it leaves exactly cache_size parked after one flush.
 */
struct cache_default {
	uint32_t capacity;
	uint32_t cache; /* what the header promises */
};

static const struct cache_default cache_defaults[] = {
	{ 4096, 1024 },  /* 4096 / 4 = 1024 */
	{ 1024, 256 },   /* 1024 / 4 */
	{ 64, 16 },      /* 64 / 4 */
	{ 4, 2 },        /* 1, clamped up to 2 */
	{ 7168, 1024 },  /* 1792, clamped down to 1024 */
	{ 1 << 20, 1024 }, /* 262144, clamped down to 1024 */
};

START_TEST(default_cache_size)
{
	const struct cache_default *d = &cache_defaults[_i];
	uint32_t batch = (d->cache + 1) / 2, n = d->cache + batch;
	struct lfp_pool *pool = test_pool(64, d->capacity);
	struct lfp_stats st;
	void **objs = calloc(n, sizeof(*objs));

	ck_assert_ptr_nonnull(objs);
	objs[0] = lfp_alloc(pool);
	ck_assert_ptr_nonnull(objs[0]);
	lfp_stats(pool, &st);
	ck_assert_msg(st.cached == batch - 1,
		      "pool of %u, default cache: %llu slots cached after the "
		      "first allocation, not %u (a batch of %u, half of a "
		      "cache of %u, less the one handed out)",
		      d->capacity, (unsigned long long)st.cached, batch - 1,
		      batch, d->cache);
	for (uint32_t i = 1; i < n; i++)
		ck_assert_ptr_nonnull(objs[i] = lfp_alloc(pool));
	for (uint32_t i = 0; i < n; i++)
		ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
	lfp_stats(pool, &st);
	ck_assert_msg(st.cached == d->cache,
		      "pool of %u, default cache: %llu slots cached after "
		      "%u objects were freed into it, not a full cache of %u",
		      d->capacity, (unsigned long long)st.cached, n, d->cache);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
	free(objs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, grow_without_room_is_invalid);
	tcase_add_test(tc, hits_never_exceed_allocs);
	tcase_add_test(tc, orphaned_caches_move_on);
	tcase_add_loop_test(tc, default_cache_size, 0,
			    sizeof(cache_defaults) / sizeof(cache_defaults[0]));
	suite_add_tcase(s, tc);
	return test_run(s);
}
