/*
 * fork while other threads use the pools. The child has only the thread
 * that forked: whatever the others held at that moment (objects, their
 * caches, a lock, the free list taken aside by a trim) is theirs and gone
 * with them. Everything else must work in the child: allocation, trim,
 * reserve, caches, stats, destroy, with no hang.
 */
#include <errno.h>
#include <pthread.h>
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

static bool under_sanitizer(void)
{
	const char *s = getenv("SANITIZER");

	return s && *s && strcmp(s, "no") != 0;
}

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
	int forks = under_sanitizer() ? 100 : 200, status;
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

int main(void)
{
	Suite *s = suite_create("fork");
	TCase *tc = tcase_create("fork");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, fork_while_busy);
	suite_add_tcase(s, tc);
	return test_run(s);
}
