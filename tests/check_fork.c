/* SPDX-License-Identifier: MIT */
/*
 * fork while other threads use the pools. The child has only the thread
 * that forked: whatever the others held at that moment (objects, their
 * caches, a lock, the free list taken aside by a trim) is theirs and gone
 * with them. Everything else must work in the child: allocation, trim,
 * reserve, caches, stats, destroy, with no hang.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

enum {
	CAP = 1024,        /* the NULL pool */
	GCAP = 256,        /* the growable pool, at first */
	GMAX = 4096,       /* ... and at most */
	CACHE = 16,
	HOLD = 8,          /* objects a churning thread holds at most */
	NTHREADS = 3,
	CHILD_SECONDS = 10,
	/*
	 * What the child must get from the NULL pool: all but what the other
	 * threads may have had at the fork, in hand (HOLD each), in a cache,
	 * and in flight on a chain between a cache and the free list (another
	 * cache's worth each, at most).
	 */
	LEAST = CAP - 2 * HOLD - 2 * NTHREADS * CACHE,
};

static struct lfp_pool *fixed, *growing;
static _Atomic int stop;

static void *take(struct lfp_pool *pool, struct lfp_cache *c)
{
	return c ? lfp_cache_alloc(c) : lfp_alloc(pool);
}

static void give(struct lfp_pool *pool, struct lfp_cache *c, void *obj)
{
	if (c)
		lfp_cache_free(c, obj);
	else
		lfp_free(pool, obj);
}

/* Take up to HOLD objects from each pool and give them back. */
static void churn(struct lfp_cache *cf, struct lfp_cache *cg)
{
	void *f[HOLD], *g[HOLD];
	int nf, ng;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (nf = 0; nf < HOLD && (f[nf] = take(fixed, cf)); nf++)
			;
		for (ng = 0; ng < HOLD && (g[ng] = take(growing, cg)); ng++)
			;
		while (nf--)
			give(fixed, cf, f[nf]);
		while (ng--)
			give(growing, cg, g[ng]);
	}
}

static void *churn_implicit(void *arg)
{
	(void)arg;
	churn(NULL, NULL);
	return NULL;
}

static void *churn_explicit(void *arg)
{
	struct lfp_cache *cf = lfp_cache_create(fixed);
	struct lfp_cache *cg = lfp_cache_create(growing);

	(void)arg;
	churn(cf, cg);
	lfp_cache_destroy(cf);
	lfp_cache_destroy(cg);
	return NULL;
}

/* Trim both pools and reserve more and more of the growable one. */
static void *trim_reserve(void *arg)
{
	uint32_t n = GCAP;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lfp_trim(growing);
		lfp_reserve(growing, n);
		lfp_trim(fixed);
		n = n < GMAX ? n + 1 : GCAP;
	}
	return NULL;
}

/* What the child is doing, for the parent to name a hang. */
enum child_step {
	STEP_START, STEP_ALLOC, STEP_TRIM, STEP_RESERVE, STEP_CACHE,
	STEP_STATS, STEP_GROW, STEP_DESTROY, STEP_DONE, STEP_N
};

static const char *const step_name[STEP_N] = {
	"starting", "allocating the NULL pool dry", "lfp_trim",
	"lfp_reserve", "an explicit cache", "lfp_stats",
	"allocating from the growable pool", "lfp_destroy", "done",
};

struct child_report {
	_Atomic int step;
	uint32_t got; /* objects the child got from the NULL pool */
};

static int child_stats_ok(struct lfp_pool *pool)
{
	struct lfp_stats st;

	lfp_stats(pool, &st);
	return st.free + st.cached + st.live + st.deferred == st.capacity;
}

