/* SPDX-License-Identifier: MIT */
/*
 * lfp_trim's promises: an allocation that finds the pool empty while trim
 * has the free list aside waits for it (no NULL, no growth, no abort);
 * a constructed object keeps its constructed state; and trim reports only
 * the bytes it gives back.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Trim racing allocation. Each allocating thread holds at most `burst`
 * objects, and the pool is sized so that it can never run out, even with
 * every other thread preempted inside a call holding its whole cache and
 * a slot in flight: any NULL, growth or abort comes from the trim.
 *
 * The pools are tiny, so that all their free slots are on the free list
 * (every slot was used once before the race: none is fresh) and a trim is
 * quick and frequent. Without caches every call goes to the free list;
 * with caches of one slot and bursts of two, every other call does.
 *
 * Each pool also has IDLE_CACHES explicit caches that are never used, as
 * a job system keeps one per worker: an allocation that finds the list
 * empty looks through them all for slots to steal before it applies the
 * exhaustion policy, which gives the trim time to finish meanwhile.
 */
enum { RACE_CACHE = 1, MAX_ALLOC = 4, IDLE_CACHES = 256 };

struct trim_case {
	uint32_t flags;
	uint32_t exhaust;
	uint32_t nalloc; /* allocating threads */
	uint32_t burst;  /* objects each holds at most */
};

static const struct trim_case trim_cases[] = {
	{ LFP_F_NO_CACHE, LFP_EXHAUST_NULL, 1, 1 },
	{ LFP_F_NO_CACHE, LFP_EXHAUST_NULL, 4, 1 },
	{ LFP_F_NO_CACHE, LFP_EXHAUST_GROW, 3, 1 },
	{ LFP_F_NO_CACHE, LFP_EXHAUST_ABORT, 3, 1 },
	{ 0, LFP_EXHAUST_NULL, 2, 2 },
	{ 0, LFP_EXHAUST_GROW, 2, 2 },
	{ 0, LFP_EXHAUST_ABORT, 2, 2 },
};

#define TRIM_NCASES (sizeof(trim_cases) / sizeof(trim_cases[0]))

static const char *trim_policy_name(uint32_t exhaust)
{
	return exhaust == LFP_EXHAUST_NULL   ? "NULL"
	       : exhaust == LFP_EXHAUST_GROW ? "GROW"
					     : "ABORT";
}

struct trim_race {
	struct lfp_pool *pool;
	const struct trim_case *k;
	_Atomic int stop;
	_Atomic uint64_t bursts, nulls, trims;
};

static void *trim_loop(void *arg)
{
	struct trim_race *r = arg;
	uint64_t n = 0;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		lfp_trim(r->pool);
		n++;
	}
	atomic_fetch_add(&r->trims, n);
	return NULL;
}

/* Take a burst, give it back; stop everything at the first NULL (with
 * LFP_EXHAUST_ABORT the process dies instead, which fails the test). */
static void *alloc_loop(void *arg)
{
	struct trim_race *r = arg;
	uint64_t bursts = 0, nulls = 0;
	void *held[2];
	uint32_t n;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		for (n = 0; n < r->k->burst; n++)
			if (!(held[n] = lfp_alloc(r->pool)))
				break;
		bursts++;
		if (n < r->k->burst) {
			nulls++;
			atomic_store(&r->stop, 1);
		}
		while (n)
			lfp_free(r->pool, held[--n]);
	}
	atomic_fetch_add(&r->bursts, bursts);
	atomic_fetch_add(&r->nulls, nulls);
	return NULL;
}

