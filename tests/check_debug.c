/* SPDX-License-Identifier: MIT */
/* The tools that watch released objects: the release fill, ASan
 * poisoning, and the debug report of refused releases. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <urcu/urcu-memb.h>

#include "testutil.h"

#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#define TEST_ASAN_ON 1
#else
#define TEST_ASAN_ON 0
#endif
/* TSan cannot see liburcu's grace periods: tell it, as rcu.c documents. */
#define reader_done(obj) lfpi_tsan_release(obj)

/* Is the object at p, freed, as the pool left it? Under ASan it must be
 * poisoned (reading it would be a report); otherwise filled. */
static void expect_released(struct lfp_pool *pool, const unsigned char *p,
			    size_t size)
{
#ifdef TEST_ASAN
	(void)pool;
	ck_assert_msg(__asan_region_is_poisoned((void *)p, size) == (void *)p,
		      "released object %p is not poisoned", (void *)p);
#else
	static const unsigned char fill[4] = { 0x0b, 0xdb, 0xea, 0x1d };

	ck_assert(pool->debug & LFPI_DBG_FILL);
	for (size_t i = 0; i < size; i++)
		ck_assert_msg(p[i] == fill[i % 4], "byte %zu is 0x%02x", i, p[i]);
#endif
}

static struct lfp_pool *poison_pool(uint32_t flags)
{
	return test_pool_flags(50, 64, flags | LFP_F_POISON);
}

/* Released objects are filled or poisoned wherever they sit: in the
 * thread's cache, an explicit cache or the shared list. */
START_TEST(released_objects_are_marked)
{
	struct lfp_pool *pool = poison_pool(test_modes[_i]);
	struct lfp_cache *c = lfp_cache_create(pool);
	unsigned char *a = lfp_alloc(pool), *b = lfp_cache_alloc(c);

	memset(a, 0, 50);
	memset(b, 0, 50);
	ck_assert_int_eq(lfp_free(pool, a), 0);
	ck_assert_int_eq(lfp_cache_free(c, b), 0);
	expect_released(pool, a, 50);
	expect_released(pool, b, 50);
	/* Allocated again, the object is usable and its check passes. */
	a = lfp_alloc(pool);
	memset(a, 7, 50);
	ck_assert_int_eq(lfp_free(pool, a), 0);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

/* A write after release is caught at the next allocation of the slot
 * (or at once, by ASan): the process aborts. */
START_TEST(write_after_release_aborts)
{
	struct lfp_pool *pool = poison_pool(test_modes[_i]);
	unsigned char *p = lfp_alloc(pool);

	ck_assert_int_eq(lfp_free(pool, p), 0);
	p[13] = 0;
	lfp_alloc(pool); /* the same slot: LIFO */
	ck_abort_msg("the write after release went unnoticed");
}
END_TEST

/* A pool with a ctor keeps its constructed state: no fill. */
static void construct(void *obj, void *arg)
{
	(void)arg;
	memset(obj, 0x5c, 50);
}

START_TEST(ctor_pools_are_not_filled)
{
	struct lfp_config c = { .obj_size = 50, .capacity = 8,
				.flags = LFP_F_POISON, .ctor = construct };
	struct lfp_pool *pool;
	unsigned char *p;

	ck_assert_int_eq(lfp_create(&c, &pool), 0);
	ck_assert(!(pool->debug & LFPI_DBG_FILL));
	p = lfp_alloc(pool);
	ck_assert_int_eq(lfp_free(pool, p), 0);
	p = lfp_alloc(pool);
	ck_assert_uint_eq(p[49], 0x5c);
	lfp_destroy(pool);
}
END_TEST

/* Trimmed pages read as zeroes: that is not reported as a user's write. */
START_TEST(trim_is_not_a_write)
{
	struct lfp_pool *pool = test_pool_flags(4096, 64,
						LFP_F_POISON | LFP_F_NO_CACHE);
	void *objs[64];

	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 64), 64);
	ck_assert_uint_eq(lfp_free_bulk(pool, objs, 64), 64);
	ck_assert_uint_gt(lfp_trim(pool), 0);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 64), 64);
	lfp_destroy(pool);
}
END_TEST

