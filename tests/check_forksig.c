/* SPDX-License-Identifier: MIT */
/*
 * fork from a signal handler, as lfpool.h allows (POSIX lists fork as
 * async-signal-safe), interrupting the lfp call the thread was in: the
 * child must never hand a slot out twice, and nothing may hang. Each
 * child checks its own pool and reports by its exit status: 1 if its
 * handler got a slot twice, 2 if the interrupted frame, resumed in the
 * child, then did.
 */
#define _GNU_SOURCE /* REG_EFL, for single-stepping */
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"

#define FS_CAP 16384u

/*
 * ThreadSanitizer delivers a signal only when the thread next enters one
 * of its interceptors (a system call, a lock), never in the middle of
 * the library's plain code: under it a handler cannot interrupt the
 * operations these tests are about, so they have nothing to test there.
 */
static bool fs_signals_deferred(void)
{
	const char *s = test_sanitizer();

	return s && strcmp(s, "thread") == 0;
}

/*
 * A child forked from a handler ends with the exit_group system call,
 * not _exit: AddressSanitizer's code before a call that never returns
 * allocates, and the handler may have interrupted the ASan runtime's own
 * allocator with its lock held (a thread's teardown, after lfpool's part
 * of it), which the child would then wait for forever.
 */
static void fs_exit(int status)
{
	syscall(SYS_exit_group, status);
}

static struct lfp_pool *fs_pool;
static struct lfp_cache *fs_hcache; /* only the handlers use it */
static unsigned char fs_seen[FS_CAP];
static volatile sig_atomic_t fs_in_child;

/* A child's check: note slot of p, and whether it was seen already. */
static void fs_mark(void *p, int *dup)
{
	uint32_t i = lfp_index_of(fs_pool, p);

	if (i >= FS_CAP || fs_seen[i])
		*dup = 1;
	else
		fs_seen[i] = 1;
}

/* In the child, from the handler: take every slot the handler's own
 * cache can get (stealing the interrupted thread's cache among others). */
static int fs_take_all(void)
{
	int dup = 0;
	void *p;

	while ((p = lfp_cache_alloc(fs_hcache)))
		fs_mark(p, &dup);
	return dup;
}

static void fs_pool_make(uint32_t cache_size, uint32_t batch, uint32_t flags)
{
	struct lfp_config cfg = { .obj_size = 16, .capacity = FS_CAP,
				  .cache_size = cache_size,
				  .batch_size = batch, .flags = flags };

	ck_assert_int_eq(lfp_create(&cfg, &fs_pool), 0);
	fs_hcache = lfp_cache_create(fs_pool);
	ck_assert_ptr_nonnull(fs_hcache);
}

static void fs_on(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	ck_assert_int_eq(sigaction(sig, &sa, NULL), 0);
}

