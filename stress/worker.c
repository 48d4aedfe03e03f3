/* SPDX-License-Identifier: MIT */
/*
 * The worker threads: the loop of each life of a worker, which runs
 * operations until the run stops, its worker has done --ops, or (with
 * exit) the life retires; then its retirement and successor, or its
 * finish. What one operation does is ops.c's; every object it touches
 * goes through the checks in check.c on the way.
 *
 * Calls down only: ops.c (the operations, the inbox), idle.c (parking for
 * good), life.c (a life's beginning and end), and the leaves check.c and
 * clock.c. The main file calls stress_spawn and stress_live.
 */
#include <sched.h>
#include <time.h>

#include "check.h"
#include "clock.h"
#include "idle.h"
#include "life.h"
#include "ops.h"
#include "run.h"
#include "worker.h"

/* Objects held by all threads or in transit: approximate while running. */
uint64_t stress_live(const struct stress_run *r)
{
	uint64_t live = 0;

	for (unsigned i = 0; i < r->o->threads; i++) {
		struct stress_worker *w = &r->w[i];

		/* Relaxed: a progress figure, not a check. */
		live += atomic_load_explicit(&w->holding, memory_order_relaxed);
		live += atomic_load_explicit(&w->inbox.seen,
					     memory_order_relaxed);
	}
	return live;
}

static bool life_go(const struct stress_life *l)
{
	/* Relaxed: the flag only says when to stop; nothing rides on it. */
	if (atomic_load_explicit(&l->run->stop, memory_order_relaxed))
		return false;
	return l->left && !(l->o->ops && l->ops >= l->o->ops);
}

/* Long enough not to crowd out the threads that have yet to stop. */
static void life_nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * The last life of a worker: release everything, say that we will send
 * nothing more, and keep emptying the inbox until nobody will.
 */
static void life_finish(struct stress_life *l)
{
	struct stress_run *r = l->run;

	stress_op_drop_all(l);
	if (!l->w->quiet) {
		l->w->quiet = true;
		/* Release: our last send happens before; pairs with the
		 * acquire loads below in every other worker. */
		atomic_fetch_add_explicit(&r->quiet, 1, memory_order_release);
	}
	/* Acquire: once all are quiet, every send to us happened before
	 * the lock we take in stress_op_receive, so it finds them all. */
	while (atomic_load_explicit(&r->quiet, memory_order_acquire) <
		       r->o->threads &&
	       atomic_load_explicit(&r->stop, memory_order_relaxed) !=
		       STRESS_ABORT) {
		stress_op_receive(l);
		stress_op_drop_all(l);
		life_nap();
	}
	do {
		stress_op_receive(l);
		stress_op_drop_all(l);
	} while (stress_op_has_mail(l));
#if STRESS_HAVE_CACHES
	lfp_cache_destroy(l->cache);
	lfp_cache_destroy(l->w->bequest);
	l->cache = l->w->bequest = NULL;
#endif
}

/*
 * Retire mid-run: give away or release what we hold, which fills our
 * caches; leave the implicit one to its destructor and the explicit one to
 * the successor or lfp_cache_destroy.
 */
static void life_retire(struct stress_life *l)
{
	bool give = l->handoff && stress_below(l, 2);

	l->t.by_mode[STRESS_EXIT]++;
	stress_op_let_go(l, give);
	if (l->handoff) {
		stress_op_receive(l);
		stress_op_drop_all(l);
	}
#if STRESS_HAVE_CACHES
	if (l->cache && stress_below(l, 2)) {
		l->w->bequest = l->cache;
	} else {
		lfp_cache_destroy(l->cache);
	}
	l->cache = NULL;
#endif
}

static void *life_main(void *arg);

/* Start our successor in this seat; false if it could not start. */
static bool life_succeed(struct stress_life *l)
{
	struct stress_worker *w = l->w;
	pthread_t next;
	int err;

	w->pred = pthread_self();
	w->has_pred = true;
	err = pthread_create(&next, NULL, life_main, w);
	if (err) {
		stress_violation(l->run, "thread %u cannot start its "
				 "successor in worker %u: error %d",
				 l->tid, w->index, err);
		return false;
	}
	/* Relaxed: a count for the report. */
	atomic_fetch_add_explicit(&l->run->exits, 1, memory_order_relaxed);
	return true;
}

static void *life_main(void *arg)
{
	struct stress_worker *w = arg;
	struct stress_life l;
	uint64_t ops0;
	int stop;

	/* Our predecessor is gone, its implicit cache flushed, when this
	 * returns. */
	if (w->has_pred)
		pthread_join(w->pred, NULL);
	/* Relaxed: the gate only lines the first lives up, to make them
	 * overlap; pthread_create ordered everything they read. */
	while (!atomic_load_explicit(&w->run->gate, memory_order_relaxed))
		sched_yield();
	w->thread = pthread_self();
	stress_life_begin(&l, w);
	ops0 = l.ops;
	while (life_go(&l))
		stress_op_step(&l);
	if (l.idle)
		stress_idle_retire(&l);
	stop = atomic_load_explicit(&l.run->stop, memory_order_relaxed);
	if (stop == STRESS_GO && !l.left) {
		life_retire(&l);
		stress_life_end(&l, ops0);
		/* From here on the seat is the successor's. */
		if (life_succeed(&l))
			return NULL;
	} else {
		if (stop != STRESS_ABORT)
			life_finish(&l);
		stress_life_end(&l, ops0);
	}
	w->done_at = stress_now();
	/* Release: publishes thread, tally and done_at; pairs with the
	 * acquire load in the supervisor's run_done. */
	atomic_store_explicit(&w->state, STRESS_DONE, memory_order_release);
	return NULL;
}

int stress_spawn(struct stress_worker *w)
{
	pthread_t t;
	int err;

	atomic_store_explicit(&w->state, STRESS_RUNNING, memory_order_relaxed);
	err = pthread_create(&t, NULL, life_main, w);
	w->started = !err;
	return -err;
}
