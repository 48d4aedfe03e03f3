/* SPDX-License-Identifier: MIT */
/* Live-object iteration: the exact live set, early stop, ranges that
 * partition the pool (and lfp_range's shares), release from the callback,
 * the iterator, and walks that run while other threads allocate and
 * release. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "testutil.h"

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

struct tally {
	struct lfp_pool *pool;
	uint32_t *visits; /* per slot */
	uint32_t count;
	uint32_t stop_after; /* 0 = never */
	uint32_t last;       /* last index seen + 1, to check the order */
	bool bad;
};

static int count_visit(void *obj, lfp_handle h, void *arg)
{
	struct tally *t = arg;
	uint32_t idx = lfp_handle_index(h);

	/* The handle is the object's, and the walk goes in slot order. */
	if (obj != lfp_at(t->pool, idx) ||
	    lfp_handle_of(t->pool, obj).bits != h.bits || idx + 1 <= t->last)
		t->bad = true;
	t->last = idx + 1;
	t->visits[idx]++;
	t->count++;
	return t->stop_after && t->count == t->stop_after ? 7 : 0;
}

/* A pool whose live slots are a random ~half of a prefix, with gaps. */
static struct lfp_pool *holey_pool(uint32_t cap, uint32_t used, bool *live,
				   uint32_t *nlive, uint32_t flags)
{
	struct lfp_pool *pool = test_pool_flags(24, cap, flags);
	void **objs = calloc(used, sizeof(*objs));
	uint64_t seed = 42;

	ck_assert_ptr_nonnull(objs);
	*nlive = 0;
	for (uint32_t i = 0; i < used; i++)
		ck_assert_ptr_nonnull(objs[i] = lfp_alloc(pool));
	for (uint32_t i = 0; i < used; i++) {
		uint32_t idx = lfp_index_of(pool, objs[i]);

		/* Long free runs too: whole 64-slot stretches are dropped. */
		live[idx] = (idx / 64) % 5 != 3 && rng_next(&seed) % 2;
		if (!live[idx])
			ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
		*nlive += live[idx];
	}
	free(objs);
	return pool;
}

static void expect_exact(struct tally *t, const bool *live, uint32_t cap)
{
	ck_assert(!t->bad);
	for (uint32_t i = 0; i < cap; i++)
		ck_assert_msg(t->visits[i] == (live[i] ? 1u : 0u),
			      "slot %u visited %u times, live %d", i,
			      t->visits[i], live[i]);
}

START_TEST(visits_exactly_the_live_set)
{
	enum { CAP = 1000, USED = 777 };
	bool live[CAP] = { 0 };
	uint32_t visits[CAP] = { 0 }, nlive;
	struct lfp_pool *pool = holey_pool(CAP, USED, live, &nlive, test_modes[_i]);
	struct tally t = { .pool = pool, .visits = visits };

	ck_assert_uint_ge(lfp_extent(pool), USED); /* caches take fresh slots ahead */
	ck_assert_int_eq(lfp_foreach(pool, count_visit, &t), 0);
	ck_assert_uint_eq(t.count, nlive);
	expect_exact(&t, live, CAP);
	ck_assert_int_eq(lfp_foreach(NULL, count_visit, &t), -EINVAL);
	ck_assert_int_eq(lfp_foreach(pool, NULL, &t), -EINVAL);
	ck_assert_uint_eq(lfp_extent(NULL), 0);
	lfp_destroy(pool);
}
END_TEST

START_TEST(empty_and_full_pools)
{
	uint32_t visits[130] = { 0 };
	struct lfp_pool *pool = test_pool_flags(8, 130, test_modes[_i]);
	struct tally t = { .pool = pool, .visits = visits };

	ck_assert_int_eq(lfp_foreach(pool, count_visit, &t), 0);
	ck_assert_uint_eq(t.count, 0);
	while (lfp_alloc(pool))
		;
	ck_assert_int_eq(lfp_foreach(pool, count_visit, &t), 0);
	ck_assert_uint_eq(t.count, 130);
	for (int i = 0; i < 130; i++)
		ck_assert_int_eq(lfp_free(pool, lfp_at(pool, (uint32_t)i)), 0);
	t.count = 0;
	t.last = 0;
	ck_assert_int_eq(lfp_foreach(pool, count_visit, &t), 0);
	ck_assert_uint_eq(t.count, 0);
	ck_assert(!t.bad);
	lfp_destroy(pool);
}
END_TEST