static void fs_timer(long usec)
{
	struct itimerval it = { { usec / 1000000, usec % 1000000 },
				{ usec / 1000000, usec % 1000000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * The period of a timer whose handler forks: usec, or four times what a
 * fork costs here if that is more. A fork that takes longer than the
 * period finds the next signal waiting when it returns, so the handler
 * forks again at once and the interrupted code never gets on (a fork
 * took 1 ms on a virtual machine, against the 500 us these tests took
 * for granted, and they ran out their time having done nothing else).
 * The cost: the median of nine forks of a child that exits at once, each
 * waited for (the slowest of a few said 10-67 ms on a loaded machine, a
 * preemption more than a fork). At most FS_PERIOD_MAX: the handler
 * leaves at most FS_LIVE children unreaped anyway, and a period longer
 * than that would only stretch the test.
 */
#define FS_PERIOD_MAX 50000L

static int fs_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static long fs_fork_period(long usec)
{
	uint64_t t[9];
	long p;

	for (int i = 0; i < 9; i++) {
		uint64_t t0 = test_now_ns();
		pid_t pid = fork();

		if (pid == 0)
			fs_exit(0);
		ck_assert_int_gt(pid, 0);
		ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
		t[i] = test_now_ns() - t0;
	}
	qsort(t, 9, sizeof(t[0]), fs_cmp_u64);
	p = (long)(t[4] / 1000 * 4);
	if (p > FS_PERIOD_MAX)
		p = FS_PERIOD_MAX;
	return p > usec ? p : usec;
}

/* Reap the children that ended; count them and the bad ones. */
static void fs_reap(int flags, int *done, int *bad)
{
	int st;

	while (waitpid(-1, &st, flags) > 0) {
		++*done;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			++*bad;
	}
}

/* Wait for one child to end, and count it. */
static void fs_reap_one(int *done, int *bad)
{
	int st;

	if (waitpid(-1, &st, 0) > 0) {
		++*done;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			++*bad;
	}
}

/*
 * The handler forks while the thread is inside lfp_free on its implicit
 * cache (a full cache sending a magazine out, say). In the child the
 * handler steals that cache: it must find it busy, since the frame it
 * interrupted goes on with it when the handler returns.
 */
#define FS_K 6000
static void *fs_objs[FS_K];
static volatile sig_atomic_t fs_handler_dup;

/*
 * The timer fires every 700 us whatever the children do; on a loaded
 * machine children end slower than that, and forking at each tick piled
 * up thousands of them, until fork failed for want of process ids and
 * every test running beside this one starved. So a handler forks only
 * while fewer than FS_LIVE of its children are unreaped, and no more
 * than fs_want in all. fs_forked is written by the handlers alone,
 * fs_reaped by the thread's own code alone (the handler interrupts it,
 * so one writer each, or an update would be lost).
 */
#define FS_LIVE 4
static volatile sig_atomic_t fs_forked, fs_reaped, fs_want;

/* In a handler: fork now? True in the child. */
static bool fs_fork_child(void)
{
	pid_t pid;

	if (fs_in_child || fs_forked >= fs_want ||
	    fs_forked - fs_reaped >= FS_LIVE)
		return false;
	if ((pid = fork()) == 0)
		return true;
	if (pid > 0)
		fs_forked++;
	return false;
}

static void fs_fork_busy(int sig)
{
	(void)sig;
	if (!fs_fork_child())
		return;
	fs_in_child = 1;
	fs_handler_dup = fs_take_all();
}

/*
 * Allocate and release FS_K objects of fs_pool in a loop while a timer's
 * handler forks (handler): each child checks what the interrupted frame
 * holds and every slot left, and exits 1 or 2 if one came twice.
 */
static void fs_fork_during_ops(void (*handler)(int))
{
	bool slow = under_sanitizer() || under_emulator();
	int forks = slow ? 40 : 200, done = 0, bad = 0, dup = 0;
	void *p;

	fs_forked = fs_reaped = 0;
	fs_want = forks;
	fs_on(SIGALRM, handler);
	/* A sanitizer's fork costs ms. */
	fs_timer(fs_fork_period(slow ? 7000 : 700));
	while (done < forks) {
		for (int i = 0; i < FS_K; i++)
			fs_objs[i] = lfp_alloc(fs_pool);
		for (int i = 0; i < FS_K && !fs_in_child; i++) {
			p = fs_objs[i];
			fs_objs[i] = NULL;
			lfp_free(fs_pool, p);
		}
		if (fs_in_child)
			break;
		fs_reap(WNOHANG, &done, &bad);
		fs_reaped = done;
	}
	if (fs_in_child) {
		/* The frame resumed: what it holds, then everything else. */
		fs_timer(0);
		for (int i = 0; i < FS_K; i++)
			if (fs_objs[i])
				fs_mark(fs_objs[i], &dup);
		while ((p = lfp_alloc(fs_pool)))
			fs_mark(p, &dup);
		_exit((fs_handler_dup ? 1 : 0) | (dup ? 2 : 0));
	}
	fs_timer(0);
	fs_reap(0, &done, &bad);
	ck_assert_msg(bad == 0, "%d of %d children got a slot twice", bad, done);
}

START_TEST(fork_in_handler_during_own_cache_op)
{
	if (fs_signals_deferred())
		return;
	fs_pool_make(4096, 2048, 0);
	fs_fork_during_ops(fs_fork_busy);
}
END_TEST

/*
 * The same on a bare pool (LFP_F_NO_CACHE | LFP_F_UNCHECKED): the handler
 * forks while the thread is inside an inline pop (between its load of the
 * head and its CAS) or push (between writing the slot's link and its
 * CAS), and in the child takes every slot with lfp_alloc; the frame then
 * resumes against the list the handler emptied.
 */
static void fs_fork_busy_bare(int sig)
{
	int dup = 0;
	void *p;

	(void)sig;
	if (!fs_fork_child())
		return;
	fs_in_child = 1;
	while ((p = lfp_alloc(fs_pool)))
		fs_mark(p, &dup);
	fs_handler_dup = dup;
}

START_TEST(fork_in_handler_during_bare_op)
{
	struct lfp_config cfg = { .obj_size = 16, .capacity = FS_CAP,
				  .flags = LFP_F_NO_CACHE | LFP_F_UNCHECKED };

	if (fs_signals_deferred())
		return;
	ck_assert_int_eq(lfp_create(&cfg, &fs_pool), 0);
	fs_fork_during_ops(fs_fork_busy_bare);
	lfp_destroy(fs_pool);
}
END_TEST

/*
 * A worker exits with a full implicit cache, and a signal aimed at it
 * lands while its exit gives the cache back; the handler forks. In the
 * child the exit goes on giving the cache back: the fork must leave it
 * to it, not give the same slots back a second time.
 */
static volatile long fs_delay_ns;

static void fs_fork_take(int sig)
{
	(void)sig;
	if (fs_fork_child())
		fs_exit(fs_take_all());
}

static void *fs_exiting_worker(void *arg)
{
	static _Thread_local void *o[4096];
	struct itimerspec its = { { 0, 0 }, { 0, fs_delay_ns } };
	struct sigevent sev;
	timer_t t;

	(void)arg;
	for (int i = 0; i < 4096; i++)
		o[i] = lfp_alloc(fs_pool);
	for (int i = 0; i < 4096; i++)
		lfp_free(fs_pool, o[i]);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &t) == 0)
		timer_settime(t, 0, &its, NULL);
	return NULL; /* the cache goes back in the key's destructor */
}

START_TEST(fork_in_handler_during_exit)
{
	int runs = under_sanitizer() || under_emulator() ? 100 : 500;
	int done = 0, bad = 0;
	pthread_t th;

	/* Small magazines: giving the cache back takes a while. */
	fs_pool_make(4096, 8, 0);
	fs_forked = fs_reaped = 0;
	fs_want = runs;
	fs_on(SIGUSR1, fs_fork_take);
	srand(1);
	for (int r = 0; r < runs; r++) {
		fs_delay_ns = 1000 + rand() % 40000;
		ck_assert_int_eq(pthread_create(&th, NULL, fs_exiting_worker,
						NULL), 0);
		pthread_join(th, NULL);
		usleep(100);
		fs_reap(WNOHANG, &done, &bad);
		/* Room for the next run's child, however slow they end. */
		while (fs_forked - done >= FS_LIVE)
			fs_reap_one(&done, &bad);
		fs_reaped = done;
	}
	fs_reap(0, &done, &bad);
	ck_assert_msg(bad == 0, "%d of %d children got a slot twice", bad, done);
}
END_TEST

/*
 * The handler forks while the thread is inside lfp_trim, which holds the
 * pool's growth lock that fork's prepare takes too: it must not wait for
 * itself. (A hang fails on the test's timeout.)
 *
 * Not under ThreadSanitizer, whose deferred signals do reach the handler
 * inside the lock (lfpi_lock's own system calls), and which then reports
 * the lock order: fork's prepare takes the pool list's lock while this
 * thread holds the growth lock, where a plain fork takes them the other
 * way round. That cycle is real only with a second thread forking at the
 * same moment (it holds the list's lock and waits for the growth lock we
 * hold), the one case lfpool.h says deadlocks; here one thread forks, so
 * it cannot close.
 */
static volatile sig_atomic_t fs_forks;

static void fs_fork_exit(int sig)
{
	pid_t pid;

	(void)sig;
	if ((pid = fork()) == 0)
		fs_exit(0);
	if (pid > 0)
		fs_forks++;
}

START_TEST(fork_in_handler_during_trim)
{
	static void *o[1024];
	struct lfp_config cfg = { .obj_size = 4096, .capacity = 1024,
				  .flags = LFP_F_NO_CACHE };
	int rounds = under_sanitizer() ? 200 : 1000;

	if (fs_signals_deferred())
		return;
	ck_assert_int_eq(lfp_create(&cfg, &fs_pool), 0);
	fs_on(SIGALRM, fs_fork_exit);
	fs_timer(fs_fork_period(under_sanitizer() ? 5000 : 500));
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 1024; i++)
			o[i] = lfp_alloc(fs_pool);
		for (int i = 0; i < 1024; i++)
			lfp_free(fs_pool, o[i]);
		lfp_trim(fs_pool);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	fs_timer(0);
	while (wait(NULL) > 0)
		;
	ck_assert_int_gt(fs_forks, 0);
	expect_accounted(fs_pool, 0);
	lfp_destroy(fs_pool);
}
END_TEST

