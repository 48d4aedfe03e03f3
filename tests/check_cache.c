/* SPDX-License-Identifier: MIT */
/* Per-thread caches: explicit and implicit, batching, stealing, thread
 * exit, bulk calls, and pools destroyed under threads' feet. */
#define _GNU_SOURCE /* REG_EFL, for single-stepping */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <time.h>

#include "testutil.h"

/* What lfp_cache_stats should report for one cache. */
struct cache_want {
	uint64_t allocs, frees, failed, rejected, hits, refills, flushes,
		steals, cached;
};

static void expect_cache(const struct lfp_cache *c, struct cache_want w)
{
	struct lfp_stats st;

	memset(&st, 0xff, sizeof(st));
	lfp_cache_stats(c, &st);
	ck_assert_uint_eq(st.allocs, w.allocs);
	ck_assert_uint_eq(st.frees, w.frees);
	ck_assert_uint_eq(st.failed_allocs, w.failed);
	ck_assert_uint_eq(st.rejected_frees, w.rejected);
	ck_assert_uint_eq(st.cache_hits, w.hits);
	ck_assert_uint_eq(st.refills, w.refills);
	ck_assert_uint_eq(st.flushes, w.flushes);
	ck_assert_uint_eq(st.steals, w.steals);
	ck_assert_uint_eq(st.cached, w.cached);
	ck_assert_uint_eq(st.cas_retries, 0); /* one thread: no CAS fails */
}

/* Each cache's counts are its own; the pool's are their sum. */
START_TEST(cache_stats_per_worker)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 6,
				  .cache_size = 4, .batch_size = 2 };
	struct lfp_stats st, pst, sentinel = { .allocs = 42 };
	struct lfp_cache *a, *b, *c;
	struct lfp_pool *pool;
	char *a0, *a1, *b0, *x[4];

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_nonnull(a = lfp_cache_create(pool));
	ck_assert_ptr_nonnull(b = lfp_cache_create(pool));
	expect_cache(a, (struct cache_want){ 0 });

	a0 = lfp_cache_alloc(a); /* miss: a batch of 2 fresh slots */
	a1 = lfp_cache_alloc(a); /* hit */
	b0 = lfp_cache_alloc(b); /* miss: the next 2 */
	ck_assert_int_eq(lfp_cache_free(b, a0), 0);
	ck_assert_int_eq(lfp_cache_free(b, a0), -EALREADY);
	ck_assert_int_eq(lfp_cache_free(b, NULL), -EINVAL);
	ck_assert_int_eq(lfp_cache_free(a, b0), 0);
	ck_assert_int_eq(lfp_cache_free(a, a1 + 1), -EINVAL);
	expect_cache(a, (struct cache_want){ .allocs = 2, .frees = 1,
					     .rejected = 1, .hits = 1,
					     .refills = 1, .cached = 1 });
	expect_cache(b, (struct cache_want){ .allocs = 1, .frees = 1,
					     .rejected = 2, .refills = 1,
					     .cached = 2 });

	/* a: b0's slot (hit), the last 2 fresh (miss, hit), then b's 2
	 * (a steal from idle b, and a refill of what is left), then none. */
	for (int i = 0; i < 4; i++)
		ck_assert_ptr_nonnull(x[i] = lfp_cache_alloc(a));
	ck_assert_ptr_nonnull(lfp_cache_alloc(a));
	ck_assert_ptr_null(lfp_cache_alloc(a));
	expect_cache(a, (struct cache_want){ .allocs = 7, .frees = 1,
					     .failed = 1, .rejected = 1,
					     .hits = 3, .refills = 3,
					     .steals = 1 });
	expect_cache(b, (struct cache_want){ .allocs = 1, .frees = 1,
					     .rejected = 2, .refills = 1 });

	/* Pool-wide fields are the pool's; the events add up to it. */
	lfp_cache_stats(b, &st);
	lfp_stats(pool, &pst);
	ck_assert_uint_eq(st.capacity, 6);
	ck_assert_uint_eq(st.live, pst.live);
	ck_assert_uint_eq(st.free, pst.free);
	ck_assert_uint_eq(st.high_water, pst.high_water);
	ck_assert_uint_eq(st.max_capacity, pst.max_capacity);
	ck_assert_uint_eq(pst.allocs, 7 + 1);
	ck_assert_uint_eq(pst.rejected_frees, 1 + 2);
	ck_assert_uint_eq(pst.steals, 1);

	/* a is given up with one object in it (flushed); c reuses it and
	 * starts from zero, while the pool keeps every count. */
	ck_assert_int_eq(lfp_cache_free(a, x[0]), 0);
	lfp_cache_destroy(a);
	ck_assert_ptr_eq(c = lfp_cache_create(pool), a);
	expect_cache(c, (struct cache_want){ 0 });
	ck_assert_ptr_nonnull(lfp_cache_alloc(c));
	expect_cache(c, (struct cache_want){ .allocs = 1, .refills = 1 });
	lfp_stats(pool, &pst);
	ck_assert_uint_eq(pst.allocs, 7 + 1 + 1);
	ck_assert_uint_eq(pst.flushes, 1);

	/* NULL arguments do nothing. */
	st = sentinel;
	lfp_cache_stats(NULL, &st);
	ck_assert_uint_eq(st.allocs, 42);
	lfp_cache_stats(c, NULL);
	lfp_cache_destroy(b);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

struct stats_worker {
	struct lfp_cache *cache;
	int rounds;
	_Atomic int done;
};

static void *stats_work(void *arg)
{
	struct stats_worker *w = arg;
	void *obj;

	for (int i = 0; i < w->rounds; i++) {
		ck_assert_ptr_nonnull(obj = lfp_cache_alloc(w->cache));
		ck_assert_int_eq(lfp_cache_free(w->cache, obj), 0);
	}
	atomic_store_explicit(&w->done, 1, memory_order_release);
	return NULL;
}

/* Another thread may read a busy cache's counts: recent, never ahead. */
START_TEST(cache_stats_while_busy)
{
	struct lfp_pool *pool = test_pool(32, 64);
	struct stats_worker w = { .rounds = under_sanitizer() ? 20000 : 200000 };
	struct lfp_stats st;
	uint64_t last = 0;
	pthread_t t;

	ck_assert_ptr_nonnull(w.cache = lfp_cache_create(pool));
	ck_assert_int_eq(pthread_create(&t, NULL, stats_work, &w), 0);
	while (!atomic_load_explicit(&w.done, memory_order_acquire)) {
		lfp_cache_stats(w.cache, &st);
		ck_assert_uint_ge(st.allocs, last);
		ck_assert_uint_le(st.allocs, (uint64_t)w.rounds);
		ck_assert_uint_le(st.cache_hits, st.allocs);
		ck_assert_uint_le(st.cached, 64);
		last = st.allocs;
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	lfp_cache_stats(w.cache, &st);
	ck_assert_uint_eq(st.allocs, (uint64_t)w.rounds);
	ck_assert_uint_eq(st.frees, (uint64_t)w.rounds);
	ck_assert_uint_eq(st.cache_hits, (uint64_t)w.rounds - 1);
	lfp_destroy(pool);
}
END_TEST

/* A worker whose cache (2 slots, magazines of 1) refills and flushes a
 * magazine at almost every call, until told to stop. */
struct exchange_worker {
	struct lfp_cache *cache;
	uint64_t rounds;
	_Atomic int stop;
};

static void *exchange_work(void *arg)
{
	struct exchange_worker *w = arg;
	void *obj[12];

	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		for (int k = 0; k < 12; k++)
			ck_assert_ptr_nonnull(obj[k] = lfp_cache_alloc(w->cache));
		for (int k = 0; k < 12; k++)
			ck_assert_int_eq(lfp_cache_free(w->cache, obj[k]), 0);
		w->rounds++;
	}
	return NULL;
}

/*
 * The counts a reader takes of a cache that is exchanging magazines
 * never go back, in lfp_cache_stats or in lfp_stats: a refill or flush
 * moves the count and the cache's own counters in separate stores, and
 * a reader between them must not see an allocation undone. lfp_stats
 * reads frees before allocs, so allocs >= frees in any snapshot (else
 * live wraps and is clamped to capacity). Reads for up to 3 s.
 */
