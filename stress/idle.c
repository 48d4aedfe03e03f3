/*
 * Idle rounds: workers that go idle holding caches, and a thread that
 * must still get every free slot.
 *
 * Worker 0 is the drainer. Now and then (--idle-every) it begins a round:
 * it starts allocating at once, a thread that starves while the others
 * are still at work, as a real program's would, and its steals meet
 * caches whose owners are inside a call (the pool must have them flush
 * later, or let a later thief have them); a nudge holds up for a moment
 * any worker it finds inside a pool call, as if preempted there. Every
 * other worker parks when it sees the round, between two operations, so
 * outside any pool call: it keeps its objects, its implicit and explicit
 * caches and whatever waits in its inbox, and blocks on a condition
 * variable like a game's worker waiting for the next frame. What the
 * drainer takes meanwhile is not judged.
 *
 * Once all are parked, every slot nobody holds is free, wherever it
 * sits, and with every other thread outside the pool nothing excuses a
 * shortfall: the drainer must end up with capacity minus what the
 * workers, itself included, hold (lfp_alloc's promise that "slots parked
 * in other threads' caches are not lost"). Then it releases what it took,
 * ends the round and the others go on.
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
 * The condition variable orders each worker's last operation before the
 * drain, which the pool's own handshake with idle caches must do anyway:
 * ThreadSanitizer cannot tell here whether the pool's ordering is enough.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stress.h"

#define IDLE_POLL_NS 20000000L /* how often a wait looks at stop */
#define IDLE_NAP_NS 100000L    /* how long a nudged call is held up */
#define IDLE_STARVE_NS 20000L  /* the drainer's wait when nothing came */
#define IDLE_RECHECK 16        /* the drainer's operations between looks
				  at whether the others have had their turn */
#define IDLE_NUDGE SIGURG      /* ignored by default, and by debuggers */

/* The ways the drainer allocates, and releases again. */
enum idle_way { WAY_ALLOC, WAY_CACHE, WAY_BULK, WAY_NWAYS };

static const char *const idle_way_name[WAY_NWAYS] = {
	[WAY_ALLOC] = "lfp_alloc",
	[WAY_CACHE] = "lfp_cache_alloc",
	[WAY_BULK] = "lfp_alloc_bulk",
};

static const char *const idle_free_name[WAY_NWAYS] = {
	[WAY_ALLOC] = "lfp_free",
	[WAY_CACHE] = "lfp_cache_free",
	[WAY_BULK] = "lfp_free_bulk",
};

/*
 * The nudge: a round has begun. A worker inside a pool call stays there
 * a while, as if preempted, so that the drainer's steals find its cache
 * busy; it parks right after the call. (ThreadSanitizer delivers signals
 * only between calls, so under it the nudge rarely holds anyone up.)
 */
static _Atomic uint64_t idle_naps;

static void idle_on_nudge(int sig)
{
	struct timespec ts = { 0, IDLE_NAP_NS };

	(void)sig;
	if (!stress_in_call())
		return;
	/* Relaxed: a count, read after every thread is joined. */
	atomic_fetch_add_explicit(&idle_naps, 1, memory_order_relaxed);
	nanosleep(&ts, NULL);
}

int stress_idle_setup(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;
	struct sigaction sa;

	if (!stress_mode_enabled(r->o, STRESS_IDLING))
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = idle_on_nudge;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(IDLE_NUDGE, &sa, NULL);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->parked_cv, NULL);
	pthread_cond_init(&d->resume_cv, NULL);
	atomic_init(&d->taking, 0);
	atomic_init(&d->parked_hint, 0);
	d->held = calloc(r->slots, sizeof(*d->held));
	d->since = calloc(r->o->threads, sizeof(*d->since));
	return d->held && d->since ? 0 : -1;
}

void stress_idle_teardown(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;

	if (!stress_mode_enabled(r->o, STRESS_IDLING))
		return;
	free(d->held);
	free(d->since);
	pthread_cond_destroy(&d->resume_cv);
	pthread_cond_destroy(&d->parked_cv);
	pthread_mutex_destroy(&d->lock);
}

static bool idle_aborted(struct stress_run *r)
{
	return atomic_load_explicit(&r->stop, memory_order_relaxed) ==
	       STRESS_ABORT;
}

/* Wait on cv for up to ns (lock held). */
static void idle_wait_for(struct stress_idle *d, pthread_cond_t *cv, long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ns;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, &d->lock, &ts);
}

