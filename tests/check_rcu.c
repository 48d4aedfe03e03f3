/* SPDX-License-Identifier: MIT */
/* Deferred release: a slot released with lfp_free_deferred is not reused
 * while a reader that may hold it is inside an RCU read-side section. */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <urcu/urcu-memb.h>

#include "testutil.h"

static void nap_ms(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000 };

	nanosleep(&ts, NULL);
}

static pthread_barrier_t bar;

/* Holds a read-side section open between the first two barriers. */
static void *reader(void *arg)
{
	(void)arg;
	urcu_memb_register_thread();
	urcu_memb_read_lock();
	pthread_barrier_wait(&bar); /* inside the section */
	pthread_barrier_wait(&bar); /* main is done checking */
	urcu_memb_read_unlock();
	urcu_memb_unregister_thread();
	return NULL;
}

START_TEST(no_reuse_inside_read_section)
{
	struct lfp_pool *pool = test_pool_flags(64, 4, test_modes[_i]);
	struct lfpi_census census;
	struct lfp_stats st;
	void *objs[4];
	pthread_t th;

	urcu_memb_register_thread();
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 4), 4);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, reader, NULL);
	pthread_barrier_wait(&bar);
	ck_assert_int_eq(lfp_free_deferred(pool, objs[2]), 0);
	ck_assert_int_eq(lfp_free_deferred(pool, objs[2]), -EALREADY);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.deferred, 1);
	ck_assert_uint_eq(st.live, 3);
	ck_assert_uint_eq(st.free + st.cached, 0);
	/* The reader still holds its section: the slot must not come back,
	 * however long we wait. */
	for (int i = 0; i < 5; i++) {
		ck_assert_ptr_null(lfp_alloc(pool));
		nap_ms(20);
	}
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.deferred, 1);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	lfp_barrier(pool);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.deferred, 0);
	ck_assert_ptr_eq(lfp_alloc(pool), objs[2]);
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, 4);
	pthread_barrier_destroy(&bar);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

START_TEST(deferred_bad_input)
{
	struct lfp_pool *pool = test_pool(32, 8), *other = test_pool(32, 8);
	char *p = lfp_alloc(pool);
	int local;

	urcu_memb_register_thread();
	ck_assert_int_eq(lfp_free_deferred(NULL, p), -EINVAL);
	ck_assert_int_eq(lfp_free_deferred(pool, NULL), -EINVAL);
	ck_assert_int_eq(lfp_free_deferred(pool, p + 1), -EINVAL);
	ck_assert_int_eq(lfp_free_deferred(pool, &local), -EFAULT);
	ck_assert_int_eq(lfp_free_deferred(pool, lfp_alloc(other)), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, p), 0);
	ck_assert_int_eq(lfp_free_deferred(pool, p), -EALREADY);
	lfp_barrier(pool);
	lfp_barrier(NULL);
	{
		struct lfpi_census census;
		ck_audit(pool, &census);
		ck_assert_uint_eq(census.live, 0);
	}
	lfp_destroy(pool);
	lfp_destroy(other);
	urcu_memb_unregister_thread();
}
END_TEST

/* The counts after a rejected call: as before, but rejected_frees. */
static void expect_only_rejected(struct lfp_pool *pool,
				 const struct lfp_stats *before,
				 uint64_t rejected)
{
	struct lfpi_census census;
	struct lfp_stats st;

	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.free + st.cached + st.live + st.deferred,
			  st.capacity);
	ck_assert_uint_eq(st.capacity, before->capacity);
	ck_assert_uint_eq(st.live, before->live);
	ck_assert_uint_eq(st.cached, before->cached);
	ck_assert_uint_eq(st.free, before->free);
	ck_assert_uint_eq(st.deferred, before->deferred);
	ck_assert_uint_eq(st.allocs, before->allocs);
	ck_assert_uint_eq(st.frees, before->frees);
	ck_assert_uint_eq(st.rejected_frees, before->rejected_frees + rejected);
	/* And each slot is where the counts say. */
	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, st.live);
	ck_assert_uint_eq(census.cached, st.cached);
	ck_assert_uint_eq(census.listed + census.fresh, st.free);
	ck_assert_uint_eq(census.deferred, st.deferred);
}

/*
 * Nothing is lost while slots wait for their grace period (lfpool.h,
 * struct lfp_stats): after each rejected call, a second release of a
 * deferred object by every release call, by handle, in bulk, or a
 * pointer that is no object's, free + cached + live + deferred =
 * capacity with every count as it was but rejected_frees, and the census
 * finds the deferred slots deferred.
 */