/*
 * The thread forks, and a signal handler of its own forks again while
 * the first fork is inside lfpool's handlers, which hold the library's
 * locks: the second fork must not wait for them (lfpool blocks signals
 * from its prepare to its parent handler). One thread, so no lock of the
 * C library is involved.
 */
static volatile sig_atomic_t fs_own_forks;

/*
 * At most one fork of the handler's per fork of the loop: where a fork
 * takes longer than the timer's period (FS_PERIOD_MAX; 13-60 ms under
 * qemu-user), the next SIGALRM is already pending when each fork
 * returns, and the handler forked about 2.5 times per fork of the loop.
 */
static void fs_fork_quit(int sig)
{
	(void)sig;
	if (fs_forks > fs_own_forks)
		return;
	if (fork() == 0)
		fs_exit(0);
	fs_forks++;
}

START_TEST(fork_in_handler_during_fork)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 256 };
	struct lfp_pool *pools[20];
	bool slow = under_sanitizer() || under_emulator();
	int forks = slow ? 300 : 2000;
	long period;
	void *o;

	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(lfp_create(&cfg, &pools[i]), 0);
		o = lfp_alloc(pools[i]); /* a cache for prepare to take */
		ck_assert_int_eq(lfp_free(pools[i], o), 0);
	}
	period = fs_fork_period(slow ? 7000 : 700);
	signal(SIGCHLD, SIG_IGN); /* no zombies to reap */
	fs_forks = fs_own_forks = 0;
	fs_on(SIGALRM, fs_fork_quit);
	fs_timer(period);
	for (int i = 0; i < forks; i++) {
		if (fork() == 0)
			fs_exit(0);
		fs_own_forks++;
	}
	fs_timer(0);
	ck_assert_int_gt(fs_forks, 0); /* the handler did fork */
	for (int i = 0; i < 20; i++) {
		expect_accounted(pools[i], 0);
		lfp_destroy(pools[i]);
	}
}
END_TEST