/* The child's checks; its exit status is the step that failed. */
static int child_run(struct child_report *rep)
{
	static void *objs[CAP + 1];
	uint32_t n;
	struct lfp_cache *c;
	void *p;

	atomic_store(&rep->step, STEP_ALLOC);
	for (n = 0; n <= CAP && (objs[n] = lfp_alloc(fixed)); n++)
		;
	rep->got = n;
	if (n < LEAST || n > CAP)
		return STEP_ALLOC;
	while (n)
		if (lfp_free(fixed, objs[--n]))
			return STEP_ALLOC;
	atomic_store(&rep->step, STEP_TRIM);
	lfp_trim(fixed);
	lfp_trim(growing);
	atomic_store(&rep->step, STEP_RESERVE);
	if (lfp_reserve(growing, GMAX / 2))
		return STEP_RESERVE;
	atomic_store(&rep->step, STEP_CACHE);
	if (!(c = lfp_cache_create(fixed)) || !(p = lfp_cache_alloc(c)) ||
	    lfp_cache_free(c, p))
		return STEP_CACHE;
	lfp_cache_destroy(c);
	atomic_store(&rep->step, STEP_STATS);
	if (!child_stats_ok(fixed) || !child_stats_ok(growing))
		return STEP_STATS;
	atomic_store(&rep->step, STEP_GROW);
	for (n = 0; n < 2 * GCAP; n++)
		if (!(objs[n] = lfp_alloc(growing)))
			return STEP_GROW;
	atomic_store(&rep->step, STEP_DESTROY);
	lfp_destroy(fixed);
	lfp_destroy(growing);
	atomic_store(&rep->step, STEP_DONE);
	return 0;
}

/* Describe what went wrong with child i, if anything, in msg. */
static bool child_failed(int status, struct child_report *rep, int i,
			 int forks, char *msg, size_t len)
{
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;

	if (WIFSIGNALED(status))
		snprintf(msg, len, "child %d of %d %s while %s", i + 1, forks,
			 WTERMSIG(status) == SIGALRM
				 ? "hung (killed after 10 s)"
				 : strsignal(WTERMSIG(status)),
			 step_name[atomic_load(&rep->step)]);
	else if (code == STEP_ALLOC)
		snprintf(msg, len, "child %d of %d got %u objects from a pool "
			 "of %d, not at least %d (the others held at most %d "
			 "objects, and %d threads' caches of %d)", i + 1, forks,
			 rep->got, CAP, LEAST, 2 * HOLD, NTHREADS, CACHE);
	else if (code)
		snprintf(msg, len, "child %d of %d failed at %s", i + 1, forks,
			 step_name[code < STEP_N ? code : 0]);
	return msg[0] != 0;
}

START_TEST(fork_while_busy)
{
	struct lfp_config cf = { .obj_size = 64, .capacity = CAP,
				 .cache_size = CACHE };
	struct lfp_config cg = { .obj_size = 64, .capacity = GCAP,
				 .cache_size = CACHE,
				 .exhaust = LFP_EXHAUST_GROW,
				 .max_capacity = GMAX };
	void *(*const fn[NTHREADS])(void *) = { churn_implicit, churn_explicit,
						trim_reserve };
	bool slow = under_sanitizer() || under_emulator();
	int forks = slow ? 100 : 200, status;
	struct child_report *rep;
	pthread_t th[NTHREADS];
	char msg[256] = "";
	pid_t pid;

	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(rep, MAP_FAILED);
	ck_assert_int_eq(lfp_create(&cf, &fixed), 0);
	ck_assert_int_eq(lfp_create(&cg, &growing), 0);
	atomic_store(&stop, 0);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, fn[i], NULL), 0);
	for (int i = 0; i < forks; i++) {
		memset(rep, 0, sizeof(*rep));
		fflush(NULL);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			/* Check's own SIGALRM handler would kill the test. */
			signal(SIGALRM, SIG_DFL);
			alarm(CHILD_SECONDS);
			_exit(child_run(rep));
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		if (child_failed(status, rep, i, forks, msg, sizeof(msg)))
			break;
	}
	/* The threads stop before any verdict, so that none outlives it. */
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_msg(!msg[0], "%s", msg);
	expect_accounted(fixed, 0);
	expect_accounted(growing, 0);
	lfp_destroy(fixed);
	lfp_destroy(growing);
	munmap(rep, sizeof(*rep));
}
END_TEST

/*
 * While fork is prepared lfpool holds every cache, so that each is whole
 * in the child; an allocation whose own cache holds every free slot must
 * wait for the fork then, not report the pool exhausted (NULL), grow it or
 * abort. A fork is over too fast to hit that window reliably, so this test
 * holds it open itself, 50 ms at a time, with the handlers' own calls.
 */
static struct lfp_pool *own_pool;
static _Atomic uint64_t own_nulls, own_rounds;