START_TEST(cache_stats_while_exchanging)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 256,
				  .cache_size = 2, .batch_size = 1 };
	struct exchange_worker w = { 0 };
	uint64_t last = 0, plast = 0, pflast = 0;
	struct lfp_stats st, pst;
	struct lfp_pool *pool;
	time_t until = time(NULL) + 3;
	pthread_t t;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_nonnull(w.cache = lfp_cache_create(pool));
	ck_assert_int_eq(pthread_create(&t, NULL, exchange_work, &w), 0);
	for (long i = 0; i < 20000000 && time(NULL) < until; i++) {
		lfp_cache_stats(w.cache, &st);
		if (st.allocs < last)
			break;
		last = st.allocs;
		lfp_stats(pool, &pst);
		if (pst.allocs < plast || pst.frees < pflast ||
		    pst.allocs < pst.frees)
			break;
		plast = pst.allocs;
		pflast = pst.frees;
	}
	atomic_store_explicit(&w.stop, 1, memory_order_relaxed);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(st.allocs >= last, "cache allocs %llu after %llu",
		      (unsigned long long)st.allocs, (unsigned long long)last);
	ck_assert_msg(pst.allocs >= plast && pst.frees >= pflast,
		      "pool allocs %llu after %llu, frees %llu after %llu",
		      (unsigned long long)pst.allocs, (unsigned long long)plast,
		      (unsigned long long)pst.frees, (unsigned long long)pflast);
	ck_assert_msg(pst.allocs >= pst.frees,
		      "pool allocs %llu < frees %llu (live %llu)",
		      (unsigned long long)pst.allocs,
		      (unsigned long long)pst.frees,
		      (unsigned long long)pst.live);
	/* Quiescent: exact. */
	lfp_cache_stats(w.cache, &st);
	ck_assert_uint_eq(st.allocs, w.rounds * 12);
	ck_assert_uint_eq(st.frees, w.rounds * 12);
	lfp_cache_destroy(w.cache);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

/* A worker that allocates and releases one object at a time through its
 * cache (all hits after the first), until told to stop. */
static void *pair_work(void *arg)
{
	struct exchange_worker *w = arg;
	void *obj;

	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		ck_assert_ptr_nonnull(obj = lfp_cache_alloc(w->cache));
		ck_assert_int_eq(lfp_cache_free(w->cache, obj), 0);
		w->rounds++;
	}
	return NULL;
}

/*
 * One cache used by one thread never releases more than it allocated, so
 * lfp_cache_stats must read frees <= allocs under traffic too (else
 * allocs - frees wraps). Reads for up to 2 s.
 */
START_TEST(cache_stats_frees_never_above_allocs)
{
	struct lfp_pool *pool = test_pool(32, 64);
	struct exchange_worker w = { 0 };
	struct lfp_stats st = { 0 };
	time_t until = time(NULL) + 2;
	pthread_t t;

	ck_assert_ptr_nonnull(w.cache = lfp_cache_create(pool));
	ck_assert_int_eq(pthread_create(&t, NULL, pair_work, &w), 0);
	for (long i = 0; i < 20000000 && time(NULL) < until; i++) {
		lfp_cache_stats(w.cache, &st);
		if (st.frees > st.allocs)
			break;
	}
	atomic_store_explicit(&w.stop, 1, memory_order_relaxed);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(st.frees <= st.allocs,
		      "one cache read allocs %llu < frees %llu",
		      (unsigned long long)st.allocs,
		      (unsigned long long)st.frees);
	lfp_cache_stats(w.cache, &st);
	ck_assert_uint_eq(st.allocs, w.rounds);
	ck_assert_uint_eq(st.frees, w.rounds);
	lfp_cache_destroy(w.cache);
	lfp_destroy(pool);
}
END_TEST

/*
 * lfp_stats (lfpool.h): under traffic "the event counts never read lower
 * than in an earlier call"; lfp_cache_stats reads one cache the same
 * way. Four workers with small caches (4 slots, magazines of 2) take
 * bursts of 6 objects and give them back, so that their caches often
 * run dry and refill (a miss), while this thread reads snapshots for
 * 1.5 s: cache_hits (allocations less misses, as lfp_stats derives
 * them) and every other event count must never go back.
 * _i: 0 lfp_stats of the pool, 1 lfp_cache_stats of worker 0's cache.
 */
enum { MONO_WORKERS = 4, MONO_BURST = 6 };

static struct lfp_pool *mono_pool;
static struct lfp_cache *mono_cache[MONO_WORKERS];
static _Atomic int mono_started, mono_stop;

static void *mono_work(void *arg)
{
	struct lfp_cache *c = lfp_cache_create(mono_pool);
	void *obj[MONO_BURST];

	ck_assert_ptr_nonnull(c);
	mono_cache[(intptr_t)arg] = c;
	atomic_fetch_add(&mono_started, 1);
	while (!atomic_load_explicit(&mono_stop, memory_order_relaxed)) {
		for (int k = 0; k < MONO_BURST; k++)
			ck_assert_ptr_nonnull(obj[k] = lfp_cache_alloc(c));
		for (int k = 0; k < MONO_BURST; k++)
			ck_assert_int_eq(lfp_cache_free(c, obj[k]), 0);
	}
	return NULL;
}

static const struct {
	const char *name;
	size_t off;
} mono_events[] = {
#define MONO_EVENT(f) { #f, offsetof(struct lfp_stats, f) }
	MONO_EVENT(cache_hits),     MONO_EVENT(allocs),
	MONO_EVENT(frees),          MONO_EVENT(failed_allocs),
	MONO_EVENT(rejected_frees), MONO_EVENT(cas_retries),
	MONO_EVENT(refills),        MONO_EVENT(flushes),
	MONO_EVENT(steals),         MONO_EVENT(grown),
	MONO_EVENT(trimmed_bytes),  MONO_EVENT(reclaims),
#undef MONO_EVENT
};

#define MONO_NEVENTS (sizeof(mono_events) / sizeof(mono_events[0]))

static uint64_t mono_get(const struct lfp_stats *st, size_t e)
{
	return *(const uint64_t *)((const char *)st + mono_events[e].off);
}

/* Whether an event count of st reads lower than in last; msg says which. */
static bool mono_went_back(const struct lfp_stats *st,
			   const struct lfp_stats *last, long reads, char *msg,
			   size_t len)
{
	for (size_t e = 0; e < MONO_NEVENTS; e++)
		if (mono_get(st, e) < mono_get(last, e)) {
			snprintf(msg, len, "%s read %llu after %llu (read %ld)",
				 mono_events[e].name,
				 (unsigned long long)mono_get(st, e),
				 (unsigned long long)mono_get(last, e), reads);
			return true;
		}
	return false;
}

START_TEST(stats_events_never_go_back)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 256,
				  .cache_size = 4, .batch_size = 2 };
	struct lfp_stats st, last = { 0 };
	pthread_t th[MONO_WORKERS];
	struct test_watchdog wd;
	char msg[160] = "";
	uint64_t until;
	long reads = 0;
	bool back;

	ck_assert_int_eq(lfp_create(&cfg, &mono_pool), 0);
	atomic_store(&mono_started, 0);
	atomic_store(&mono_stop, 0);
	test_watchdog_start(&wd, 10, "workers under stats readers");
	for (intptr_t i = 0; i < MONO_WORKERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, mono_work,
						(void *)i), 0);
	while (atomic_load(&mono_started) < MONO_WORKERS)
		sched_yield();
	until = test_now_ns() + 1500000000u;
	do {
		if (_i)
			lfp_cache_stats(mono_cache[0], &st);
		else
			lfp_stats(mono_pool, &st);
		back = mono_went_back(&st, &last, reads++, msg, sizeof(msg));
		last = st;
	} while (!back && test_now_ns() < until);
	atomic_store(&mono_stop, 1);
	for (int i = 0; i < MONO_WORKERS; i++)
		pthread_join(th[i], NULL);
	test_watchdog_stop(&wd);
	ck_assert_msg(!back, "%s: %s", _i ? "lfp_cache_stats" : "lfp_stats",
		      msg);
	/* Quiescent: exact. */
	lfp_stats(mono_pool, &st);
	ck_assert_uint_eq(st.allocs, st.frees);
	ck_assert_uint_le(st.cache_hits, st.allocs);
	for (int i = 0; i < MONO_WORKERS; i++)
		lfp_cache_destroy(mono_cache[i]);
	lfp_destroy(mono_pool);
}
END_TEST

/*
 * lfp_stats is async-signal-safe: a handler that interrupts the owner in
 * the middle of a magazine exchange must read counts that never go back
 * past the owner's own readings before and after, with allocs >= frees.
 * The owner's bulk calls run single-stepped (x86-64 Linux: the trap flag
 * in the interrupted context), and the handler reads the counts at every
 * instruction, so every store of a move is seen half-done once.
 */
#if defined(__x86_64__) && defined(__linux__) && defined(REG_EFL)
#define STEP_TF 0x100
static struct lfp_pool *step_pool;
static volatile uint64_t step_allocs, step_frees, step_max_allocs,
	step_max_frees, step_bad_allocs, step_bad_frees;
static volatile uint64_t step_own_allocs, step_own_frees;
static volatile sig_atomic_t step_bad, step_reads;

static void step_read(int sig, siginfo_t *si, void *uc)
{
	struct lfp_stats st;

	(void)sig;
	(void)si;
	(void)uc;
	lfp_stats(step_pool, &st);
	step_reads++;
	if (!step_bad && (st.allocs < step_allocs || st.frees < step_frees ||
			  st.allocs < st.frees)) {
		step_bad = 1;
		step_bad_allocs = st.allocs;
		step_bad_frees = st.frees;
		step_own_allocs = step_allocs;
		step_own_frees = step_frees;
	}
	if (st.allocs > step_max_allocs)
		step_max_allocs = st.allocs;
	if (st.frees > step_max_frees)
		step_max_frees = st.frees;
}

