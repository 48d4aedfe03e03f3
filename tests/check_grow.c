/* SPDX-License-Identifier: MIT */
/* Exhaustion policies, growth, reserve, trim, and a failure to get
 * memory while growing. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

START_TEST(null_policy_is_default)
{
	struct lfp_pool *pool = test_pool_flags(32, 8, test_modes[_i]);
	struct lfp_stats st;
	void *objs[8];

	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 8), 8);
	ck_assert_ptr_null(lfp_alloc(pool));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.capacity, 8);
	ck_assert_uint_eq(st.max_capacity, 8);
	ck_assert_uint_eq(st.grown, 0);
	lfp_destroy(pool);
}
END_TEST

START_TEST(bad_policy_configs)
{
	struct lfp_config c = { .obj_size = 8, .capacity = 16 };
	struct lfp_pool *pool;

	c.exhaust = LFP_EXHAUST_ABORT + 1;
	ck_assert_int_eq(lfp_create(&c, &pool), -EINVAL);
	c.exhaust = LFP_EXHAUST_RECLAIM; /* without a callback */
	ck_assert_int_eq(lfp_create(&c, &pool), -EINVAL);
	c.exhaust = LFP_EXHAUST_GROW, c.max_capacity = 15;
	ck_assert_int_eq(lfp_create(&c, &pool), -EINVAL);
	c.max_capacity = LFP_MAX_CAPACITY + 1;
	ck_assert_int_eq(lfp_create(&c, &pool), -EOVERFLOW);
}
END_TEST

/* Growth doubles, indices and objects stay put, and it stops at the max. */
START_TEST(grow_doubles_to_max)
{
	struct lfp_config c = { .obj_size = 100, .capacity = 10,
				.exhaust = LFP_EXHAUST_GROW,
				.max_capacity = 70,
				.flags = test_modes[_i] };
	struct lfp_pool *pool;
	struct lfp_stats st;
	char *objs[70];

	ck_assert_int_eq(lfp_create(&c, &pool), 0);
	for (int i = 0; i < 70; i++) {
		objs[i] = lfp_alloc(pool);
		ck_assert_ptr_nonnull(objs[i]);
		memset(objs[i], i, 100); /* the memory is really usable */
		ck_assert(lfp_owns(pool, objs[i]));
		ck_assert_ptr_eq(lfp_at(pool, lfp_index_of(pool, objs[i])),
				 objs[i]);
	}
	ck_assert_ptr_null(lfp_alloc(pool));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.capacity, 70);
	ck_assert_uint_eq(st.grown, 3); /* 10 -> 20 -> 40 -> 70 */
	for (int i = 0; i < 70; i++) {
		for (int b = 0; b < 100; b++)
			ck_assert_int_eq(objs[i][b], (char)i);
		ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
	}
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

/* Before growth, slots past the limit are not the pool's yet. */
START_TEST(limit_bounds_pointers)
{
	struct lfp_config c = { .obj_size = 64, .capacity = 4,
				.exhaust = LFP_EXHAUST_GROW,
				.max_capacity = 1000 };
	struct lfp_pool *pool;
	char *first;

	ck_assert_int_eq(lfp_create(&c, &pool), 0);
	first = lfp_at(pool, 0);
	ck_assert_ptr_null(lfp_at(pool, 4));
	ck_assert(!lfp_owns(pool, first + 4 * 64));
	ck_assert_int_eq(lfp_free(pool, first + 500 * 64), -EALREADY);
	ck_assert_int_eq(lfp_reserve(pool, 1001), -EINVAL);
	ck_assert_int_eq(lfp_reserve(NULL, 1), -EINVAL);
	ck_assert_int_eq(lfp_reserve(pool, 600), 0);
	ck_assert_ptr_eq(lfp_at(pool, 599), first + 599 * 64);
	ck_assert_ptr_null(lfp_at(pool, 600));
	memset(first + 599 * 64, 1, 64);
	lfp_destroy(pool);
}
END_TEST

static int fail_commit(void *addr, size_t len)
{
	(void)addr, (void)len;
	return -ENOMEM;
}