START_TEST(callback_stops_the_walk)
{
	enum { CAP = 300 };
	bool live[CAP] = { 0 };
	uint32_t visits[CAP] = { 0 }, nlive;
	struct lfp_pool *pool = holey_pool(CAP, CAP, live, &nlive, test_modes[_i]);
	struct tally t = { .pool = pool, .visits = visits, .stop_after = 100 };

	ck_assert_int_eq(lfp_foreach(pool, count_visit, &t), 7);
	ck_assert_uint_eq(t.count, 100);
	ck_assert(!t.bad);
	lfp_destroy(pool);
}
END_TEST

START_TEST(ranges_partition_the_pool)
{
	enum { CAP = 1000, USED = 901 };
	bool live[CAP] = { 0 };
	uint32_t visits[CAP], nlive;
	struct lfp_pool *pool = holey_pool(CAP, USED, live, &nlive, test_modes[_i]);
	uint32_t ext = lfp_extent(pool);

	for (uint32_t parts = 1; parts <= 9; parts++) {
		struct tally t = { .pool = pool, .visits = visits };

		memset(visits, 0, sizeof(visits));
		for (uint32_t k = 0; k < parts; k++) {
			t.last = 0;
			ck_assert_int_eq(lfp_foreach_range(
				pool, (uint32_t)((uint64_t)ext * k / parts),
				(uint32_t)((uint64_t)ext * (k + 1) / parts),
				count_visit, &t), 0);
		}
		ck_assert_uint_eq(t.count, nlive);
		expect_exact(&t, live, CAP);
	}
	lfp_destroy(pool);
}
END_TEST

START_TEST(range_edges)
{
	enum { CAP = 200 };
	bool live[CAP] = { 0 };
	uint32_t visits[CAP] = { 0 }, nlive, inside = 0;
	struct lfp_pool *pool = holey_pool(CAP, 150, live, &nlive, test_modes[_i]);
	struct tally t = { .pool = pool, .visits = visits };

	ck_assert_int_eq(lfp_foreach_range(pool, 70, 70, count_visit, &t), 0);
	ck_assert_int_eq(lfp_foreach_range(pool, 90, 10, count_visit, &t), 0);
	ck_assert_int_eq(lfp_foreach_range(pool, 150, 200, count_visit, &t), 0);
	ck_assert_int_eq(lfp_foreach_range(pool, UINT32_MAX - 1, UINT32_MAX,
					   count_visit, &t), 0);
	ck_assert_uint_eq(t.count, 0);
	/* end past the extent and past capacity is clamped. */
	ck_assert_int_eq(lfp_foreach_range(pool, 63, UINT32_MAX, count_visit,
					   &t), 0);
	for (uint32_t i = 63; i < CAP; i++)
		inside += live[i];
	ck_assert_uint_eq(t.count, inside);
	ck_assert_int_eq(lfp_foreach_range(NULL, 0, 1, count_visit, &t),
			 -EINVAL);
	lfp_destroy(pool);
}
END_TEST

/* Check lfp_range's n shares of extent, all of them or a sample of k. */
static void expect_shares(uint32_t extent, uint32_t n)
{
	uint64_t small = extent / n, next = 0;
	uint32_t b, e, samples[] = { 0, 1, 2, n / 3, n / 2, n - 3, n - 2, n - 1 };
	bool all = n <= 5000;
	uint32_t count = all ? n : sizeof(samples) / sizeof(samples[0]);

	for (uint32_t j = 0; j < count; j++) {
		uint32_t k = all ? j : samples[j], b2, e2;

		if (k >= n)
			continue;
		lfp_range(extent, k, n, &b, &e);
		ck_assert_msg(b <= e && e - b >= small && e - b <= small + 1,
			      "extent %u n %u k %u: [%u, %u)", extent, n, k, b, e);
		if (all) {
			/* Consecutive: each starts where the last ended. */
			ck_assert_uint_eq(b, next);
			next = e;
		} else if (k + 1 < n) {
			lfp_range(extent, k + 1, n, &b2, &e2);
			ck_assert_uint_eq(e, b2);
		}
		if (k == 0)
			ck_assert_uint_eq(b, 0);
		if (k == n - 1)
			ck_assert_uint_eq(e, extent);
	}
	if (all)
		ck_assert_uint_eq(next, extent);
}

