/* SPDX-License-Identifier: MIT */
/*
 * LFP_F_WAIT_DEFERRED: an allocation that finds the pool exhausted while
 * deferred releases wait for their grace period waits for one to come
 * back, except where waiting would deadlock (inside a read-side section,
 * in a call_rcu callback), and applies the exhaust policy only when none
 * is pending.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <urcu/urcu-memb.h>

#include "testutil.h"

static void nap_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

static uint64_t waits(struct lfp_pool *pool)
{
	return atomic_load_explicit(&pool->rcu_waits, memory_order_relaxed);
}

/* Flag on every mode the allocation paths have. */
static const uint32_t wd_modes[] = {
	LFP_F_WAIT_DEFERRED,
	LFP_F_WAIT_DEFERRED | LFP_F_NO_CACHE,
	LFP_F_WAIT_DEFERRED | LFP_F_STRICT,
};

START_TEST(flag_accepted_unknown_rejected)
{
	struct lfp_pool *pool = NULL, *keep = (struct lfp_pool *)&pool;
	struct lfp_config cfg = { .obj_size = 32, .capacity = 8 };

	for (int i = 0; i < 3; i++) {
		cfg.flags = wd_modes[i] | LFP_F_POISON;
		ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
		expect_accounted(pool, 0);
		lfp_destroy(pool);
	}
	cfg.flags = LFP_F_WAIT_DEFERRED, cfg.exhaust = LFP_EXHAUST_GROW;
	cfg.max_capacity = 64;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	lfp_destroy(pool);
	/* The bit after the last flag (LFP_F_UNCHECKED) is nobody's yet. */
	cfg.flags = LFP_F_UNCHECKED << 1;
	pool = keep;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	ck_assert_ptr_eq(pool, keep);
	cfg.flags = LFP_F_WAIT_DEFERRED | (LFP_F_UNCHECKED << 1);
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	ck_assert_ptr_eq(pool, keep);
	ck_assert_uint_eq(lfp_deferred_pending(NULL), 0);
}
END_TEST

/* Nothing deferred, ever: exhaustion is reported at once, as without. */
START_TEST(nothing_pending_no_wait)
{
	struct lfp_pool *pool = test_pool_flags(32, 4, wd_modes[_i]);
	void *objs[4];
	struct lfp_stats st;

	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 4), 4);
	ck_assert_ptr_null(lfp_alloc(pool));
	ck_assert_uint_eq(waits(pool), 0);
	ck_assert_uint_eq(lfp_deferred_pending(pool), 0);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.failed_allocs, 1);
	ck_assert_uint_eq(lfp_free_bulk(pool, objs, 4), 4);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

/*
 * A reader holds a read-side section, so the slots released meanwhile
 * cannot come back before it leaves; it leaves once an allocation sleeps
 * waiting for them, or when told to. TSan does not see liburcu's
 * ordering; the reader reads nothing of the pool but its wait counter.
 */
static pthread_barrier_t bar;
static _Atomic int let_go;

static void *holder(void *arg)
{
	struct lfp_pool *pool = arg;

	urcu_memb_register_thread();
	urcu_memb_read_lock();
	pthread_barrier_wait(&bar); /* inside the section */
	while (!atomic_load(&let_go) && waits(pool) == 0)
		nap_ms(1);
	nap_ms(5); /* let the sleeper sleep */
	urcu_memb_read_unlock();
	urcu_memb_unregister_thread();
	return NULL;
}

static void hold_readers(pthread_t *th, struct lfp_pool *pool)
{
	atomic_store(&let_go, 0);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(th, NULL, holder, pool);
	pthread_barrier_wait(&bar);
}

static void end_readers(pthread_t th)
{
	atomic_store(&let_go, 1);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
}

/*
 * Every slot deferred while a reader holds the grace period back:
 * without the flag the allocation fails at once; with it, it waits until
 * the reader leaves and gets one of the deferred slots.
 */
START_TEST(waits_for_grace_period)
{
	uint32_t flags = _i < 3 ? wd_modes[_i] : test_modes[_i - 3];
	struct lfp_pool *pool = test_pool_flags(32, 8, flags);
	void *objs[8], *p;
	pthread_t th;

	urcu_memb_register_thread();
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 8), 8);
	hold_readers(&th, pool);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(lfp_free_deferred(pool, objs[i]), 0);
	ck_assert_uint_eq(lfp_deferred_pending(pool), 8);
	p = lfp_alloc(pool);
	if (flags & LFP_F_WAIT_DEFERRED) {
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_ge(waits(pool), 1);
		ck_assert_uint_lt(lfp_index_of(pool, p), 8);
	} else {
		ck_assert_ptr_null(p);
		ck_assert_uint_eq(waits(pool), 0);
	}
	end_readers(th);
	lfp_barrier(pool);
	ck_assert_uint_eq(lfp_deferred_pending(pool), 0);
	expect_accounted(pool, p ? 1 : 0);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

