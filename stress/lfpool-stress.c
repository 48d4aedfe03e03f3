/* SPDX-License-Identifier: MIT */
/*
 * lfpool-stress: main and the supervisor. See stress.h for the plan and
 * --help for the command line.
 *
 * The top: calls down into every file below it (each one's header gives
 * its rank), and nothing calls it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "exhaust.h"
#include "idle.h"
#include "mode.h"
#include "options.h"
#include "report.h"
#include "run.h"
#include "tally.h"
#include "trim.h"
#include "validate.h"
#include "worker.h"

#define STRESS_GIVE_UP 3.0 /* seconds threads get to stop after a violation */

static void stress_nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* Cumulative weights: allocation picks among pool..bulk, release too,
 * plus handle and deferred, and handoff when there is someone to hand off
 * to. */
static void run_weights(struct stress_run *r)
{
	unsigned a = 0, b = 0;

	for (int m = 0; m < STRESS_NMODES; m++) {
		unsigned w = r->o->weight[m];
		bool alloc = m <= STRESS_BULK;

		a += alloc ? w : 0;
		if (alloc || m == STRESS_HANDLE || m == STRESS_DEFERRED ||
		    (m == STRESS_HANDOFF && r->o->threads > 1))
			b += w;
		r->alloc_cum[m] = a;
		r->release_cum[m] = b;
	}
	r->alloc_total = a;
	r->release_total = b;
}

static int run_pool(struct stress_run *r)
{
	const struct stress_opts *o = r->o;
	struct lfp_config cfg = { .obj_size = o->obj_size,
				  .capacity = o->capacity };
	int err;

#if STRESS_HAVE_CACHES
	cfg.cache_size = o->cache_size;
	cfg.batch_size = o->batch_size;
	if (stress_mode_enabled(o, STRESS_POOL))
		cfg.flags |= LFP_F_NO_CACHE;
#endif
	cfg.flags |= (o->strict ? LFP_F_STRICT : 0) |
		     (o->poison ? LFP_F_POISON : 0) |
		     (o->unchecked ? LFP_F_UNCHECKED : 0);
	cfg.exhaust = o->exhaust;
	if (o->exhaust == LFP_EXHAUST_GROW)
		cfg.max_capacity = o->grow;
	if (o->hooks)
		stress_hooks(r, &cfg);
	if ((err = lfp_create(&cfg, &r->pool)))
		fprintf(stderr, "lfpool-stress: lfp_create: %s\n",
			strerror(-err));
	return err;
}

/*
 * Caches that threads made and gave up stay in the pool's registry, to
 * be reused by the next thread; every steal walks past them.
 */
static int run_spare_caches(struct stress_run *r)
{
#if STRESS_HAVE_CACHES
	uint32_t n = r->o->spare_caches;
	struct lfp_cache **c = calloc(n ? n : 1, sizeof(*c));

	if (!c)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (!(c[i] = lfp_cache_create(r->pool)))
			break;
	for (uint32_t i = 0; i < n && c[i]; i++)
		lfp_cache_destroy(c[i]);
	free(c);
#endif
	return 0;
}

static int run_workers(struct stress_run *r)
{
	const struct stress_opts *o = r->o;

	r->w = aligned_alloc(STRESS_CACHELINE,
			     o->threads * sizeof(struct stress_worker));
	if (!r->w)
		return -1;
	memset(r->w, 0, o->threads * sizeof(struct stress_worker));
	for (unsigned i = 0; i < o->threads; i++) {
		struct stress_worker *w = &r->w[i];

		w->run = r;
		w->index = i;
		if (!(w->held = calloc(o->hold, sizeof(*w->held))))
			return -1;
		pthread_mutex_init(&w->inbox.lock, NULL);
		atomic_init(&w->inbox.seen, 0);
		atomic_init(&w->ops, 0);
		atomic_init(&w->holding, 0);
		atomic_init(&w->state, STRESS_IDLE);
		for (int k = 0; k < STRESS_SHOWN; k++)
			atomic_init(&w->shown[k], 0);
	}
	return 0;
}