/* Wait on cv for a while (lock held), to look at stop now and then. */
static void idle_wait(struct stress_idle *d, pthread_cond_t *cv)
{
	idle_wait_for(d, cv, IDLE_POLL_NS);
}

/*
 * A worker other than the drainer: park until the round ends (final:
 * until the rounds are over), holding everything. The drainer counts us
 * among the parked from here to the end of the round.
 */
static void idle_park(struct stress_life *l, uint32_t round, bool final)
{
	struct stress_idle *d = &l->run->idle;

	pthread_mutex_lock(&d->lock);
	l->w->parked_with = l->n;
	d->final += final;
	/* Relaxed: a hint; the drainer takes the lock before it counts. */
	atomic_store_explicit(&d->parked_hint, ++d->parked,
			      memory_order_relaxed);
	pthread_cond_signal(&d->parked_cv);
	while (!d->over && (final || d->done < round))
		pthread_cond_wait(&d->resume_cv, &d->lock);
	pthread_mutex_unlock(&d->lock);
	l->idle_seen = round;
}

/*
 * The drainer's turn: it and every other worker still at work have done
 * the round's gap of operations since the last round, so that each has
 * been busy, perhaps preempted inside a call, before it goes idle.
 */
static bool idle_due(struct stress_life *l)
{
	struct stress_run *r = l->run;
	struct stress_idle *d = &r->idle;

	if (l->ops < l->idle_next)
		return false;
	for (unsigned i = 1; i < r->o->threads; i++) {
		/* Relaxed: a progress figure. */
		uint64_t ops = atomic_load_explicit(&r->w[i].ops,
						    memory_order_relaxed);

		/* Done with its operations: it waits for the end. */
		if (r->o->ops && ops >= r->o->ops)
			continue;
		if (ops - d->since[i] < d->gap) {
			l->idle_next = l->ops + IDLE_RECHECK;
			return false;
		}
	}
	return true;
}

/* The next round's gap, counted from now. */
static void idle_next_gap(struct stress_life *l)
{
	struct stress_run *r = l->run;
	struct stress_idle *d = &r->idle;

	d->gap = 1 + stress_below(l, 2 * l->o->idle_every);
	l->idle_next = l->ops + d->gap;
	for (unsigned i = 1; i < r->o->threads; i++)
		/* Relaxed: as in idle_due. */
		d->since[i] = atomic_load_explicit(&r->w[i].ops,
						   memory_order_relaxed);
}

/* The first step of a life: say which thread to nudge. */
static void idle_hello(struct stress_life *l)
{
	struct stress_idle *d = &l->run->idle;

	pthread_mutex_lock(&d->lock);
	l->w->idler = pthread_self();
	l->w->idler_known = true;
	pthread_mutex_unlock(&d->lock);
	l->idle_hello = true;
	if (!l->w->index)
		idle_next_gap(l);
}

/* Nudge every other worker that has said where it lives. */
static void idle_nudge(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;

	pthread_mutex_lock(&d->lock);
	for (unsigned i = 1; i < r->o->threads; i++)
		if (r->w[i].idler_known)
			pthread_kill(r->w[i].idler, IDLE_NUDGE);
	pthread_mutex_unlock(&d->lock);
}

/* Objects the workers hold, the drainer's and every inbox included. */
static uint64_t idle_held(struct stress_life *l)
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
static enum idle_way idle_pick(const struct stress_opts *o, uint32_t round)
{
	enum idle_way ways[WAY_NWAYS];
	unsigned n = 0;

	ways[n++] = WAY_ALLOC;
	if (STRESS_HAVE_CACHES && stress_mode_enabled(o, STRESS_EXPLICIT))
		ways[n++] = WAY_CACHE;
	if (STRESS_HAVE_CACHES && stress_mode_enabled(o, STRESS_BULK))
		ways[n++] = WAY_BULK;
	return ways[round % n];
}

/* The state of a drain, for its messages. */
struct idle_drain {
	struct stress_life *l;
	struct stress_drain_note note;
	struct lfp_stats before;
	enum idle_way way;
	uint32_t policy;
};