/* A failure to get memory while growing: NULL, and the pool stays usable. */
START_TEST(grow_failure_is_clean)
{
	struct lfp_config c = { .obj_size = 64, .capacity = 16,
				.exhaust = LFP_EXHAUST_GROW,
				.max_capacity = 4096,
				.flags = test_modes[_i] };
	struct lfp_pool *pool;
	struct lfp_stats st;
	static void *objs[4096];
	size_t n = 16, cap;

	ck_assert_int_eq(lfp_create(&c, &pool), 0);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 16), 16);
	lfpi_commit = fail_commit;
	/* Growth within the pages already committed needs no memory; the
	 * first growth that does fails, and the allocation with it. */
	while (n < 4096 && (objs[n] = lfp_alloc(pool)))
		n++;
	ck_assert_uint_lt(n, 4096);
	lfp_stats(pool, &st);
	cap = st.capacity;
	ck_assert_uint_eq(cap, n); /* grown exactly as far as memory went */
	ck_assert_int_eq(lfp_reserve(pool, 4096), -ENOMEM);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.capacity, cap);
	ck_assert_uint_eq(st.failed_allocs, 1);
	expect_accounted(pool, n);
	ck_assert_uint_eq(lfp_free_bulk(pool, objs, n), n);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, n), n);
	lfpi_commit = lfpi_commit_mprotect;
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs + n, 16), 16);
	expect_accounted(pool, n + 16);
	lfp_destroy(pool);

	/* Creation of a growable pool that cannot get its first segment. */
	lfpi_commit = fail_commit;
	ck_assert_int_eq(lfp_create(&c, &pool), -ENOMEM);
	lfpi_commit = lfpi_commit_mprotect;
}
END_TEST

/* Threads allocate and release while the pool grows under them. */
static struct lfp_pool *gpool;

static void *grow_worker(void *arg)
{
	void *mine[300];
	long bad = 0;
	size_t n;

	(void)arg;
	for (int r = 0; r < 20; r++) {
		n = lfp_alloc_bulk(gpool, mine, 300);
		bad += n != 300;
		for (size_t i = 0; i < n; i++)
			memset(mine[i], (int)r, 48);
		bad += lfp_free_bulk(gpool, mine, n) != n;
	}
	return (void *)bad;
}

START_TEST(grow_under_concurrency)
{
	struct lfp_config c = { .obj_size = 48, .capacity = 8,
				.exhaust = LFP_EXHAUST_GROW,
				.max_capacity = 6 * 300 + 6 * 64,
				.flags = test_modes[_i] };
	pthread_t th[6];
	struct lfp_stats st;
	void *bad;

	ck_assert_int_eq(lfp_create(&c, &gpool), 0);
	for (int i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, grow_worker, NULL);
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], &bad);
		ck_assert_ptr_null(bad);
	}
	lfp_stats(gpool, &st);
	ck_assert_uint_gt(st.grown, 0);
	ck_assert_uint_eq(st.failed_allocs, 0);
	expect_accounted(gpool, 0);
	lfp_destroy(gpool);
}
END_TEST

/* The quietest sound is killed to make room for a new one. */
struct sounds {
	struct lfp_pool *pool;
	void *playing[8];
	int n, refuse;
};

static int kill_quietest(struct lfp_pool *pool, void *arg)
{
	struct sounds *s = arg;

	if (s->refuse == 2)
		return 0; /* claims success but frees nothing */
	if (s->refuse || !s->n)
		return -1;
	ck_assert_int_eq(lfp_free(pool, s->playing[0]), 0);
	memmove(s->playing, s->playing + 1, --s->n * sizeof(void *));
	return 0;
}

START_TEST(reclaim_policy)
{
	struct sounds s = { .n = 0 };
	struct lfp_config c = { .obj_size = 32, .capacity = 8,
				.exhaust = LFP_EXHAUST_RECLAIM,
				.reclaim = kill_quietest, .hook_arg = &s,
				.reclaim_tries = 2, .flags = test_modes[_i] };
	struct lfp_stats st;
	void *p;

	ck_assert_int_eq(lfp_create(&c, &s.pool), 0);
	for (int i = 0; i < 20; i++) {
		p = lfp_alloc(s.pool);
		ck_assert_ptr_nonnull(p);
		s.playing[s.n++] = p;
	}
	lfp_stats(s.pool, &st);
	ck_assert_uint_eq(st.reclaims, 12);
	ck_assert_uint_eq(st.live, 8);
	s.refuse = 1; /* the callback gives up: one call, then NULL */
	ck_assert_ptr_null(lfp_alloc(s.pool));
	lfp_stats(s.pool, &st);
	ck_assert_uint_eq(st.reclaims, 13);
	s.refuse = 2; /* it says yes but frees nothing: reclaim_tries calls */
	ck_assert_ptr_null(lfp_alloc(s.pool));
	lfp_stats(s.pool, &st);
	ck_assert_uint_eq(st.reclaims, 15);
	ck_assert_uint_eq(st.failed_allocs, 2);
	expect_accounted(s.pool, 8);
	lfp_destroy(s.pool);
}
END_TEST