START_TEST(range_shares_cover_the_extent_once)
{
	static const uint32_t extents[] = { 0, 1, 2, 3, 7, 100, 1000, 4097,
					    999983, UINT32_MAX / 2 + 1,
					    UINT32_MAX - 1, UINT32_MAX };
	static const uint32_t ns[] = { 1, 2, 3, 4, 7, 9, 64, 1000, 4999,
				       65536, 999984, UINT32_MAX - 1,
				       UINT32_MAX };
	uint32_t b = 5, e = 5;

	for (size_t x = 0; x < sizeof(extents) / sizeof(extents[0]); x++) {
		for (size_t y = 0; y < sizeof(ns) / sizeof(ns[0]); y++)
			expect_shares(extents[x], ns[y]);
		/* n past the extent: some shares are empty. */
		if (extents[x] < 5000)
			expect_shares(extents[x], extents[x] + 1 + (uint32_t)x);
	}
	/* Exhaustive for small extents and worker counts. */
	for (uint32_t ext = 0; ext < 70; ext++)
		for (uint32_t n = 1; n < 70; n++)
			expect_shares(ext, n);
	/* The largest product: extent * n near 2^64 in the last share. */
	lfp_range(UINT32_MAX - 1, UINT32_MAX - 1, UINT32_MAX, &b, &e);
	ck_assert_uint_eq(e, UINT32_MAX - 1);
	ck_assert_uint_eq(b, UINT32_MAX - 2);

	/* No share for a worker that is not one of the n. */
	lfp_range(1000, 4, 4, &b, &e);
	ck_assert_uint_eq(b, 0);
	ck_assert_uint_eq(e, 0);
	b = e = 5;
	lfp_range(1000, UINT32_MAX, 3, &b, &e);
	ck_assert_uint_eq(b + e, 0);
	b = e = 5;
	lfp_range(1000, 0, 0, &b, &e);
	ck_assert_uint_eq(b + e, 0);
	/* NULL outputs are skipped, the other still written. */
	lfp_range(1000, 1, 4, NULL, &e);
	ck_assert_uint_eq(e, 500);
	lfp_range(1000, 1, 4, &b, NULL);
	ck_assert_uint_eq(b, 250);
	lfp_range(1000, 1, 4, NULL, NULL);
}
END_TEST

/* Walk [begin, end) with the iterator, tallying as the callback would. */
static void iter_walk(struct lfp_pool *pool, uint32_t begin, uint32_t end,
		      struct tally *t)
{
	struct lfp_iter it;
	lfp_handle h;
	void *obj;

	t->last = 0;
	lfp_iter_init(&it, pool, begin, end);
	while ((obj = lfp_iter_next(&it, &h)))
		ck_assert_int_eq(count_visit(obj, h, t), 0);
	ck_assert(lfp_handle_is_null(h));
	/* Done stays done. */
	h.bits = 1;
	ck_assert_ptr_null(lfp_iter_next(&it, &h));
	ck_assert(lfp_handle_is_null(h));
	ck_assert_ptr_null(lfp_iter_next(&it, NULL));
}

