/* SPDX-License-Identifier: MIT */
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
 * The condition variable orders each worker's last operation before the
 * drain, which the pool's own handshake with idle caches must do anyway:
 * ThreadSanitizer cannot tell here whether the pool's ordering is enough.
 *
 * This file has the rounds: their setup, the nudge, parking, and when the
 * drainer begins and ends one. The drain itself, and how it is judged
 * under each exhaustion policy, is drain.c's.
 *
 * Calls down only: drain.c, exhaust.c (whether a nudged thread is inside
 * a pool call), and the leaves mode.c and clock.c. ops.c calls
 * stress_idle_step, worker.c stress_idle_retire, the main file the setup
 * and teardown.
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "drain.h"
#include "exhaust.h"
#include "idle.h"
#include "life.h"
#include "mode.h"
#include "run.h"

#define IDLE_POLL_NS 20000000L /* how often a wait looks at stop */
#define IDLE_NAP_NS 100000L    /* how long a nudged call is held up */
#define IDLE_RECHECK 16        /* the drainer's operations between looks
				  at whether the others have had their turn */
#define IDLE_NUDGE SIGURG      /* ignored by default, and by debuggers */

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

/*
 * Whether a thread that returns from a signal handler still has its own
 * thread-local storage. Not so under qemu-i386 (qemu-user 7.2): its
 * sigreturn reloads %gs from the emulated GDT, which all threads share
 * and whose TLS entry the thread made last wrote, so the signalled
 * thread comes back running on that thread's TLS: two threads then use
 * one implicit cache as its owner (lfpi_cache_tab is TLS), and slots
 * are handed out twice. The probe: thread A waits, thread B is made
 * after it, A is signalled and looks at its TLS. Where it fails the
 * idle rounds do without the nudge, which only makes a worker stall
 * inside a call; parking does not need it.
 */
static _Thread_local int idle_probe_mine;
static _Atomic int idle_probe_step;
static _Atomic bool idle_probe_kept;

static void idle_probe_sig(int sig)
{
	(void)sig;
}

static void *idle_probe_a(void *arg)
{
	(void)arg;
	idle_probe_mine = 1;
	/* Relaxed, both: the steps only pace the threads; what A reads is
	 * its own TLS, and pthread_join publishes idle_probe_kept. */
	atomic_store_explicit(&idle_probe_step, 1, memory_order_relaxed);
	while (atomic_load_explicit(&idle_probe_step, memory_order_relaxed) < 3)
		sched_yield();
	atomic_store_explicit(&idle_probe_kept, idle_probe_mine == 1,
			      memory_order_relaxed);
	return NULL;
}

static void *idle_probe_b(void *arg)
{
	(void)arg;
	idle_probe_mine = 2;
	return NULL;
}

static bool idle_signals_keep_tls(void)
{
	struct sigaction sa, old;
	pthread_t a, b;
	bool made_b;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = idle_probe_sig;
	sigemptyset(&sa.sa_mask);
	sigaction(IDLE_NUDGE, &sa, &old);
	atomic_store_explicit(&idle_probe_step, 0, memory_order_relaxed);
	if (pthread_create(&a, NULL, idle_probe_a, NULL)) {
		sigaction(IDLE_NUDGE, &old, NULL);
		return false;
	}
	while (!atomic_load_explicit(&idle_probe_step, memory_order_relaxed))
		sched_yield();
	made_b = !pthread_create(&b, NULL, idle_probe_b, NULL);
	if (made_b)
		pthread_join(b, NULL);
	pthread_kill(a, IDLE_NUDGE);
	/* Time for A to take the signal (it spins, so it takes it at once
	 * anywhere but on a machine far too loaded for this run anyway). */
	nanosleep(&(struct timespec){ 0, 10000000L }, NULL);
	atomic_store_explicit(&idle_probe_step, 3, memory_order_relaxed);
	pthread_join(a, NULL);
	sigaction(IDLE_NUDGE, &old, NULL);
	return made_b &&
	       atomic_load_explicit(&idle_probe_kept, memory_order_relaxed);
}

int stress_idle_setup(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;
	struct sigaction sa;

	if (!stress_mode_enabled(r->o, STRESS_IDLING))
		return 0;
	d->nudge = idle_signals_keep_tls();
	if (!d->nudge)
		fputs("lfpool-stress: note: a signal handler's return moves a "
		      "thread onto another thread's TLS here (qemu-i386); idle "
		      "rounds run without the nudge\n", stderr);
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

/* Wait on cv for a while (lock held), to look at stop now and then. */
static void idle_wait(struct stress_idle *d, pthread_cond_t *cv)
{
	stress_wait_for(cv, &d->lock, IDLE_POLL_NS);
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

	if (!d->nudge)
		return;
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 1; i < r->o->threads; i++)
		if (r->w[i].idler_known)
			pthread_kill(r->w[i].idler, IDLE_NUDGE);
	pthread_mutex_unlock(&d->lock);
}

/* Wait until every other worker is parked, and say whether to go on. */
static bool idle_all_parked(struct stress_run *r)
{
	struct stress_idle *d = &r->idle;

	pthread_mutex_lock(&d->lock);
	while (d->parked < r->o->threads - 1 && !stress_aborted(r))
		idle_wait(d, &d->parked_cv);
	pthread_mutex_unlock(&d->lock);
	return !stress_aborted(r);
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
	struct stress_drain dr;

	stress_drain_begin(&dr, l, round);
	/* The nudge first: a worker that sees the round before the signal
	 * parks, and the nudge finds it outside any call. */
	if (dr.policy != LFP_EXHAUST_ABORT)
		idle_nudge(r);
	/* Relaxed: the others' parking is ordered by the lock. */
	atomic_store_explicit(&r->idle.taking, round, memory_order_relaxed);
	if (dr.policy != LFP_EXHAUST_ABORT && !stress_drain_grab(&dr))
		return idle_end(r, round, true);
	if (!idle_all_parked(r))
		return idle_end(r, round, true);
	if (!stress_drain_empty(&dr))
		return idle_end(r, round, true);
	stress_drain_give_back(&dr);
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
	while (d->final < others && !stress_aborted(r))
		idle_wait(d, &d->parked_cv);
	pthread_mutex_unlock(&d->lock);
	if (stress_aborted(r))
		idle_end(r, l->idle_seen, true);
	else
		idle_round(l, true);
	/* Relaxed: every other worker is parked for good. */
	l->t.napped = atomic_load_explicit(&idle_naps, memory_order_relaxed);
}
