/* SPDX-License-Identifier: MIT */
/*
 * Many pools on one thread: each pool's number, the thread's table of
 * implicit caches indexed by it (lfpool.h, lfpi_cache_tab), numbers
 * reused after lfp_destroy, pools beyond the numbers, the table growing
 * under a signal handler's feet, thread exit and fork.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "testutil.h"

static uint32_t mp_num(struct lfp_pool *pool)
{
	return ((const struct lfpi_pool_hot *)(const void *)pool)->num;
}

/* Whether the calling thread's next lfp_alloc(pool) stays inline. */
static bool mp_inline(struct lfp_pool *pool)
{
	return lfpi_cache_is_of(lfpi_cache_entry(pool), pool);
}

static struct lfp_pool *mp_pool(uint32_t capacity, uint32_t flags)
{
	return test_pool_flags(16, capacity, flags);
}

static void mp_use(struct lfp_pool *pool)
{
	void *o = lfp_alloc(pool);

	ck_assert_ptr_nonnull(o);
	ck_assert(lfp_owns(pool, o));
	ck_assert_int_eq(lfp_free(pool, o), 0);
}

/* A thread that used 64 pools finds each one's cache inline, whatever
 * the order it takes them in. */
START_TEST(every_pool_inline)
{
	struct lfp_pool *pools[64];

	for (int i = 0; i < 64; i++) {
		pools[i] = mp_pool(256, 0);
		ck_assert_uint_eq(mp_num(pools[i]), (uint32_t)i);
		ck_assert(!mp_inline(pools[i]));
	}
	for (int i = 0; i < 64; i++)
		mp_use(pools[i]);
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 64; i++) {
			int k = (i * 37 + r) % 64;

			ck_assert_msg(mp_inline(pools[k]), "pool %d", k);
			mp_use(pools[k]);
		}
	for (int i = 0; i < 64; i++) {
		expect_accounted(pools[i], 0);
		lfp_destroy(pools[i]);
	}
}
END_TEST

/* A pool without caches takes no number and never gets an entry. */
START_TEST(no_cache_pool_stays_out)
{
	struct lfp_pool *a = mp_pool(64, LFP_F_NO_CACHE), *b = mp_pool(64, 0);

	ck_assert_uint_eq(mp_num(a), LFPI_NIL);
	ck_assert_uint_eq(mp_num(b), 0);
	mp_use(a);
	mp_use(b);
	ck_assert(!mp_inline(a));
	ck_assert(mp_inline(b));
	expect_accounted(a, 0);
	lfp_destroy(a);
	lfp_destroy(b);
}
END_TEST

/*
 * A destroyed pool's number goes to the next pool made, often at the
 * same address: the thread's entry for the number is the old pool's
 * orphaned cache, which must never serve the new pool.
 */
START_TEST(number_reused_after_destroy)
{
	struct lfp_pool *keep = mp_pool(64, 0), *a, *b;
	void *held[8];
	int same_address = 0;

	mp_use(keep);
	for (int r = 0; r < 200; r++) {
		a = mp_pool(64, 0);
		ck_assert_uint_eq(mp_num(a), 1);
		/* Leave slots in a's cache: the orphan has some. */
		for (int i = 0; i < 8; i++)
			held[i] = lfp_alloc(a);
		for (int i = 0; i < 8; i++)
			ck_assert_int_eq(lfp_free(a, held[i]), 0);
		ck_assert(mp_inline(a));
		lfp_destroy(a);
		b = mp_pool(64, 0);
		ck_assert_uint_eq(mp_num(b), 1);
		same_address += b == a;
		ck_assert(!mp_inline(b));
		for (int i = 0; i < 8; i++) {
			held[i] = lfp_alloc(b);
			ck_assert(lfp_owns(b, held[i]));
		}
		expect_accounted(b, 8);
		for (int i = 0; i < 8; i++)
			ck_assert_int_eq(lfp_free(b, held[i]), 0);
		ck_assert(mp_inline(b));
		/* b's cache is the one found last, a's orphan forgotten */
		ck_assert(lfpi_cache_is_of(lfpi_cache_tab.last, b));
		ck_assert(mp_inline(keep));
		expect_accounted(b, 0);
		lfp_destroy(b);
	}
	/* Not asserted (the kernel chooses), but the case that matters. */
	if (!same_address)
		fprintf(stderr, "number_reused_after_destroy: no pool came "
				"back at its old address\n");
	lfp_destroy(keep);
}
END_TEST

/*
 * The orphan of a destroyed pool is unmapped by the thread's next call
 * that goes out of line, for any pool: its entry must go with it, or the
 * next pool of its number would read a cache no longer mapped.
 */
