/* SPDX-License-Identifier: MIT */
/*
 * Async-signal safety. For a pool with the NULL exhaustion policy and no
 * hooks, a signal handler may allocate and release through an explicit
 * cache that only it uses (lfp_cache_alloc, lfp_cache_free,
 * lfp_cache_free_handle), or with lfp_alloc and lfp_free if the pool has
 * LFP_F_NO_CACHE, and may call the read-only queries, whatever call of
 * the same pool it interrupted.
 *
 * A worker allocates, stamps, checks and releases objects while another
 * thread interrupts it with signals as fast as it can; the handler does
 * the same with its own objects. An owner word per slot catches a slot
 * handed out twice, stamps catch an object written by two owners, and the
 * census at the end catches a slot lost.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

enum { WORKER = 1, HANDLER = 2, MAX_OBJS = 32 };

struct sig_case {
	uint32_t capacity;
	uint32_t cache_size;
	bool no_cache;        /* lfp_alloc/lfp_free on an uncached pool */
	int worker_objs;      /* the worker holds up to this many */
	int handler_objs;     /* the handler takes up to this many */
	const char *name;
	bool unchecked;       /* LFP_F_UNCHECKED too: a bare pool, whose
				 lfp_alloc/lfp_free are one CAS inline;
				 no handles */
};

static const struct sig_case sig_cases[] = {
	{ 1024, 32, false, 24, 3, "explicit caches", false },
	{ 1024, 0, true, 24, 3, "no cache", false },
	/* The worker holds most of the pool: the handler's allocations
	 * find it empty and steal from the worker's cache, whatever the
	 * worker was doing, and the worker steals from the handler's. */
	{ 32, 8, false, 28, 6, "explicit caches, small pool", false },
	{ 32, 0, true, 28, 6, "no cache, small pool", false },
	/* The handler's pop or push may land between the interrupted
	 * inline pop's load and CAS, or push's link and CAS. */
	{ 1024, 0, true, 24, 3, "bare", true },
	{ 32, 0, true, 28, 6, "bare, small pool", true },
};

#define SIG_NCASES (sizeof(sig_cases) / sizeof(sig_cases[0]))

/* A stamp: who owns the object, and a check word derived from it. */
struct stamp {
	uint32_t owner;
	uint32_t seq;
	uint64_t check;
	char fill[48];
};

static const struct sig_case *sig_case;
static struct lfp_pool *sig_pool;
static struct lfp_cache *cache_worker, *cache_handler;
static _Atomic uint32_t *owners;
static _Atomic uint64_t handler_runs, handler_objs, errors;
static _Atomic int stop;
static const char *first_error;

