/* SPDX-License-Identifier: MIT */
/* Object hooks: ctor once per slot, at its first handout; on_alloc once
 * per allocation, on_free once per accepted release; never on a retry or
 * a refusal. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "testutil.h"

enum { CAP = 64 };

struct tally {
	struct lfp_pool *pool;
	_Atomic uint32_t ctor[CAP];
	_Atomic uint32_t used[CAP]; /* handed out at least once */
	_Atomic uint64_t allocs, frees;
};

static void count_ctor(void *obj, void *arg)
{
	struct tally *t = arg;
	uint32_t idx = lfp_index_of(t->pool, obj);

	if (idx < CAP)
		atomic_fetch_add(&t->ctor[idx], 1);
	memset(obj, 0xc7, 32); /* the constructed state */
}

static void count_alloc(void *obj, void *arg)
{
	struct tally *t = arg;
	uint32_t idx = lfp_index_of(t->pool, obj);

	/* ctor has run by now: the object is constructed before on_alloc. */
	ck_assert_uint_eq(((unsigned char *)obj)[31], 0xc7);
	if (idx < CAP)
		atomic_store(&t->used[idx], 1);
	atomic_fetch_add(&t->allocs, 1);
}

static void count_free(void *obj, void *arg)
{
	(void)obj;
	atomic_fetch_add(&((struct tally *)arg)->frees, 1);
}

static struct tally tally;

static struct lfp_pool *hooked_pool(uint32_t flags)
{
	struct lfp_config c = { .obj_size = 32, .capacity = CAP,
				.flags = flags, .ctor = count_ctor,
				.on_alloc = count_alloc, .on_free = count_free,
				.hook_arg = &tally };

	memset(&tally, 0, sizeof(tally));
	ck_assert_int_eq(lfp_create(&c, &tally.pool), 0);
	/* The pool pointer is set only now: a ctor before this would have
	 * counted nothing and failed the test below. */
	return tally.pool;
}

/* Every slot handed out was constructed once, and no other slot was;
 * `touched` of them were handed out. */
static uint32_t expect_hooks(struct lfp_pool *pool, uint32_t touched)
{
	struct lfp_stats st;
	uint32_t used = 0;

	lfp_stats(pool, &st);
	ck_assert_uint_eq(atomic_load(&tally.allocs), st.allocs);
	ck_assert_uint_eq(atomic_load(&tally.frees), st.frees);
	for (uint32_t i = 0; i < CAP; i++) {
		ck_assert_msg(atomic_load(&tally.ctor[i]) ==
				      atomic_load(&tally.used[i]),
			      "slot %u constructed %u times, handed out: %u", i,
			      atomic_load(&tally.ctor[i]),
			      atomic_load(&tally.used[i]));
		used += atomic_load(&tally.used[i]);
	}
	if (touched)
		ck_assert_uint_eq(used, touched);
	return used;
}

START_TEST(each_event_once)
{
	struct lfp_pool *pool = hooked_pool(test_modes[_i]);
	lfp_handle h;
	void *objs[CAP];
	char *p;
	int local;

	p = lfp_alloc(pool);
	ck_assert_uint_eq((unsigned char)p[31], 0xc7); /* constructed */
	ck_assert_int_eq(lfp_free(pool, p), 0);
	ck_assert_int_eq(lfp_free(pool, p), -EALREADY);  /* no on_free */
	ck_assert_int_eq(lfp_free(pool, &local), -EFAULT);
	ck_assert_int_eq(lfp_free(pool, NULL), -EINVAL);
	for (int round = 0; round < 5; round++) {
		ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, CAP), CAP);
		ck_assert_ptr_null(lfp_alloc(pool)); /* no on_alloc */
		h = lfp_handle_of(pool, objs[0]);
		ck_assert_int_eq(lfp_free_handle(pool, h), 0);
		ck_assert_int_eq(lfp_free_handle(pool, h), -ESTALE);
		ck_assert_uint_eq(lfp_free_bulk(pool, objs + 1, CAP - 1), CAP - 1);
	}
	expect_hooks(pool, CAP);
	ck_assert_uint_eq(atomic_load(&tally.allocs), 1 + 5 * CAP);
	lfp_destroy(pool);
}
END_TEST

START_TEST(ctor_only_for_touched_slots)
{
	struct lfp_pool *pool = hooked_pool(LFP_F_NO_CACHE);

	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(lfp_free(pool, lfp_alloc(pool)), 0);
	expect_hooks(pool, 1); /* the same warm slot every time */
	lfp_destroy(pool);
}
END_TEST

/* Threads fight over a small pool, so refills, flushes, steals and CAS
 * retries all happen; the hooks still run once per event. */
static void *hook_worker(void *arg)
{
	void *mine[16];
	size_t n;

	(void)arg;
	for (int r = 0; r < 3000; r++) {
		n = lfp_alloc_bulk(tally.pool, mine, 1 + r % 16);
		lfp_free_bulk(tally.pool, mine, n);
	}
	return NULL;
}

START_TEST(once_under_contention)
{
	struct lfp_pool *pool = hooked_pool(test_modes[_i]);
	struct lfp_stats st;
	pthread_t th[6];
	uint32_t used;

	for (int i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, hook_worker, NULL);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.live, 0);
	/* Which slots were handed out is the threads' business; none of
	 * them lies beyond the extent, and at least one was used. */
	used = expect_hooks(pool, 0);
	ck_assert_uint_ge(used, 1);
	ck_assert_uint_le(used, st.high_water);
	lfp_destroy(pool);
}
END_TEST

/*
 * A slot's generation wraps after 2^31 uses. The wrap must not land on 0,
 * which means "never used": the ctor would run again over constructed
 * state, once per wrap. Set the generation just below the wrap rather
 * than spend a minute getting there.
 */
START_TEST(ctor_survives_generation_wrap)
{
	struct lfp_pool *pool = hooked_pool(test_modes[_i]);
	uint32_t idx, gen;
	char *p;

	p = lfp_alloc(pool);
	idx = lfp_index_of(pool, p);
	ck_assert_int_eq(lfp_free(pool, p), 0);
	atomic_store(&pool->slots[idx].gen, UINT32_C(0xfffffffe));
	for (int i = 0; i < 4; i++) {
		p = lfp_alloc(pool);
		ck_assert_uint_eq(lfp_index_of(pool, p), idx); /* LIFO: warm */
		gen = lfp_handle_gen(lfp_handle_of(pool, p));
		ck_assert_uint_ne(gen, 0);
		ck_assert_int_eq(lfp_free(pool, p), 0);
		gen = atomic_load(&pool->slots[idx].gen);
		ck_assert_msg(gen != 0, "released generation wrapped to 0, "
			      "which says the slot was never used");
	}
	ck_assert_uint_eq(atomic_load(&tally.ctor[idx]), 1);
	lfp_destroy(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hooks");
	TCase *tc = tcase_create("hooks");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, each_event_once, 0, TEST_NMODES);
	tcase_add_test(tc, ctor_only_for_touched_slots);
	tcase_add_loop_test(tc, once_under_contention, 0, TEST_NMODES);
	tcase_add_loop_test(tc, ctor_survives_generation_wrap, 0, TEST_NMODES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