/*
 * A thread exits holding implicit caches, the first on its list an
 * orphan (its pool destroyed meanwhile), which the exit unmaps; signals
 * aimed at it fork from its handler all along. The child reads the
 * thread's list of caches: it must never meet an unmapped one (it died
 * of SIGSEGV, every time, when the list kept them until the end).
 */
#define FS_NP 50
static struct lfp_pool *fs_pools[FS_NP], *fs_doomed;
static _Atomic int fs_stage, fs_tid, fs_crashed;

static void fs_fork_wait(int sig)
{
	pid_t pid;
	int st;

	(void)sig;
	if ((pid = fork()) == 0)
		fs_exit(0);
	if (pid > 0 && waitpid(pid, &st, 0) == pid && !WIFEXITED(st))
		atomic_fetch_add(&fs_crashed, 1);
}

static void *fs_orphan_worker(void *arg)
{
	(void)arg;
	atomic_store(&fs_tid, (int)syscall(SYS_gettid));
	for (int i = 0; i < FS_NP; i++)
		lfp_free(fs_pools[i], lfp_alloc(fs_pools[i]));
	/* The newest cache heads the thread's list. */
	lfp_free(fs_doomed, lfp_alloc(fs_doomed));
	atomic_store(&fs_stage, 1);
	while (atomic_load(&fs_stage) != 2)
		sched_yield();
	return NULL; /* the exit gives the caches back */
}