static void *own_cache_worker(void *arg)
{
	void *a, *b, *all[64];

	(void)arg;
	/* Take every slot once, so none is left fresh: all 64 end up in
	 * this thread's cache. */
	ck_assert_uint_eq(lfp_alloc_bulk(own_pool, all, 64), 64);
	ck_assert_uint_eq(lfp_free_bulk(own_pool, all, 64), 64);
	while (!atomic_load(&stop)) {
		a = lfp_alloc(own_pool);
		b = lfp_alloc(own_pool);
		if (!a || !b)
			atomic_fetch_add(&own_nulls, 1);
		lfp_free(own_pool, a);
		lfp_free(own_pool, b);
		atomic_fetch_add(&own_rounds, 1);
	}
	return NULL;
}

START_TEST(fork_keeps_own_cache_usable)
{
	/* Every slot fits in one thread's cache: the list stays empty. */
	struct lfp_config c = { .obj_size = 64, .capacity = 64,
				.cache_size = 64, .batch_size = 32,
				.exhaust = _i ? LFP_EXHAUST_GROW
					      : LFP_EXHAUST_NULL,
				.max_capacity = _i ? 128 : 0 };
	struct lfp_stats st;
	uint64_t before;
	pthread_t th;

	atomic_store(&own_nulls, 0);
	ck_assert_int_eq(lfp_create(&c, &own_pool), 0);
	atomic_store(&stop, 0);
	atomic_store(&own_rounds, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, own_cache_worker, NULL), 0);
	while (atomic_load(&own_rounds) < 1000)
		sched_yield();
	for (int i = 0; i < 5; i++) {
		pthread_mutex_lock(&own_pool->grow_lock);
		lfpi_cache_fork_prepare(own_pool);
		/* The worker waits, or goes on through the list with the
		 * objects it held, which its releases put there meanwhile. */
		usleep(50000);
		lfpi_cache_fork_parent(own_pool);
		pthread_mutex_unlock(&own_pool->grow_lock);
		before = atomic_load(&own_rounds);
		while (atomic_load(&own_rounds) < before + 1000)
			sched_yield();
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	lfp_stats(own_pool, &st);
	ck_assert_msg(atomic_load(&own_nulls) == 0 && st.grown == 0,
		      "%llu allocations failed and the pool grew %llu times "
		      "while its free slots sat in the allocating thread's "
		      "own cache", (unsigned long long)atomic_load(&own_nulls),
		      (unsigned long long)st.grown);
	lfp_destroy(own_pool);
}
END_TEST

/*
 * The program's own atfork handlers run while the pools are whole, even
 * when registered before its first pool (lfpool registers its own when it
 * is loaded): a prepare handler that trims the pool and uses a cache (to
 * shrink what the child copies, say) must not hang.
 */
static struct lfp_pool *app_pool;
static _Atomic uint32_t app_prepared;

static void app_prepare(void)
{
	struct lfp_cache *c;

	if (!app_pool)
		return;
	lfp_trim(app_pool);
	c = lfp_cache_create(app_pool);
	lfp_cache_free(c, lfp_cache_alloc(c));
	lfp_cache_flush(c);
	lfp_cache_destroy(c);
	lfp_free(app_pool, lfp_alloc(app_pool));
	atomic_fetch_add(&app_prepared, 1);
}

static void app_child(void)
{
	if (app_pool)
		lfp_free(app_pool, lfp_alloc(app_pool));
}