START_TEST(orphan_swept_by_another_pool)
{
	struct lfp_pool *x, *a, *b;

	for (int r = 0; r < 50; r++) {
		/* x's cache is larger than a's (two pages, not one), so the
		 * one made for x is not mapped where a's was. */
		x = mp_pool(65536, 0);
		a = mp_pool(64, 0);
		ck_assert_uint_eq(mp_num(a), 1);
		mp_use(a);
		lfp_destroy(a);
		mp_use(x);          /* out of line: unmaps a's orphan */
		b = mp_pool(64, 0); /* a's number */
		ck_assert_uint_eq(mp_num(b), 1);
		mp_use(b);          /* reads the entry a's cache had */
		expect_accounted(b, 0);
		expect_accounted(x, 0);
		lfp_destroy(b);
		lfp_destroy(x);
	}
}
END_TEST

/* The same through another thread: its entry names a cache that the
 * destroying thread made an orphan. */
static struct lfp_pool *mp_shared;
static _Atomic int mp_step;

static void mp_wait(int step)
{
	while (atomic_load(&mp_step) != step)
		sched_yield();
}

static void *mp_user(void *arg)
{
	(void)arg;
	for (int r = 0; r < 50; r++) {
		mp_wait(2 * r + 1);
		mp_use(mp_shared);
		mp_use(mp_shared);
		atomic_store(&mp_step, 2 * r + 2);
	}
	/* Not gone before the last audit: an exiting thread drains its
	 * caches, and the census would see them full, then empty. */
	mp_wait(2 * 50 + 1);
	return NULL;
}

START_TEST(number_reused_under_another_thread)
{
	struct lfp_pool *keep = mp_pool(64, 0);
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, mp_user, NULL), 0);
	for (int r = 0; r < 50; r++) {
		mp_shared = mp_pool(64, 0);
		ck_assert_uint_eq(mp_num(mp_shared), 1);
		atomic_store(&mp_step, 2 * r + 1);
		mp_wait(2 * r + 2);
		expect_accounted(mp_shared, 0);
		lfp_destroy(mp_shared);
	}
	atomic_store(&mp_step, 2 * 50 + 1);
	pthread_join(th, NULL);
	lfp_destroy(keep);
}
END_TEST

/* Past the first page of entries the table grows, keeping the others. */
START_TEST(table_grows_keeping_entries)
{
	enum { N = 1100 };
	struct lfp_pool **pools = calloc(N, sizeof(*pools));

	for (int i = 0; i < N; i++)
		pools[i] = mp_pool(8, 0);
	for (int i = 0; i < 300; i++)
		mp_use(pools[i]);
	mp_use(pools[N - 1]);
	ck_assert_uint_ge(lfpi_cache_tab.mask, N - 1);
	for (int i = 0; i < 300; i++)
		ck_assert_msg(mp_inline(pools[i]), "pool %d", i);
	ck_assert(mp_inline(pools[N - 1]));
	for (int i = 0; i < N; i++) {
		expect_accounted(pools[i], 0);
		lfp_destroy(pools[i]);
	}
	free(pools);
}
END_TEST

/* Pools beyond the numbers work the old way, and a number given back
 * goes to the next pool made. */
START_TEST(beyond_the_numbers)
{
	enum { N = LFPI_POOL_NUMS + 4 };
	struct lfp_pool **pools = calloc(N, sizeof(*pools));
	void *o[4];

	for (int i = 0; i < N; i++)
		pools[i] = mp_pool(8, 0);
	for (int i = 0; i < 4; i++) {
		struct lfp_pool *p = pools[LFPI_POOL_NUMS + i];

		ck_assert_uint_eq(mp_num(p), LFPI_NIL);
		o[i] = lfp_alloc(p);
		ck_assert(lfp_owns(p, o[i]));
		ck_assert(!mp_inline(p));
	}
	for (int i = 0; i < 4; i++) {
		struct lfp_pool *p = pools[LFPI_POOL_NUMS + i];

		expect_accounted(p, 1);
		ck_assert_int_eq(lfp_free(p, o[i]), 0);
		mp_use(p);
		expect_accounted(p, 0);
	}
	lfp_destroy(pools[77]);
	pools[77] = mp_pool(8, 0);
	ck_assert_uint_eq(mp_num(pools[77]), 77);
	mp_use(pools[77]);
	ck_assert(mp_inline(pools[77]));
	for (int i = 0; i < N; i++)
		lfp_destroy(pools[i]);
	free(pools);
}
END_TEST

/* A thread that used many pools gives every cache back at its exit. */
static struct lfp_pool *mp_pools[40];

static void *mp_spread(void *arg)
{
	void *o[40];

	(void)arg;
	for (int i = 0; i < 40; i++)
		o[i] = lfp_alloc(mp_pools[i]);
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(lfp_free(mp_pools[i], o[i]), 0);
	return NULL;
}