static int run_setup(struct stress_run *r, const struct stress_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->o = o;
	run_weights(r);
	atomic_init(&r->stop, STRESS_GO);
	atomic_init(&r->gate, false);
	atomic_init(&r->next_tid, 1);
	atomic_init(&r->exits, 0);
	atomic_init(&r->quiet, 0);
	atomic_init(&r->hook_ctors, 0);
	atomic_init(&r->hook_strays, 0);
	atomic_init(&r->violations, 0);
	atomic_init(&r->have_msg, false);
	if (run_pool(r))
		return -1;
	stress_exhaust_setup(r);
	r->slots = o->grow > o->capacity ? o->grow : o->capacity;
	r->owner = malloc(r->slots * sizeof(*r->owner));
	r->touched = malloc(r->slots * sizeof(*r->touched));
	if (!r->owner || !r->touched || run_workers(r) ||
	    run_spare_caches(r) || stress_idle_setup(r)) {
		fputs("lfpool-stress: out of memory\n", stderr);
		return -1;
	}
	for (uint32_t i = 0; i < r->slots; i++) {
		atomic_init(&r->owner[i], 0);
		atomic_init(&r->touched[i], 0);
	}
	return 0;
}

static void run_teardown(struct stress_run *r)
{
	for (unsigned i = 0; r->w && i < r->o->threads; i++) {
		free(r->w[i].held);
		pthread_mutex_destroy(&r->w[i].inbox.lock);
	}
	free(r->w);
	free(r->owner);
	free(r->touched);
	stress_idle_teardown(r);
	lfp_destroy(r->pool);
}

/* True once every worker's last life is over. */
static bool run_done(struct stress_run *r)
{
	for (unsigned i = 0; i < r->o->threads; i++)
		/* Acquire: pairs with the release store at the end of
		 * life_main, so the thread id and the tally are complete. */
		if (atomic_load_explicit(&r->w[i].state,
					 memory_order_acquire) != STRESS_DONE)
			return false;
	return true;
}

static int run_stop(struct stress_run *r)
{
	return atomic_load_explicit(&r->stop, memory_order_relaxed);
}

/* The supervisor's view, refreshed each second. */
struct sup {
	double t0, next_tick, tick_t, last_change, abort_t;
	uint64_t tick_ops, last_ops;
	struct stress_rss rss;
};

static uint64_t sup_ops(const struct stress_run *r)
{
	uint64_t ops = 0;

	for (unsigned i = 0; i < r->o->threads; i++)
		/* Relaxed: progress figures. */
		ops += atomic_load_explicit(&r->w[i].ops, memory_order_relaxed);
	return ops;
}

/* Counters must add up even while threads use the pool. */
static void sup_check_stats(struct stress_run *r)
{
	struct lfp_stats s;

	lfp_stats(r->pool, &s);
	if (s.free + s.cached + s.live + s.deferred != s.capacity ||
	    s.live > s.capacity)
		stress_violation(r, "while running, lfp_stats does not add "
				 "up: free %llu + cached %llu + live %llu + "
				 "deferred %llu, capacity %llu",
				 (unsigned long long)s.free,
				 (unsigned long long)s.cached,
				 (unsigned long long)s.live,
				 (unsigned long long)s.deferred,
				 (unsigned long long)s.capacity);
}

static void sup_rss(struct stress_run *r, struct sup *s, double t)
{
	uint64_t rss;

	if (!r->o->duration)
		return;
	rss = stress_rss_now();
	if (!s->rss.warm && t - s->t0 >= s->rss.warm_at)
		s->rss.warm = rss;
	else if (s->rss.warm && rss > s->rss.max_after_warm)
		s->rss.max_after_warm = rss;
}

static void sup_tick(struct stress_run *r, struct sup *s, double t)
{
	uint64_t ops = sup_ops(r);

	if (ops != s->last_ops) {
		s->last_ops = ops;
		s->last_change = t;
	} else if (t - s->last_change >= r->o->stall) {
		stress_violation(r, "no operation completed for %.0f s: a "
				 "thread is stuck (a livelock or a deadlock "
				 "in the pool?)", t - s->last_change);
	}
	sup_check_stats(r);
	stress_check_growth(r, "while running");
	sup_rss(r, s, t);
	if (r->o->progress)
		stress_progress(r, t - s->t0,
				(double)(ops - s->tick_ops) / (t - s->tick_t),
				stress_live(r));
	s->tick_ops = ops;
	s->tick_t = t;
	s->next_tick += 1;
}

/* Threads that do not stop after a violation: report what we know, go. */
static void sup_give_up(struct stress_run *r, struct sup *s, double t)
{
	struct stress_tally t0 = { 0 };

	t0.ops = sup_ops(r);
	if (r->o->progress)
		stress_progress_end(r);
	fprintf(stderr, "lfpool-stress: threads did not stop within %.0f s "
		"of the violation; giving up on them\n", STRESS_GIVE_UP);
	stress_report(r, &t0, &s->rss, t - s->t0, false);
	fflush(NULL);
	_exit(1);
}

