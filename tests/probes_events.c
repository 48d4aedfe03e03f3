/* SPDX-License-Identifier: MIT */
/*
 * A program whose pool fires a known number of probes, for the tests
 * that count them with a tracer (probes_trace.test, and the recipes of
 * lfpool-probes(7) that probes_recipes.sh runs). A pool named NAME of 8
 * slots that grows (LFP_EXHAUST_GROW) to 64 fires lfpool:grow three
 * times (8 -> 16 -> 32 -> 64); once full, the allocation that finds it
 * so and EXTRA more fire lfpool:exhausted; one double release fires
 * lfpool:free_refused. Then two explicit caches make a steal: one keeps
 * a free slot and sits idle while the other takes all 64 slots, which
 * it can only by emptying the idle caches (lfpool:steal), with refills
 * and flushes on the way. Its last call but one, lfp_trim, fires
 * lfpool:trim, on which a tracer may stop.
 *
 * It prints what lfp_stats counted, in the lines the tests compare with
 * the tracer's ("grow ...", and "stats ..." for every probe), read after
 * the last refill or flush, and fails if that is not the design.
 *
 * Usage: probes_events NAME EXTRA [wait]
 *        probes_events        (NAME, EXTRA and wait from PROBES_NAME,
 *                              PROBES_EXTRA and PROBES_WAIT, for a tracer
 *                              that starts the program by its path alone)
 * With wait, it prints "ready PID" and reads a line from its standard
 * input before the first probe fires, so that a tracer can attach first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lfpool.h"

#define EVENTS_FIRST 8u
#define EVENTS_MAX 64u

/* Fill the pool: every slot, then EXTRA + 1 that find it exhausted;
 * then a double release; then give everything back. */
static int events_exhaust(struct lfp_pool *pool, unsigned long extra,
			  int *refused)
{
	static void *objs[EVENTS_MAX];
	unsigned long live = 0, fails = 0;

	while (live < EVENTS_MAX && (objs[live] = lfp_alloc(pool)))
		live++;
	for (unsigned long i = 0; i <= extra; i++)
		fails += lfp_alloc(pool) == NULL;
	lfp_free(pool, objs[0]);
	*refused = lfp_free(pool, objs[0]);
	for (unsigned long i = 1; i < live; i++)
		lfp_free(pool, objs[i]);
	if (live != EVENTS_MAX || fails != extra + 1 || *refused != -EALREADY) {
		fprintf(stderr,
			"probes_events: live %lu of %u, %lu of %lu failed, "
			"double release %d: not the design\n",
			live, EVENTS_MAX, fails, extra + 1, *refused);
		return -1;
	}
	return 0;
}

/* idle keeps a free slot; busy takes every slot of the pool, so it must
 * empty idle (and this thread's own cache, idle too) on the way. */
static int events_steal(struct lfp_pool *pool)
{
	static void *objs[EVENTS_MAX];
	struct lfp_cache *idle, *busy;
	unsigned got = 0;
	void *obj;

	if (!(idle = lfp_cache_create(pool)) || !(busy = lfp_cache_create(pool)))
		return -1;
	if (!(obj = lfp_cache_alloc(idle)) || lfp_cache_free(idle, obj))
		return -1;
	while (got < EVENTS_MAX && (objs[got] = lfp_cache_alloc(busy)))
		got++;
	for (unsigned i = 0; i < got; i++)
		lfp_cache_free(busy, objs[i]);
	lfp_cache_destroy(busy);
	lfp_cache_destroy(idle);
	if (got != EVENTS_MAX) {
		fprintf(stderr, "probes_events: a cache got %u of %u slots\n",
			got, EVENTS_MAX);
		return -1;
	}
	return 0;
}

static int events_wait(void)
{
	char line[16];

	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	return fgets(line, sizeof(line), stdin) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct lfp_config cfg = { 0 };
	struct lfp_pool *pool;
	struct lfp_stats st;
	const char *name, *extra_s, *wait_s;
	unsigned long extra;
	int err, refused;

	if (argc == 3 || argc == 4) {
		name = argv[1];
		extra_s = argv[2];
		wait_s = argc == 4 ? argv[3] : NULL;
	} else if (argc == 1 && (name = getenv("PROBES_NAME")) &&
		   (extra_s = getenv("PROBES_EXTRA"))) {
		wait_s = getenv("PROBES_WAIT");
	} else {
		fprintf(stderr, "usage: probes_events NAME EXTRA [wait]\n");
		return 2;
	}
	extra = strtoul(extra_s, NULL, 10);
	if (wait_s && strcmp(wait_s, "wait") == 0 && events_wait()) {
		fprintf(stderr, "probes_events: nothing to read on stdin\n");
		return 1;
	}
	cfg.obj_size = 64;
	cfg.capacity = EVENTS_FIRST;
	cfg.max_capacity = EVENTS_MAX;
	cfg.exhaust = LFP_EXHAUST_GROW;
	cfg.name = name;
	if ((err = lfp_create(&cfg, &pool))) {
		fprintf(stderr, "lfp_create: %s\n", lfp_strerror(err));
		return 1;
	}
	if (events_exhaust(pool, extra, &refused) || events_steal(pool))
		return 1;
	lfp_stats(pool, &st);
	printf("refused %d\n", refused);
	printf("grow %llu exhausted %llu free_refused %llu\n",
	       (unsigned long long)st.grown,
	       (unsigned long long)st.failed_allocs,
	       (unsigned long long)st.rejected_frees);
	/* Every probe the run fired: lfp_trim's below is the one trim. */
	printf("stats refill %llu flush %llu steal %llu exhausted %llu "
	       "grow %llu trim 1 free_refused %llu\n",
	       (unsigned long long)st.refills, (unsigned long long)st.flushes,
	       (unsigned long long)st.steals,
	       (unsigned long long)st.failed_allocs,
	       (unsigned long long)st.grown,
	       (unsigned long long)st.rejected_frees);
	fflush(stdout);
	if (st.grown != 3 || st.failed_allocs != extra + 1 ||
	    st.rejected_frees != 1 || !st.steals || !st.refills ||
	    !st.flushes) {
		fprintf(stderr, "probes_events: lfp_stats is not the design\n");
		return 1;
	}
	/* Last, the event on which a tracer may stop (lfpool:trim). */
	(void)lfp_trim(pool);
	lfp_destroy(pool);
	return 0;
}