START_TEST(fork_in_handler_during_exit_with_orphan)
{
	struct lfp_config cfg = { .obj_size = 64, .capacity = 256 };
	int rounds = under_sanitizer() ? 10 : 40;
	pthread_t th;

	for (int i = 0; i < FS_NP; i++)
		ck_assert_int_eq(lfp_create(&cfg, &fs_pools[i]), 0);
	fs_on(SIGUSR1, fs_fork_wait);
	for (int r = 0; r < rounds && !atomic_load(&fs_crashed); r++) {
		ck_assert_int_eq(lfp_create(&cfg, &fs_doomed), 0);
		atomic_store(&fs_stage, 0);
		ck_assert_int_eq(pthread_create(&th, NULL, fs_orphan_worker,
						NULL), 0);
		while (atomic_load(&fs_stage) != 1)
			sched_yield();
		lfp_destroy(fs_doomed); /* its cache becomes an orphan */
		atomic_store(&fs_stage, 2);
		/* Signals until the thread is gone, spaced differently each
		 * round. */
		for (int k = 0; k < 500 &&
				syscall(SYS_tgkill, getpid(),
					atomic_load(&fs_tid), SIGUSR1) == 0;
		     k++)
			if (r % 4)
				usleep((useconds_t)(r % 4) * 5);
		pthread_join(th, NULL);
	}
	ck_assert_int_eq(atomic_load(&fs_crashed), 0);
	for (int i = 0; i < FS_NP; i++)
		lfp_destroy(fs_pools[i]);
}
END_TEST

/*
 * A thread's first lfp_alloc on a pool claims a cache (a new one, or a
 * dead one another thread gave back), and only then puts it on its list:
 * a fork from a signal handler in between must leave that cache to the
 * frame that goes on claiming it in the child, not give it up as the
 * cache of a thread that did not come along (the child then handed the
 * same cache out again through lfp_cache_create, and segfaulted on it
 * once its pool was destroyed). The call runs single-stepped (x86-64
 * Linux: the trap flag), forking at every instruction; each child
 * finishes the call, then checks.
 */
#if defined(__x86_64__) && defined(__linux__) && defined(REG_EFL)
#define FS_TF 0x100
static struct lfp_pool *fs_first;
static volatile sig_atomic_t fs_child, fs_children, fs_failed;