START_TEST(app_handlers_may_use_pools)
{
	struct lfp_config c = { .obj_size = 4096, .capacity = 256 };
	struct lfp_pool *pool;
	void *objs[256];
	int status;
	pid_t pid;

	ck_assert_int_eq(pthread_atfork(app_prepare, NULL, app_child), 0);
	ck_assert_int_eq(lfp_create(&c, &app_pool), 0);
	ck_assert_uint_eq(lfp_alloc_bulk(app_pool, objs, 256), 256);
	ck_assert_uint_eq(lfp_free_bulk(app_pool, objs, 256), 256);
	/* The test hangs here if the handlers deadlock: Check's timeout. */
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(lfp_alloc_bulk(app_pool, objs, 256) == 256 ? 0 : 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child could not allocate the whole pool (status %#x)",
		      status);
	ck_assert_uint_eq(atomic_load(&app_prepared), 1);
	pool = app_pool;
	app_pool = NULL; /* the handlers stay registered: make them no-ops */
	lfp_destroy(pool);
}
END_TEST

/*
 * A signal handler may allocate through an explicit cache of its own
 * (lfpool.h). If it interrupts a thread in the middle of an lfp call while
 * another thread forks, neither may wait for the other for good: the
 * prepare never waits for an owner, and the handler waits for a fork
 * only a bounded time.
 */
static struct lfp_pool *sig_pool;
static struct lfp_cache *sig_cache;
static _Atomic uint64_t sig_runs, sig_nulls, sig_worker_nulls;

static void sig_handler(int sig)
{
	void *o = lfp_cache_alloc(sig_cache);

	(void)sig;
	if (o)
		lfp_cache_free(sig_cache, o);
	else
		atomic_fetch_add(&sig_nulls, 1);
	atomic_fetch_add(&sig_runs, 1);
}

static void *sig_worker(void *arg)
{
	void *o = arg;

	while (!atomic_load(&stop)) {
		lfp_free(sig_pool, o);
		if (!(o = lfp_alloc(sig_pool))) {
			atomic_fetch_add(&sig_worker_nulls, 1);
			break;
		}
	}
	return NULL;
}

/* Set once the worker exists: the sender is made first (see below). */
static _Atomic int sig_worker_made;

static void *sig_sender(void *arg)
{
	pthread_t target;

	while (!atomic_load(&sig_worker_made))
		sched_yield();
	target = *(pthread_t *)arg;
	while (!atomic_load(&stop)) {
		pthread_kill(target, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

START_TEST(fork_against_signal_handler)
{
	struct lfp_config c = { .obj_size = 64, .capacity = 4, .cache_size = 4 };
	bool slow = under_sanitizer() || under_emulator();
	int forks = slow ? 300 : 3000, status;
	uint64_t longest = 0;
	struct sigaction sa = { .sa_handler = sig_handler };
	pthread_t worker, sender;
	void *o[4];
	pid_t pid;

	ck_assert_int_eq(lfp_create(&c, &sig_pool), 0);
	sig_cache = lfp_cache_create(sig_pool);
	ck_assert_ptr_nonnull(sig_cache);
	for (int i = 0; i < 4; i++)
		ck_assert_ptr_nonnull(o[i] = lfp_cache_alloc(sig_cache));
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(lfp_cache_free(sig_cache, o[i]), 0);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&stop, 0);
	atomic_store(&sig_worker_made, 0);
	/* The worker, which finds its cache through thread-local storage,
	 * is the thread made last: under qemu-i386 a thread that returns
	 * from a signal handler runs on the TLS of the thread made last
	 * (tests/emulator.test), which is then its own. */
	ck_assert_int_eq(pthread_create(&sender, NULL, sig_sender, &worker), 0);
	ck_assert_int_eq(pthread_create(&worker, NULL, sig_worker, o[3]), 0);
	atomic_store(&sig_worker_made, 1);
	/* A hang fails the test by Check's timeout. */
	for (int i = 0; i < forks; i++) {
		uint64_t t0 = test_now_ns(), took;

		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(0);
		took = test_now_ns() - t0;
		longest = took > longest ? took : longest;
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	}
	atomic_store(&stop, 1);
	pthread_join(sender, NULL);
	pthread_join(worker, NULL);
	signal(SIGUSR1, SIG_IGN);
	ck_assert_uint_gt(atomic_load(&sig_runs), 0);
	/* The worker's one slot is free whenever it allocates; it may find
	 * it held by a fork (in its cache), and then waits for that fork,
	 * 20 ms at most (lfpool(7), FORK), before it says exhausted. The
	 * fork holds the caches within fork(): if no fork() took that long,
	 * no wait gave up. (Under an emulator a fork may take longer.) */
	if (longest <= LFPI_CACHE_FORK_WAIT_MS * UINT64_C(1000000))
		ck_assert_uint_eq(atomic_load(&sig_worker_nulls), 0);
	else if (atomic_load(&sig_worker_nulls))
		printf("fork_against_signal_handler: the longest fork took "
		       "%.1f ms, over the 20 ms a wait for it lasts: the "
		       "worker's NULL is allowed\n",
		       (double)longest / 1e6);
	lfp_cache_destroy(sig_cache);
	lfp_destroy(sig_pool);
}
END_TEST

/*
 * A magazine is in one place at a time: on one of the depot's stacks or a
 * cache's spare. Threads make explicit caches, load a magazine (which
 * becomes the cache's spare) and destroy the caches, which gives the
 * spare back; the child of a fork that lands in lfp_cache_destroy must
 * not find the spare both on the empty stack and still in the cache,
 * where the next owner of the cache (or its destroy) uses it again.
 */
static struct lfp_pool *mag_pool;
static unsigned char mag_seen[256];
static int mag_dup;

static void *mag_worker(void *arg)
{
	struct lfp_cache *c;
	void *o[2];

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (!(c = lfp_cache_create(mag_pool)))
			continue;
		o[0] = lfp_cache_alloc(c); /* a refill: the magazine is spare */
		o[1] = lfp_cache_alloc(c);
		lfp_cache_destroy(c);
		for (int i = 0; i < 2; i++)
			if (o[i])
				lfp_free(mag_pool, o[i]);
	}
	return NULL;
}

static int mag_mark(uint32_t m, void *arg)
{
	(void)arg;
	if (m >= sizeof(mag_seen) || mag_seen[m]++) {
		mag_dup = (int)m;
		return 1;
	}
	return 0;
}

/* In the child: 0, or 1 + the first magazine found in two places. */
static int mag_child(void)
{
	struct lfpi_depot *d = &mag_pool->depot;
	struct lfp_cache *c;

	memset(mag_seen, 0, sizeof(mag_seen));
	if (lfpi_stack_walk(&d->full, mag_mark, NULL) ||
	    lfpi_stack_walk(&d->empty, mag_mark, NULL))
		return 1 + mag_dup;
	for (c = atomic_load(&mag_pool->caches); c; c = c->reg_next)
		if (c->spare != LFPI_NIL && mag_mark(c->spare, NULL))
			return 1 + mag_dup;
	return 0;
}

START_TEST(fork_keeps_magazines_single)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 64,
				  .cache_size = 4, .batch_size = 2 };
	/* Under an emulator each fork takes 20-60 ms (qemu copies its
	 * translated code's tables into the child): 300 there. */
	int forks = under_emulator() ? 300 : under_sanitizer() ? 1000 : 4000;
	int status = 0, i;
	pthread_t th[2];

	ck_assert_int_eq(lfp_create(&cfg, &mag_pool), 0);
	ck_assert_uint_le(mag_pool->depot.nmags, sizeof(mag_seen));
	atomic_store(&stop, 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, mag_worker, NULL), 0);
	for (i = 0; i < forks && !status; i++) {
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(mag_child());
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	}
	atomic_store(&stop, 1);
	for (int j = 0; j < 2; j++)
		pthread_join(th[j], NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "fork %d of %d: magazine %d in two places in the child",
		      i, forks, WIFEXITED(status) ? WEXITSTATUS(status) - 1 : -1);
	expect_accounted(mag_pool, 0);
	lfp_destroy(mag_pool);
}
END_TEST

