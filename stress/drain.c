/* SPDX-License-Identifier: MIT */
/*
 * The drain of an idle round (idle.c has the plan): the drainer takes
 * what it can while the others go idle, then, once they are all parked,
 * empties the pool and judges what it got, then gives it all back.
 *
 * The judgment, by exhaustion policy:
 * - null: the drainer allocates until NULL and must have exactly that many;
 * - grow: it takes that many, and the pool must not grow meanwhile (it
 *   may while the others are still going idle);
 * - abort: it takes that many, and the pool must not abort (exhaust.c
 *   turns an abort inside the drain into a violation naming the count).
 *   The run is sized never to run dry, so the drainer takes nothing
 *   before the others are parked: no steal ever meets a busy cache, and
 *   abort checks idle caches, not what a thief leaves behind.
 *
 * Calls down only: life.c (the drainer's explicit cache), exhaust.c (the
 * call marks, the note an abort reports), and the leaves check.c, mode.c
 * and clock.c. Only idle.c calls the stress_drain_* functions.
 */
#include <inttypes.h>

#include "check.h"
#include "clock.h"
#include "drain.h"
#include "exhaust.h"
#include "life.h"
#include "mode.h"
#include "run.h"

#define DRAIN_STARVE_NS 20000L /* the drainer's wait when nothing came */

static const char *const drain_way_name[STRESS_NWAYS] = {
	[STRESS_WAY_ALLOC] = "lfp_alloc",
	[STRESS_WAY_CACHE] = "lfp_cache_alloc",
	[STRESS_WAY_BULK] = "lfp_alloc_bulk",
};

static const char *const drain_free_name[STRESS_NWAYS] = {
	[STRESS_WAY_ALLOC] = "lfp_free",
	[STRESS_WAY_CACHE] = "lfp_cache_free",
	[STRESS_WAY_BULK] = "lfp_free_bulk",
};

/* Objects the workers hold, the drainer's and every inbox included. */
static uint64_t drain_held(struct stress_life *l)
{
	struct stress_run *r = l->run;
	uint64_t held = l->n;

	for (unsigned i = 0; i < r->o->threads; i++) {
		struct stress_worker *w = &r->w[i];

		held += i ? w->parked_with : 0;
		pthread_mutex_lock(&w->inbox.lock);
		held += w->inbox.count;
		pthread_mutex_unlock(&w->inbox.lock);
	}
	return held;
}

/* The ways this run's mix allows, one per round in turn. */
static enum stress_way drain_pick(const struct stress_opts *o, uint32_t round)
{
	enum stress_way ways[STRESS_NWAYS];
	unsigned n = 0;

	ways[n++] = STRESS_WAY_ALLOC;
	if (STRESS_HAVE_CACHES && stress_mode_enabled(o, STRESS_EXPLICIT))
		ways[n++] = STRESS_WAY_CACHE;
	if (STRESS_HAVE_CACHES && stress_mode_enabled(o, STRESS_BULK))
		ways[n++] = STRESS_WAY_BULK;
	return ways[round % n];
}

/* Begin the drain of a round: the way the mix gives it. */
void stress_drain_begin(struct stress_drain *dr, struct stress_life *l,
			uint32_t round)
{
	*dr = (struct stress_drain){ .l = l, .policy = l->o->exhaust };
	dr->note.round = round;
	dr->way = drain_pick(l->o, round);
}

/* One allocation call of up to want objects into objs; how many came. */
static size_t drain_alloc(struct stress_drain *dr, void **objs, size_t want)
{
	struct stress_life *l = dr->l;
	size_t got = 0;

	stress_call_enter(drain_way_name[dr->way], true);
	switch (dr->way) {
#if STRESS_HAVE_CACHES
	case STRESS_WAY_CACHE:
		if (stress_life_cache(l))
			got = (objs[0] = lfp_cache_alloc(l->cache)) != NULL;
		break;
	case STRESS_WAY_BULK:
		got = lfp_alloc_bulk(l->run->pool, objs, want);
		break;
#endif
	default:
		got = (objs[0] = lfp_alloc(l->run->pool)) != NULL;
		break;
	}
	stress_call_leave();
	(void)want;
	return got;
}

