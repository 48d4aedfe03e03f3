/* SPDX-License-Identifier: MIT */
/*
 * Included after <check.h> by the Check tests, C and C++.
 *
 * Check's passing assertions each record their place (_mark_point), so
 * that a test that crashes can say where it last got to: one write(2)
 * to the runner's pipe, under a mutex, per assertion. In the tests'
 * loops that was most of their time: check_cache made 745,000 writes and
 * 920,000 futex calls natively, check_cxx 207,000 writes, and under
 * qemu-user every system call costs many times more. A thread now
 * records each place the first time it passes it (a small table of
 * places per thread; a place that shares a slot with another is recorded
 * again when it comes back): a crash still names the furthest new place
 * the thread reached. What an assertion checks is unchanged.
 */
#ifndef LFP_CHECKMARK_H
#define LFP_CHECKMARK_H

#include <check.h>

#ifdef __cplusplus
#define TEST_THREAD_LOCAL thread_local
#else
#define TEST_THREAD_LOCAL _Thread_local
#endif

static inline void test_mark_point(const char *file, int line)
{
	static TEST_THREAD_LOCAL const char *seen_file[128];
	static TEST_THREAD_LOCAL int seen_line[128];
	int slot = line & 127; /* __LINE__ is positive */

	if (seen_line[slot] == line && seen_file[slot] == file)
		return;
	seen_line[slot] = line;
	seen_file[slot] = file;
	(_mark_point)(file, line); /* Check's own, not the macro below */
}
#define _mark_point(file, line) test_mark_point(file, line)

#endif