START_TEST(rejected_calls_while_deferred)
{
	struct lfp_pool *pool = test_pool_flags(64, 16, test_modes[_i]);
	struct lfp_cache *cache = lfp_cache_create(pool);
	struct lfp_stats st;
	char *objs[8];
	lfp_handle h2, h3;
	pthread_t th;
	int local;

	ck_assert_ptr_nonnull(cache);
	urcu_memb_register_thread();
	ck_assert_uint_eq(lfp_alloc_bulk(pool, (void **)objs, 8), 8);
	h2 = lfp_handle_of(pool, objs[2]);
	h3 = lfp_handle_of(pool, objs[3]);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&th, NULL, reader, NULL);
	pthread_barrier_wait(&bar);
	ck_assert_int_eq(lfp_free_deferred(pool, objs[2]), 0);
	ck_assert_int_eq(lfp_free_deferred(pool, objs[3]), 0);
	ck_assert_int_eq(lfp_cache_free(cache, objs[4]), 0);
	ck_assert_int_eq(lfp_free(pool, objs[5]), 0);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.deferred, 2);
	ck_assert_uint_eq(st.live, 4);
	expect_only_rejected(pool, &st, 0);

	ck_assert_int_eq(lfp_free(pool, objs[2]), -EALREADY);
	expect_only_rejected(pool, &st, 1);
	ck_assert_int_eq(lfp_cache_free(cache, objs[3]), -EALREADY);
	expect_only_rejected(pool, &st, 2);
	ck_assert_int_eq(lfp_free_deferred(pool, objs[2]), -EALREADY);
	expect_only_rejected(pool, &st, 3);
	ck_assert_int_eq(lfp_free_handle(pool, h2), -ESTALE);
	expect_only_rejected(pool, &st, 4);
	ck_assert_int_eq(lfp_cache_free_handle(cache, h3), -ESTALE);
	expect_only_rejected(pool, &st, 5);
	ck_assert_uint_eq(lfp_free_bulk(pool, (void **)&objs[2], 2), 0);
	expect_only_rejected(pool, &st, 7);
	ck_assert_uint_eq(lfp_cache_free_bulk(cache, (void **)&objs[2], 2), 0);
	expect_only_rejected(pool, &st, 9);
	ck_assert_int_eq(lfp_free(pool, objs[0] + 1), -EINVAL);
	expect_only_rejected(pool, &st, 10);
	ck_assert_int_eq(lfp_free_deferred(pool, objs[1] + 1), -EINVAL);
	expect_only_rejected(pool, &st, 11);
	ck_assert_int_eq(lfp_free(pool, &local), -EFAULT);
	expect_only_rejected(pool, &st, 12);
	ck_assert_int_eq(lfp_free_deferred(pool, &local), -EFAULT);
	expect_only_rejected(pool, &st, 13);

	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
	lfp_barrier(pool);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.deferred, 0);
	expect_only_rejected(pool, &st, 0);
	lfp_cache_destroy(cache);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

/* Destroy with releases still waiting: it waits for them (under ASan a
 * callback on the freed pool would be a use after free). */
START_TEST(destroy_with_pending)
{
	struct lfp_pool *pool = test_pool_flags(64, 1000, test_modes[_i]);

	urcu_memb_register_thread();
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(lfp_free_deferred(pool, lfp_alloc(pool)), 0);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

/*
 * Writers release objects with lfp_free_deferred and allocate new ones,
 * stamping each with a fresh number; readers resolve handles inside a
 * read-side section and check that the stamp does not change under them.
 */
enum { SLOTS = 32 };
struct obj {
	_Atomic uint64_t stamp;
};
static struct lfp_pool *rpool;
static _Atomic uint64_t handles[SLOTS], next_stamp = 1;
static _Atomic int stop, changed, resolved;

static void *rcu_reader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	urcu_memb_register_thread();
	while (!atomic_load(&stop)) {
		urcu_memb_read_lock();
		lfp_handle h = { atomic_load(&handles[rand_r(&seed) % SLOTS]) };
		struct obj *o = lfp_resolve(rpool, h);
		if (o) {
			uint64_t s1 = atomic_load(&o->stamp);
			for (int spin = 0; spin < 200; spin++)
				if (atomic_load(&o->stamp) != s1)
					atomic_fetch_add(&changed, 1);
			atomic_fetch_add(&resolved, 1);
		}
		urcu_memb_read_unlock();
	}
	urcu_memb_unregister_thread();
	return NULL;
}

static void *rcu_writer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	urcu_memb_register_thread();
	for (int i = 0; i < 20000 || atomic_load(&resolved) < 1000; i++) {
		int k = rand_r(&seed) % SLOTS;
		lfp_handle old = { atomic_exchange(&handles[k], 0) };
		struct obj *o = lfp_resolve(rpool, old);

		if (o && lfp_free_deferred(rpool, o) != 0)
			atomic_fetch_add(&changed, 1000);
		/* The pool may be full of releases waiting for readers. */
		while (!(o = lfp_alloc(rpool)))
			nap_ms(1);
		atomic_store(&o->stamp, atomic_fetch_add(&next_stamp, 1));
		lfp_handle h = lfp_handle_of(rpool, o);
		uint64_t expect = 0;
		if (!atomic_compare_exchange_strong(&handles[k], &expect, h.bits))
			lfp_free(rpool, o); /* another writer filled it */
	}
	urcu_memb_unregister_thread();
	return NULL;
}

START_TEST(readers_never_see_reuse)
{
	pthread_t r[2], w[2];
	struct lfp_stats st;

	rpool = test_pool_flags(sizeof(struct obj), 4 * SLOTS, test_modes[_i]);
	atomic_store(&stop, 0);
	atomic_store(&changed, 0);
	for (int i = 0; i < SLOTS; i++)
		atomic_store(&handles[i], 0);
	for (int i = 0; i < 2; i++) {
		pthread_create(&r[i], NULL, rcu_reader, (void *)(uintptr_t)(i + 1));
		pthread_create(&w[i], NULL, rcu_writer, (void *)(uintptr_t)(i + 7));
	}
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	ck_assert_int_eq(atomic_load(&changed), 0);
	ck_assert_int_gt(atomic_load(&resolved), 0);
	lfp_barrier(rpool);
	lfp_stats(rpool, &st);
	ck_assert_uint_eq(st.deferred, 0);
	ck_assert_uint_gt(st.frees, 0);
	lfp_destroy(rpool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rcu");
	TCase *tc = tcase_create("rcu");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, no_reuse_inside_read_section, 0, TEST_NMODES);
	tcase_add_test(tc, deferred_bad_input);
	tcase_add_loop_test(tc, rejected_calls_while_deferred, 0, TEST_NMODES);
	tcase_add_loop_test(tc, destroy_with_pending, 0, TEST_NMODES);
	tcase_add_loop_test(tc, readers_never_see_reuse, 0, TEST_NMODES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
