/* SPDX-License-Identifier: MIT */
/*
 * lfp_trim racing allocation. A thread calls lfp_trim in a loop while the
 * workers allocate and release. Each trim takes the whole shared free
 * list aside, gives back the pages of the slots on it and pushes the list
 * back; lfp_trim promises that an allocation that finds the pool empty
 * meanwhile waits for it rather than failing or growing.
 *
 * Before the workers start, a thread touches every slot once (allocates
 * them all and releases them), so that slots never handed out cannot
 * stand in for the list: an allocation whose cache is empty has the
 * shared list and nothing else. The run is sized so that the pool cannot
 * run dry (exhaust.c): the list is empty only while a trim has it, and
 * every failed allocation (ops.c calls stress_dry), every growth and
 * every abort is a violation.
 *
 * The race is narrow: an allocation must look at the list while a trim
 * has it, and decide while the trim ends. Tiny pools make trims short
 * and frequent; --spare-caches makes the steal walk between the two long.
 *
 * Calls down only: exhaust.c (the call marks, the growth check) and the
 * leaves check.c and mode.c. The main file starts and joins the trimmer.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "check.h"
#include "exhaust.h"
#include "mode.h"
#include "run.h"
#include "trim.h"

#define TRIM_CHECK_EVERY 64 /* trims between looks at the pool's growth */

/* Allocate every slot once and release them all: a thread of its own,
 * so that its implicit cache goes back when it exits. */
static void *trim_touch_main(void *arg)
{
	struct stress_run *r = arg;
	struct stress_trimmer *t = &r->trim;
	uint32_t n = r->o->capacity, got = 0;
	/* Relaxed: ids only need to be distinct. */
	uint32_t tid = atomic_fetch_add_explicit(&r->next_tid, 1,
						 memory_order_relaxed);
	struct stress_held *held = calloc(n, sizeof(*held));

	if (!held) {
		stress_violation(r, "out of memory for the first touch");
		return NULL;
	}
	stress_hooks_bind(&t->tally);
	for (; got < n; got++) {
		void *obj;

		stress_call_enter("lfp_alloc", true);
		obj = lfp_alloc(r->pool);
		stress_call_leave();
		if (!obj || !stress_own(r, tid, obj, ++t->tally.allocs,
					"lfp_alloc", &held[got]))
			break;
	}
	if (got < n)
		stress_violation(r, "the first touch of an unused pool of %"
				 PRIu32 " slots got %" PRIu32 " objects "
				 "before lfp_alloc returned NULL",
				 n, got);
	for (uint32_t i = 0; i < got; i++) {
		if (!stress_unclaim(r, &held[i], tid, "lfp_free") ||
		    lfp_free(r->pool, held[i].obj)) {
			stress_violation(r, "slot %u: the first touch could not "
					 "release it", held[i].mark.slot);
			break;
		}
		t->tally.frees++;
	}
	stress_hooks_bind(NULL);
	free(held);
	return NULL;
}

static void *trim_main(void *arg)
{
	struct stress_run *r = arg;
	struct stress_trimmer *t = &r->trim;

	/* Relaxed: the flags only say when to stop. */
	while (atomic_load_explicit(&t->on, memory_order_relaxed) &&
	       atomic_load_explicit(&r->stop, memory_order_relaxed) !=
		       STRESS_ABORT) {
		t->tally.trimmed += lfp_trim(r->pool);
		if (!(++t->tally.trims % TRIM_CHECK_EVERY))
			stress_check_growth(r, "while lfp_trim ran");
	}
	return NULL;
}

int stress_trim_start(struct stress_run *r)
{
	struct stress_trimmer *t = &r->trim;
	pthread_t touch;
	int err;

	atomic_init(&t->on, true);
	if (!stress_mode_enabled(r->o, STRESS_TRIM))
		return 0;
	if (!(err = pthread_create(&touch, NULL, trim_touch_main, r)))
		pthread_join(touch, NULL);
	else
		stress_violation(r, "cannot start the first touch: error %d",
				 err);
	if (!err && (err = pthread_create(&t->thread, NULL, trim_main, r)))
		stress_violation(r, "cannot start the trimmer: error %d", err);
	t->started = !err;
	return -err;
}

void stress_trim_join(struct stress_run *r)
{
	struct stress_trimmer *t = &r->trim;

	/* Relaxed: the join orders the rest. */
	atomic_store_explicit(&t->on, false, memory_order_relaxed);
	if (t->started)
		pthread_join(t->thread, NULL);
	t->started = false;
	if (stress_mode_enabled(r->o, STRESS_TRIM) &&
	    atomic_load_explicit(&r->stop, memory_order_relaxed) !=
		    STRESS_ABORT)
		stress_check_growth(r, "in the run");
}
