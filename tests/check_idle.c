/* SPDX-License-Identifier: MIT */
/*
 * Slots parked in idle caches are not lost (lfp_alloc: "when the shared
 * list runs dry, the allocation empties idle caches into it first").
 *
 * Workers churn on a small pool, then the main thread drains it until it
 * steals, so that its steal finds some workers inside a call and leaves
 * them requests to flush. Then the workers stop between calls, each
 * holding a few objects, and wait, alive. Every slot they do not hold is
 * free, and the main thread must be able to take all of them: no NULL, no
 * growth and no abort before it has. Each round has a new pool; the
 * stranding is a race, so there are many rounds.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"
#include "cache/private.h"

enum {
	CAP = 128,
	CACHE = 16,
	BATCH = 8,
	NWORK = 4,
	HOLD = 3,    /* objects a worker keeps for the whole round */
	RESERVE = 8, /* idle slots the main thread keeps for its steals */
};

/* How each variant is run: the exhaustion policy and the cache kind. */
struct idle_case {
	uint32_t exhaust;
	bool explicit_caches;
};

static const struct idle_case idle_cases[] = {
	{ LFP_EXHAUST_NULL, false },  { LFP_EXHAUST_NULL, true },
	{ LFP_EXHAUST_GROW, false },  { LFP_EXHAUST_GROW, true },
	{ LFP_EXHAUST_ABORT, false }, { LFP_EXHAUST_ABORT, true },
};

#define IDLE_NCASES (sizeof(idle_cases) / sizeof(idle_cases[0]))

static const char *idle_policy_name(uint32_t exhaust)
{
	return exhaust == LFP_EXHAUST_NULL   ? "NULL"
	       : exhaust == LFP_EXHAUST_GROW ? "GROW"
					     : "ABORT";
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Where a round is, and what went wrong; shared with a forked round. */
enum { PHASE_CHURN = 1, PHASE_FINAL, PHASE_DONE };

struct idle_result {
	_Atomic int phase;
	char msg[512];
};

static bool idle_fail(struct idle_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
	return false;
}

struct idle_round {
	struct lfp_pool *pool;
	bool explicit_caches;
	_Atomic int stop;
	pthread_barrier_t start, idle, done;
	uint32_t held[NWORK]; /* written before `idle`, read after it */
};

static void *idle_alloc(struct idle_round *r, struct lfp_cache *c)
{
	return c ? lfp_cache_alloc(c) : lfp_alloc(r->pool);
}

static void idle_free(struct idle_round *r, struct lfp_cache *c, void *p)
{
	if (c)
		lfp_cache_free(c, p);
	else
		lfp_free(r->pool, p);
}

struct idle_worker {
	struct idle_round *round;
	int self;
};

/*
 * Take HOLD objects, then take and give back one more until told to stop:
 * the main thread's steals meanwhile find this cache busy now and then.
 * Stop between two calls, holding what was taken, and wait there.
 */
static void *idle_churn(void *arg)
{
	struct idle_worker *w = arg;
	struct idle_round *r = w->round;
	struct lfp_cache *c =
		r->explicit_caches ? lfp_cache_create(r->pool) : NULL;
	void *hold[HOLD], *p;
	uint32_t held = 0;

	while (held < HOLD && (hold[held] = idle_alloc(r, c)))
		held++;
	pthread_barrier_wait(&r->start);
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		if ((p = idle_alloc(r, c)))
			idle_free(r, c, p);
	}
	r->held[w->self] = held;
	pthread_barrier_wait(&r->idle);  /* idle, outside any call */
	pthread_barrier_wait(&r->done);  /* the main thread has counted */
	while (held)
		idle_free(r, c, hold[--held]);
	lfp_cache_destroy(c);
	return NULL;
}

static uint64_t idle_steals(struct lfp_pool *pool)
{
	struct lfp_stats st;

	lfp_stats(pool, &st);
	return st.steals;
}

/*
 * The main thread lets the workers churn for `ms` milliseconds, so that
 * those not running are preempted at random points, many inside a call.
 * Then it takes objects until its first steal and tells the workers to
 * stop at once: a busy worker that the steal asked to flush finishes its
 * call, sees the stop and goes idle with the request still pending.
 * Returns the objects it took.
 *
 * The pool must not meet exhaustion here: a worker preempted inside a call
 * may keep its cache's slots for a moment, and a GROW or ABORT pool would
 * rightly grow or abort. It does not: the main thread keeps RESERVE slots
 * in an idle cache of its own, which the steal empties, and stops taking
 * right after it. The workers take and give back one object at a time, so
 * their caches never run dry before that steal, and after it each needs
 * at most one of the chains the steal put back, one more than they are.
 */