/*
 * fork from a signal handler. lfpool.h's fork section: a pool stays
 * usable across fork in a multithreaded program, and an allocation waits
 * for a fork 20 ms at most. POSIX.1-2008 lists fork as async-signal-safe,
 * and the handler below calls nothing else of lfpool's or the C
 * library's but waitpid. The pool (16 slots, caches of 4 in magazines of 2) is
 * always nearly exhausted, so allocations keep emptying idle caches into
 * it; a handler that interrupts such a steal forks while the thread
 * holds the caches it is emptying. That fork, or one another thread
 * started meanwhile, must not wait for those caches for good: only the
 * interrupted steal lets them go.
 * _i = 0: four threads allocate and release through their implicit
 * caches, and each in turn gets a signal every half millisecond.
 * _i = 1: one thread, which empties idle explicit caches of its own
 * (as a worker with several caches does) and is the one signalled.
 */
enum { SF_CAP = 16, SF_WORKERS = 4, SF_HOLD = 4, SF_PARKED = 3 };

static struct lfp_pool *sf_pool;
static _Atomic uint32_t sf_forks, sf_ready;

static void sf_fork(int sig)
{
	int saved = errno;
	pid_t pid = fork();

	(void)sig;
	if (pid == 0)
		_exit(0);
	if (pid > 0 && waitpid(pid, NULL, 0) == pid)
		atomic_fetch_add(&sf_forks, 1);
	errno = saved;
}