START_TEST(trim_racing_alloc)
{
	const struct trim_case *k = &trim_cases[_i];
	bool cached = !(k->flags & LFP_F_NO_CACHE);
	/* What the threads may hold, in hand, cache and flight, and two. */
	uint32_t each = k->burst + (cached ? RACE_CACHE + 1 : 0);
	uint32_t cap = k->nalloc * each + 2;
	struct lfp_config cfg = {
		.obj_size = 64, .capacity = cap, .flags = k->flags,
		.cache_size = cached ? RACE_CACHE : 0,
		.batch_size = cached ? 1 : 0, .exhaust = k->exhaust,
		.max_capacity = k->exhaust == LFP_EXHAUST_GROW ? 64 * cap : 0,
	};
	struct trim_race r = { .k = k };
	double until = now_s() + (under_sanitizer() ? 1.0 : 0.5);
	struct lfp_cache *idle[IDLE_CACHES];
	pthread_t trimmer, th[MAX_ALLOC];
	struct lfp_stats st;
	void *objs[64];

	ck_assert_int_eq(lfp_create(&cfg, &r.pool), 0);
	/* Every slot used once: the free list holds them all, none fresh. */
	ck_assert_uint_eq(lfp_alloc_bulk(r.pool, objs, cap), cap);
	ck_assert_uint_eq(lfp_free_bulk(r.pool, objs, cap), cap);
	for (int i = 0; i < IDLE_CACHES; i++)
		ck_assert_ptr_nonnull(idle[i] = lfp_cache_create(r.pool));
	ck_assert_int_eq(pthread_create(&trimmer, NULL, trim_loop, &r), 0);
	for (uint32_t i = 0; i < k->nalloc; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, alloc_loop, &r),
				 0);
	while (!atomic_load(&r.stop) && now_s() < until) {
		usleep(5000);
		lfp_stats(r.pool, &st);
		if (st.grown)
			break;
	}
	atomic_store(&r.stop, 1);
	pthread_join(trimmer, NULL);
	for (uint32_t i = 0; i < k->nalloc; i++)
		pthread_join(th[i], NULL);

	lfp_stats(r.pool, &st);
	ck_assert_msg(st.grown == 0,
		      "GROW pool of %u (%s), %u threads holding at most %u "
		      "each: it grew %llu times racing %llu trims",
		      cap, cached ? "caches of 1" : "no caches", k->nalloc,
		      k->burst, (unsigned long long)st.grown,
		      (unsigned long long)atomic_load(&r.trims));
	ck_assert_msg(atomic_load(&r.nulls) == 0 && st.failed_allocs == 0,
		      "%s pool of %u (%s), %u threads holding at most %u "
		      "each: lfp_alloc returned NULL in %llu of %llu bursts, "
		      "racing %llu trims",
		      trim_policy_name(k->exhaust), cap,
		      cached ? "caches of 1" : "no caches", k->nalloc, k->burst,
		      (unsigned long long)atomic_load(&r.nulls),
		      (unsigned long long)atomic_load(&r.bursts),
		      (unsigned long long)atomic_load(&r.trims));
	ck_assert_uint_gt(atomic_load(&r.trims), 0);
	for (int i = 0; i < IDLE_CACHES; i++)
		lfp_cache_destroy(idle[i]);
	expect_accounted(r.pool, 0);
	lfp_destroy(r.pool);
}
END_TEST

/*
 * A slot is constructed once, on its first handout; after a trim it must
 * still hold what the constructor made (the pool reads as constructed, not
 * as zeroes). Objects of a page each, so trim has whole pages to give.
 */
enum { BIG = 4096, NBIG = 64, CTOR_BYTE = 0xc5 };

static void ctor_fill(void *obj, void *arg)
{
	(void)arg;
	memset(obj, CTOR_BYTE, BIG);
}

static size_t ctor_damage(const unsigned char *p)
{
	for (size_t i = 0; i < BIG; i++)
		if (p[i] != CTOR_BYTE)
			return i + 1;
	return 0;
}