START_TEST(iterator_visits_what_foreach_visits)
{
	enum { CAP = 1000, USED = 901 };
	bool live[CAP] = { 0 };
	uint32_t visits[CAP], nlive, n = 0;
	struct lfp_pool *pool = holey_pool(CAP, USED, live, &nlive, test_modes[_i]);
	uint32_t ext = lfp_extent(pool);
	struct tally t = { .pool = pool, .visits = visits };
	struct lfp_iter it;
	void *obj;

	memset(visits, 0, sizeof(visits));
	iter_walk(pool, 0, UINT32_MAX, &t);
	ck_assert_uint_eq(t.count, nlive);
	expect_exact(&t, live, CAP);
	/* Shares from lfp_range, one extent for all. */
	for (uint32_t parts = 1; parts <= 9; parts++) {
		memset(visits, 0, sizeof(visits));
		t.count = 0;
		for (uint32_t k = 0; k < parts; k++) {
			uint32_t b, e;

			lfp_range(ext, k, parts, &b, &e);
			iter_walk(pool, b, e, &t);
		}
		ck_assert_uint_eq(t.count, nlive);
		expect_exact(&t, live, CAP);
	}
	/* Without handles, and the edges foreach_range has. */
	lfp_iter_init(&it, pool, 0, UINT32_MAX);
	while ((obj = lfp_iter_next(&it, NULL)))
		ck_assert(live[lfp_index_of(pool, obj)] && ++n);
	ck_assert_uint_eq(n, nlive);
	memset(visits, 0, sizeof(visits));
	t.count = 0;
	iter_walk(pool, 90, 10, &t);
	iter_walk(pool, 70, 70, &t);
	iter_walk(pool, UINT32_MAX - 1, UINT32_MAX, &t);
	iter_walk(pool, ext, UINT32_MAX, &t);
	ck_assert_uint_eq(t.count, 0);
	/* Bad input: nothing to visit, nothing written. */
	iter_walk(NULL, 0, UINT32_MAX, &t);
	iter_walk(NULL, 5, 3, &t);
	ck_assert_uint_eq(t.count, 0);
	lfp_iter_init(NULL, pool, 0, UINT32_MAX);
	ck_assert_ptr_null(lfp_iter_next(NULL, NULL));
	lfp_destroy(pool);
}
END_TEST

/* Releasing what the iterator returned, between two steps. */
START_TEST(iterator_survives_release_between_steps)
{
	enum { CAP = 500 };
	bool live[CAP] = { 0 };
	uint32_t nlive, n = 0;
	struct lfp_pool *pool = holey_pool(CAP, CAP, live, &nlive, test_modes[_i]);
	struct lfp_iter it;
	lfp_handle h;
	void *obj;

	lfp_iter_init(&it, pool, 0, UINT32_MAX);
	while ((obj = lfp_iter_next(&it, &h))) {
		ck_assert_int_eq(n % 2 ? lfp_free_handle(pool, h)
				       : lfp_free(pool, obj), 0);
		n++;
	}
	ck_assert_uint_eq(n, nlive);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

static int release_visited(void *obj, lfp_handle h, void *arg)
{
	struct lfp_pool *pool = arg;

	/* Alternate the two ways of releasing from inside the walk. */
	if (lfp_handle_index(h) % 2)
		return lfp_free_handle(pool, h) ? 1 : 0;
	return lfp_free(pool, obj) ? 1 : 0;
}

START_TEST(callback_may_release)
{
	enum { CAP = 500 };
	bool live[CAP] = { 0 };
	uint32_t visits[CAP] = { 0 }, nlive;
	struct lfp_pool *pool = holey_pool(CAP, CAP, live, &nlive, test_modes[_i]);
	struct tally t = { .pool = pool, .visits = visits };
	struct lfpi_census census;

	ck_assert_int_eq(lfp_foreach(pool, release_visited, pool), 0);
	ck_assert_int_eq(lfp_foreach(pool, count_visit, &t), 0);
	ck_assert_uint_eq(t.count, 0);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, 0);
	ck_assert_uint_eq(census.listed + census.cached + census.fresh, CAP);
	lfp_destroy(pool);
}
END_TEST

/*
 * Walkers run while churners allocate and release other slots. Anchors,
 * allocated before the threads start and held throughout, must be visited
 * by every walk, once each. The callback reads no object memory: a churned
 * object may be mid-release.
 */
#define WT_CAP 2048
#define WT_ANCHORS 300
#define WT_CHURNERS 2
#define WT_WALKS 60

static struct lfp_pool *wt_pool;
static bool wt_anchor[WT_CAP];
static _Atomic int wt_stop;
static _Atomic uint64_t wt_bad;

struct wt_walk {
	uint32_t anchors_seen;
	uint32_t last;
};

static int wt_visit(void *obj, lfp_handle h, void *arg)
{
	struct wt_walk *w = arg;
	uint32_t idx = lfp_handle_index(h);

	if (obj != lfp_at(wt_pool, idx) || !(lfp_handle_gen(h) & 1u) ||
	    idx + 1 <= w->last)
		atomic_fetch_add(&wt_bad, 1);
	w->last = idx + 1;
	w->anchors_seen += wt_anchor[idx];
	return 0;
}

