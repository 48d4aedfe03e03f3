/* Helpers shared by the Check unit tests. */
#ifndef LFP_TESTUTIL_H
#define LFP_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Fail the test unless every slot is accounted for and stats agree. */
#define ck_audit(pool, census)                                                 \
	do {                                                                   \
		char msg_[256] = "";                                           \
		int err_ = lfpi_audit((pool), (census), msg_, sizeof(msg_));   \
		ck_assert_msg(err_ == 0, "audit failed (%d): %s", err_, msg_); \
	} while (0)

/*
 * Whether the tests run under a sanitizer (SANITIZER, set by
 * tests/Makefile.am: "thread" or "address"), which slows every call down
 * 5-15 times: tests that loop take fewer rounds then.
 */
static inline const char *test_sanitizer(void)
{
	const char *s = getenv("SANITIZER");

	return s && *s && strcmp(s, "no") != 0 ? s : NULL;
}

static inline bool under_sanitizer(void)
{
	return test_sanitizer() != NULL;
}

/* The ways lfp_alloc/lfp_free can run; loop tests take _i as an index. */
static const uint32_t test_modes[] = { 0, LFP_F_NO_CACHE, LFP_F_STRICT };
#define TEST_NMODES 3

static inline struct lfp_pool *test_pool_flags(size_t obj_size,
					       uint32_t capacity, uint32_t flags)
{
	struct lfp_config cfg = { .obj_size = obj_size, .capacity = capacity,
				  .flags = flags };
	struct lfp_pool *pool = NULL;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_nonnull(pool);
	return pool;
}

static inline struct lfp_pool *test_pool(size_t obj_size, uint32_t capacity)
{
	return test_pool_flags(obj_size, capacity, 0);
}

/* Every slot accounted for, stats agreeing, and this many live. */
static inline void expect_accounted(struct lfp_pool *pool, uint64_t live)
{
	struct lfpi_census census;
	struct lfp_stats st;

	ck_audit(pool, &census);
	ck_assert_uint_eq(census.live, live);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.free + st.cached + st.live + st.deferred,
			  st.capacity);
}

/* Resident memory of this process, from /proc/self/statm. */
static inline size_t rss_bytes(void)
{
	unsigned long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu %lu", &size, &resident), 2);
	fclose(f);
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* Run one suite; the exit status says whether it passed. */
static inline int test_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