static void step_set(int sig, siginfo_t *si, void *uc)
{
	greg_t *efl = &((ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL];

	(void)si;
	*efl = sig == SIGUSR1 ? *efl | STEP_TF : *efl & ~(greg_t)STEP_TF;
}

/* Owner's reading after a call: at least every reading during it. */
static void step_check(void)
{
	struct lfp_stats st;

	lfp_stats(step_pool, &st);
	if (!step_bad && (st.allocs < step_max_allocs ||
			  st.frees < step_max_frees)) {
		step_bad = 2;
		step_bad_allocs = step_max_allocs;
		step_bad_frees = step_max_frees;
		step_own_allocs = st.allocs;
		step_own_frees = st.frees;
	}
	step_allocs = step_max_allocs = st.allocs;
	step_frees = step_max_frees = st.frees;
}

START_TEST(stats_in_handler_mid_exchange)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 4096,
				  .cache_size = 64, .batch_size = 32 };
	struct sigaction sa = { .sa_sigaction = step_read,
				.sa_flags = SA_SIGINFO };
	struct lfp_stats st;
	struct lfp_cache *c;
	void *objs[48];

	if (under_sanitizer())
		return; /* the sanitizers' runtimes defer or wrap signals */
	ck_assert_int_eq(lfp_create(&cfg, &step_pool), 0);
	ck_assert_ptr_nonnull(c = lfp_cache_create(step_pool));
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	sa.sa_sigaction = step_set;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	step_check();
	/* Refills, pops, releases into the cache and cold flushes. */
	for (int i = 0; i < 12 && !step_bad; i++) {
		size_t n = 16 + 16 * (size_t)(i % 3), got, put;

		raise(SIGUSR1);
		got = lfp_cache_alloc_bulk(c, objs, n);
		raise(SIGUSR2);
		step_check();
		raise(SIGUSR1);
		put = lfp_cache_free_bulk(c, objs, got);
		raise(SIGUSR2);
		step_check();
		ck_assert_uint_eq(got, n);
		ck_assert_uint_eq(put, n);
	}
	ck_assert_msg(!step_bad,
		      "%s: a reading of allocs %llu, frees %llu against "
		      "the owner's allocs %llu, frees %llu (%d readings)",
		      step_bad == 1 ? "went back or allocs < frees"
				    : "above the owner's next reading",
		      (unsigned long long)step_bad_allocs,
		      (unsigned long long)step_bad_frees,
		      (unsigned long long)step_own_allocs,
		      (unsigned long long)step_own_frees, (int)step_reads);
	ck_assert_int_gt(step_reads, 100);
	lfp_stats(step_pool, &st);
	ck_assert_uint_eq(st.allocs, st.frees);
	lfp_cache_destroy(c);
	expect_accounted(step_pool, 0);
	lfp_destroy(step_pool);
}
END_TEST

/*
 * A fork that takes the caches while a release through the inline path
 * has left its operation but not yet counted itself (hot.frees is
 * stored after active = 0) must not lose that release in the child: the
 * child, with no live object, must read allocs == frees and live 0. The
 * owner runs its release single-stepped; its SIGTRAP handler parks it
 * in exactly that window while the main thread forks.
 */
static struct lfp_cache *fstep_cache;
static uint64_t fstep_frees0, fstep_count0;
static _Atomic int fstep_parked, fstep_forked;

static void fstep_read(int sig, siginfo_t *si, void *uc)
{
	struct lfpi_cache_hot *h = &fstep_cache->hot;

	(void)sig;
	(void)si;
	(void)uc;
	if (atomic_load(&fstep_parked) ||
	    atomic_load_explicit(&h->active, memory_order_relaxed) ||
	    (atomic_load_explicit(&h->top, memory_order_relaxed) &
	     LFPI_TOP_COUNT) != fstep_count0 + 1 ||
	    atomic_load_explicit(&h->frees, memory_order_relaxed) !=
		    fstep_frees0)
		return;
	atomic_store(&fstep_parked, 1);
	while (!atomic_load(&fstep_forked))
		;
}

static void *fstep_owner(void *arg)
{
	void *obj;

	(void)arg;
	ck_assert_ptr_nonnull(obj = lfp_cache_alloc(fstep_cache));
	fstep_count0 = atomic_load(&fstep_cache->hot.top) & LFPI_TOP_COUNT;
	fstep_frees0 = atomic_load(&fstep_cache->hot.frees);
	raise(SIGUSR1);
	ck_assert_int_eq(lfp_cache_free(fstep_cache, obj), 0);
	raise(SIGUSR2);
	atomic_store(&fstep_parked, 2); /* done, parked or not */
	return NULL;
}

START_TEST(fork_keeps_release_counted)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 256,
				  .cache_size = 8, .batch_size = 4 };
	struct sigaction sa = { .sa_sigaction = fstep_read,
				.sa_flags = SA_SIGINFO };
	struct lfp_pool *pool;
	struct lfp_stats st;
	pthread_t t;
	pid_t pid;
	int status, parked;

	if (under_sanitizer())
		return; /* the sanitizers' runtimes defer or wrap signals */
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_nonnull(fstep_cache = lfp_cache_create(pool));
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	sa.sa_sigaction = step_set;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, fstep_owner, NULL), 0);
	while (!(parked = atomic_load(&fstep_parked)))
		sched_yield();
	if (parked == 1) {
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			lfp_stats(pool, &st);
			if (st.allocs != st.frees || st.live != 0) {
				fprintf(stderr,
					"child: allocs %llu, frees %llu, "
					"live %llu\n",
					(unsigned long long)st.allocs,
					(unsigned long long)st.frees,
					(unsigned long long)st.live);
				_exit(1);
			}
			_exit(0);
		}
		atomic_store(&fstep_forked, 1);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "the child lost a release counted after the "
			      "operation (see its message above)");
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.allocs, st.frees);
	lfp_cache_destroy(fstep_cache);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

#endif

/* Leave cache c as `pairs` inline allocation-release pairs would: they
 * change nothing but hot.top's high part and hot.frees (the count goes
 * down and back up). */
static void pretend_pairs(struct lfp_cache *c, uint64_t pairs)
{
	atomic_store_explicit(&c->hot.top,
			      atomic_load_explicit(&c->hot.top,
						   memory_order_relaxed) +
				      pairs * LFPI_TOP_FREE,
			      memory_order_relaxed);
	atomic_store_explicit(&c->hot.frees,
			      atomic_load_explicit(&c->hot.frees,
						   memory_order_relaxed) +
				      pairs,
			      memory_order_relaxed);
}

/*
 * Counts stay 64-bit through a cache's fast path: 2^50 + 2^48 allocation
 * and release pairs through one cache (over a month of a thread at 3 ns
 * a pair) raise allocs and frees by as much, across the fold of hot.top's
 * allocation part (cache/exchange.c) at the next move (pretend_pairs stands in
 * for the pairs).
 */
START_TEST(cache_counts_past_2_48_pairs)
{
	struct lfp_pool *pool = test_pool(32, 64);
	const uint64_t pairs = (UINT64_C(1) << 50) + (UINT64_C(1) << 48);
	struct lfp_stats before, after;
	struct lfp_cache *c;
	void *obj;

	ck_assert_ptr_nonnull(c = lfp_cache_create(pool));
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_nonnull(obj = lfp_cache_alloc(c));
		ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	}
	lfp_stats(pool, &before);
	pretend_pairs(c, pairs);
	ck_assert_ptr_nonnull(obj = lfp_cache_alloc(c));
	ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	lfp_cache_flush(c); /* a move: it folds */
	ck_assert_uint_eq(atomic_load(&c->fold_seq) % 2, 0);
	ck_assert_uint_gt(atomic_load(&c->allocs_base), 0);
	ck_assert_ptr_nonnull(obj = lfp_cache_alloc(c));
	ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	lfp_stats(pool, &after);
	ck_assert_msg(after.allocs == before.allocs + pairs + 2 &&
			      after.frees == before.frees + pairs + 2,
		      "allocs %llu -> %llu, frees %llu -> %llu",
		      (unsigned long long)before.allocs,
		      (unsigned long long)after.allocs,
		      (unsigned long long)before.frees,
		      (unsigned long long)after.frees);
	ck_assert_uint_eq(after.live, 0);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

/*
 * A cache whose count stays between empty and full never moves a
 * magazine, so nothing folds hot.top's high part: the documented limit
 * (lfp_stats in lfpool.h) is 2^51 releases between two moves, 78 days of
 * a thread at 3 ns a pair. Just under it, the counts are exact
 * (pretend_pairs stands in for the pairs).
 */