/* A deferred release is marked only after the grace period: until then
 * RCU readers may read the object as it was. */
START_TEST(deferred_marked_after_grace_period)
{
	struct lfp_pool *pool = poison_pool(0);
	unsigned char *p = lfp_alloc(pool);

	urcu_memb_register_thread();
	memset(p, 0x33, 50);
	urcu_memb_read_lock();
	ck_assert_int_eq(lfp_free_deferred(pool, p), 0);
	for (int i = 0; i < 50; i++) /* a reader's view: unchanged */
		ck_assert_uint_eq(p[i], 0x33);
	reader_done(p);
	urcu_memb_read_unlock();
	lfp_barrier(pool);
	expect_released(pool, p, 50);
	lfp_destroy(pool);
	urcu_memb_unregister_thread();
}
END_TEST

/* Debug builds name the slot of a refused release on stderr. */
START_TEST(refused_release_names_slot)
{
	struct lfp_pool *pool = test_pool(32, 8);
	char *p, buf[512] = "";
	FILE *tmp = tmpfile();
	int saved = dup(2);

	/* As --enable-debug sets it, before any cache copies the quirks. */
	pool->debug |= LFPI_DBG_REPORT;
	pool->quirks = 1;
	p = lfp_alloc(pool);
	dup2(fileno(tmp), 2);
	lfp_free(pool, p);
	lfp_free(pool, p);
	lfp_free(pool, p + 3);
	fflush(stderr);
	dup2(saved, 2);
	rewind(tmp);
	ck_assert_uint_gt(fread(buf, 1, sizeof(buf) - 1, tmp), 0);
	ck_assert_msg(strstr(buf, "(already free): slot 0"), "got: %s", buf);
	ck_assert_msg(strstr(buf, "(not the start of an object) inside slot 0"),
		      "got: %s", buf);
	fclose(tmp);
	lfp_destroy(pool);
}
END_TEST

/*
 * Whether a pool poisons is decided at lfp_create, by whether the program
 * has the ASan runtime (debug.c). Without it, and without the other tools,
 * a plain pool has no quirks: caches keep the inline fast path. With it,
 * every release goes out of line, to be poisoned even into a cache.
 */
START_TEST(poisoning_only_under_asan)
{
	struct lfp_pool *pool = test_pool(32, 64);
	struct lfp_cache *c = lfp_cache_create(pool);

#ifdef TEST_ASAN
	ck_assert(pool->debug & LFPI_DBG_ASAN);
	ck_assert(pool->quirks);
	ck_assert_uint_eq(c->hot.nslots, 0);
#elif !defined(LFP_DEBUG)
	ck_assert_uint_eq(pool->debug, 0);
	ck_assert(!pool->quirks);
	ck_assert_uint_eq(c->hot.nslots, pool->capacity);
#endif
	ck_assert(!(pool->debug & LFPI_DBG_ASAN) == !TEST_ASAN_ON);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("debug");
	TCase *tc = tcase_create("debug");

	/* Under a sanitizer on a loaded machine the larger pools take
	 * seconds: more than Check's default of 4. */
	tcase_set_timeout(tc, 60);

	tcase_add_loop_test(tc, released_objects_are_marked, 0, TEST_NMODES);
	tcase_add_loop_test_raise_signal(tc, write_after_release_aborts,
					 SIGABRT, 0, TEST_NMODES);
	tcase_add_test(tc, ctor_pools_are_not_filled);
	tcase_add_test(tc, trim_is_not_a_write);
	tcase_add_test(tc, deferred_marked_after_grace_period);
	tcase_add_test(tc, refused_release_names_slot);
	tcase_add_test(tc, poisoning_only_under_asan);
	suite_add_tcase(s, tc);
	return test_run(s);
}