static void sig_error(const char *what)
{
	const char *none = NULL;

	atomic_fetch_add(&errors, 1);
	/* Keep the first message; a lock-free CAS is signal-safe. */
	__atomic_compare_exchange_n(&first_error, &none, what, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static uint64_t stamp_check(uint32_t owner, uint32_t seq)
{
	return ~((uint64_t)owner << 32 | seq) * UINT64_C(0x9e3779b97f4a7c15);
}

/* Claim obj's slot for `who` and stamp it; false if someone has it. */
static bool take(void *obj, uint32_t who, uint32_t seq)
{
	uint32_t idx = lfp_index_of(sig_pool, obj), none = 0;
	struct stamp *s = obj;

	if (idx == LFP_NO_INDEX) {
		sig_error("an allocation returned a pointer that is not an "
			  "object of the pool");
		return false;
	}
	if (!atomic_compare_exchange_strong(&owners[idx], &none, who)) {
		sig_error("a slot was handed out while another owner held it");
		return false;
	}
	s->owner = who;
	s->seq = seq;
	s->check = stamp_check(who, seq);
	memset(s->fill, (int)(seq & 0xff), sizeof(s->fill));
	return true;
}

static void check_stamp(void *obj, uint32_t who, uint32_t seq)
{
	struct stamp *s = obj;

	if (s->owner != who || s->seq != seq ||
	    s->check != stamp_check(who, seq))
		sig_error("an object's stamp was overwritten while its owner "
			  "held it");
	for (size_t i = 0; i < sizeof(s->fill); i++)
		if (s->fill[i] != (char)(seq & 0xff)) {
			sig_error("an object's bytes were overwritten while "
				  "its owner held it");
			break;
		}
}

/* Give up obj's slot: the owner word first, then the pool. */
static void drop(void *obj)
{
	atomic_store(&owners[lfp_index_of(sig_pool, obj)], 0);
}

static void *sig_alloc(struct lfp_cache *c)
{
	return c ? lfp_cache_alloc(c) : lfp_alloc(sig_pool);
}

static int sig_free(struct lfp_cache *c, void *obj)
{
	return c ? lfp_cache_free(c, obj) : lfp_free(sig_pool, obj);
}

static void on_signal(int sig)
{
	static uint32_t seq; /* only ever this handler: no nesting */
	int saved = errno;
	void *objs[MAX_OBJS];
	lfp_handle h[MAX_OBJS];
	struct lfp_stats st;
	int n, i;

	(void)sig;
	seq++;
	for (n = 0; n < sig_case->handler_objs &&
		    (objs[n] = sig_alloc(cache_handler));
	     n++) {
		if (!take(objs[n], HANDLER, seq + (uint32_t)n))
			break;
		h[n] = sig_case->unchecked ? LFP_NULL_HANDLE :
					     lfp_handle_of(sig_pool, objs[n]);
	}
	for (i = 0; i < n; i++) {
		uint32_t idx = lfp_index_of(sig_pool, objs[i]);

		check_stamp(objs[i], HANDLER, seq + (uint32_t)i);
		if ((!sig_case->unchecked &&
		     lfp_resolve(sig_pool, h[i]) != objs[i]) ||
		    !lfp_is_live(sig_pool, objs[i]) ||
		    !lfp_owns(sig_pool, objs[i]) ||
		    lfp_at(sig_pool, idx) != objs[i] ||
		    idx >= lfp_extent(sig_pool))
			sig_error("a query in the handler gave a wrong answer "
				  "about a live object");
	}
	for (i = 0; i < n; i++) {
		drop(objs[i]);
		/* Every other one by handle, when a cache takes it. */
		if ((cache_handler && i % 2) ?
			    lfp_cache_free_handle(cache_handler, h[i]) :
			    sig_free(cache_handler, objs[i]))
			sig_error("the handler could not release its object");
		else if (!sig_case->unchecked &&
			 lfp_resolve(sig_pool, h[i]) != NULL)
			sig_error("a released object's handle still resolves");
	}
	if (seq % 64 == 0)
		lfp_stats(sig_pool, &st);
	atomic_fetch_add(&handler_objs, (uint64_t)n);
	atomic_fetch_add(&handler_runs, 1);
	errno = saved;
}

/* Allocate, stamp, check and release, in batches, until told to stop. */
static void *sig_worker(void *arg)
{
	const struct sig_case *k = arg;
	void *objs[MAX_OBJS];
	uint32_t seq = 0;
	sigset_t usr1;
	int n;

	/* The caches first: the signal is blocked until they exist. */
	if (!k->no_cache) {
		cache_worker = lfp_cache_create(sig_pool);
		cache_handler = lfp_cache_create(sig_pool);
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		seq += MAX_OBJS;
		for (n = 0; n < k->worker_objs &&
			    (objs[n] = sig_alloc(cache_worker));
		     n++)
			if (!take(objs[n], WORKER, seq + (uint32_t)n))
				break;
		for (int i = 0; i < n; i++)
			check_stamp(objs[i], WORKER, seq + (uint32_t)i);
		while (n--) {
			drop(objs[n]);
			if (sig_free(cache_worker, objs[n]))
				sig_error("the worker could not release its "
					  "object");
		}
	}
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	return NULL;
}

/*
 * Interrupt the worker as often as it can take it. The sender naps
 * 20 us between signals rather than yielding: where it shares a CPU with
 * the spinning worker (two cores, a loaded machine, an emulator), a
 * yield gives the CPU away until the next tick, and the handler then ran
 * about 350 times a second under qemu-aarch64, too few for the test.
 */
static void *sig_sender(void *arg)
{
	pthread_t worker = *(pthread_t *)arg;
	const struct timespec gap = { .tv_sec = 0, .tv_nsec = 20 * 1000 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		nanosleep(&gap, NULL);
		pthread_kill(worker, SIGUSR1);
	}
	return NULL;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

START_TEST(handler_shares_the_pool)
{
	const struct sig_case *k = &sig_cases[_i];
	struct lfp_config cfg = {
		.obj_size = sizeof(struct stamp), .capacity = k->capacity,
		.cache_size = k->cache_size,
		.flags = (k->no_cache ? LFP_F_NO_CACHE : 0) |
			 (k->unchecked ? LFP_F_UNCHECKED : 0),
	};
	/* At least this many handler runs, and this long; a loaded machine
	 * delivers fewer signals a second, so the run goes on for longer. */
	uint64_t least = under_sanitizer() ? 300 : 3000;
	double secs = under_sanitizer() ? 1.0 : 0.5, most = 30;
	struct timespec nap = { .tv_sec = 0, .tv_nsec = 5 * 1000 * 1000 };
	struct sigaction sa = { .sa_handler = on_signal,
				.sa_flags = SA_RESTART };
	pthread_t worker, sender;
	struct timespec t0;
	struct lfp_stats st;
	sigset_t block;

	sig_case = k;
	ck_assert_int_eq(lfp_create(&cfg, &sig_pool), 0);
	owners = calloc(k->capacity, sizeof(*owners));
	ck_assert_ptr_nonnull(owners);
	atomic_store(&stop, 0);
	atomic_store(&errors, 0);
	atomic_store(&handler_runs, 0);
	atomic_store(&handler_objs, 0);
	first_error = NULL;
	cache_worker = cache_handler = NULL;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	/* Only the worker takes the signal, once its caches are made. */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	ck_assert_int_eq(pthread_create(&worker, NULL, sig_worker,
					(void *)k), 0);
	ck_assert_int_eq(pthread_create(&sender, NULL, sig_sender, &worker),
			 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		nanosleep(&nap, NULL);
	while (!atomic_load(&errors) && seconds_since(&t0) < most &&
	       (seconds_since(&t0) < secs ||
		atomic_load(&handler_runs) < least));
	atomic_store(&stop, 1);
	pthread_join(sender, NULL);
	pthread_join(worker, NULL);
	signal(SIGUSR1, SIG_IGN);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);

	ck_assert_msg(atomic_load(&errors) == 0,
		      "%s: %llu errors, the first: %s", k->name,
		      (unsigned long long)atomic_load(&errors), first_error);
	ck_assert_msg(atomic_load(&handler_runs) >= least,
		      "%s: the handler ran %llu times in %.0f s, not the %llu "
		      "needed for the test to mean something", k->name,
		      (unsigned long long)atomic_load(&handler_runs), most,
		      (unsigned long long)least);
	ck_assert_msg(atomic_load(&handler_objs) > 0,
		      "%s: the handler never got an object", k->name);
	lfp_stats(sig_pool, &st);
	if (k->capacity < 64) /* the small pool ran dry, as meant */
		ck_assert_msg(st.failed_allocs > 0 &&
				      (k->no_cache || st.steals > 0),
			      "%s: %llu failed allocations, %llu steals: the "
			      "pool never ran dry", k->name,
			      (unsigned long long)st.failed_allocs,
			      (unsigned long long)st.steals);
	lfp_cache_destroy(cache_worker);
	lfp_cache_destroy(cache_handler);
	expect_accounted(sig_pool, 0);
	for (uint32_t i = 0; i < k->capacity; i++)
		ck_assert_uint_eq(atomic_load(&owners[i]), 0);
	lfp_destroy(sig_pool);
	free(owners);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("signal");
	TCase *tc = tcase_create("signal");

	tcase_set_timeout(tc, 150);
	tcase_add_loop_test(tc, handler_shares_the_pool, 0, SIG_NCASES);
	suite_add_tcase(s, tc);
	return test_run(s);
}