START_TEST(cache_counts_past_2_51_pairs_without_a_move)
{
	struct lfp_pool *pool = test_pool(32, 64);
	/* The limit less the most slots a cache holds (the count shares
	 * the high part). */
	const uint64_t pairs = (UINT64_C(1) << 51) - 4 - LFP_MAX_CACHE_SIZE;
	struct lfp_stats before, after;
	struct lfp_cache *c;
	void *obj;

	ck_assert_ptr_nonnull(c = lfp_cache_create(pool));
	ck_assert_ptr_nonnull(obj = lfp_cache_alloc(c));
	ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	lfp_stats(pool, &before);
	pretend_pairs(c, pairs);
	ck_assert_ptr_nonnull(obj = lfp_cache_alloc(c));
	ck_assert_int_eq(lfp_cache_free(c, obj), 0);
	lfp_stats(pool, &after);
	ck_assert_msg(after.allocs == before.allocs + pairs + 1 &&
			      after.frees == before.frees + pairs + 1,
		      "allocs %llu -> %llu, frees %llu -> %llu",
		      (unsigned long long)before.allocs,
		      (unsigned long long)after.allocs,
		      (unsigned long long)before.frees,
		      (unsigned long long)after.frees);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

START_TEST(explicit_cache_batches)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 100,
				  .cache_size = 8, .batch_size = 4 };
	struct lfp_pool *pool;
	struct lfp_cache *c;
	struct lfp_stats st;
	void *obj[9];

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	c = lfp_cache_create(pool);
	ck_assert_ptr_nonnull(c);
	for (int i = 0; i < 9; i++)
		ck_assert_ptr_nonnull(obj[i] = lfp_cache_alloc(c));
	lfp_stats(pool, &st);
	/* 9 objects in batches of 4 fresh slots: 3 refills, 3 left over. */
	ck_assert_uint_eq(st.refills, 3);
	ck_assert_uint_eq(st.cached, 3);
	ck_assert_uint_eq(st.high_water, 12);
	ck_assert_uint_eq(st.cache_hits, 9 - 3);
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(lfp_cache_free(c, obj[i]), 0);
	lfp_stats(pool, &st);
	/* 3 + 9 = 12 > 8: the cache flushed its colder half once. */
	ck_assert_uint_eq(st.flushes, 1);
	ck_assert_uint_eq(st.cached, 8);
	expect_accounted(pool, 0);
	/* The hottest object comes back first. */
	ck_assert_ptr_eq(lfp_cache_alloc(c), obj[8]);
	ck_assert_int_eq(lfp_cache_free(c, obj[8]), 0);

	lfp_cache_flush(c);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.cached, 0);
	expect_accounted(pool, 0);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

/* A failed allocation is neither a hit nor a miss (found by fuzz_pool:
 * hits = allocs - misses once wrapped below zero). */
START_TEST(failed_alloc_is_no_miss)
{
	struct lfp_pool *pool = test_pool(8, 1);
	struct lfp_stats st;

	ck_assert_ptr_nonnull(lfp_alloc(pool));
	ck_assert_ptr_null(lfp_alloc(pool));
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.allocs, 1);
	ck_assert_uint_eq(st.failed_allocs, 1);
	ck_assert_uint_le(st.cache_hits, st.allocs);
	lfp_destroy(pool);
}
END_TEST

START_TEST(cache_bad_input)
{
	struct lfp_pool *pool = test_pool(32, 16), *other = test_pool(32, 16);
	struct lfp_cache *c = lfp_cache_create(pool);
	char *p = lfp_cache_alloc(c);
	int local;

	ck_assert_ptr_null(lfp_cache_create(NULL));
	ck_assert_ptr_null(lfp_cache_alloc(NULL));
	ck_assert_int_eq(lfp_cache_free(NULL, p), -EINVAL);
	ck_assert_int_eq(lfp_cache_free(c, NULL), -EINVAL);
	ck_assert_int_eq(lfp_cache_free(c, p + 1), -EINVAL);
	ck_assert_int_eq(lfp_cache_free(c, &local), -EFAULT);
	ck_assert_int_eq(lfp_cache_free(c, lfp_alloc(other)), -EFAULT);
	ck_assert_int_eq(lfp_cache_free(c, p), 0);
	ck_assert_int_eq(lfp_cache_free(c, p), -EALREADY);
	ck_assert_int_eq(lfp_free(pool, p), -EALREADY);
	lfp_cache_flush(NULL);
	lfp_cache_destroy(NULL);
	expect_accounted(pool, 0);
	lfp_cache_destroy(c);
	lfp_destroy(pool);
	lfp_destroy(other);
}
END_TEST

START_TEST(bad_cache_configs)
{
	struct lfp_config cfg = { .obj_size = 8, .capacity = 64 };
	struct lfp_pool *pool;

	cfg.cache_size = LFP_MAX_CACHE_SIZE + 1;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.cache_size = 8, cfg.batch_size = 9;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.cache_size = 0, cfg.batch_size = LFP_MAX_CACHE_SIZE + 1;
	ck_assert_int_eq(lfp_create(&cfg, &pool), -EINVAL);
	cfg.cache_size = 1, cfg.batch_size = 1;
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	lfp_destroy(pool);
}
END_TEST

/*
 * lfp_config (lfpool.h): batch_size is "<= cache_size", and lfp_create
 * refuses "cache_size or batch_size out of range" with -EINVAL, leaving
 * *out alone (and lfp_memory_size gives 0 for it). With cache_size 0 a
 * cache holds capacity / 4 slots, clamped to 2 .. 1024: 2 for a pool of
 * 8, 16 for one of 64, 1024 for one of 4096. A batch above that is out
 * of range and must be refused, not cut down to fit.
 */
START_TEST(batch_above_default_cache_refused)
{
	static const struct {
		uint32_t capacity, cache_size, batch_size;
		int want;
	} cases[] = {
		{ 8, 0, 100, -EINVAL },  { 8, 0, 3, -EINVAL },
		{ 8, 0, 2, 0 },          { 64, 0, 17, -EINVAL },
		{ 64, 0, 16, 0 },        { 4096, 0, 1025, -EINVAL },
		{ 4096, 0, 1024, 0 },    { 64, 8, 9, -EINVAL },
		{ 64, 8, 8, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lfp_config cfg = { .obj_size = 8,
					  .capacity = cases[i].capacity,
					  .cache_size = cases[i].cache_size,
					  .batch_size = cases[i].batch_size };
		struct lfp_pool *pool = NULL;
		int err = lfp_create(&cfg, &pool);

		ck_assert_msg(err == cases[i].want,
			      "capacity %u, cache_size %u, batch_size %u: "
			      "lfp_create gave %d, not %d", cfg.capacity,
			      cfg.cache_size, cfg.batch_size, err,
			      cases[i].want);
		ck_assert(err ? pool == NULL : pool != NULL);
		ck_assert_msg((lfp_memory_size(&cfg) == 0) == (err != 0),
			      "lfp_memory_size disagrees with lfp_create");
		lfp_destroy(pool);
	}
}
END_TEST

START_TEST(bulk_calls)
{
	struct lfp_pool *pool = test_pool_flags(16, 50, test_modes[_i]);
	void *objs[64];
	int local;

	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 20), 20);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs + 20, 44), 30);
	ck_assert_uint_eq(lfp_alloc_bulk(pool, objs, 0), 0);
	ck_assert_uint_eq(lfp_alloc_bulk(NULL, objs, 4), 0);
	ck_assert_ptr_nonnull(objs[0]); /* a failed call writes nothing */
	ck_assert_uint_eq(lfp_alloc_bulk(pool, NULL, 4), 0);
	expect_accounted(pool, 50);
	objs[50] = &local;     /* foreign */
	objs[51] = objs[0];    /* double */
	objs[52] = NULL;
	ck_assert_uint_eq(lfp_free_bulk(pool, objs, 53), 50);
	ck_assert_uint_eq(lfp_free_bulk(pool, NULL, 3), 0);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

static _Atomic int bulk_ctors, bulk_frees;

static void bulk_ctor(void *obj, void *arg)
{
	(void)arg;
	memset(obj, 0x5a, 16);
	atomic_fetch_add(&bulk_ctors, 1);
}

static void bulk_on_free(void *obj, void *arg)
{
	(void)obj;
	(void)arg;
	atomic_fetch_add(&bulk_frees, 1);
}

/*
 * Bulk through an explicit cache: distinct live objects, runs longer than
 * the cache (so magazines move both ways inside one call), exhaustion in
 * the middle of a call, every bad input; in plain pools, strict ones and
 * pools with hooks (which run outside the cache's operation).
 */
