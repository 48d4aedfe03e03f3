/* SPDX-License-Identifier: MIT */
/* Helpers shared by the Check unit tests. */
#ifndef LFP_TESTUTIL_H
#define LFP_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "checkmark.h"

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
/* TEST_ASAN: this test program is built with AddressSanitizer. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

static inline const char *test_sanitizer(void)
{
	const char *s = getenv("SANITIZER");

	return s && *s && strcmp(s, "no") != 0 ? s : NULL;
}

static inline bool under_sanitizer(void)
{
	return test_sanitizer() != NULL;
}

/*
 * How many bytes of [p, p + len) the process has mapped, as
 * /proc/self/maps lists its mappings: 0 once all of it was unmapped. Not
 * msync's or mincore's ENOMEM: qemu-user keeps a 32-bit program's whole
 * address space reserved on the build machine, so there they succeed on
 * memory the program unmapped; its /proc/self/maps is the program's view.
 */
static inline size_t test_mapped_bytes(const void *p, size_t len)
{
	unsigned long long a = (uintptr_t)p, end = a + len, lo, hi, s, e;
	FILE *f = fopen("/proc/self/maps", "r");
	size_t covered = 0;
	char line[512];

	ck_assert_msg(f != NULL, "cannot read /proc/self/maps");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2) {
			s = lo > a ? lo : a;
			e = hi < end ? hi : end;
			if (e > s)
				covered += (size_t)(e - s);
		}
	fclose(f);
	return covered;
}

/* Under an emulator (a cross build's make check sets LFP_EMULATOR): every
 * instruction and, above all, every fork costs many times its native
 * time, so loops of forks run fewer rounds, as under a sanitizer. */
static inline bool under_emulator(void)
{
	const char *e = getenv("LFP_EMULATOR");

	return e && *e;
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

/* Every class's slots accounted for, and this many objects live in all. */
static inline void expect_family_accounted(struct lfp_family *fam, uint64_t live)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < lfp_family_classes(fam); i++) {
		struct lfpi_census census;
		struct lfp_pool *pool = lfp_family_pool(fam, i);

		ck_audit(pool, &census);
		sum += census.live;
		expect_accounted(pool, census.live);
	}
	ck_assert_uint_eq(sum, live);
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

/* CLOCK_MONOTONIC in nanoseconds, for tests that run for a set time. */
static inline uint64_t test_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * A deadline for a test that may hang (a deadlock, a spin that never
 * ends): unless test_watchdog_stop comes first, a thread of its own
 * fails the test `seconds` after test_watchdog_start, naming `what`.
 * Check's failure ends the test's process (its fork mode) whatever the
 * other threads are stuck in, so a hang fails in seconds instead of
 * stalling the run until the tcase's timeout. The watchdog blocks every
 * signal: a test's signals are for the threads under test. Its deadline
 * is a time bound like Check's timeouts, and is stretched as they are by
 * CK_TIMEOUT_MULTIPLIER (tests/cross.sh sets 4: under qemu-user on a
 * loaded machine, fork_in_handler_during_steal's threads took longer
 * than 5 s to stop); a deadlock still never ends.
 */
struct test_watchdog {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	unsigned seconds;
	const char *what;
};

static inline void *test_watchdog_run(void *arg)
{
	struct test_watchdog *wd = arg;
	struct timespec until;
	bool done;
	int err = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += wd->seconds;
	pthread_mutex_lock(&wd->mu);
	while (!wd->done && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&wd->cv, &wd->mu, &until);
	done = wd->done;
	pthread_mutex_unlock(&wd->mu);
	if (!done)
		ck_abort_msg("hung: %s, still running after %u s", wd->what,
			     wd->seconds);
	return NULL;
}

static inline void test_watchdog_start(struct test_watchdog *wd,
				       unsigned seconds, const char *what)
{
	const char *mul = getenv("CK_TIMEOUT_MULTIPLIER");
	pthread_condattr_t ca;
	sigset_t all, old;

	wd->done = false;
	wd->seconds = seconds;
	if (mul && atoi(mul) > 1)
		wd->seconds = seconds * (unsigned)atoi(mul);
	wd->what = what;
	pthread_mutex_init(&wd->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd->cv, &ca);
	pthread_condattr_destroy(&ca);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ck_assert_int_eq(pthread_create(&wd->th, NULL, test_watchdog_run, wd),
			 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static inline void test_watchdog_stop(struct test_watchdog *wd)
{
	pthread_mutex_lock(&wd->mu);
	wd->done = true;
	pthread_cond_signal(&wd->cv);
	pthread_mutex_unlock(&wd->mu);
	pthread_join(wd->th, NULL);
	pthread_cond_destroy(&wd->cv);
	pthread_mutex_destroy(&wd->mu);
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
