/* SPDX-License-Identifier: MIT */
/*
 * Pools in a child of fork(2).
 *
 * The child of a multithreaded program has one thread, the one that
 * forked, and a copy of every pool as the other threads left it: a lock
 * one of them held stays held, and their caches stay theirs, for threads
 * that will never run. pthread_atfork handlers make that copy usable:
 *
 * - prepare: under the list's lock, take every pool's grow_lock (so no
 *   growth, reserve, trim or deferred-table setup is half done), then
 *   take every cache as a thief would (cache/fork_hold.c): owners keep off
 *   their slots, and a cache whose owner was inside an operation is
 *   marked;
 * - parent: give the caches back, drop the locks;
 * - child: the caches of threads that did not come along are emptied into
 *   the free list and recycled, those that were marked are dropped
 *   (cache/fork_hold.c), then the locks are dropped.
 *
 * Meanwhile an allocation that finds the pool exhausted waits for the fork
 * to end, 20 ms at most (LFPI_CACHE_FORK_WAIT_MS): a fork holds every
 * cache, but it may itself wait on a lock of the C library that the
 * allocating thread holds, if a signal handler of that thread is the one
 * allocating.
 *
 * Slots that another thread had in hand at that moment (its live
 * objects, a chain between the free list and its cache) stay where they
 * are: in the child nobody will release them.
 *
 * For pool.c, through fork.h; calls the caches (cache/fork_hold.c,
 * cache/fork_wait.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "pool/fork.h"

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * The pools, under fork_lock. A fork from a signal handler that
 * interrupted lfpi_fork_add or lfpi_fork_remove walks the list half
 * changed: each store keeps it walkable by fork_next (a pool is in it or
 * not), and the signal fences keep the compiler from reordering them.
 */
static struct lfp_pool *fork_pools;
/* Whether fork_prepare took fork_lock (see fork_take); the forking
 * thread's, between its handlers. */
static bool fork_took_list;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_init_err;

/*
 * Every lock first, then every cache: a thread that holds one pool's
 * grow_lock may be interrupted by a signal handler allocating from
 * another pool, which must not find its cache taken meanwhile.
 */
/*
 * Take m for the fork, unless this thread holds it already: then fork was
 * called from a signal handler that interrupted the holder, which goes
 * on after the handler returns (in the parent and in the child) and lets
 * go itself (lock.c). Returns whether we took it.
 */
static bool fork_take(pthread_mutex_t *m)
{
	if (lfpi_lock_mine(m))
		return false;
	pthread_mutex_lock(m);
	return true;
}

/*
 * From prepare to the parent or child handler the forking thread holds
 * the locks without noting them (lock.c), so it blocks every signal
 * meanwhile: a handler that forked in there would wait for itself. The
 * signals it blocked, those it had not, are kept here, under fork_lock,
 * and unblocked once the locks are dropped (so a mask change made by
 * other atfork handlers in between stays).
 */
static sigset_t fork_mask;

static void fork_prepare(void)
{
	struct lfp_pool *p;
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	fork_took_list = fork_take(&fork_lock);
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&old, sig) == 1)
			sigdelset(&all, sig);
	fork_mask = all;
	for (p = fork_pools; p; p = p->fork_next)
		p->fork_took = fork_take(&p->grow_lock);
	lfpi_cache_fork_begin();
	for (p = fork_pools; p; p = p->fork_next)
		lfpi_cache_fork_prepare(p);
}

/* After the fork, in the parent (child = false) or the child: the caches
 * back to their owners (or the dead threads' recycled), the locks
 * dropped, the signal mask as it was. The child's only thread is the one
 * that took the locks in fork_prepare, so it may release them. */
static void fork_finish(bool child)
{
	sigset_t added = fork_mask;

	if (child)
		lfpi_cache_fork_child_init();
	for (struct lfp_pool *p = fork_pools; p; p = p->fork_next) {
		if (child)
			lfpi_cache_fork_child(p);
		else
			lfpi_cache_fork_parent(p);
		if (p->fork_took)
			pthread_mutex_unlock(&p->grow_lock);
	}
	lfpi_cache_fork_end();
	if (fork_took_list)
		pthread_mutex_unlock(&fork_lock);
	pthread_sigmask(SIG_UNBLOCK, &added, NULL);
}

static void fork_parent(void)
{
	fork_finish(false);
}

static void fork_child(void)
{
	fork_finish(true);
}

static void fork_init(void)
{
	fork_init_err = -pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int lfpi_fork_global_init(void)
{
	pthread_once(&fork_once, fork_init);
	return fork_init_err;
}

/*
 * Register the handlers when the library is loaded, before the program
 * can register its own: prepare handlers run in the reverse order of
 * registration, parent and child handlers in order, so the program's run
 * while every pool is whole and may use the pools. (lfp_create returns the
 * error if registering failed here.)
 */
__attribute__((constructor)) static void fork_load(void)
{
	(void)lfpi_fork_global_init();
}

void lfpi_fork_add(struct lfp_pool *pool)
{
	lfpi_lock(&fork_lock);
	pool->fork_prev = NULL;
	pool->fork_next = fork_pools;
	if (fork_pools)
		fork_pools->fork_prev = pool;
	atomic_signal_fence(memory_order_seq_cst); /* whole, then listed */
	fork_pools = pool;
	lfpi_unlock(&fork_lock);
}

void lfpi_fork_remove(struct lfp_pool *pool)
{
	lfpi_lock(&fork_lock);
	if (pool->fork_prev)
		pool->fork_prev->fork_next = pool->fork_next;
	else
		fork_pools = pool->fork_next;
	atomic_signal_fence(memory_order_seq_cst); /* unlisted, then unlinked */
	if (pool->fork_next)
		pool->fork_next->fork_prev = pool->fork_prev;
	lfpi_unlock(&fork_lock);
}