/* One allocation call of up to want objects into objs; how many came. */
static size_t idle_alloc(struct idle_drain *dr, void **objs, size_t want)
{
	struct stress_life *l = dr->l;
	size_t got = 0;

	stress_call_enter(idle_way_name[dr->way], true);
	switch (dr->way) {
#if STRESS_HAVE_CACHES
	case WAY_CACHE:
		if (stress_life_cache(l))
			got = (objs[0] = lfp_cache_alloc(l->cache)) != NULL;
		break;
	case WAY_BULK:
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
static bool idle_own(struct idle_drain *dr, void **objs, size_t n)
{
	struct stress_life *l = dr->l;
	struct stress_held *held = l->run->idle.held;

	for (size_t i = 0; i < n; i++) {
		if (!stress_own(l->run, l->tid, objs[i], ++l->seq,
				idle_way_name[dr->way], &held[dr->note.got]))
			return false;
		dr->note.got++;
		l->t.allocs++;
	}
	return true;
}

/* Objects to ask for in one call: up to a bulk's worth, to expect with
 * grow and abort, and no more than the drain can hold. */
static size_t idle_want(const struct idle_drain *dr, bool exact)
{
	uint64_t room = dr->l->run->slots - dr->note.got;

	if (exact && dr->note.expect - dr->note.got < room)
		room = dr->note.expect - dr->note.got;
	if (dr->way != WAY_BULK || room < 2)
		return room ? 1 : 0;
	return room < STRESS_MAX_BULK ? room : STRESS_MAX_BULK;
}

/* Nothing came: wait a little for the next worker to park (its slots
 * may come free) rather than spin, which would cost the drainer its
 * share of the processors once the others wake. */
static void idle_starve(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;

	pthread_mutex_lock(&d->lock);
	if (d->parked < r->o->threads - 1)
		idle_wait_for(d, &d->parked_cv, IDLE_STARVE_NS);
	pthread_mutex_unlock(&d->lock);
}

/*
 * While the others go idle: take what comes, and wait a little when
 * nothing does, until all of them are parked. False on a violation.
 */
static bool idle_grab(struct idle_drain *dr)
{
	struct stress_run *r = dr->l->run;
	void *objs[STRESS_MAX_BULK];

	/* Relaxed: the lock taken after the grab orders the rest. */
	while (atomic_load_explicit(&r->idle.parked_hint,
				    memory_order_relaxed) < r->o->threads - 1 &&
	       !idle_aborted(r)) {
		size_t want = idle_want(dr, false), got = 0;

		if (want)
			got = idle_alloc(dr, objs, want);
		if (!idle_own(dr, objs, got))
			return false;
		if (!got)
			idle_starve(r);
	}
	dr->l->t.grabbed += dr->note.got;
	return true;
}

static bool idle_grew(struct idle_drain *dr)
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
		idle_way_name[dr->way], dr->note.got, dr->note.expect,
		r->o->threads - 1, dr->note.held, dr->before.free,
		dr->before.cached, dr->before.live);
}

/*
 * Every other worker parked: allocate until the pool runs out (null) or
 * until every free slot is ours (grow, abort). False on a violation.
 */
static bool idle_take_all(struct idle_drain *dr)
{
	bool exact = dr->policy != LFP_EXHAUST_NULL;
	void *objs[STRESS_MAX_BULK];
	size_t want, got;

	while ((want = idle_want(dr, exact))) {
		got = idle_alloc(dr, objs, want);
		if (!idle_own(dr, objs, got))
			return false;
		if (dr->policy == LFP_EXHAUST_GROW && idle_grew(dr))
			return false;
		if (got < want)
			break;
	}
	return true;
}

/* The same, telling an abort inside it what the drain had reached. */
static bool idle_take(struct idle_drain *dr)
{
	bool ok;

	stress_alloc_drain(&dr->note);
	ok = idle_take_all(dr);
	stress_alloc_drain(NULL);
	return ok;
}

/* With every other worker parked: what the pool's counters must say. */
static bool idle_census(struct idle_drain *dr)
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
static bool idle_judge(struct idle_drain *dr)
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
		dr->note.round, r->o->threads - 1, idle_way_name[dr->way],
		dr->note.got, stress_exhaust_name(dr->policy), dr->note.expect,
		dr->note.capacity, dr->note.held, dr->before.free,
		dr->before.cached, dr->before.live, s.free, s.cached, s.live);
}