START_TEST(cache_bulk_calls)
{
	struct lfp_config cfg = { .obj_size = 16, .capacity = 300,
				  .cache_size = 16, .batch_size = 8 };
	struct lfp_pool *pool;
	struct lfp_cache *c;
	struct lfp_stats st;
	void *objs[320], *more[8];
	int local;

	if (_i == 1)
		cfg.flags = LFP_F_STRICT;
	if (_i == 2) {
		cfg.ctor = bulk_ctor;
		cfg.on_free = bulk_on_free;
	}
	atomic_store(&bulk_ctors, 0);
	atomic_store(&bulk_frees, 0);
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	ck_assert_ptr_nonnull(c = lfp_cache_create(pool));
	ck_assert_uint_eq(lfp_cache_alloc_bulk(NULL, objs, 4), 0);
	ck_assert_uint_eq(lfp_cache_alloc_bulk(c, NULL, 4), 0);
	ck_assert_uint_eq(lfp_cache_alloc_bulk(c, objs, 0), 0);
	ck_assert_uint_eq(lfp_cache_free_bulk(NULL, objs, 4), 0);
	ck_assert_uint_eq(lfp_cache_free_bulk(c, NULL, 4), 0);
	expect_accounted(pool, 0);

	ck_assert_uint_eq(lfp_cache_alloc_bulk(c, objs, 100), 100);
	/* Asking past the end takes what is left, then stops. */
	ck_assert_uint_eq(lfp_cache_alloc_bulk(c, objs + 100, 220), 200);
	ck_assert_ptr_null(lfp_cache_alloc(c));
	for (int i = 0; i < 300; i++) {
		ck_assert(lfp_is_live(pool, objs[i]));
		for (int j = 0; j < i; j++)
			ck_assert_ptr_ne(objs[i], objs[j]);
		if (_i == 2)
			ck_assert_uint_eq(((unsigned char *)objs[i])[15], 0x5a);
	}
	if (_i == 2)
		ck_assert_int_eq(atomic_load(&bulk_ctors), 300);
	expect_accounted(pool, 300);

	/* A foreign, an interior, a double and a NULL among the good ones:
	 * skipped, counted, nothing lost. */
	objs[300] = &local;
	objs[301] = (char *)objs[5] + 1;
	objs[302] = objs[160]; /* released earlier in the same call */
	objs[303] = NULL;
	ck_assert_uint_eq(lfp_cache_free_bulk(c, objs + 150, 154), 150);
	lfp_cache_stats(c, &st);
	ck_assert_uint_eq(st.rejected_frees, 4);
	ck_assert_uint_eq(st.frees, 150);
	ck_assert_uint_eq(st.allocs, 300);
	expect_accounted(pool, 150);
	ck_assert_uint_eq(lfp_cache_free_bulk(c, objs, 150), 150);
	if (_i == 2)
		ck_assert_int_eq(atomic_load(&bulk_frees), 300);
	expect_accounted(pool, 0);
	/* And back out: the same slots, none twice. */
	ck_assert_uint_eq(lfp_cache_alloc_bulk(c, objs, 300), 300);
	ck_assert_uint_eq(lfp_cache_alloc_bulk(c, more, 8), 0);
	expect_accounted(pool, 300);
	ck_assert_uint_eq(lfp_cache_free_bulk(c, objs, 300), 300);
	lfp_cache_destroy(c);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

/*
 * Bad input inside a short run, which the inline bulk paths (lfpool.h)
 * take whole when the cache has the slots or the room: the good objects
 * before a bad one go in at once, the bad one and the rest out of line,
 * where it is refused and counted; nothing lost. _i % 5: pool 0 default,
 * 1 LFP_F_UNCHECKED (a repeated object is undefined there: not tried;
 * 32-byte objects, whose slots the inline path finds four at a time on
 * x86-64), 2 LFP_F_STRICT, 3 growable (an object start in memory the
 * pool has not grown into), 4 LFP_F_UNCHECKED with 24-byte objects (a
 * stride that is no power of two: one at a time); _i >= 5: through the
 * thread's implicit cache (lfp_alloc_bulk, lfp_free_bulk) rather than
 * an explicit one.
 */
START_TEST(bulk_inline_refuses_bad_objects)
{
	unsigned kind = (unsigned)_i % 5;
	bool implicit = _i >= 5;
	struct lfp_config cfg = { .obj_size = 32, .capacity = 256,
				  .cache_size = 64, .batch_size = 32 };
	struct lfp_pool *pool;
	struct lfp_cache *c = NULL;
	struct lfp_stats st;
	void *objs[64], *run[16];
	size_t n = 0, want, taken;
	uint64_t refused = 0;
	int local;

	if (kind == 1 || kind == 4)
		cfg.flags = LFP_F_UNCHECKED;
	if (kind == 4) {
		cfg.obj_size = 24;
		cfg.align = 8;
	}
	if (kind == 2)
		cfg.flags = LFP_F_STRICT;
	if (kind == 3) {
		cfg.capacity = 64;
		cfg.exhaust = LFP_EXHAUST_GROW;
		cfg.max_capacity = 4096;
	}
	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	if (!implicit)
		ck_assert_ptr_nonnull(c = lfp_cache_create(pool));
#define BULK_ALLOC(o, k)                                                       \
	(implicit ? lfp_alloc_bulk(pool, o, k) : lfp_cache_alloc_bulk(c, o, k))
#define BULK_FREE(o, k)                                                        \
	(implicit ? lfp_free_bulk(pool, o, k) : lfp_cache_free_bulk(c, o, k))
	/* Fill the cache (its first call refills it), then take a few
	 * from it: the runs below fit in its slots and in its room. */
	ck_assert_uint_eq(BULK_ALLOC(objs, 40), 40);
	ck_assert_uint_eq(BULK_FREE(objs + 8, 32), 32);
	ck_assert_uint_eq(BULK_ALLOC(objs + 8, 8), 8);
	expect_accounted(pool, 16);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < i; j++)
			ck_assert_ptr_ne(objs[i], objs[j]);

	/* Good, good, bad..., good: the bad ones refused, each once. */
	run[n++] = objs[0];
	run[n++] = objs[1];
	if (kind != 1 && kind != 4) {
		run[n++] = objs[0]; /* released earlier in this run */
		refused++;
	}
	run[n++] = &local;
	run[n++] = (char *)objs[2] + 8;
	run[n++] = NULL;
	refused += 3;
	if (kind == 3) {
		/* The slot right above the limit: an object's start the pool
		 * has not grown into (its memory is reserved). */
		char *top = (char *)objs[0];

		for (int i = 1; i < 16; i++)
			if ((char *)objs[i] > top)
				top = objs[i];
		run[n++] = top + 32 * 64;
		refused++;
	}
	run[n++] = objs[2];
	run[n++] = objs[3];
	want = n - refused;
	ck_assert_uint_eq(BULK_FREE(run, n), want);
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.rejected_frees, refused);
	expect_accounted(pool, 12);
	/* An unchecked pool has no generations: lfp_is_live cannot tell. */
	for (int i = 0; i < 16 && kind != 1 && kind != 4; i++)
		ck_assert(lfp_is_live(pool, objs[i]) == (i >= 4));

	/* An object released by an earlier call, first in a run. */
	if (kind != 1 && kind != 4) {
		run[0] = objs[3];
		run[1] = objs[4];
		ck_assert_uint_eq(BULK_FREE(run, 2), 1);
		lfp_stats(pool, &st);
		ck_assert_uint_eq(st.rejected_frees, refused + 1);
		expect_accounted(pool, 11);
	} else {
		ck_assert_uint_eq(BULK_FREE(objs + 4, 1), 1);
	}

	/* The rest back in one run with a foreign object tenth, where the
	 * inline path looks at objects four at a time (the first eight
	 * pass, the third four do not), then every slot out and back. */
	for (n = 0; n < 9; n++)
		run[n] = objs[5 + n];
	run[n++] = &local;
	run[n++] = objs[14];
	run[n++] = objs[15];
	ck_assert_uint_eq(BULK_FREE(run, n), 11);
	refused += kind == 1 || kind == 4 ? 1 : 2; /* and the one above */
	lfp_stats(pool, &st);
	ck_assert_uint_eq(st.rejected_frees, refused);
	expect_accounted(pool, 0);
	taken = BULK_ALLOC(objs, 64);
	ck_assert_uint_eq(taken, 64);
	expect_accounted(pool, 64);
	ck_assert_uint_eq(BULK_FREE(objs, taken), taken);
	expect_accounted(pool, 0);
#undef BULK_ALLOC
#undef BULK_FREE
	lfp_cache_destroy(c);
	lfp_destroy(pool);
}
END_TEST

/*
 * The inline bulk paths at every fill of a cache: with cnt slots cached
 * (0 .. the cache's size), an allocation of cnt - 1, cnt and cnt + 1
 * objects (the pool holding no other free slot, so the last takes cnt),
 * then a release of room - 1, room and room + 1 objects into the room
 * left: the inline path takes what fits and the library the rest.
 * Counts exact, objects distinct and live, nothing lost; in a default
 * pool, the same run released again is refused whole. _i: 0 default
 * pool, 1 LFP_F_UNCHECKED.
 */