/* Inside its own read-side section a thread would wait for itself: it
 * gets the policy's answer at once instead, and waits once outside. */
START_TEST(no_wait_inside_read_section)
{
	struct lfp_pool *pool = test_pool_flags(32, 4, wd_modes[_i]);
	void *objs[4];

	urcu_memb_register_thread();
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 4), 4);
	urcu_memb_read_lock();
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(lfp_free_deferred(pool, objs[i]), 0);
	ck_assert_ptr_null(lfp_alloc(pool));
	urcu_memb_read_lock(); /* nested, still inside */
	ck_assert_ptr_null(lfp_alloc(pool));
	urcu_memb_read_unlock();
	ck_assert_uint_eq(waits(pool), 0);
	ck_assert_uint_eq(lfp_deferred_pending(pool), 4);
	urcu_memb_read_unlock();
	/* Outside, it waits for the slots instead. */
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 4), 4);
	/* The call_rcu thread counts a slot back just after it pushed it,
	 * so we may have it before it is counted. */
	lfp_barrier(pool);
	ck_assert_uint_eq(lfp_deferred_pending(pool), 0);
	expect_accounted(pool, 4);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

/*
 * An allocation inside a call_rcu callback: the slots it could wait for
 * come back through the same call_rcu thread, behind it. It must not
 * wait (a hang would time the test out).
 */
static struct lfp_pool *cb_pool;
static _Atomic int cb_result; /* 0 not run, 1 NULL, 2 an object */
static struct rcu_head cb_head;

static void cb_alloc(struct rcu_head *head)
{
	void *p;

	/* The edge from the main thread runs through liburcu's queue. */
	lfpi_tsan_acquire(head);
	p = lfp_alloc(cb_pool);
	if (p)
		lfp_free(cb_pool, p);
	atomic_store_explicit(&cb_result, p ? 2 : 1, memory_order_release);
}

START_TEST(no_wait_in_call_rcu_callback)
{
	void *objs[4];

	cb_pool = test_pool_flags(32, 4, wd_modes[_i]);
	atomic_store(&cb_result, 0);
	urcu_memb_register_thread();
	ck_assert_uint_eq(lfp_alloc_bulk(cb_pool, objs, 4), 4);
	/* Queued first: it runs before the releases come back. */
	lfpi_tsan_release(&cb_head);
	urcu_memb_call_rcu(&cb_head, cb_alloc);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(lfp_free_deferred(cb_pool, objs[i]), 0);
	lfp_barrier(cb_pool);
	/* It ran, and got the policy's NULL: every slot was pending. */
	ck_assert_int_eq(atomic_load_explicit(&cb_result, memory_order_acquire), 1);
	ck_assert_uint_eq(waits(cb_pool), 0);
	expect_accounted(cb_pool, 0);
	lfp_destroy(cb_pool);
	urcu_memb_unregister_thread();
}
END_TEST

/* A growable pool waits for its deferred slots before it grows. */
START_TEST(waits_before_growing)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 8,
				  .max_capacity = 64,
				  .exhaust = LFP_EXHAUST_GROW,
				  .flags = wd_modes[_i] };
	struct lfp_pool *pool;
	struct lfp_stats st;
	void *objs[8], *p;
	pthread_t th;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	urcu_memb_register_thread();
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 8), 8);
	hold_readers(&th, pool);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(lfp_free_deferred(pool, objs[i]), 0);
	p = lfp_alloc(pool);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(lfp_index_of(pool, p), 8);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.grown, 0);
	ck_assert_uint_eq(st.capacity, 8);
	end_readers(th);
	/* With nothing pending, the policy applies: it grows. */
	lfp_barrier(pool);
	void *more[8];
	ck_assert_uint_eq(lfp_alloc_bulk(pool, more, 8), 8);
	lfp_stats(pool, &st);
	ck_assert_uint_ge(st.grown, 1);
	expect_accounted(pool, 9);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

/* A reclaim pool: no victim is asked for while slots are pending. */
static _Atomic int reclaim_calls;

static int count_reclaim(struct lfp_pool *pool, void *arg)
{
	(void)pool, (void)arg;
	atomic_fetch_add(&reclaim_calls, 1);
	return -1;
}