/* Release what the drain took, the way it came. */
static void idle_give_back(struct idle_drain *dr)
{
	struct stress_life *l = dr->l;
	struct stress_run *r = l->run;
	const char *op = idle_free_name[dr->way];

	for (uint64_t i = 0; i < dr->note.got; i++) {
		struct stress_held *h = &r->idle.held[i];
		int err;

		if (!stress_unclaim(r, h, l->tid, op))
			return;
		stress_call_enter(op, false);
#if STRESS_HAVE_CACHES
		if (dr->way == WAY_CACHE)
			err = lfp_cache_free(l->cache, h->obj);
		else if (dr->way == WAY_BULK)
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

/* Wait until every other worker is parked, and say whether to go on. */
static bool idle_all_parked(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;

	pthread_mutex_lock(&d->lock);
	while (d->parked < r->o->threads - 1 && !idle_aborted(r))
		idle_wait(d, &d->parked_cv);
	pthread_mutex_unlock(&d->lock);
	return !idle_aborted(r);
}

/* Let the others go on; over: for good. */
static void idle_end(struct stress_run *r, uint32_t round, bool over)
{
	struct stress_idle *d = &r->idle;

	pthread_mutex_lock(&d->lock);
	d->done = round;
	d->parked = d->final;
	/* Relaxed: read by the drainer only, in its next grab. */
	atomic_store_explicit(&d->parked_hint, d->parked, memory_order_relaxed);
	d->over = over;
	pthread_cond_broadcast(&d->resume_cv);
	pthread_mutex_unlock(&d->lock);
}

/*
 * The drainer: begin a round, grab while the others go idle, then empty
 * the pool, judge, give it all back and end the round (over: the last).
 */
static void idle_round(struct stress_life *l, bool over)
{
	struct stress_run *r = l->run;
	uint32_t round = l->idle_seen + 1;
	struct idle_drain dr = { .l = l, .policy = l->o->exhaust };

	dr.note.round = round;
	dr.way = idle_pick(l->o, round);
	/* The nudge first: a worker that sees the round before the signal
	 * parks, and the nudge finds it outside any call. */
	if (dr.policy != LFP_EXHAUST_ABORT)
		idle_nudge(r);
	/* Relaxed: the others' parking is ordered by the lock. */
	atomic_store_explicit(&r->idle.taking, round, memory_order_relaxed);
	if (dr.policy != LFP_EXHAUST_ABORT && !idle_grab(&dr))
		return idle_end(r, round, true);
	if (!idle_all_parked(r))
		return idle_end(r, round, true);
	dr.note.held = idle_held(l);
	if (!idle_census(&dr) || !idle_take(&dr) || !idle_judge(&dr))
		return idle_end(r, round, true);
	idle_give_back(&dr);
	l->t.rounds++;
	l->t.drained += dr.note.got;
	l->idle_seen = round;
	idle_next_gap(l);
	idle_end(r, round, over);
}

/*
 * Between two operations: the drainer begins a round when its turn has
 * come; any other worker parks as soon as it sees one begun. (Not a few
 * operations later: its own next calls would answer what a thief asked
 * of its caches, which is what parking right after a call must not lose.)
 */
void stress_idle_step(struct stress_life *l)
{
	struct stress_idle *d = &l->run->idle;
	uint32_t taking;

	if (!l->idle_hello)
		idle_hello(l);
	if (!l->w->index) {
		if (idle_due(l))
			idle_round(l, false);
		return;
	}
	/* Relaxed: it only says when to park; the lock in idle_park
	 * orders everything that matters. */
	taking = atomic_load_explicit(&d->taking, memory_order_relaxed);
	if (taking != l->idle_seen)
		idle_park(l, taking, false);
}

/*
 * A worker done with its operations parks for good, holding all; the
 * drainer waits until all the others have, drains a last time and ends
 * the rounds.
 */
void stress_idle_retire(struct stress_life *l)
{
	struct stress_run *r = l->run;
	struct stress_idle *d = &r->idle;
	unsigned others = r->o->threads - 1;

	if (l->w->index)
		return idle_park(l, l->idle_seen, true);
	pthread_mutex_lock(&d->lock);
	while (d->final < others && !idle_aborted(r))
		idle_wait(d, &d->parked_cv);
	pthread_mutex_unlock(&d->lock);
	if (idle_aborted(r))
		idle_end(r, l->idle_seen, true);
	else
		idle_round(l, true);
	/* Relaxed: every other worker is parked for good. */
	l->t.napped = atomic_load_explicit(&idle_naps, memory_order_relaxed);
}