/* Take objs[0..n) into the drain. */
static bool drain_own(struct stress_drain *dr, void **objs, size_t n)
{
	struct stress_life *l = dr->l;
	struct stress_held *held = l->run->idle.held;

	for (size_t i = 0; i < n; i++) {
		if (!stress_own(l->run, l->tid, objs[i], ++l->seq,
				drain_way_name[dr->way], &held[dr->note.got]))
			return false;
		dr->note.got++;
		l->t.allocs++;
	}
	return true;
}

/* Objects to ask for in one call: up to a bulk's worth, to expect with
 * grow and abort, and no more than the drain can hold. */
static size_t drain_want(const struct stress_drain *dr, bool exact)
{
	uint64_t room = dr->l->run->slots - dr->note.got;

	if (exact && dr->note.expect - dr->note.got < room)
		room = dr->note.expect - dr->note.got;
	if (dr->way != STRESS_WAY_BULK || room < 2)
		return room ? 1 : 0;
	return room < STRESS_MAX_BULK ? room : STRESS_MAX_BULK;
}

/* Nothing came: wait a little for the next worker to park (its slots
 * may come free) rather than spin, which would cost the drainer its
 * share of the processors once the others wake. */
static void drain_starve(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;

	pthread_mutex_lock(&d->lock);
	if (d->parked < r->o->threads - 1)
		stress_wait_for(&d->parked_cv, &d->lock, DRAIN_STARVE_NS);
	pthread_mutex_unlock(&d->lock);
}

/*
 * While the others go idle: take what comes, and wait a little when
 * nothing does, until all of them are parked. False on a violation.
 */
bool stress_drain_grab(struct stress_drain *dr)
{
	struct stress_run *r = dr->l->run;
	void *objs[STRESS_MAX_BULK];

	/* Relaxed: the lock taken after the grab orders the rest. */
	while (atomic_load_explicit(&r->idle.parked_hint,
				    memory_order_relaxed) < r->o->threads - 1 &&
	       !stress_aborted(r)) {
		size_t want = drain_want(dr, false), got = 0;

		if (want)
			got = drain_alloc(dr, objs, want);
		if (!drain_own(dr, objs, got))
			return false;
		if (!got)
			drain_starve(r);
	}
	dr->l->t.grabbed += dr->note.got;
	return true;
}

static bool drain_grew(struct stress_drain *dr)
{
	struct stress_run *r = dr->l->run;
	struct lfp_stats s;

	lfp_stats(r->pool, &s);
	if (s.capacity == dr->before.capacity && s.grown == dr->before.grown)
		return false;
	return !stress_violation(
		r, "idle round %" PRIu64 ": the pool grew (LFP_EXHAUST_GROW) "
		"from %" PRIu64 " to %" PRIu64 " slots when the drainer, "
		"using %s, had %" PRIu64 " of the %" PRIu64 " slots that were "
		"free, with the other %u workers parked outside any pool call "
		"and %" PRIu64 " objects held (lfp_stats before: free %" PRIu64
		", cached %" PRIu64 ", live %" PRIu64 ")",
		dr->note.round, dr->before.capacity, s.capacity,
		drain_way_name[dr->way], dr->note.got, dr->note.expect,
		r->o->threads - 1, dr->note.held, dr->before.free,
		dr->before.cached, dr->before.live);
}

/*
 * Every other worker parked: allocate until the pool runs out (null) or
 * until every free slot is ours (grow, abort). False on a violation.
 */