START_TEST(bulk_inline_every_fill)
{
	enum { SIZE = 16, CAP = 256 };
	struct lfp_config cfg = { .obj_size = 24, .capacity = CAP,
				  .cache_size = SIZE, .batch_size = 8 };
	void *all[CAP], *got[SIZE + 2];
	struct lfp_stats st;

	if (_i)
		cfg.flags = LFP_F_UNCHECKED;
	for (uint32_t cnt = 0; cnt <= SIZE; cnt++)
		for (int d = -1; d <= 1; d++) {
			struct lfp_pool *pool;
			struct lfp_cache *c;
			size_t n = 0, want, r, room, k;

			ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
			ck_assert_ptr_nonnull(c = lfp_cache_create(pool));
			while (n < CAP && (all[n] = lfp_alloc(pool)))
				n++;
			ck_assert_uint_eq(n, CAP);
			for (uint32_t i = 0; i < cnt; i++)
				ck_assert_int_eq(lfp_cache_free(c, all[i]), 0);
			lfp_cache_stats(c, &st);
			ck_assert_uint_eq(st.cached, cnt);

			want = (int)cnt + d > 0 ? (size_t)((int)cnt + d) : 0;
			r = lfp_cache_alloc_bulk(c, got, want);
			ck_assert_uint_eq(r, want < cnt ? want : cnt);
			for (size_t i = 0; i < r; i++) {
				ck_assert(_i || lfp_is_live(pool, got[i]));
				for (size_t j = 0; j < i; j++)
					ck_assert_ptr_ne(got[i], got[j]);
			}
			expect_accounted(pool, CAP - cnt + r);
			ck_assert_uint_eq(lfp_cache_free_bulk(c, got, r), r);
			expect_accounted(pool, CAP - cnt);

			lfp_cache_stats(c, &st);
			room = SIZE - st.cached;
			k = (int)room + d > 0 ? (size_t)((int)room + d) : 0;
			ck_assert_uint_eq(lfp_cache_free_bulk(c, all + cnt, k), k);
			expect_accounted(pool, CAP - cnt - k);
			lfp_cache_stats(c, &st);
			ck_assert_uint_le(st.cached, SIZE);
			if (!_i) {
				/* Every one of them free now: all refused. */
				ck_assert_uint_eq(
					lfp_cache_free_bulk(c, all + cnt, k), 0);
				lfp_stats(pool, &st);
				ck_assert_uint_eq(st.rejected_frees, k);
				expect_accounted(pool, CAP - cnt - k);
			}
			lfp_cache_destroy(c);
			lfp_destroy(pool);
		}

	/* A run as long as the cache, with a foreign object eleventh: the
	 * inline path takes ten, the library refuses it and takes the
	 * rest. */
	{
		struct lfp_pool *pool;
		struct lfp_cache *c;
		int local;

		ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
		ck_assert_ptr_nonnull(c = lfp_cache_create(pool));
		ck_assert_uint_eq(lfp_cache_alloc_bulk(c, all, SIZE - 1),
				  SIZE - 1);
		lfp_cache_flush(c);
		memmove(all + 11, all + 10, (SIZE - 11) * sizeof(*all));
		all[10] = &local;
		ck_assert_uint_eq(lfp_cache_free_bulk(c, all, SIZE), SIZE - 1);
		lfp_stats(pool, &st);
		ck_assert_uint_eq(st.rejected_frees, 1);
		expect_accounted(pool, 0);
		lfp_cache_destroy(c);
		lfp_destroy(pool);
	}
}
END_TEST

/*
 * An on_free hook that allocates from its own pool: every object released
 * earlier in the same call is free (its on_free ran, lfp_is_live says no),
 * so the pool is not exhausted. Released one by one, the earlier object
 * sits in the cache and the hook's lfp_alloc steals it; a bulk release
 * must not hide it either. _i: 0 lfp_cache_free each, 1
 * lfp_cache_free_bulk, 2 lfp_free_bulk.
 */
static struct lfp_pool *hook_pool;
static _Atomic int hook_calls;
static void *hook_got;

static void hook_alloc_on_free(void *obj, void *arg)
{
	(void)obj;
	(void)arg;
	if (atomic_fetch_add(&hook_calls, 1) != 1)
		return; /* only in the second object's hook */
	hook_got = lfp_alloc(hook_pool);
}

START_TEST(bulk_free_hides_no_slot_from_hooks)
{
	struct lfp_config cfg = { .obj_size = 16, .capacity = 2,
				  .on_free = hook_alloc_on_free };
	struct lfp_cache *c;
	void *objs[2];

	ck_assert_int_eq(lfp_create(&cfg, &hook_pool), 0);
	atomic_store(&hook_calls, 0);
	hook_got = NULL;
	ck_assert_ptr_nonnull(c = lfp_cache_create(hook_pool));
	if (_i == 2) {
		/* Through the implicit cache, which the hook uses too. */
		ck_assert_uint_eq(lfp_alloc_bulk(hook_pool, objs, 2), 2);
		ck_assert_uint_eq(lfp_free_bulk(hook_pool, objs, 2), 2);
	} else {
		ck_assert_uint_eq(lfp_cache_alloc_bulk(c, objs, 2), 2);
		if (_i == 0) {
			ck_assert_int_eq(lfp_cache_free(c, objs[0]), 0);
			ck_assert_int_eq(lfp_cache_free(c, objs[1]), 0);
		} else {
			ck_assert_uint_eq(lfp_cache_free_bulk(c, objs, 2), 2);
		}
	}
	ck_assert_int_eq(atomic_load(&hook_calls), 2);
	ck_assert_msg(hook_got != NULL,
		      "the hook found the pool exhausted while the object "
		      "released before it was free");
	ck_assert_ptr_eq(hook_got, objs[0]);
	ck_assert_int_eq(lfp_free(hook_pool, hook_got), 0);
	lfp_cache_destroy(c);
	expect_accounted(hook_pool, 0);
	lfp_destroy(hook_pool);
}
END_TEST

/*
 * Bulk calls while other threads' caches hold the rest of the pool: the
 * caller's bulk allocation steals from the idle ones, never hands a slot
 * out twice, and the census adds up after.
 */
static struct lfp_pool *bulk_pool;
static pthread_barrier_t bulk_bar;

static void *bulk_park(void *arg)
{
	void *objs[40];
	size_t n;

	(void)arg;
	n = lfp_alloc_bulk(bulk_pool, objs, 40);
	lfp_free_bulk(bulk_pool, objs, n); /* parked in this thread's cache */
	pthread_barrier_wait(&bulk_bar);   /* idle while the main thread runs */
	/* Not gone before its audit: a thread's exit drains its cache,
	 * which the census would catch half done. */
	pthread_barrier_wait(&bulk_bar);
	return NULL;
}

START_TEST(cache_bulk_steals_from_idle)
{
	struct lfp_config cfg = { .obj_size = 32, .capacity = 128,
				  .cache_size = 64 };
	struct lfp_cache *c;
	pthread_t th[3];
	void *objs[128];

	ck_assert_int_eq(lfp_create(&cfg, &bulk_pool), 0);
	pthread_barrier_init(&bulk_bar, NULL, 4);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, bulk_park, NULL), 0);
	pthread_barrier_wait(&bulk_bar);
	ck_assert_ptr_nonnull(c = lfp_cache_create(bulk_pool));
	ck_assert_uint_eq(lfp_cache_alloc_bulk(c, objs, 128), 128);
	for (int i = 0; i < 128; i++)
		for (int j = 0; j < i; j++)
			ck_assert_ptr_ne(objs[i], objs[j]);
	expect_accounted(bulk_pool, 128);
	ck_assert_uint_eq(lfp_cache_free_bulk(c, objs, 128), 128);
	pthread_barrier_wait(&bulk_bar);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	lfp_cache_destroy(c);
	expect_accounted(bulk_pool, 0);
	pthread_barrier_destroy(&bulk_bar);
	lfp_destroy(bulk_pool);
}
END_TEST

/* Threads fill their implicit caches and exit: every slot comes back. */
static void *fill_and_exit(void *arg)
{
	struct lfp_pool *pool = arg;
	void *objs[40];
	size_t n = lfp_alloc_bulk(pool, objs, 40);

	lfp_free_bulk(pool, objs, n);
	return (void *)n;
}

START_TEST(exiting_threads_lose_nothing)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 4096,
				  .cache_size = 64 };
	struct lfp_pool *pool;
	struct lfp_stats st;
	pthread_t th[8];
	void *got;

	ck_assert_int_eq(lfp_create(&cfg, &pool), 0);
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 8; i++)
			pthread_create(&th[i], NULL, fill_and_exit, pool);
		for (int i = 0; i < 8; i++) {
			pthread_join(th[i], &got);
			ck_assert_uint_eq((uintptr_t)got, 40);
		}
		lfp_stats(pool, &st);
		ck_assert_uint_eq(st.cached, 0);
		expect_accounted(pool, 0);
	}
	/* Caches are recycled, not made anew per thread. */
	{
		unsigned n = 0;
		for (struct lfp_cache *c = atomic_load(&pool->caches); c;
		     c = c->reg_next)
			n++;
		ck_assert_uint_le(n, 8);
	}
	lfp_destroy(pool);
}
END_TEST

/*
 * No false exhaustion: 4 threads hold all 32 slots of a pool; one frees an
 * object into its cache and goes idle; every other thread in turn must be
 * able to take that last free slot, and put it back into its own cache.
 */
enum { NTH = 4, SMALL = 32 };
static struct lfp_pool *small_pool;
static pthread_barrier_t bar;
static _Atomic int turn_failures;
static bool use_explicit;