START_TEST(thread_exit_gives_every_cache_back)
{
	struct lfp_stats st;
	pthread_t th;

	for (int i = 0; i < 40; i++)
		mp_pools[i] = mp_pool(256, 0);
	for (int r = 0; r < 20; r++) {
		ck_assert_int_eq(pthread_create(&th, NULL, mp_spread, NULL), 0);
		pthread_join(th, NULL);
		for (int i = 0; i < 40; i++) {
			lfp_stats(mp_pools[i], &st);
			ck_assert_uint_eq(st.cached, 0);
			expect_accounted(mp_pools[i], 0);
		}
	}
	for (int i = 0; i < 40; i++)
		lfp_destroy(mp_pools[i]);
}
END_TEST

/* The child of a fork finds the parent thread's caches inline. */
START_TEST(fork_keeps_the_table)
{
	struct lfp_pool *pools[8];
	pid_t pid;
	int st;

	for (int i = 0; i < 8; i++) {
		pools[i] = mp_pool(64, 0);
		mp_use(pools[i]);
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int bad = 0;

		for (int i = 0; i < 8; i++) {
			void *o = lfp_alloc(pools[i]);

			bad += !o || !lfp_owns(pools[i], o) ||
			       lfp_free(pools[i], o) != 0 ||
			       !mp_inline(pools[i]);
		}
		_exit(bad);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	for (int i = 0; i < 8; i++) {
		expect_accounted(pools[i], 0);
		lfp_destroy(pools[i]);
	}
}
END_TEST

/*
 * A signal handler allocates from a pool without caches (which lfpool.h
 * lets it), reading the thread's table entry for that pool, while the
 * thread grows its table again and again (each new thread starts with
 * none). It must never read a table half replaced.
 */
enum { MP_GROW = 1100 };
static struct lfp_pool *mp_many[MP_GROW], *mp_nocache;
static _Atomic int mp_tid, mp_done;
static volatile sig_atomic_t mp_bad, mp_calls, mp_seen;

static void mp_handler(int sig)
{
	void *o;

	(void)sig;
	o = lfp_alloc(mp_nocache);
	if (!o || lfp_free(mp_nocache, o) != 0)
		mp_bad = 1;
	mp_calls = mp_calls + 1;
	mp_seen = 1;
}

static void *mp_grower(void *arg)
{
	(void)arg;
	atomic_store(&mp_tid, (int)syscall(SYS_gettid));
	/* Grow only once the signals reach us: on a busy machine this
	 * thread could otherwise finish before the sender ran at all. */
	while (!mp_seen)
		usleep(50); /* a call ThreadSanitizer delivers signals in */
	for (int i = MP_GROW - 1; i >= 0; i -= 97)
		mp_use(mp_many[i]);
	for (int i = 0; i < MP_GROW; i += 7)
		mp_use(mp_many[i]);
	atomic_store(&mp_done, 1);
	return NULL;
}

START_TEST(table_grows_under_a_signal_handler)
{
	int rounds = under_sanitizer() ? 5 : 30;
	struct sigaction sa = { .sa_handler = mp_handler };
	pthread_t th;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	for (int i = 0; i < MP_GROW; i++)
		mp_many[i] = mp_pool(8, 0);
	/* Unnumbered: its lookup reads the table's last entry, at the far
	 * end of a table half replaced. */
	mp_nocache = mp_pool(64, LFP_F_NO_CACHE);
	for (int r = 0; r < rounds; r++) {
		atomic_store(&mp_tid, 0);
		atomic_store(&mp_done, 0);
		mp_seen = 0;
		ck_assert_int_eq(pthread_create(&th, NULL, mp_grower, NULL), 0);
		while (!atomic_load(&mp_tid))
			sched_yield();
		while (!atomic_load(&mp_done))
			syscall(SYS_tgkill, getpid(), atomic_load(&mp_tid),
				SIGUSR1);
		pthread_join(th, NULL);
	}
	ck_assert_int_eq(mp_bad, 0);
	ck_assert_int_gt(mp_calls, 0);
	expect_accounted(mp_nocache, 0);
	for (int i = 0; i < MP_GROW; i++) {
		expect_accounted(mp_many[i], 0);
		lfp_destroy(mp_many[i]);
	}
	lfp_destroy(mp_nocache);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("manypools");
	TCase *tc = tcase_create("table");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_pool_inline);
	tcase_add_test(tc, no_cache_pool_stays_out);
	tcase_add_test(tc, number_reused_after_destroy);
	tcase_add_test(tc, orphan_swept_by_another_pool);
	tcase_add_test(tc, number_reused_under_another_thread);
	tcase_add_test(tc, table_grows_keeping_entries);
	tcase_add_test(tc, beyond_the_numbers);
	tcase_add_test(tc, thread_exit_gives_every_cache_back);
	tcase_add_test(tc, fork_keeps_the_table);
	tcase_add_test(tc, table_grows_under_a_signal_handler);
	suite_add_tcase(s, tc);
	return test_run(s);
}