static void supervise(struct stress_run *r, struct sup *s)
{
	const struct stress_opts *o = r->o;

	for (;;) {
		double t;

		stress_nap(10 * 1000 * 1000);
		t = stress_now();
		if (run_done(r))
			break;
		if (o->duration && t - s->t0 >= o->duration &&
		    run_stop(r) == STRESS_GO)
			atomic_store_explicit(&r->stop, STRESS_STOP,
					      memory_order_relaxed);
		if (run_stop(r) == STRESS_ABORT && !s->abort_t)
			s->abort_t = t;
		if (s->abort_t && t - s->abort_t > STRESS_GIVE_UP)
			sup_give_up(r, s, t);
		if (t >= s->next_tick)
			sup_tick(r, s, t);
	}
	if (o->progress)
		stress_progress_end(r);
}

static void run_sum(const struct stress_run *r, struct stress_tally *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < r->o->threads; i++)
		stress_tally_add(t, &r->w[i].tally);
	stress_tally_add(t, &r->trim.tally);
}

/* Resident memory may not keep growing once the run is warm. */
static void run_check_rss(struct stress_run *r, const struct stress_rss *rss)
{
	uint64_t top = rss->end > rss->max_after_warm ? rss->end
						       : rss->max_after_warm;
	double growth = ((double)top - (double)rss->warm) / (1 << 20);

	if (r->o->rss_slack < 0 || !rss->warm || growth <= r->o->rss_slack)
		return;
	stress_violation(r, "resident memory grew by %.1f MiB after warm-up "
			 "(%.1f MiB at %.0f s, %.1f MiB at most later), more "
			 "than --rss-slack %.1f MiB", growth,
			 rss->warm / 1048576.0, rss->warm_at,
			 top / 1048576.0, r->o->rss_slack);
}

static void run_start(struct stress_run *r, struct sup *s)
{
	const struct stress_opts *o = r->o;
	double warm = o->duration / 4;

	memset(s, 0, sizeof(*s));
	s->rss.warm_at = warm < 1 ? 1 : warm > 60 ? 60 : warm;
	s->rss.start = stress_rss_now();
	stress_trim_start(r);
	for (unsigned i = 0; i < o->threads; i++)
		if (stress_spawn(&r->w[i])) {
			stress_violation(r, "cannot start a thread for "
					 "worker %u", i);
			atomic_store_explicit(&r->w[i].state, STRESS_DONE,
					      memory_order_relaxed);
		}
	atomic_store_explicit(&r->gate, true, memory_order_relaxed);
	s->t0 = s->tick_t = s->last_change = stress_now();
	s->next_tick = s->t0 + 1;
}

/* Join the last lives; returns the time from the start to the last end. */
static double run_join(struct stress_run *r, const struct sup *s)
{
	double elapsed = 0;

	for (unsigned i = 0; i < r->o->threads; i++) {
		struct stress_worker *w = &r->w[i];

		if (!w->started)
			continue;
		pthread_join(w->thread, NULL);
		if (w->done_at - s->t0 > elapsed)
			elapsed = w->done_at - s->t0;
	}
	return elapsed;
}

int main(int argc, char **argv)
{
	struct stress_opts o;
	struct stress_run r;
	struct stress_tally total;
	struct sup s;
	int err = stress_parse(argc, argv, &o);
	double elapsed;
	bool ok;

	if (!err)
		err = stress_validate(&o);
	if (err)
		return err > 0 ? 0 : 2;
	if (run_setup(&r, &o))
		return 2;
	run_start(&r, &s);
	supervise(&r, &s);
	elapsed = run_join(&r, &s);
	stress_trim_join(&r);
	s.rss.end = stress_rss_now();
	run_sum(&r, &total);
	if (run_stop(&r) != STRESS_ABORT) {
		run_check_rss(&r, &s.rss);
		stress_final_checks(&r, &total);
	}
	ok = !atomic_load_explicit(&r.violations, memory_order_relaxed);
	stress_report(&r, &total, &s.rss, elapsed, ok);
	if (!ok) {
		/* The pool may be broken: skip the teardown. */
		fflush(NULL);
		_exit(1);
	}
	run_teardown(&r);
	return 0;
}
