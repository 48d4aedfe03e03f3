/*
 * KNOWN BUGS: reproducers of library bugs that fuzz_pool.c found and that
 * are not fixed yet. Each test states the documented behaviour and fails
 * while the bug is there, so this program is listed in XFAIL_TESTS
 * (tests/verify.am): make check expects it to fail.
 *
 * When a fix lands, move its test to the unit it belongs to and delete
 * it here; make check then reports XPASS once the last one is fixed, and
 * this program and its XFAIL_TESTS entry go. Also drop the matching
 * FZ_OPEN_BUG() exemption in fuzz_pool.c.
 */
#include <errno.h>

#include "testutil.h"

/*
 * stats.cache_hits must never exceed stats.allocs. An allocation that
 * fails through a thread cache is counted as a cache miss but not as an
 * allocation, so "allocations minus misses" wraps around below zero:
 * one success and one failure give cache_hits = 2^64 - 1.
 * Found by fuzz_pool (FZ_OPEN_BUG(cache_hits_wrap)).
 */
START_TEST(cache_hits_after_a_failed_allocation)
{
	struct lfp_pool *pool = test_pool(8, 1);
	struct lfp_stats st;

	ck_assert_ptr_nonnull(lfp_alloc(pool));
	ck_assert_ptr_null(lfp_alloc(pool)); /* exhausted */
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.allocs, 1);
	ck_assert_uint_eq(st.failed_allocs, 1);
	ck_assert_uint_le(st.cache_hits, st.allocs);
	lfp_destroy(pool);
}
END_TEST

/*
 * lfp_memory_size must return 0 for a configuration lfp_create refuses
 * ("0 if cfg is NULL, invalid, or the size overflows"). Unknown flags
 * make lfp_create fail with -EINVAL, but lfp_memory_size checks
 * everything except the flags, so it returns a size for them.
 * Found by fuzz_pool (FZ_OPEN_BUG(memory_size_flags)).
 */
START_TEST(memory_size_of_unknown_flags)
{
	struct lfp_config c = { .obj_size = 24, .capacity = 100,
				.flags = 1u << 9 };
	struct lfp_pool *pool = NULL;

	ck_assert_int_eq(lfp_create(&c, &pool), -EINVAL);
	ck_assert_uint_eq(lfp_memory_size(&c), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("known bugs");
	TCase *tc = tcase_create("known bugs");

	tcase_add_test(tc, cache_hits_after_a_failed_allocation);
	tcase_add_test(tc, memory_size_of_unknown_flags);
	suite_add_tcase(s, tc);
	return test_run(s);
}