START_TEST(waits_before_reclaiming)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 8,
				  .exhaust = LFP_EXHAUST_RECLAIM,
				  .reclaim = count_reclaim,
				  .flags = wd_modes[_i] };
	struct lfp_pool *pool;
	void *objs[8], *p;
	pthread_t th;

	atomic_store(&reclaim_calls, 0);
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	urcu_memb_register_thread();
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 8), 8);
	hold_readers(&th, pool);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(lfp_free_deferred(pool, objs[i]), 0);
	ck_assert_ptr_nonnull(p = lfp_alloc(pool));
	ck_assert_int_eq(atomic_load(&reclaim_calls), 0);
	end_readers(th);
	lfp_barrier(pool);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 8), 7);
	ck_assert_int_ge(atomic_load(&reclaim_calls), 1);
	expect_accounted(pool, 8);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

/*
 * The client's load, small: writers keep LIVE nodes of a pool with a
 * few spare slots, replacing them as fast as they can and releasing the
 * old ones with lfp_free_deferred. Grace periods last milliseconds, so
 * the spare slots are all pending within microseconds, again and again:
 * the pool recycles about SPARE slots per grace period (10 ms), so the
 * rounds take about a second.
 */
enum { LIVE = 64, SPARE = 64, WRITERS = 2 };
static struct lfp_pool *wpool;
static _Atomic(void *) nodes[LIVE];
static _Atomic uint64_t nulls, replaced;
static _Atomic int bad;

static void *replacer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	int rounds = under_sanitizer() ? 1000 : 3000;

	urcu_memb_register_thread();
	for (int i = 0; i < rounds; i++) {
		void *p, *old;

		while (!(p = lfp_alloc(wpool))) {
			atomic_fetch_add(&nulls, 1);
			nap_ms(1);
		}
		memset(p, i, 32);
		old = atomic_exchange(&nodes[rand_r(&seed) % LIVE], p);
		if (old && lfp_free_deferred(wpool, old) != 0)
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add(&replaced, 1);
	}
	urcu_memb_unregister_thread();
	return NULL;
}

static uint64_t run_replacers(uint32_t flags)
{
	pthread_t th[WRITERS];

	wpool = test_pool_flags(32, LIVE + SPARE, flags);
	atomic_store(&nulls, 0);
	atomic_store(&replaced, 0);
	atomic_store(&bad, 0);
	for (int i = 0; i < LIVE; i++)
		atomic_store(&nodes[i], lfp_alloc(wpool));
	for (int i = 0; i < WRITERS; i++)
		pthread_create(&th[i], NULL, replacer, (void *)(uintptr_t)(i + 3));
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(atomic_load(&bad), 0);
	ck_assert_uint_gt(atomic_load(&replaced), 0);
	lfp_barrier(wpool);
	ck_assert_uint_eq(lfp_deferred_pending(wpool), 0);
	expect_accounted(wpool, LIVE);
	return atomic_load(&nulls);
}

START_TEST(replacers_never_see_null)
{
	uint64_t n = run_replacers(wd_modes[_i]);

	ck_assert_uint_eq(n, 0);
	ck_assert_uint_gt(waits(wpool), 0);
	lfp_destroy(wpool);
}
END_TEST

/* The same load without the flag does run the pool dry. */
START_TEST(replacers_see_null_without_flag)
{
	uint64_t n = run_replacers(test_modes[_i]);

	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(waits(wpool), 0);
	lfp_destroy(wpool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("waitdef");
	TCase *tc = tcase_create("waitdef");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, flag_accepted_unknown_rejected);
	tcase_add_loop_test(tc, nothing_pending_no_wait, 0, 3);
	tcase_add_loop_test(tc, waits_for_grace_period, 0, 3 + TEST_NMODES);
	tcase_add_loop_test(tc, waits_before_growing, 0, 3);
	tcase_add_loop_test(tc, waits_before_reclaiming, 0, 3);
	tcase_add_loop_test(tc, replacers_never_see_null, 0, 3);
	tcase_add_loop_test(tc, replacers_see_null_without_flag, 0, TEST_NMODES);
	suite_add_tcase(s, tc);
	/* Where waiting would deadlock: a broken check hangs until the
	 * timeout, so keep it short. */
	tc = tcase_create("nowait");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, no_wait_inside_read_section, 0, 3);
	tcase_add_loop_test(tc, no_wait_in_call_rcu_callback, 0, 3);
	suite_add_tcase(s, tc);
	return test_run(s);
}