static uint32_t idle_drain(struct idle_round *r, struct lfp_cache *reserve,
			   void **objs, double ms)
{
	double until = now_ms() + ms;
	void *spare[RESERVE];
	uint64_t steals;
	uint32_t n = 0, s;

	for (s = 0; s < RESERVE && (spare[s] = lfp_cache_alloc(reserve)); s++)
		;
	while (s)
		lfp_cache_free(reserve, spare[--s]);
	while (now_ms() < until)
		sched_yield();
	steals = idle_steals(r->pool);
	while (n < CAP && (objs[n] = lfp_alloc(r->pool)))
		if (n++, idle_steals(r->pool) != steals)
			break;
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	return n;
}

/* The final count: take exactly the free slots. */
static bool idle_take_free(struct idle_round *r, const struct idle_case *k,
			   int round, uint32_t held, void **objs,
			   uint32_t *taken, struct idle_result *res)
{
	const char *kind = k->explicit_caches ? "explicit" : "implicit";
	struct lfp_stats st;
	uint32_t expect, got;
	uint64_t grown;

	lfp_stats(r->pool, &st);
	grown = st.grown;
	expect = (uint32_t)st.capacity - held;
	for (got = 0; got < expect && (objs[got] = lfp_alloc(r->pool)); got++)
		;
	*taken = got;
	if (got != expect)
		return idle_fail(res, "%s, %s caches, round %d: the main "
				 "thread got %u objects of %u free (capacity "
				 "%llu, idle workers hold %u): slots are "
				 "stranded in idle caches",
				 idle_policy_name(k->exhaust), kind, round,
				 got, expect, (unsigned long long)st.capacity,
				 held);
	lfp_stats(r->pool, &st);
	if (st.grown != grown)
		return idle_fail(res, "GROW, %s caches, round %d: the pool "
				 "grew %llu times while the main thread took "
				 "its %u free slots: slots are stranded in "
				 "idle caches", kind, round,
				 (unsigned long long)(st.grown - grown),
				 expect);
	if (k->exhaust == LFP_EXHAUST_NULL && lfp_alloc(r->pool))
		return idle_fail(res, "NULL, %s caches, round %d: an object "
				 "beyond the %u free ones", kind, round,
				 expect);
	return true;
}

/* One round; false with res->msg on failure. */
static bool idle_round_run(const struct idle_case *k, int round, double ms,
			   struct idle_result *res)
{
	struct lfp_config cfg = {
		.obj_size = 64, .capacity = CAP, .cache_size = CACHE,
		.batch_size = BATCH, .exhaust = k->exhaust,
		.max_capacity = k->exhaust == LFP_EXHAUST_GROW ? 2 * CAP : 0,
	};
	struct idle_round r = { .explicit_caches = k->explicit_caches };
	struct idle_worker w[NWORK];
	struct lfp_cache *reserve;
	struct lfpi_census census;
	pthread_t th[NWORK];
	void *objs[2 * CAP];
	uint32_t n, held = 0, got = 0;
	bool ok;

	if (lfp_create(&cfg, &r.pool))
		return idle_fail(res, "lfp_create failed");
	reserve = lfp_cache_create(r.pool);
	pthread_barrier_init(&r.start, NULL, NWORK + 1);
	pthread_barrier_init(&r.idle, NULL, NWORK + 1);
	pthread_barrier_init(&r.done, NULL, NWORK + 1);
	for (int i = 0; i < NWORK; i++) {
		w[i] = (struct idle_worker){ .round = &r, .self = i };
		pthread_create(&th[i], NULL, idle_churn, &w[i]);
	}
	pthread_barrier_wait(&r.start);
	atomic_store(&res->phase, PHASE_CHURN);
	n = idle_drain(&r, reserve, objs, ms);
	pthread_barrier_wait(&r.idle);
	for (int i = 0; i < NWORK; i++)
		held += r.held[i];
	while (n)
		lfp_free(r.pool, objs[--n]);
	atomic_store(&res->phase, PHASE_FINAL);
	ok = idle_take_free(&r, k, round, held, objs, &got, res);
	while (got)
		lfp_free(r.pool, objs[--got]);
	pthread_barrier_wait(&r.done);
	for (int i = 0; i < NWORK; i++)
		pthread_join(th[i], NULL);
	lfp_cache_destroy(reserve);
	pthread_barrier_destroy(&r.start);
	pthread_barrier_destroy(&r.idle);
	pthread_barrier_destroy(&r.done);
	if (ok && lfpi_audit(r.pool, &census, res->msg, sizeof(res->msg)))
		ok = false;
	if (ok && census.live)
		ok = idle_fail(res, "round %d: %llu objects live at the end",
			       round, (unsigned long long)census.live);
	lfp_destroy(r.pool);
	atomic_store(&res->phase, PHASE_DONE);
	return ok;
}