static void *last_slot(void *arg)
{
	int self = (int)(intptr_t)arg;
	struct lfp_cache *c = use_explicit ? lfp_cache_create(small_pool) : NULL;
	void *mine[SMALL / NTH], *last;

	for (int i = 0; i < SMALL / NTH; i++) {
		mine[i] = c ? lfp_cache_alloc(c) : lfp_alloc(small_pool);
		if (!mine[i])
			atomic_fetch_add(&turn_failures, 1);
	}
	pthread_barrier_wait(&bar);
	/* Thread 0 frees one object into its cache; then each thread in
	 * turn takes the last free slot and frees it into its own cache. */
	for (int turn = 0; turn < 2 * NTH; turn++) {
		if (turn % NTH == self) {
			if (turn == 0) {
				last = mine[0];
			} else {
				last = c ? lfp_cache_alloc(c) : lfp_alloc(small_pool);
				if (!last)
					atomic_fetch_add(&turn_failures, 1);
			}
			if (last && (c ? lfp_cache_free(c, last)
				       : lfp_free(small_pool, last)))
				atomic_fetch_add(&turn_failures, 1);
		}
		pthread_barrier_wait(&bar);
	}
	for (int i = self == 0; i < SMALL / NTH; i++)
		if (mine[i])
			c ? lfp_cache_free(c, mine[i]) : lfp_free(small_pool, mine[i]);
	pthread_barrier_wait(&bar); /* keep caches alive until all are back */
	lfp_cache_destroy(c);
	return NULL;
}

/*
 * Another library's per-thread state, torn down at thread exit after
 * lfpool's own destructor ran: it allocates and releases on the pool and
 * re-arms itself, as glibc allows for a few rounds. What it does must not
 * leave the thread a cache that nothing gives back.
 */
static struct lfp_pool *late_pool;
static pthread_key_t late_key;
static _Atomic uint32_t late_rounds;

static void late_dtor(void *v)
{
	atomic_fetch_add(&late_rounds, 1);
	ck_assert_int_eq(lfp_free(late_pool, lfp_alloc(late_pool)), 0);
	pthread_setspecific(late_key, v);
}

static void *late_thread(void *arg)
{
	pthread_setspecific(late_key, arg);
	ck_assert_int_eq(lfp_free(late_pool, lfp_alloc(late_pool)), 0);
	return NULL;
}

START_TEST(late_destructors_keep_no_cache)
{
	const char *san = test_sanitizer();
	struct lfpi_census census;
	struct lfp_stats st;
	pthread_t t;

	/* ThreadSanitizer finishes a thread in a key destructor of its own
	 * and crashes in code that runs in later destructor rounds. */
	if (san && !strcmp(san, "thread"))
		return;
	late_pool = test_pool_flags(64, 1024, 0);
	/* Made after the pool, so after lfpool's key: its destructor runs
	 * later in each round. */
	ck_assert_int_eq(pthread_key_create(&late_key, late_dtor), 0);
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(pthread_create(&t, NULL, late_thread, &late_key),
				 0);
		pthread_join(t, NULL);
	}
	lfp_stats(late_pool, &st);
	ck_assert_uint_ge(atomic_load(&late_rounds), 50);
	ck_assert_msg(st.cached == 0,
		      "%llu slots still cached after every thread exited",
		      (unsigned long long)st.cached);
	ck_assert_uint_eq(st.live, 0);
	ck_audit(late_pool, &census);
	pthread_key_delete(late_key);
	lfp_destroy(late_pool);
}
END_TEST

START_TEST(no_false_exhaustion)
{
	pthread_t th[NTH];
	struct lfp_stats st;

	use_explicit = _i & 1;
	small_pool = test_pool(64, SMALL);
#if defined(__linux__)
	/* Linux has had membarrier since 4.14: the fast mode must be on. */
	ck_assert_int_eq(lfpi_cache_membarrier, 1);
#endif
	lfpi_cache_membarrier = _i < 2; /* 2, 3: the seq_cst fallback */
	atomic_store(&turn_failures, 0);
	pthread_barrier_init(&bar, NULL, NTH);
	for (int i = 0; i < NTH; i++)
		pthread_create(&th[i], NULL, last_slot, (void *)(intptr_t)i);
	for (int i = 0; i < NTH; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	ck_assert_int_eq(atomic_load(&turn_failures), 0);
	lfp_stats(small_pool, &st);
	ck_assert_uint_ge(st.steals, 2 * NTH - 1);
	ck_assert_uint_eq(st.failed_allocs, 0);
	expect_accounted(small_pool, 0);
	lfp_destroy(small_pool);
}
END_TEST

/* Objects allocated by one thread are released by another into its cache. */
static struct lfp_pool *xpool;
static void *xobjs[1000];

static void *free_all(void *arg)
{
	struct lfp_cache *c = arg ? lfp_cache_create(xpool) : NULL;
	long bad = 0;

	for (int i = 0; i < 1000; i++)
		bad += (c ? lfp_cache_free(c, xobjs[i])
			  : lfp_free(xpool, xobjs[i])) != 0;
	lfp_cache_destroy(c);
	return (void *)bad;
}

START_TEST(cross_thread_frees)
{
	pthread_t th;
	void *bad;

	xpool = test_pool(64, 1000);
	for (int i = 0; i < 1000; i++)
		ck_assert_ptr_nonnull(xobjs[i] = lfp_alloc(xpool));
	pthread_create(&th, NULL, free_all, (void *)(intptr_t)_i);
	pthread_join(th, &bad);
	ck_assert_ptr_null(bad);
	expect_accounted(xpool, 0);
	/* Everything can be allocated again, here. */
	for (int i = 0; i < 1000; i++)
		ck_assert_ptr_nonnull(lfp_alloc(xpool));
	ck_assert_ptr_null(lfp_alloc(xpool));
	lfp_destroy(xpool);
}
END_TEST

/*
 * A pool is destroyed while other threads still hold implicit caches for
 * it. They then use a new pool (perhaps at the same address) and exit;
 * none may touch the old pool's memory (it is unmapped: a touch crashes,
 * and ASan reports the cache's use after free).
 */
static struct lfp_pool *gone, *fresh;
static pthread_barrier_t gone_bar;

static void *outlive_pool(void *arg)
{
	void *p = lfp_alloc(gone);
	long bad = 0;

	(void)arg;
	bad += lfp_free(gone, p) != 0;
	pthread_barrier_wait(&gone_bar); /* main destroys the pool */
	pthread_barrier_wait(&gone_bar); /* main made a new one */
	p = lfp_alloc(fresh);
	bad += p == NULL;
	bad += lfp_free(fresh, p) != 0;
	return (void *)bad;
}

START_TEST(destroy_under_threads)
{
	pthread_t th[4];
	void *bad;

	gone = test_pool(64, 256);
	pthread_barrier_init(&gone_bar, NULL, 5);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, outlive_pool, NULL);
	pthread_barrier_wait(&gone_bar);
	lfp_destroy(gone);
	fresh = test_pool(64, 256);
	pthread_barrier_wait(&gone_bar);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &bad);
		ck_assert_ptr_null(bad);
	}
	expect_accounted(fresh, 0);
	lfp_destroy(fresh);
	pthread_barrier_destroy(&gone_bar);
}
END_TEST

/*
 * A NULL pool is refused (NULL, -EINVAL) even right after lfp_destroy of
 * a pool whose implicit cache is still the thread's last one: the
 * orphaned cache must not be taken for the cache of "no pool" (the
 * destroyed pool's memory is unmapped, so using the cache crashes).
 */
START_TEST(null_pool_after_destroy)
{
	struct lfp_pool *pool = test_pool(64, 256);
	void *p = lfp_alloc(pool), *q;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(lfp_free(pool, p), 0);
	lfp_destroy(pool);
	ck_assert_ptr_null(lfp_alloc(NULL));
	ck_assert_ptr_null((lfp_alloc)(NULL));
	ck_assert_int_eq(lfp_free(NULL, p), -EINVAL);
	ck_assert_int_eq((lfp_free)(NULL, p), -EINVAL);
	ck_assert_uint_eq(lfp_alloc_bulk(NULL, &q, 1), 0);
	/* The thread goes on with a new pool; the orphan is freed. */
	pool = test_pool(64, 256);
	ck_assert_ptr_nonnull(q = lfp_alloc(pool));
	ck_assert_int_eq(lfp_free(pool, q), 0);
	expect_accounted(pool, 0);
	lfp_destroy(pool);
}
END_TEST

/* With LFP_F_STRICT, two racing releases of one object: exactly one wins. */
static struct lfp_pool *rpool;
static void *_Atomic target;
static _Atomic int wins;
static pthread_barrier_t race_bar;

static void *race_free(void *arg)
{
	(void)arg;
	for (int r = 0; r < 2000; r++) {
		pthread_barrier_wait(&race_bar);
		if (lfp_free(rpool, atomic_load(&target)) == 0)
			atomic_fetch_add(&wins, 1);
		pthread_barrier_wait(&race_bar);
	}
	return NULL;
}

