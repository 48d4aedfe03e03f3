/* Helpers shared by the Check unit tests. */
#ifndef LFP_TESTUTIL_H
#define LFP_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Fail the test unless every slot is accounted for and stats agree. */
#define ck_audit(pool, census)                                                 \
	do {                                                                   \
		char msg_[256] = "";                                           \
		int err_ = lfpi_audit((pool), (census), msg_, sizeof(msg_));   \
		ck_assert_msg(err_ == 0, "audit failed (%d): %s", err_, msg_); \
	} while (0)

static inline struct lfp_pool *test_pool(size_t obj_size, uint32_t capacity)
{
	struct lfp_config cfg = { .obj_size = obj_size, .capacity = capacity };
	struct lfp_pool *pool = NULL;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_nonnull(pool);
	return pool;
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
