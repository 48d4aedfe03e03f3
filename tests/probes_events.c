/* SPDX-License-Identifier: MIT */
/*
 * A program whose pool fires a known number of probes, for
 * probes_trace.test to count with a tracer: a pool named argv[1] of 8
 * slots that grows (LFP_EXHAUST_GROW) to 64 fires lfpool:grow three
 * times (8 -> 16 -> 32 -> 64); once full, the allocation that finds it
 * so and argv[2] more fire lfpool:exhausted; one double release fires
 * lfpool:free_refused; its last call, lfp_trim, fires lfpool:trim, on
 * which a tracer may stop. It prints what lfp_stats counted, the line the
 * test compares with the tracer's, and fails if that is not the design.
 *
 * Usage: probes_events NAME EXTRA_FAILS
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lfpool.h"

#define EVENTS_FIRST 8u
#define EVENTS_MAX 64u

int main(int argc, char **argv)
{
	static void *objs[EVENTS_MAX];
	struct lfp_config cfg = { 0 };
	struct lfp_pool *pool;
	struct lfp_stats st;
	unsigned long extra, live = 0, fails = 0;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: probes_events NAME EXTRA_FAILS\n");
		return 2;
	}
	extra = strtoul(argv[2], NULL, 10);
	cfg.obj_size = 64;
	cfg.capacity = EVENTS_FIRST;
	cfg.max_capacity = EVENTS_MAX;
	cfg.exhaust = LFP_EXHAUST_GROW;
	cfg.name = argv[1];
	if ((err = lfp_create(&cfg, &pool))) {
		fprintf(stderr, "lfp_create: %s\n", lfp_strerror(err));
		return 1;
	}
	/* Fill it: every slot, then the first NULL. */
	while (live < EVENTS_MAX && (objs[live] = lfp_alloc(pool)))
		live++;
	for (unsigned long i = 0; i <= extra; i++)
		fails += lfp_alloc(pool) == NULL;
	lfp_free(pool, objs[0]);
	err = lfp_free(pool, objs[0]);
	lfp_stats(pool, &st);
	printf("refused %d\n", err);
	printf("grow %llu exhausted %llu free_refused %llu\n",
	       (unsigned long long)st.grown,
	       (unsigned long long)st.failed_allocs,
	       (unsigned long long)st.rejected_frees);
	if (live != EVENTS_MAX || fails != extra + 1 || err != -EALREADY ||
	    st.grown != 3 || st.failed_allocs != extra + 1 ||
	    st.rejected_frees != 1) {
		fprintf(stderr,
			"probes_events: live %lu of %u, %lu of %lu failed, "
			"double release %d: not the design\n",
			live, EVENTS_MAX, fails, extra + 1, err);
		return 1;
	}
	for (unsigned long i = 1; i < live; i++)
		lfp_free(pool, objs[i]);
	/* Last, the event on which a tracer may stop (lfpool:trim). */
	(void)lfp_trim(pool);
	lfp_destroy(pool);
	return 0;
}