static void *wt_churn(void *arg)
{
	uint64_t seed = (uintptr_t)arg + 1;
	void *held[64] = { 0 };

	while (!atomic_load_explicit(&wt_stop, memory_order_relaxed)) {
		uint32_t k = (uint32_t)(rng_next(&seed) % 64);

		if (held[k]) {
			if (lfp_free(wt_pool, held[k]))
				atomic_fetch_add(&wt_bad, 1);
			held[k] = NULL;
		} else {
			held[k] = lfp_alloc(wt_pool);
		}
	}
	for (int k = 0; k < 64; k++)
		if (held[k] && lfp_free(wt_pool, held[k]))
			atomic_fetch_add(&wt_bad, 1);
	return NULL;
}

/* Three workers' shares of one extent, walked with the iterator. */
static void wt_iter_walk(struct wt_walk *w)
{
	uint32_t ext = lfp_extent(wt_pool);

	for (uint32_t k = 0; k < 3; k++) {
		struct lfp_iter it;
		uint32_t b, e;
		lfp_handle h;
		void *obj;

		lfp_range(ext, k, 3, &b, &e);
		lfp_iter_init(&it, wt_pool, b, e);
		while ((obj = lfp_iter_next(&it, &h)))
			wt_visit(obj, h, w);
	}
}

static void *wt_walker(void *arg)
{
	(void)arg;
	for (int i = 0; i < WT_WALKS; i++) {
		struct wt_walk w = { 0 };

		if (i % 2)
			wt_iter_walk(&w);
		else
			lfp_foreach(wt_pool, wt_visit, &w);
		if (w.anchors_seen != WT_ANCHORS)
			atomic_fetch_add(&wt_bad, 1);
	}
	return NULL;
}

START_TEST(walks_during_churn_see_every_anchor)
{
	pthread_t churners[WT_CHURNERS], walker;
	struct lfpi_census census;
	void *tmp[WT_CAP];
	uint32_t n = 0;

	wt_pool = test_pool_flags(32, WT_CAP, test_modes[_i]);
	/* Spread the anchors: take many slots, keep some, release the rest. */
	while (n < WT_CAP / 2)
		tmp[n++] = lfp_alloc(wt_pool);
	for (uint32_t placed = 0, i = 0; i < n; i++) {
		uint32_t idx = lfp_index_of(wt_pool, tmp[i]);

		if (placed < WT_ANCHORS && i % 3 == 0) {
			wt_anchor[idx] = true;
			placed++;
		} else {
			ck_assert_int_eq(lfp_free(wt_pool, tmp[i]), 0);
		}
	}
	for (uintptr_t i = 0; i < WT_CHURNERS; i++)
		ck_assert_int_eq(pthread_create(&churners[i], NULL, wt_churn,
						(void *)i), 0);
	ck_assert_int_eq(pthread_create(&walker, NULL, wt_walker, NULL), 0);
	pthread_join(walker, NULL);
	atomic_store(&wt_stop, 1);
	for (int i = 0; i < WT_CHURNERS; i++)
		pthread_join(churners[i], NULL);
	ck_assert_uint_eq(atomic_load(&wt_bad), 0);
	ck_audit(wt_pool, &census);
	ck_assert_uint_eq(census.live, WT_ANCHORS);
	lfp_destroy(wt_pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("iterate");
	TCase *tc = tcase_create("iterate");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, visits_exactly_the_live_set, 0, TEST_NMODES);
	tcase_add_loop_test(tc, empty_and_full_pools, 0, TEST_NMODES);
	tcase_add_loop_test(tc, callback_stops_the_walk, 0, TEST_NMODES);
	tcase_add_loop_test(tc, ranges_partition_the_pool, 0, TEST_NMODES);
	tcase_add_loop_test(tc, range_edges, 0, TEST_NMODES);
	tcase_add_loop_test(tc, callback_may_release, 0, TEST_NMODES);
	tcase_add_loop_test(tc, walks_during_churn_see_every_anchor, 0, TEST_NMODES);
	tcase_add_loop_test(tc, range_shares_cover_the_extent_once, 0, 1);
	tcase_add_loop_test(tc, iterator_visits_what_foreach_visits, 0, TEST_NMODES);
	tcase_add_loop_test(tc, iterator_survives_release_between_steps, 0, TEST_NMODES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