/* Take up to half the pool through the implicit cache (four threads want
 * twice what there is), then give it back. */
static void *sf_implicit(void *arg)
{
	void *held[SF_CAP / 2];
	int n;

	(void)arg;
	/* The first call sets the thread's key (pthread_setspecific may
	 * malloc): before any signal comes. */
	lfp_free(sf_pool, lfp_alloc(sf_pool));
	atomic_fetch_add(&sf_ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (n = 0; n < SF_CAP / 2 && (held[n] = lfp_alloc(sf_pool));
		     n++)
			;
		while (n)
			lfp_free(sf_pool, held[--n]);
	}
	return NULL;
}

/*
 * Allocate the whole pool through one cache, then park the objects in
 * SF_PARKED idle caches, a cache's worth each, and the rest in the first:
 * its next refill finds the pool empty and steals the parked ones.
 */
static void *sf_explicit(void *arg)
{
	struct lfp_cache *c[1 + SF_PARKED];
	void *objs[SF_CAP];
	int n;

	(void)arg;
	for (int i = 0; i <= SF_PARKED; i++)
		ck_assert_ptr_nonnull(c[i] = lfp_cache_create(sf_pool));
	atomic_fetch_add(&sf_ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (n = 0; n < SF_CAP; n++)
			if (!(objs[n] = lfp_cache_alloc(c[0])))
				break;
		for (int i = 0; i < n; i++)
			lfp_cache_free(c[(i / SF_HOLD + 1) % (1 + SF_PARKED)],
				       objs[i]);
	}
	for (int i = 0; i <= SF_PARKED; i++)
		lfp_cache_destroy(c[i]);
	return NULL;
}

struct sf_targets {
	pthread_t *th;
	int n;
};