static void fs_step_fork(int sig, siginfo_t *si, void *uc)
{
	greg_t *efl = &((ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL];
	pid_t pid;
	int st = 0, err = errno;

	(void)sig;
	(void)si;
	if ((pid = fork()) == 0) {
		*efl &= ~(greg_t)FS_TF; /* the child runs on, not stepped */
		fs_child = 1;
		return;
	}
	if (pid > 0)
		/* SIGUSR2, raised by the stepped frame, may interrupt it */
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fs_failed++;
	fs_children++;
	errno = err;
}

static void fs_step(int sig, siginfo_t *si, void *uc)
{
	greg_t *efl = &((ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL];

	(void)si;
	*efl = sig == SIGUSR1 ? *efl | FS_TF : *efl & ~(greg_t)FS_TF;
}

/* In the child, after the interrupted call finished. */
static void fs_first_check(void *obj)
{
	struct lfp_pool *again;
	struct lfp_cache *ex;
	int bad = 0;

	ex = lfp_cache_create(fs_first);
	bad |= !obj || !ex ||
	       ex == lfpi_cache_entry(fs_first); /* ours, handed out again */
	lfp_cache_destroy(ex);
	bad |= lfp_free(fs_first, obj) != 0;
	lfp_destroy(fs_first);
	/* fs_first's number: the entry of our cache must not be read. */
	if (lfp_create(&(struct lfp_config){ .obj_size = 64, .capacity = 64 },
		       &again) == 0) {
		lfp_free(again, lfp_alloc(again));
		lfp_destroy(again);
	}
	fs_exit(bad ? 3 : 0);
}

static void *fs_give_back(void *arg)
{
	(void)arg;
	lfp_free(fs_first, lfp_alloc(fs_first)); /* its exit: a dead cache */
	return NULL;
}

START_TEST(fork_in_handler_during_first_alloc)
{
	struct sigaction sa = { .sa_flags = SA_SIGINFO };
	struct lfp_config cfg = { .obj_size = 64, .capacity = 256 };
	pthread_t th;
	void *obj;

	if (under_sanitizer())
		return; /* their runtimes defer or wrap signals */
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = fs_step_fork;
	ck_assert_int_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	sa.sa_sigaction = fs_step;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	/* Round 0 claims a new cache; round 1 one that another thread gave
	 * back at its exit. */
	for (int r = 0; r < 2; r++) {
		ck_assert_int_eq(lfp_create(&cfg, &fs_first), 0);
		if (r == 1) {
			ck_assert_int_eq(pthread_create(&th, NULL,
							fs_give_back, NULL),
					 0);
			pthread_join(th, NULL);
		}
		raise(SIGUSR1);
		obj = lfp_alloc(fs_first);
		raise(SIGUSR2);
		if (fs_child)
			fs_first_check(obj);
		ck_assert_ptr_nonnull(obj);
		ck_assert_int_eq(lfp_free(fs_first, obj), 0);
		expect_accounted(fs_first, 0);
		lfp_destroy(fs_first);
	}
	ck_assert_int_gt(fs_children, 50);
	ck_assert_msg(fs_failed == 0, "%d of %d children failed",
		      (int)fs_failed, (int)fs_children);
}
END_TEST
#endif

int main(void)
{
	Suite *s = suite_create("forksig");
	TCase *tc = tcase_create("forksig");

	/* The timeout is there to catch a hang: each test's work is bounded
	 * (fork_in_handler_during_first_alloc forks 7,000 times, 11 s on a
	 * quiet machine whose fork costs 1 ms), and a loaded one stretches
	 * it many times over. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, fork_in_handler_during_own_cache_op);
	tcase_add_test(tc, fork_in_handler_during_bare_op);
	tcase_add_test(tc, fork_in_handler_during_exit);
	tcase_add_test(tc, fork_in_handler_during_trim);
	tcase_add_test(tc, fork_in_handler_during_fork);
	tcase_add_test(tc, fork_in_handler_during_exit_with_orphan);
#ifdef FS_TF
	tcase_add_test(tc, fork_in_handler_during_first_alloc);
#endif
	suite_add_tcase(s, tc);
	return test_run(s);
}