/*
 * An ABORT round runs in a child process, so that an abort can be told
 * apart by where it happened: while taking the free slots it is the bug;
 * in the churn (the main thread preempted inside its steal, with the
 * slots it moves on no list, which the header allows) the round proves
 * nothing and is run again.
 */
static bool idle_round_forked(const struct idle_case *k, int round, double ms,
			      struct idle_result *res, bool *inconclusive)
{
	int status;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(idle_round_run(k, round, ms, res) ? 0 : 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	*inconclusive = false;
	if (WIFEXITED(status))
		return WEXITSTATUS(status) == 0;
	if (atomic_load(&res->phase) == PHASE_CHURN &&
	    WTERMSIG(status) == SIGABRT) {
		*inconclusive = true;
		return true;
	}
	return idle_fail(res,
			 "ABORT, %s caches, round %d: killed by signal %d %s",
			 k->explicit_caches ? "explicit" : "implicit", round,
			 WTERMSIG(status),
			 atomic_load(&res->phase) == PHASE_FINAL
				 ? "while taking exactly the free slots: slots "
				   "are stranded in idle caches"
				 : "outside the churn");
}

/*
 * All threads of a round share one CPU: while the main thread runs, every
 * worker is preempted at some random point, often inside a call, and none
 * runs into the steal's short window in which the slots it moves are on
 * no list (a legitimate exhaustion that GROW and ABORT would act on).
 */
static bool idle_pin(cpu_set_t *saved)
{
	cpu_set_t one;

	if (sched_getaffinity(0, sizeof(*saved), saved))
		return false;
	CPU_ZERO(&one);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, saved)) {
			CPU_SET(cpu, &one);
			break;
		}
	return sched_setaffinity(0, sizeof(one), &one) == 0;
}

START_TEST(idle_caches_give_back)
{
	const struct idle_case *k = &idle_cases[_i];
	int rounds = under_sanitizer() ? 20 : 40, skipped = 0;
	double ms = 5;
	struct idle_result *res;
	bool inconclusive = false, ok, pinned;
	cpu_set_t saved;

	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(res, MAP_FAILED);
	pinned = idle_pin(&saved);
	for (int round = 0; round < rounds; round++) {
		if (k->exhaust == LFP_EXHAUST_ABORT)
			ok = idle_round_forked(k, round, ms, res,
					       &inconclusive);
		else
			ok = idle_round_run(k, round, ms, res);
		ck_assert_msg(ok, "%s", res->msg);
		if (inconclusive) {
			ck_assert_msg(++skipped <= rounds,
				      "ABORT: %d rounds aborted in the churn",
				      skipped);
			round--;
		}
	}
	if (pinned)
		sched_setaffinity(0, sizeof(saved), &saved);
	munmap(res, sizeof(*res));
}
END_TEST

/*
 * Two thieves and two caches, X and Y, whose owner (this thread) is idle
 * with one free slot in each. This thread plays thief A through the
 * internals: it holds X and Y as a thief that found X's owner busy and
 * Y's idle would; thread B allocates, finds both held and waits for Y,
 * the last it saw. A empties Y into the lists, asks X to flush, lets go
 * of both and takes Y's slot after a short random delay, as its own
 * allocation would. B must not return NULL while X's slot sits in an
 * idle cache all along: after its wait it looks at the caches again,
 * and again after a take that found the slots moved gone (slow.c,
 * slow_cache_miss; pool.c, pool_take_hard, without a cache). Before, about one trial in 100 (after the wait B
 * looked at the lists alone: one in 3).
 */
static struct lfp_pool *sw_pool;
static _Atomic int sw_go, sw_stop, sw_finished;
static void *_Atomic sw_result;

static void *sw_thief_b(void *arg)
{
	(void)arg;
	for (;;) {
		/* Spinning, not yielding: B must be waiting for Y soon
		 * after A holds it. */
		while (!atomic_load(&sw_go))
			if (atomic_load(&sw_stop))
				return NULL;
		atomic_store(&sw_go, 0);
		atomic_store(&sw_result, lfp_alloc(sw_pool));
		atomic_store(&sw_finished, 1);
	}
}