static bool drain_take_all(struct stress_drain *dr)
{
	bool exact = dr->policy != LFP_EXHAUST_NULL;
	void *objs[STRESS_MAX_BULK];
	size_t want, got;

	while ((want = drain_want(dr, exact))) {
		got = drain_alloc(dr, objs, want);
		if (!drain_own(dr, objs, got))
			return false;
		if (dr->policy == LFP_EXHAUST_GROW && drain_grew(dr))
			return false;
		if (got < want)
			break;
	}
	return true;
}

/* The same, telling an abort inside it what the drain had reached. */
static bool drain_take(struct stress_drain *dr)
{
	bool ok;

	stress_alloc_drain(&dr->note);
	ok = drain_take_all(dr);
	stress_alloc_drain(NULL);
	return ok;
}

/* With every other worker parked: what the pool's counters must say. */
static bool drain_census(struct stress_drain *dr)
{
	struct stress_run *r = dr->l->run;
	uint64_t live = dr->note.held + dr->note.got;

	lfp_stats(r->pool, &dr->before);
	dr->note.capacity = dr->before.capacity;
	dr->note.expect = dr->before.capacity - dr->note.held;
	if (dr->before.live == live && !dr->before.deferred)
		return true;
	return stress_violation(r, "idle round %" PRIu64 ": with the other "
				"%u workers parked, the workers holding %"
				PRIu64 " objects and the drainer %" PRIu64
				" more, lfp_stats says %" PRIu64 " live and %"
				PRIu64 " deferred", dr->note.round,
				r->o->threads - 1, dr->note.held,
				dr->note.got, dr->before.live,
				dr->before.deferred);
}

/* Got as many as were free? Returns false on a violation. */
static bool drain_judge(struct stress_drain *dr)
{
	struct stress_run *r = dr->l->run;
	struct lfp_stats s;

	if (dr->note.got == dr->note.expect)
		return true;
	lfp_stats(r->pool, &s);
	return stress_violation(
		r, "idle round %" PRIu64 ": with the other %u workers parked "
		"outside any pool call, %s gave the drainer %" PRIu64
		" objects in all before it ran out (%s), expected %" PRIu64
		" free: capacity %" PRIu64 " - %" PRIu64 " held by the "
		"workers (lfp_stats with all parked: free %" PRIu64
		", cached %" PRIu64 ", live %" PRIu64 "; after: free %" PRIu64
		", cached %" PRIu64 ", live %" PRIu64 ")",
		dr->note.round, r->o->threads - 1, drain_way_name[dr->way],
		dr->note.got, stress_exhaust_name(dr->policy), dr->note.expect,
		dr->note.capacity, dr->note.held, dr->before.free,
		dr->before.cached, dr->before.live, s.free, s.cached, s.live);
}

/*
 * Every other worker parked: count what the workers hold, check the
 * pool's counters, empty the pool and judge. False on a violation.
 */
bool stress_drain_empty(struct stress_drain *dr)
{
	dr->note.held = drain_held(dr->l);
	return drain_census(dr) && drain_take(dr) && drain_judge(dr);
}

/* Release what the drain took, the way it came. */
void stress_drain_give_back(struct stress_drain *dr)
{
	struct stress_life *l = dr->l;
	struct stress_run *r = l->run;
	const char *op = drain_free_name[dr->way];

	for (uint64_t i = 0; i < dr->note.got; i++) {
		struct stress_held *h = &r->idle.held[i];
		int err;

		if (!stress_unclaim(r, h, l->tid, op))
			return;
		stress_call_enter(op, false);
#if STRESS_HAVE_CACHES
		if (dr->way == STRESS_WAY_CACHE)
			err = lfp_cache_free(l->cache, h->obj);
		else if (dr->way == STRESS_WAY_BULK)
			err = lfp_free_bulk(r->pool, &h->obj, 1) == 1 ? 0 : -1;
		else
#endif
			err = lfp_free(r->pool, h->obj);
		stress_call_leave();
		if (err) {
			stress_violation(r, "slot %u: %s by the drainer, "
					 "which held it, failed (%d)",
					 h->mark.slot, op, err);
			return;
		}
		l->t.frees++;
	}
}
