/* SPDX-License-Identifier: MIT */
/*
 * A life: one thread's time in a worker's seat (struct stress_life). How
 * a life begins (its random stream, its share of each kind of operation,
 * its registrations) and ends (its tally added to the worker's), what it
 * shows the supervisor, and its explicit cache, which the modes that
 * release or allocate through it (handle.c, drain.c) use too.
 *
 * Calls down only: rcu.c (registration with liburcu), and the leaves
 * check.c (the hooks' tally, violations), mode.c and tally.c.
 */
#include <string.h>

#include "check.h"
#include "life.h"
#include "mode.h"
#include "rcu.h"
#include "run.h"
#include "tally.h"

static uint64_t life_mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ x >> 30) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ x >> 27) * UINT64_C(0x94d049bb133111eb);
	return x ^ x >> 31;
}

/* Operations in 64 that handle probes or read sections take: 4 per unit
 * of weight, a quarter at most, so that objects still come and go. */
static unsigned life_share(const struct stress_opts *o, enum stress_mode m)
{
	return o->weight[m] > 4 ? 16 : 4 * o->weight[m];
}

/* The figures the supervisor shows and watches for a stall. */
void stress_life_publish(struct stress_life *l)
{
	/* Relaxed: progress figures for the supervisor, not checks. */
	atomic_store_explicit(&l->w->ops, l->ops, memory_order_relaxed);
	atomic_store_explicit(&l->w->holding, l->n, memory_order_relaxed);
}

#if STRESS_HAVE_CACHES
/* The explicit cache: the predecessor's if it left one, else a new one. */
struct lfp_cache *stress_life_cache(struct stress_life *l)
{
	if (!l->cache && l->w->bequest) {
		l->cache = l->w->bequest;
		l->w->bequest = NULL;
	}
	if (!l->cache && !(l->cache = lfp_cache_create(l->run->pool)))
		stress_violation(l->run, "lfp_cache_create failed in thread %u",
				 l->tid);
	return l->cache;
}
#endif

/* A new thread takes seat w: its id, its random stream (from the seed,
 * the seat and the lives before it), what it will do. */
void stress_life_begin(struct stress_life *l, struct stress_worker *w)
{
	const struct stress_opts *o = w->run->o;

	memset(l, 0, sizeof(*l));
	l->run = w->run;
	l->o = o;
	l->w = w;
	/* Relaxed: ids only need to be distinct. */
	l->tid = atomic_fetch_add_explicit(&w->run->next_tid, 1,
					  memory_order_relaxed);
	/* Relaxed: the previous life was joined before this one began. */
	l->ops = atomic_load_explicit(&w->ops, memory_order_relaxed);
	l->rng = life_mix(o->seed ^ life_mix(w->index ^
					     life_mix(w->tally.lives))) | 1;
	l->left = stress_mode_enabled(o, STRESS_EXIT)
			  ? 1 + stress_below(l, 2 * o->life)
			  : UINT64_MAX;
	l->target = stress_below(l, o->hold + 1);
	l->retarget = 1 + stress_below(l, 2 * o->hold);
	l->bad = o->weight[STRESS_BAD] > 64 ? 64 : o->weight[STRESS_BAD];
	l->probe = life_share(o, STRESS_HANDLE);
	l->read = life_share(o, STRESS_DEFERRED);
	l->handoff = w->run->release_cum[STRESS_HANDOFF] !=
		     w->run->release_cum[STRESS_BULK];
	l->handles = stress_mode_enabled(o, STRESS_HANDLE) ||
		     stress_mode_enabled(o, STRESS_DEFERRED);
	l->rcu = stress_mode_enabled(o, STRESS_DEFERRED);
	l->idle = stress_mode_enabled(o, STRESS_IDLING);
	l->t.lives = 1;
	stress_hooks_bind(&l->t);
	stress_rcu_begin(l);
}

/* The life is over: add its counts to the seat's. */
void stress_life_end(struct stress_life *l, uint64_t ops0)
{
	struct stress_tally *t = &l->w->tally;

	l->t.ops = l->ops - ops0;
	l->t.checks += l->t.frees; /* every release verified the pattern */
	stress_tally_add(t, &l->t);
	stress_hooks_bind(NULL);
	stress_rcu_end(l);
	stress_life_publish(l);
}