START_TEST(strict_racing_double_free)
{
	pthread_t th[2];

	rpool = test_pool_flags(64, 64, LFP_F_STRICT);
	pthread_barrier_init(&race_bar, NULL, 3);
	atomic_store(&wins, 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, race_free, NULL);
	for (int r = 0; r < 2000; r++) {
		atomic_store(&target, lfp_alloc(rpool));
		pthread_barrier_wait(&race_bar);
		pthread_barrier_wait(&race_bar);
		ck_assert_int_eq(atomic_load(&wins), r + 1);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&race_bar);
	expect_accounted(rpool, 0);
	lfp_destroy(rpool);
}
END_TEST

/*
 * lfp_free (lfpool.h): with LFP_F_NO_CACHE "a double release that races
 * with another release of the same object is caught ...: then exactly
 * one of the two succeeds, whichever calls release it (lfp_free,
 * lfp_cache_free on any explicit cache, the bulk calls,
 * lfp_free_handle ...)". Each round the owner of an explicit cache of a
 * NO_CACHE pool takes an object, and it and another thread, started
 * together on a flag, release it: the owner into its cache, the other
 * to the pool. One of them waits a few hundred loop turns first, a
 * different number each round, so that the two releases meet at every
 * offset. Both returning 0 puts the slot in the cache and on the free
 * list at once, to be handed out twice. 100,000 rounds or 2 s.
 * _i: 0 lfp_cache_free against lfp_free, 1 lfp_cache_free_bulk against
 * lfp_free, 2 lfp_cache_free against lfp_free_handle.
 */
enum { NC_SPREAD = 512 };

static struct nc_race {
	struct lfp_pool *pool;
	struct lfp_cache *cache;
	int mode, rounds;
	void *obj;
	lfp_handle h;
	_Atomic int ready, go, done, stop;
	int other; /* the other thread's result in round `done` */
	int both, neither, at; /* rounds won twice or not at all; the first */
} ncr;

static void nc_spin(unsigned n)
{
	for (volatile unsigned k = 0; k < n; k++)
		;
}

/*
 * Run the calling thread on the k-th CPU the process may use, if it may
 * use two: two threads on one core take turns and never meet inside a
 * release, so the race below would not be run at all.
 */
static void nc_pin(int k)
{
	cpu_set_t set, one;
	int seen = 0;

	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set) || seen++ != k)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
		return;
	}
}

/* Wait until *v is r; yield now and then, in case we share a core. */
static void nc_wait(_Atomic int *v, int r)
{
	for (unsigned k = 0; atomic_load_explicit(v, memory_order_acquire) != r;
	     k++)
		if (k % 1024 == 1023)
			sched_yield();
}

static void *nc_other(void *arg)
{
	(void)arg;
	nc_pin(1);
	for (int r = 1; !atomic_load(&ncr.stop); r++) {
		atomic_store_explicit(&ncr.ready, r, memory_order_release);
		nc_wait(&ncr.go, r);
		if (atomic_load(&ncr.stop))
			break;
		if ((unsigned)r * 7 % NC_SPREAD >= NC_SPREAD / 2)
			nc_spin((unsigned)r * 7 % NC_SPREAD - NC_SPREAD / 2);
		ncr.other = ncr.mode == 2 ? lfp_free_handle(ncr.pool, ncr.h)
					  : lfp_free(ncr.pool, ncr.obj);
		atomic_store_explicit(&ncr.done, r, memory_order_release);
	}
	return NULL;
}

static int nc_release_into_cache(void *obj)
{
	if (ncr.mode == 1)
		return lfp_cache_free_bulk(ncr.cache, &obj, 1) == 1 ? 0
								   : -EALREADY;
	return lfp_cache_free(ncr.cache, obj);
}

/* Each of the pool's `cap` objects is handed out once, then NULL. */
static void expect_whole(struct lfp_pool *pool, uint32_t cap)
{
	void *objs[64];

	ck_assert_uint_le(cap, 64);
	for (uint32_t i = 0; i < cap; i++) {
		ck_assert_ptr_nonnull(objs[i] = lfp_alloc(pool));
		for (uint32_t j = 0; j < i; j++)
			ck_assert_ptr_ne(objs[i], objs[j]);
	}
	ck_assert_ptr_null(lfp_alloc(pool));
	for (uint32_t i = 0; i < cap; i++)
		ck_assert_int_eq(lfp_free(pool, objs[i]), 0);
}

START_TEST(no_cache_racing_release_into_cache)
{
	uint64_t until = test_now_ns() + 2000000000u;
	struct test_watchdog wd;
	cpu_set_t cpus;
	pthread_t th;
	int mine, r;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	memset(&ncr, 0, sizeof(ncr));
	ncr.mode = _i;
	ncr.rounds = under_sanitizer() ? 20000 : 100000;
	ncr.pool = test_pool_flags(64, 64, LFP_F_NO_CACHE);
	ck_assert_ptr_nonnull(ncr.cache = lfp_cache_create(ncr.pool));
	test_watchdog_start(&wd, 10, "racing releases");
	ck_assert_int_eq(pthread_create(&th, NULL, nc_other, NULL), 0);
	nc_pin(0);
	for (r = 1; r <= ncr.rounds && !ncr.at && test_now_ns() < until; r++) {
		ck_assert_ptr_nonnull(ncr.obj = lfp_cache_alloc(ncr.cache));
		ncr.h = lfp_handle_of(ncr.pool, ncr.obj);
		nc_wait(&ncr.ready, r);
		atomic_store_explicit(&ncr.go, r, memory_order_release);
		if ((unsigned)r * 7 % NC_SPREAD < NC_SPREAD / 2)
			nc_spin((unsigned)r * 7 % NC_SPREAD);
		mine = nc_release_into_cache(ncr.obj);
		nc_wait(&ncr.done, r);
		if ((mine == 0) == (ncr.other == 0) && !ncr.at)
			ncr.at = r;
		ncr.both += mine == 0 && ncr.other == 0;
		ncr.neither += mine != 0 && ncr.other != 0;
	}
	atomic_store(&ncr.stop, 1);
	atomic_store_explicit(&ncr.go, r, memory_order_release);
	pthread_join(th, NULL);
	test_watchdog_stop(&wd);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	ck_assert_msg(!ncr.both && !ncr.neither,
		      "%s and %s of one object: both succeeded in %d rounds, "
		      "neither in %d, of %d (first at round %d)",
		      ncr.mode == 1 ? "lfp_cache_free_bulk" : "lfp_cache_free",
		      ncr.mode == 2 ? "lfp_free_handle" : "lfp_free", ncr.both,
		      ncr.neither, r - 1, ncr.at);
	lfp_cache_destroy(ncr.cache);
	expect_whole(ncr.pool, 64);
	lfp_destroy(ncr.pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("cache");
	TCase *rc = tcase_create("regress");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, explicit_cache_batches);
	tcase_add_test(tc, cache_stats_per_worker);
	tcase_add_test(tc, cache_stats_while_busy);
	tcase_add_test(tc, cache_stats_while_exchanging);
	tcase_add_test(tc, cache_stats_frees_never_above_allocs);
	tcase_add_test(tc, cache_counts_past_2_48_pairs);
	tcase_add_test(tc, cache_counts_past_2_51_pairs_without_a_move);
#ifdef STEP_TF
	tcase_add_test(tc, stats_in_handler_mid_exchange);
	tcase_add_test(tc, fork_keeps_release_counted);
#endif
	tcase_add_test(tc, cache_bad_input);
	tcase_add_test(tc, failed_alloc_is_no_miss);
	tcase_add_test(tc, bad_cache_configs);
	tcase_add_loop_test(tc, bulk_calls, 0, TEST_NMODES);
	tcase_add_loop_test(tc, cache_bulk_calls, 0, 3);
	tcase_add_test(tc, cache_bulk_steals_from_idle);
	tcase_add_loop_test(tc, bulk_free_hides_no_slot_from_hooks, 0, 3);
	tcase_add_loop_test(tc, bulk_inline_refuses_bad_objects, 0, 10);
	tcase_add_loop_test(tc, bulk_inline_every_fill, 0, 2);
	tcase_add_test(tc, exiting_threads_lose_nothing);
	tcase_add_test(tc, late_destructors_keep_no_cache);
	/* 0, 1: implicit/explicit with membarrier; 2, 3: seq_cst fallback */
	tcase_add_loop_test(tc, no_false_exhaustion, 0, 4);
	tcase_add_loop_test(tc, cross_thread_frees, 0, 2);
	tcase_add_test(tc, destroy_under_threads);
	tcase_add_test(tc, null_pool_after_destroy);
	tcase_add_test(tc, strict_racing_double_free);
	suite_add_tcase(s, tc);
	/* Regressions: promises of lfpool.h an adversarial review broke. */
	tcase_set_timeout(rc, 30);
	tcase_add_loop_test(rc, no_cache_racing_release_into_cache, 0, 3);
	tcase_add_test(rc, batch_above_default_cache_refused);
	tcase_add_loop_test(rc, stats_events_never_go_back, 0, 2);
	suite_add_tcase(s, rc);
	return test_run(s);
}