START_TEST(abort_policy)
{
	struct lfp_config c = { .obj_size = 32, .capacity = 4,
				.exhaust = LFP_EXHAUST_ABORT };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct lfp_pool *pool;

		if (lfp_create(&c, &pool))
			_exit(1);
		for (int i = 0; i < 5; i++)
			lfp_alloc(pool);
		_exit(0); /* not reached */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGABRT);
}
END_TEST

/* Trim gives back the pages of free slots: resident memory drops, and
 * the slots still work afterwards. */
START_TEST(trim_returns_memory)
{
	enum { N = 1 << 16 };
	struct lfp_pool *pool = test_pool_flags(256, N, LFP_F_NO_CACHE);
	static void *objs[N];
	size_t before, after, bytes;
	struct lfp_stats st;

	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, N), N);
	for (int i = 0; i < N; i++)
		memset(objs[i], 0x77, 256);
	/* Keep every 64th object live: those pages must stay. */
	for (int i = 0; i < N; i++)
		if (i % 64)
			ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
	before = rss_bytes();
	bytes = lfp_trim(pool);
	after = rss_bytes();
	ck_assert_uint_ge(bytes, (size_t)N * 256 / 2);
	ck_assert_msg(before - after >= bytes / 2,
		      "trim said %zu bytes, RSS fell by %zd", bytes,
		      (ssize_t)(before - after));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.trimmed_bytes, bytes);
	for (int i = 0; i < N; i += 64) /* live objects were not touched */
		for (int b = 0; b < 256; b++)
			ck_assert_int_eq(((unsigned char *)objs[i])[b], 0x77);
	expect_accounted(pool, N / 64);
	for (int i = 0; i < N; i += 64)
		ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, N), N);
	expect_accounted(pool, N);
	ck_assert_uint_eq(lfp_trim(pool), 0); /* nothing free */
	ck_assert_uint_eq(lfp_trim(NULL), 0);
	lfp_destroy(pool);
}
END_TEST

/*
 * Trim runs while another thread takes fresh slots (past the bump index)
 * and writes them: those writes must survive. Objects of 1000 bytes put
 * the bump boundary in the middle of a page, next to free slots.
 */
static struct lfp_pool *tpool;
static _Atomic int trim_stop;

static void *fresh_writer(void *arg)
{
	long lost = 0;

	(void)arg;
	while (!atomic_load(&trim_stop)) {
		unsigned char *p = lfp_alloc(tpool);
		if (!p)
			break;
		memset(p, 0xab, 1000);
		sched_yield(); /* let a trim run between write and check */
		for (int i = 0; i < 1000; i++)
			lost += p[i] != 0xab;
		/* Free every other one, so trims find free slots below. */
		if ((uintptr_t)p / 1000 % 2)
			lfp_free(tpool, p);
	}
	return (void *)lost;
}

START_TEST(trim_spares_fresh_slots)
{
	pthread_t th;
	void *lost;

	tpool = test_pool_flags(1000, 1 << 16, LFP_F_NO_CACHE);
	atomic_store(&trim_stop, 0);
	pthread_create(&th, NULL, fresh_writer, NULL);
	for (int i = 0; i < 3000; i++)
		lfp_trim(tpool);
	atomic_store(&trim_stop, 1);
	pthread_join(th, &lost);
	ck_assert_msg(lost == NULL, "%ld bytes of live objects were zeroed",
		      (long)lost);
	lfp_destroy(tpool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("grow");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, null_policy_is_default, 0, TEST_NMODES);
	tcase_add_test(tc, bad_policy_configs);
	tcase_add_loop_test(tc, grow_doubles_to_max, 0, TEST_NMODES);
	tcase_add_test(tc, limit_bounds_pointers);
	tcase_add_loop_test(tc, grow_failure_is_clean, 0, TEST_NMODES);
	tcase_add_loop_test(tc, grow_under_concurrency, 0, TEST_NMODES);
	tcase_add_loop_test(tc, reclaim_policy, 0, TEST_NMODES);
	tcase_add_test(tc, abort_policy);
	tcase_add_test(tc, trim_returns_memory);
	tcase_add_test(tc, trim_spares_fresh_slots);
	suite_add_tcase(s, tc);
	return test_run(s);
}