/* Back to one free slot in each of x and y, their owner idle. */
static void sw_reset(struct lfp_cache *x, struct lfp_cache *y)
{
	void *o, *p;

	lfp_cache_flush(x);
	lfp_cache_flush(y);
	o = lfp_cache_alloc(x);
	p = lfp_cache_alloc(y);
	ck_assert_ptr_nonnull(o);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(lfp_cache_free(x, o), 0);
	ck_assert_int_eq(lfp_cache_free(y, p), 0);
}

START_TEST(steal_after_wait_sees_idle_cache)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 2,
				  .cache_size = 2, .batch_size = 1 };
	long trials = under_sanitizer() ? 500 : 3000, stranded = 0;
	struct lfp_cache *x, *y;
	unsigned seed = 1;
	pthread_t b;

	ck_assert_int_eq(lfp_create(&cfg, &sw_pool), 0);
	x = lfp_cache_create(sw_pool);
	y = lfp_cache_create(sw_pool);
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(y);
	sw_reset(x, y);
	atomic_store(&sw_stop, 0);
	ck_assert_int_eq(pthread_create(&b, NULL, sw_thief_b, NULL), 0);
	for (long t = 0; t < trials; t++) {
		uint32_t spare = LFPI_NIL, r = 0, idx;
		unsigned d = (unsigned)rand_r(&seed) % 3000;
		void *got;

		ck_assert_uint_eq(lfpi_cache_n(x), 1);
		ck_assert_uint_eq(lfpi_cache_n(y), 1);
		ck_assert(lfpi_cache_claim_steal(x));
		ck_assert(lfpi_cache_claim_steal(y));
		atomic_store(&sw_finished, 0);
		atomic_store(&sw_go, 1);
		/* Time for B to find both held and wait for Y. */
		for (volatile int i = 0; i < 20000; i++)
			;
		lfpi_cache_empty(y, &spare, &r);
		lfpi_depot_put_spare(&sw_pool->depot, spare);
		/* As a thief that found X's owner busy: a request, then let
		 * go (release: pairs with B's claim). */
		atomic_fetch_or_explicit(&x->hot.ctl, LFPI_CTL_FLUSH,
					 memory_order_relaxed);
		atomic_fetch_and_explicit(&x->hot.ctl, ~LFPI_CTL_STEAL,
					  memory_order_release);
		atomic_fetch_and_explicit(&y->hot.ctl,
					  ~(LFPI_CTL_STEAL | LFPI_CTL_FLUSH),
					  memory_order_release);
		for (volatile unsigned i = 0; i < d; i++)
			;
		idx = lfpi_pool_take(sw_pool, &r);
		while (!atomic_load(&sw_finished))
			sched_yield();
		got = atomic_load(&sw_result);
		/* B gave up while X's slot stayed in X, its owner idle. */
		if (!got && lfpi_cache_n(x) == 1 && idx != LFPI_NIL)
			stranded++;
		if (got)
			ck_assert_int_eq(lfp_cache_free(x, got), 0);
		if (idx != LFPI_NIL)
			ck_assert_int_eq(lfp_cache_free(x, lfpi_hand_out(sw_pool,
									 idx)),
					 0);
		sw_reset(x, y);
	}
	atomic_store(&sw_stop, 1);
	pthread_join(b, NULL);
	ck_assert_msg(stranded == 0,
		      "%ld of %ld allocations returned NULL beside an idle "
		      "cache's free slot", stranded, trials);
	lfp_cache_destroy(x);
	lfp_cache_destroy(y);
	lfp_destroy(sw_pool);
}
END_TEST

/*
 * An allocation whose own cache a thief holds: its cache operation reads
 * ctl with STEAL, keeps off the slots and leaves; the pool is empty, so
 * slow_cache_miss, acting on the ctl that operation read, must wait for
 * the thief to let go and look again, not return NULL while its own
 * slots are free all along. This thread is the thief, through the
 * internals: it claims the cache before the owner thread exists, so the
 * owner's first entry always reads STEAL, and lets go once the owner has
 * had time to wait, either as a thief that found the owner busy (a flush
 * request, the slots left where they are) or as one that emptied the
 * cache into the depot. ctl's lasting bits vary: none, LFPI_CTL_BARE (an
 * unchecked pool), LFPI_CTL_SLOW (a strict pool, and a cache made with
 * membarrier off, whose every entry is the seq_cst one).
 */
struct held_case {
	uint32_t flags;
	bool no_membarrier;
	bool emptied; /* the thief empties the cache, or asks for a flush */
};

static const struct held_case held_cases[] = {
	{ 0, false, false },		   { 0, false, true },
	{ LFP_F_UNCHECKED, false, false }, { LFP_F_UNCHECKED, false, true },
	{ LFP_F_STRICT, false, false },	   { LFP_F_STRICT, false, true },
	{ 0, true, false },		   { 0, true, true },
};