START_TEST(trim_keeps_constructed_state)
{
	struct lfp_config cfg = { .obj_size = BIG, .capacity = NBIG,
				  .flags = _i ? LFP_F_NO_CACHE : 0,
				  .ctor = ctor_fill };
	struct lfp_pool *pool;
	void *objs[NBIG];
	size_t bytes, at, first_at = 0;
	uint32_t bad = 0, first = 0;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, NBIG), NBIG);
	for (int i = 0; i < NBIG; i++)
		ck_assert_uint_eq(ctor_damage(objs[i]), 0);
	ck_assert_uint_eq(lfp_free_bulk(pool, objs, NBIG), NBIG);
	bytes = lfp_trim(pool);
	ck_assert_msg(bytes > 0, "lfp_trim gave nothing back from %u idle "
		      "objects of %u bytes", NBIG, BIG);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, NBIG), NBIG);
	for (int i = 0; i < NBIG; i++)
		if ((at = ctor_damage(objs[i])) && !bad++)
			first = lfp_index_of(pool, objs[i]), first_at = at - 1;
	ck_assert_msg(bad == 0,
		      "after lfp_trim gave back %zu bytes, %u of %u objects "
		      "lost their constructed state (slot %u: byte %zu is not "
		      "0x%x)", bytes, bad, NBIG, first, first_at, CTOR_BYTE);
	expect_accounted(pool, NBIG);
	lfp_destroy(pool);
}
END_TEST

/*
 * Trim counts what it gives back, once: a second trim of an idle pool
 * whose pages are gone already gives nothing, and after a few objects
 * were used, only their pages are there to give.
 */
enum { HUGE_N = 200000, HUGE_SIZE = 128, FEW = 10 };

static size_t pages_of(void *const *objs, int n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), count = 0;
	uintptr_t seen[2 * FEW];
	int nseen = 0;

	for (int i = 0; i < n; i++)
		for (uintptr_t a = (uintptr_t)objs[i] / page;
		     a <= ((uintptr_t)objs[i] + HUGE_SIZE - 1) / page; a++) {
			bool dup = false;

			for (int j = 0; j < nseen; j++)
				dup |= seen[j] == a;
			if (!dup)
				seen[nseen++] = a, count++;
		}
	return count * page;
}

START_TEST(trim_counts_once)
{
	uint32_t huge = under_sanitizer() ? HUGE_N / 4 : HUGE_N;
	struct lfp_pool *pool;
	size_t first, second, third, touched;
	struct lfp_stats st;
	void *few[FEW];
	void *p;

	pool = test_pool_flags(HUGE_SIZE, huge, LFP_F_NO_CACHE);
	for (uint32_t i = 0; i < huge; i++) {
		ck_assert_ptr_nonnull(p = lfp_alloc(pool));
		memset(p, 0x5a, HUGE_SIZE);
	}
	for (uint32_t i = 0; i < huge; i++)
		ck_assert_int_eq(lfp_free(pool, lfp_at(pool, i)), 0);
	first = lfp_trim(pool);
	ck_assert_msg(first > 0, "the first trim of an idle pool of %u x %u "
		      "bytes gave nothing back", huge, HUGE_SIZE);
	second = lfp_trim(pool);
	lfp_stats(pool, &st);
	ck_assert_msg(second == 0,
		      "a second trim right after one that gave back %zu bytes "
		      "claims %zu bytes more (the pages were gone already)",
		      first, second);
	ck_assert_msg(st.trimmed_bytes == first,
		      "trimmed_bytes is %llu after trims that gave back %zu "
		      "bytes", (unsigned long long)st.trimmed_bytes, first);

	ck_assert_uint_eq(lfp_alloc_bulk(pool, few, FEW), FEW);
	for (int i = 0; i < FEW; i++)
		memset(few[i], 0x6b, HUGE_SIZE);
	touched = pages_of(few, FEW);
	ck_assert_uint_eq(lfp_free_bulk(pool, few, FEW), FEW);
	third = lfp_trim(pool);
	ck_assert_msg(third <= touched,
		      "after %d objects on %zu bytes of pages were used, trim "
		      "claims %zu bytes (of %zu the first trim gave back)",
		      FEW, touched, third, first);
	lfp_stats(pool, &st);
	ck_assert_msg(st.trimmed_bytes == first + third,
		      "trimmed_bytes is %llu after trims that gave back %zu "
		      "bytes", (unsigned long long)st.trimmed_bytes,
		      first + third);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trim");
	TCase *tc = tcase_create("trim");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, trim_racing_alloc, 0, TRIM_NCASES);
	tcase_add_loop_test(tc, trim_keeps_constructed_state, 0, 2);
	tcase_add_test(tc, trim_counts_once);
	suite_add_tcase(s, tc);
	return test_run(s);
}