/* Signal the targets in turn, every half millisecond. */
static void *sf_sender(void *arg)
{
	const struct sf_targets *t = arg;
	const struct timespec gap = { 0, 500000 };

	for (int k = 0; !atomic_load_explicit(&stop, memory_order_relaxed);
	     k++) {
		pthread_kill(t->th[k % t->n], SIGUSR1);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

START_TEST(fork_in_handler_during_steal)
{
	struct lfp_config c = { .obj_size = 64, .capacity = SF_CAP,
				.cache_size = SF_HOLD, .batch_size = 2 };
	struct sigaction sa = { .sa_handler = sf_fork }, old;
	int nw = _i ? 1 : SF_WORKERS;
	bool slow = under_sanitizer() || under_emulator();
	uint32_t want = slow ? 100 : 300;
	struct sf_targets targets;
	pthread_t th[SF_WORKERS], sender;
	struct test_watchdog wd;
	uint64_t until;

	ck_assert_int_eq(lfp_create(&c, &sf_pool), 0);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
	atomic_store(&stop, 0);
	atomic_store(&sf_forks, 0);
	atomic_store(&sf_ready, 0);
	test_watchdog_start(&wd, 5, "forks from signal handlers during steals");
	for (int i = 0; i < nw; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL,
						_i ? sf_explicit : sf_implicit,
						NULL), 0);
	while (atomic_load(&sf_ready) < (uint32_t)nw)
		sched_yield();
	targets = (struct sf_targets){ th, nw };
	ck_assert_int_eq(pthread_create(&sender, NULL, sf_sender, &targets), 0);
	until = test_now_ns() + 1500000000u;
	while (atomic_load(&sf_forks) < want && test_now_ns() < until)
		usleep(1000);
	atomic_store(&stop, 1);
	pthread_join(sender, NULL);
	for (int i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	test_watchdog_stop(&wd);
	sigaction(SIGUSR1, &old, NULL);
	ck_assert_uint_gt(atomic_load(&sf_forks), 0);
	lfp_destroy(sf_pool);
}
END_TEST

/*
 * An atfork handler registered before lfpool's that takes a lock of the
 * program's and calls nothing of lfpool's: lfpool.h forbids such
 * handlers only to call lfpool. Its prepare runs after lfpool's, so
 * while it waits for the lock every cache is held by the fork. The
 * thread that holds the lock meanwhile calls lfp_cache_flush (or
 * lfp_cache_destroy, or exits with an implicit cache), which "blocks
 * ... while fork is being prepared": the fork must not wait for it in
 * turn, or neither ends. This is a worker that flushes its cache before
 * it lets its queue's lock go, while another thread forks.
 * _i: 0 lfp_cache_flush, 1 lfp_cache_destroy, 2 the exit of a thread
 * with an implicit cache, which the lock's holder joins.
 */
static pthread_mutex_t early_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int early_armed;
static _Thread_local bool early_held; /* the forking thread took it */

static void early_prepare(void)
{
	if ((early_held = atomic_load(&early_armed)))
		pthread_mutex_lock(&early_lock);
}

static void early_after(void)
{
	if (early_held)
		pthread_mutex_unlock(&early_lock);
	early_held = false;
}

/*
 * Prepare handlers run in the reverse order of registration; lfpool
 * registers its own in a constructor of default priority. This one runs
 * before it (priorities run in increasing order, the default last), so
 * early_prepare runs after lfpool's prepare.
 */
__attribute__((constructor(101))) static void early_register(void)
{
	if (pthread_atfork(early_prepare, early_after, early_after))
		abort();
}

static struct lfp_pool *early_pool;
static _Atomic uint64_t early_rounds;

/* Work for 20 us under the lock, so that forks often find it held. */
static void early_work(void)
{
	uint64_t until = test_now_ns() + 20000;

	while (test_now_ns() < until)
		;
}

static void *early_exiting(void *arg)
{
	(void)arg;
	lfp_free(early_pool, lfp_alloc(early_pool));
	early_work();
	return NULL; /* the key's destructor gives the cache back */
}

static void *early_holder(void *arg)
{
	struct lfp_cache *c = NULL;
	int mode = (int)(intptr_t)arg;
	pthread_t t;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_mutex_lock(&early_lock);
		if (mode == 2) {
			ck_assert_int_eq(pthread_create(&t, NULL, early_exiting,
							NULL), 0);
			pthread_join(t, NULL);
		} else {
			if (!c)
				ck_assert_ptr_nonnull(
					c = lfp_cache_create(early_pool));
			lfp_cache_free(c, lfp_cache_alloc(c));
			early_work();
			if (mode == 1) {
				lfp_cache_destroy(c);
				c = NULL;
			} else {
				lfp_cache_flush(c);
			}
		}
		pthread_mutex_unlock(&early_lock);
		atomic_fetch_add(&early_rounds, 1);
		usleep(50); /* let the forking thread take the lock */
	}
	lfp_cache_destroy(c);
	return NULL;
}

START_TEST(fork_against_flush_under_app_lock)
{
	struct lfp_config c = { .obj_size = 64, .capacity = 256 };
	bool slow = under_sanitizer() || under_emulator();
	int forks = slow ? 50 : 200, status, i;
	struct test_watchdog wd;
	uint64_t until;
	pthread_t th;
	pid_t pid;

	ck_assert_int_eq(lfp_create(&c, &early_pool), 0);
	atomic_store(&stop, 0);
	atomic_store(&early_rounds, 0);
	atomic_store(&early_armed, 1);
	test_watchdog_start(&wd, 5, "fork against a flush under the "
				    "application's lock");
	ck_assert_int_eq(pthread_create(&th, NULL, early_holder,
					(void *)(intptr_t)_i), 0);
	while (atomic_load(&early_rounds) == 0)
		sched_yield();
	until = test_now_ns() + 1500000000u;
	for (i = 0; i < forks && test_now_ns() < until; i++) {
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	test_watchdog_stop(&wd);
	atomic_store(&early_armed, 0);
	lfp_destroy(early_pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fork");
	TCase *tc = tcase_create("fork");
	TCase *rc = tcase_create("regress");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, fork_while_busy);
	tcase_add_loop_test(tc, fork_keeps_own_cache_usable, 0, 2);
	tcase_add_test(tc, app_handlers_may_use_pools);
	tcase_add_test(tc, fork_against_signal_handler);
	tcase_add_test(tc, fork_keeps_magazines_single);
	suite_add_tcase(s, tc);
	/* Regressions: promises of lfpool.h an adversarial review broke. */
	tcase_set_timeout(rc, 30);
	tcase_add_loop_test(rc, fork_in_handler_during_steal, 0, 2);
	tcase_add_loop_test(rc, fork_against_flush_under_app_lock, 0, 3);
	suite_add_tcase(s, rc);
	return test_run(s);
}