#define HELD_NCASES (sizeof(held_cases) / sizeof(held_cases[0]))

struct held_owner {
	struct lfp_cache *c;
	_Atomic int done;
	void *_Atomic got;
};

static void *held_owner_alloc(void *arg)
{
	struct held_owner *o = arg;

	atomic_store(&o->got, lfp_cache_alloc(o->c));
	atomic_store(&o->done, 1);
	return NULL;
}

START_TEST(owner_waits_for_thief_on_own_slots)
{
	const struct held_case *k = &held_cases[_i];
	struct lfp_config cfg = { .obj_size = 64, .capacity = 2,
				  .cache_size = 2, .batch_size = 1,
				  .flags = k->flags };
	int saved_mb, trials = 40, early = 0;
	long nulls = 0;
	struct lfp_pool *pool;
	struct lfp_stats st;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	/* After lfp_create: the library's first one sets it. */
	saved_mb = lfpi_cache_membarrier;
	for (int t = 0; t < trials; t++) {
		struct held_owner o = { 0 };
		uint32_t keep, spare = LFPI_NIL, r = 0;
		struct timespec pause = { 0, 200000 };
		void *a, *b;
		pthread_t th;

		if (k->no_membarrier)
			lfpi_cache_membarrier = 0;
		ck_assert_ptr_nonnull(o.c = lfp_cache_create(pool));
		keep = lfpi_cache_ctl_keep(pool);
		ck_assert_uint_eq(atomic_load(&o.c->hot.ctl), keep);
		if (k->no_membarrier || (k->flags & LFP_F_STRICT))
			ck_assert(keep & LFPI_CTL_SLOW);
		/* Both slots free in the cache, none anywhere else. */
		ck_assert_ptr_nonnull(a = lfp_cache_alloc(o.c));
		ck_assert_ptr_nonnull(b = lfp_cache_alloc(o.c));
		ck_assert_int_eq(lfp_cache_free(o.c, a), 0);
		ck_assert_int_eq(lfp_cache_free(o.c, b), 0);
		ck_assert_uint_eq(lfpi_cache_n(o.c), 2);
		ck_assert(lfpi_stack_is_empty(&pool->free));
		ck_assert(lfpi_depot_is_empty(&pool->depot));

		ck_assert(lfpi_cache_claim_steal(o.c));
		ck_assert_int_eq(pthread_create(&th, NULL, held_owner_alloc,
						&o), 0);
		/* Time for the owner to enter, find STEAL and wait; it must
		 * not be done before we let go. */
		for (int i = 0; i < 10 && !atomic_load(&o.done); i++)
			nanosleep(&pause, NULL);
		if (atomic_load(&o.done))
			early++;
		if (k->emptied) {
			lfpi_cache_empty(o.c, &spare, &r);
			lfpi_depot_put_spare(&pool->depot, spare);
			atomic_fetch_and_explicit(&o.c->hot.ctl,
						  ~(LFPI_CTL_STEAL |
						    LFPI_CTL_FLUSH),
						  memory_order_release);
		} else {
			/* As a thief that found the owner busy. */
			atomic_fetch_or_explicit(&o.c->hot.ctl, LFPI_CTL_FLUSH,
						 memory_order_relaxed);
			atomic_fetch_and_explicit(&o.c->hot.ctl,
						  ~LFPI_CTL_STEAL,
						  memory_order_release);
		}
		pthread_join(th, NULL);
		if (!atomic_load(&o.got))
			nulls++;
		else
			ck_assert_int_eq(lfp_cache_free(o.c, o.got), 0);
		lfp_cache_destroy(o.c);
		lfpi_cache_membarrier = saved_mb;
	}
	lfp_stats(pool, &st);
	ck_assert_msg(nulls == 0 && early == 0 && st.failed_allocs == 0,
		      "flags %#x%s, thief %s: %ld of %d allocations returned "
		      "NULL (%d before the thief let go) while their own "
		      "cache held both free slots", k->flags,
		      k->no_membarrier ? ", no membarrier" : "",
		      k->emptied ? "emptied the cache" : "asked for a flush",
		      nulls, trials, early);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("idle");
	TCase *tc = tcase_create("idle");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, idle_caches_give_back, 0, IDLE_NCASES);
	tcase_add_test(tc, steal_after_wait_sees_idle_cache);
	tcase_add_loop_test(tc, owner_waits_for_thief_on_own_slots, 0,
			    HELD_NCASES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
